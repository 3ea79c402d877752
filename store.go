package execgate

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// Record is what an [ApprovalStore] keeps for one pending approval: the
// envelope as proposed (with its digest), a private copy of the caller's
// input, the record's secret salt, the spec fingerprint salted with it, and
// the stdin hash it was proposed with. It holds no environment values. A
// Record is serializable, so a durable store may keep it as JSON; it is
// private to the trusted side (the salt is what keeps approval digests from
// revealing anything about the environment or stdin).
type Record struct {
	Approval    Approval        `json:"approval"`
	Input       json.RawMessage `json:"input"`
	Salt        []byte          `json:"salt"`
	Fingerprint string          `json:"fingerprint"`
	StdinSHA256 string          `json:"stdinSha256"`
}

// ApprovalStore keeps pending approvals between Propose and Execute.
//
// Implementations must be safe for concurrent use by many goroutines, and,
// for a store shared by several processes, by all of them together. The
// contract:
//
//   - Save stores rec under rec.Approval.ID. It returns ErrDuplicateID
//     (matched with errors.Is) if that ID is already stored, and
//     ErrStoreFull if the store holds its capacity of pending records after
//     dropping expired ones. A store with quotas per principal returns a
//     [*QuotaError], which unwraps to ErrStoreFull, when rec's principal
//     holds its quota. It must not evict a pending record to make room.
//   - Take atomically reads and removes the record with the given ID. Of
//     any number of concurrent Take and Delete calls for one ID, at most one
//     succeeds. It returns ErrNoRecord if there is no such record. It may
//     return ErrNoRecord for a record whose ExpiresAt has passed (and must
//     then remove it), or return it: the Executor checks expiry again.
//   - Delete removes the record with the given ID and reports whether a
//     pending record was removed: false for an unknown ID, a record already
//     taken or deleted, or one that had expired.
//   - Stored records are returned exactly as saved, byte for byte in Input,
//     each under its own ID. Save must not keep rec's slices: the caller
//     may change them once Save has returned.
//
// A store is on the trusted side: whoever can write records into it can
// create pending approvals. What the [Executor] does not take from the store
// on trust is whether a record may still run: expiry, the envelope's digest
// and the current allowlist are checked again after Take.
type ApprovalStore interface {
	Save(ctx context.Context, rec Record) error
	Take(ctx context.Context, id string) (Record, error)
	Delete(ctx context.Context, id string) (bool, error)
}

// DefaultStoreCapacity is the capacity of a [MemoryStore] whose options set
// none.
const DefaultStoreCapacity = 1000

// DefaultStoreMaxBytes is the byte budget of a [MemoryStore] whose options
// set none.
const DefaultStoreMaxBytes = 64 << 20

// DefaultPerPrincipalQuota is a store's quota per principal, of records or
// of bytes, when its options set none: a quarter of the store's total
// (at least 1), so that no one principal can take every pending slot or
// byte from the others.
func DefaultPerPrincipalQuota(total int64) int64 {
	return max(1, total/4)
}

// MemoryStoreOptions configures [NewMemoryStore].
type MemoryStoreOptions struct {
	// Capacity is the most pending records the store holds. Zero or less
	// means [DefaultStoreCapacity].
	Capacity int
	// MaxBytes bounds the memory the pending records may hold, counted as
	// the bytes of their inputs, arguments and reasons. A Save that would
	// go over it fails with [ErrStoreFull]. Zero or less means
	// [DefaultStoreMaxBytes].
	MaxBytes int64
	// PerPrincipalCapacity is the most pending records one principal (the
	// record's Approval.Principal) may hold; a Save past it fails with a
	// [*QuotaError]. Every record without a principal counts against one
	// shared quota, that of "". Zero means
	// [DefaultPerPrincipalQuota](Capacity), a quarter; negative means no
	// quota per principal, only Capacity.
	PerPrincipalCapacity int
	// PerPrincipalMaxBytes is the most bytes, counted as for MaxBytes, that
	// one principal's pending records may hold; a Save past it fails with
	// a [*QuotaError]. Zero means [DefaultPerPrincipalQuota](MaxBytes), a
	// quarter; negative means no quota per principal, only MaxBytes.
	PerPrincipalMaxBytes int64
	// Now is the store's clock, for expiry. Nil means time.Now. An
	// [Executor] that creates its own store passes its own clock.
	Now func() time.Time
}

// MemoryStore is an in-process [ApprovalStore] with a fixed capacity in
// records and in bytes. Expired records are dropped when the store is full
// and a Save needs room, and whenever Take or Delete meets one. One
// MemoryStore may be shared by several Executors in a process. It is safe
// for concurrent use, and must not be copied after first use.
//
// The zero MemoryStore is an empty store ready for use, as if made by
// [NewMemoryStore] with zero options: [DefaultStoreCapacity] records,
// [DefaultStoreMaxBytes], and time.Now as its clock. Use NewMemoryStore to
// set other options, such as the [Executor]'s clock.
//
// Each principal has a quota of the store, in records and in bytes (a
// quarter of each by default, see [MemoryStoreOptions]): a principal that
// holds its quota is refused with a [*QuotaError] naming it, while the
// others still propose. The records it holds free its quota as they are
// executed, rejected or expire. All calls without a principal share one
// quota.
type MemoryStore struct {
	mu       sync.Mutex
	recs     map[string]Record
	bytes    int64 // Record.Bytes of every record held
	use      map[string]usage
	capacity int
	maxBytes int64
	perCount int64 // < 0: no quota; 0: the default
	perBytes int64 // < 0: no quota; 0: the default
	now      func() time.Time
}

// usage is what one principal's records hold of a [MemoryStore].
type usage struct {
	count int64
	bytes int64
}

// Bytes reports what rec counts against a store's bounds in bytes
// ([MemoryStoreOptions.MaxBytes] and PerPrincipalMaxBytes, and the quotas
// of other stores that count as it does): the bytes of its input, its
// arguments, its reason and its salt.
func (rec Record) Bytes() int64 {
	n := int64(len(rec.Input) + len(rec.Approval.Reason) + len(rec.Salt))
	for _, a := range rec.Approval.Args {
		n += int64(len(a))
	}
	return n
}

// NewMemoryStore returns an empty [MemoryStore].
func NewMemoryStore(opts MemoryStoreOptions) *MemoryStore {
	if opts.Capacity <= 0 {
		opts.Capacity = DefaultStoreCapacity
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultStoreMaxBytes
	}
	return &MemoryStore{
		recs: make(map[string]Record), use: make(map[string]usage),
		capacity: opts.Capacity, maxBytes: opts.MaxBytes,
		perCount: int64(opts.PerPrincipalCapacity), perBytes: opts.PerPrincipalMaxBytes,
		now: opts.Now,
	}
}

// limits returns the store's bounds, with the defaults of the zero
// MemoryStore filled in; a quota per principal below zero is none.
func (m *MemoryStore) limits() (capacity int, maxBytes, perCount, perBytes int64) {
	capacity, maxBytes, perCount, perBytes = m.capacity, m.maxBytes, m.perCount, m.perBytes
	if capacity <= 0 { // the zero MemoryStore
		capacity = DefaultStoreCapacity
	}
	if maxBytes <= 0 {
		maxBytes = DefaultStoreMaxBytes
	}
	if perCount == 0 {
		perCount = DefaultPerPrincipalQuota(int64(capacity))
	}
	if perBytes == 0 {
		perBytes = DefaultPerPrincipalQuota(maxBytes)
	}
	return capacity, maxBytes, perCount, perBytes
}

// refusalLocked returns why a record of size bytes from principal does not
// fit: a *QuotaError for the principal's quota, checked first, or
// ErrStoreFull for the store's; nil when it fits.
func (m *MemoryStore) refusalLocked(principal string, size int64) error {
	capacity, maxBytes, perCount, perBytes := m.limits()
	u := m.use[principal]
	switch {
	case perCount > 0 && u.count >= perCount:
		return &QuotaError{Principal: principal, Quota: QuotaCount, Limit: perCount}
	case perBytes > 0 && u.bytes+size > perBytes:
		return &QuotaError{Principal: principal, Quota: QuotaBytes, Limit: perBytes}
	case len(m.recs) >= capacity || m.bytes+size > maxBytes:
		return ErrStoreFull
	}
	return nil
}

// Save implements [ApprovalStore].
func (m *MemoryStore) Save(_ context.Context, rec Record) error {
	rec.Input = append(json.RawMessage(nil), rec.Input...)
	rec.Salt = append([]byte(nil), rec.Salt...)
	rec.Approval.Args = append([]string(nil), rec.Approval.Args...)
	rec.Approval.Confine = rec.Approval.Confine.clone()
	rec.Approval.Egress = rec.Approval.Egress.clone()
	rec.Approval.Stdin = rec.Approval.Stdin.clone()
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.recs[rec.Approval.ID]; ok {
		return ErrDuplicateID
	}
	size := rec.Bytes()
	principal := rec.Approval.Principal
	if m.refusalLocked(principal, size) != nil {
		m.pruneLocked()
		if err := m.refusalLocked(principal, size); err != nil {
			return err
		}
	}
	if m.recs == nil {
		m.recs = make(map[string]Record)
		m.use = make(map[string]usage)
	}
	m.recs[rec.Approval.ID] = rec
	m.bytes += size
	u := m.use[principal]
	m.use[principal] = usage{count: u.count + 1, bytes: u.bytes + size}
	return nil
}

// Take implements [ApprovalStore]. A record that has expired but not yet
// been dropped is removed and returned, so that the [Executor] can report it
// as expired rather than unknown.
func (m *MemoryStore) Take(_ context.Context, id string) (Record, error) {
	m.mu.Lock()
	rec, ok := m.removeLocked(id)
	m.mu.Unlock()
	if !ok {
		return Record{}, ErrNoRecord
	}
	return rec, nil
}

// removeLocked removes the record with id, if there is one.
func (m *MemoryStore) removeLocked(id string) (Record, bool) {
	rec, ok := m.recs[id]
	if ok {
		delete(m.recs, id)
		size := rec.Bytes()
		m.bytes -= size
		p := rec.Approval.Principal
		if u := m.use[p]; u.count > 1 {
			m.use[p] = usage{count: u.count - 1, bytes: u.bytes - size}
		} else {
			delete(m.use, p) // a principal with nothing pending holds no entry
		}
	}
	return rec, ok
}

// Delete implements [ApprovalStore].
func (m *MemoryStore) Delete(_ context.Context, id string) (bool, error) {
	m.mu.Lock()
	rec, ok := m.removeLocked(id)
	m.mu.Unlock()
	return ok && m.clock()().Before(rec.Approval.ExpiresAt), nil
}

// clock returns the store's clock: time.Now for the zero MemoryStore.
func (m *MemoryStore) clock() func() time.Time {
	if m.now == nil {
		return time.Now
	}
	return m.now
}

// Len reports how many records the store holds, expired ones that have not
// been dropped yet included.
func (m *MemoryStore) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.recs)
}

func (m *MemoryStore) pruneLocked() {
	now := m.clock()()
	for id, rec := range m.recs {
		if !now.Before(rec.Approval.ExpiresAt) {
			m.removeLocked(id)
		}
	}
}
