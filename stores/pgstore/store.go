package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execgate/execgate"
)

// Options configures New.
type Options struct {
	// Table is the table that holds the records, created beforehand by
	// Migrate: a lowercase SQL identifier ([a-z_][a-z0-9_]*, at most 48
	// bytes), optionally qualified by a schema ("approvals.pending"). The
	// empty string means DefaultTable. Migrate creates the table of
	// consumed records' markers beside it, named Table with "_spent"
	// appended. Several Stores, in one process or many, share pending
	// approvals by naming the same table in the same database.
	Table string
	// Capacity is the most pending records the table holds; a Save into a
	// full table fails with execgate.ErrStoreFull. Zero means
	// execgate.DefaultStoreCapacity; negative is refused. Every Store on a
	// table should use the same Capacity: each enforces its own.
	Capacity int
	// PerPrincipalCapacity is the most pending records one principal (the
	// record's Approval.Principal) may hold in the table; a Save past it
	// fails with an *execgate.QuotaError naming the principal. Every
	// record without a principal counts against one shared quota, that of
	// "". Zero means execgate.DefaultPerPrincipalQuota(Capacity), a
	// quarter; negative means no quota per principal, only Capacity.
	PerPrincipalCapacity int
	// PerPrincipalMaxBytes is the most bytes one principal's pending
	// records may hold, each counted as execgate.Record.Bytes counts it
	// (input, arguments, reason and salt); a Save past it fails with an
	// *execgate.QuotaError. Zero means
	// execgate.DefaultPerPrincipalQuota(execgate.DefaultStoreMaxBytes), a
	// quarter of the memory store's byte budget; negative means no quota
	// in bytes. Every Store on a table should use the same quotas: each
	// enforces its own.
	PerPrincipalMaxBytes int64
	// Now is the store's clock, for deciding which records have expired
	// (when Save prunes and Delete reports). Nil means time.Now. Pass the
	// Executor's clock (execgate.Config.Now) so that the store and the
	// Executor judge expiry alike; the database's clock is never used.
	Now func() time.Time
}

// Store is an execgate.ApprovalStore backed by a PostgreSQL table. It is
// safe for concurrent use by many goroutines, and by many processes whose
// Stores name the same table in the same database. See the package
// documentation for the tables, how each method uses them, and what its
// errors say.
type Store struct {
	pool     *pgxpool.Pool
	table    table
	capacity int
	perCount int64 // < 0: no quota per principal
	perBytes int64 // < 0: no quota per principal
	now      func() time.Time

	lockSQL, pruneSQL, saveSQL, takeSQL, deleteSQL, countSQL string
}

// ConsumedRetention is how long after its ExpiresAt the marker of a
// record that was taken or deleted is kept. While the marker is there, a
// Save of the same ID (a retry after an unknown outcome, say) finds it and
// does not store the record again; after it, the record has been expired
// for ConsumedRetention, so that a record stored again could only be
// refused as expired by an Executor whose clock is less than that behind
// the store's.
const ConsumedRetention = time.Hour

// rollbackTimeout bounds the rollback Save sends when it gives up on its
// transaction, so that a database that stopped answering cannot hold the
// call; a rollback that times out closes the connection, which rolls the
// transaction back as well.
const rollbackTimeout = 5 * time.Second

// lockClass is the first key of the transaction-scoped advisory lock that
// serializes Saves on one table; the second is the table's OID. It spells
// "exeg".
const lockClass = 0x65786567

// New returns a Store on the table opts names in the database pool
// connects to. It checks that the table and its marker table exist as
// this version keeps them (create or upgrade them with Migrate) and
// returns an error if they do not, if opts is invalid, or if the
// database cannot be reached. The Store does not own pool: close the pool
// when no Store uses it any more.
func New(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Store, error) {
	if pool == nil {
		return nil, errors.New("pgstore: New needs a pool")
	}
	t, err := parseTable(opts.Table)
	if err != nil {
		return nil, err
	}
	if opts.Capacity < 0 {
		return nil, fmt.Errorf("pgstore: Capacity %d is negative", opts.Capacity)
	}
	if opts.Capacity == 0 {
		opts.Capacity = execgate.DefaultStoreCapacity
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	perCount, perBytes := int64(opts.PerPrincipalCapacity), opts.PerPrincipalMaxBytes
	if perCount == 0 {
		perCount = execgate.DefaultPerPrincipalQuota(int64(opts.Capacity))
	}
	if perBytes == 0 {
		perBytes = execgate.DefaultPerPrincipalQuota(execgate.DefaultStoreMaxBytes)
	}
	var exists, spentExists, hasColumn bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL`,
		t.quoted, t.spent).Scan(&exists, &spentExists); err != nil {
		return nil, fmt.Errorf("pgstore: looking up table %s: %w", t.quoted, err)
	}
	if !exists {
		return nil, fmt.Errorf("pgstore: table %s does not exist; create it with Migrate", t.quoted)
	}
	if err := pool.QueryRow(ctx, hasColumnSQL, t.quoted).Scan(&hasColumn); err != nil {
		return nil, fmt.Errorf("pgstore: looking up table %s: %w", t.quoted, err)
	}
	if !spentExists || !hasColumn {
		return nil, fmt.Errorf("pgstore: table %s was made by an earlier version of this package (it lacks one of the columns %s or the table %s); run Migrate to add them", t.quoted, strings.Join(laterColumns, ", "), t.spent)
	}
	q, spent := t.quoted, t.spent
	return &Store{
		pool:     pool,
		table:    t,
		capacity: opts.Capacity,
		perCount: perCount,
		perBytes: perBytes,
		now:      opts.Now,
		lockSQL:  `SELECT pg_advisory_xact_lock($1, $2::text::regclass::oid::int4)`,
		// Expired records go at once, the markers of consumed ones
		// ConsumedRetention after their expiry. The command tag counts
		// the records.
		pruneSQL: `WITH spent AS (DELETE FROM ` + spent + ` WHERE expires_at <= $2)
			DELETE FROM ` + q + ` WHERE expires_at <= $1`,
		// One statement, one snapshot: the rows already under the ID,
		// pending or a consumed record's marker, what the principal's
		// pending rows hold, and the insert, made only when there is no
		// row under the ID, the principal's quotas have room ($12 and
		// $13; negative for none) and the table has room. Save holds the
		// table's Save lock, so no other Save adds the ID, or a row of
		// the principal, meanwhile; Take and Delete turn a pending row
		// into a marker in one transaction, so a snapshot sees one or
		// the other.
		saveSQL: `WITH cur AS (
			SELECT content_sha256 FROM ` + q + ` WHERE id = $1
			UNION ALL
			SELECT content_sha256 FROM ` + spent + ` WHERE id = $1
		), mine AS (
			SELECT count(*) AS n, coalesce(sum(record_bytes), 0) AS b FROM ` + q + ` WHERE principal = $11::text
		), fits AS (
			SELECT $12::bigint < 0 OR n < $12::bigint AS count_ok,
				$13::bigint < 0 OR b + $14::bigint <= $13::bigint AS bytes_ok FROM mine
		), ins AS (
			INSERT INTO ` + q + ` (id, approval, input, salt, fingerprint, stdin_sha256, digest, expires_at, content_sha256, principal, record_bytes)
			SELECT $1::text, $2::json, $3::bytea, $4::bytea, $5::text, $6::text, $7::text, $8::timestamptz, $9::bytea, $11::text, $14::bigint
			WHERE NOT EXISTS (SELECT FROM cur) AND (SELECT count_ok AND bytes_ok FROM fits)
				AND (SELECT count(*) FROM ` + q + `) < $10
			RETURNING 1
		) SELECT EXISTS (SELECT FROM ins), EXISTS (SELECT FROM cur),
			coalesce((SELECT bool_and(coalesce(content_sha256 = $9::bytea, false)) FROM cur), false),
			(SELECT count_ok FROM fits), (SELECT bytes_ok FROM fits)`,
		// Take and Delete delete the row and leave its marker, in one
		// statement: of concurrent DELETEs of one row, one deletes it.
		takeSQL: `WITH gone AS (
			DELETE FROM ` + q + ` WHERE id = $1 RETURNING id, approval, input, salt, fingerprint, stdin_sha256, content_sha256, expires_at
		), marker AS (` + markSQL(spent) + `)
		SELECT approval, input, salt, fingerprint, stdin_sha256 FROM gone`,
		deleteSQL: `WITH gone AS (
			DELETE FROM ` + q + ` WHERE id = $1 RETURNING id, approval, content_sha256, expires_at
		), marker AS (` + markSQL(spent) + `)
		SELECT approval->>'expiresAt' FROM gone`,
		countSQL: `SELECT count(*) FROM ` + q,
	}, nil
}

// markSQL inserts the marker of the row a CTE named gone deleted. A
// marker that is there already (left by a row that a writer other than
// Save put back under a spent ID) stays as it is: the ID is spent either
// way.
func markSQL(spent string) string {
	return `INSERT INTO ` + spent + ` (id, content_sha256, expires_at)
			SELECT id, content_sha256, expires_at FROM gone ON CONFLICT (id) DO NOTHING`
}

// Save implements execgate.ApprovalStore. In one transaction, and one
// round trip before the commit, it takes the table's Save lock, deletes
// the records that have expired by the store's clock (and the markers of
// consumed records ConsumedRetention after their expiry), and inserts rec
// unless rec's principal (Approval.Principal; "" is one shared principal)
// already holds Options.PerPrincipalCapacity pending records, or would
// hold more than Options.PerPrincipalMaxBytes with rec, in which case it
// returns an *execgate.QuotaError naming the principal, or the table
// still holds Capacity pending records, in which case it returns
// execgate.ErrStoreFull; it evicts nothing. The lock,
// pg_advisory_xact_lock on the table, serializes Saves on the table,
// across processes too, and so the Saves of any one principal, so
// concurrent Saves never overshoot Capacity or a principal's quota; Take
// and Delete do not wait for it.
//
// Save is idempotent by ID: if rec's ID is already there, pending or in
// the marker a Take or Delete left, Save stores nothing and returns nil
// when it holds this very record (the same envelope, input, salt and
// hashes, compared by a SHA-256 of them), and execgate.ErrDuplicateID
// when it holds another. So a Save whose outcome
// was unknown can be retried with the same record: the retry stores it
// if the first attempt did not, finds it if it did, and never makes a
// record that was taken or deleted pending again.
//
// Any other error is a *StateError saying whether rec may have been
// stored: NotApplied for a failure before the COMMIT was sent (the
// transaction cannot commit then) or a COMMIT the database refused,
// MaybeApplied for a COMMIT whose answer was lost.
func (s *Store) Save(ctx context.Context, rec execgate.Record) error {
	id := rec.Approval.ID
	ap, err := json.Marshal(rec.Approval)
	if err != nil {
		return &StateError{Op: OpSave, ID: id, State: NotApplied, Err: err, step: "encoding the approval"}
	}
	// The columns are NOT NULL; an empty input or salt comes back as nil.
	input := append([]byte{}, rec.Input...)
	salt := append([]byte{}, rec.Salt...)
	sum := contentSHA256(id, ap, input, salt, rec.Fingerprint, rec.StdinSHA256)
	now := floorMicro(s.now())

	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return acquireFailed(OpSave, id, err)
	}
	defer conn.Release()
	var inserted, found, same, countOK, bytesOK bool
	principal, size := rec.Approval.Principal, rec.Bytes()
	b := &pgx.Batch{}
	// READ COMMITTED whatever the database's default, so that the
	// statements below see every Save that committed while this one
	// waited for the lock.
	b.BeginTx(pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	b.Queue(s.lockSQL, lockClass, s.table.quoted)
	b.Queue(s.pruneSQL, now, now.Add(-ConsumedRetention))
	b.Queue(s.saveSQL, id, ap, input, salt, rec.Fingerprint, rec.StdinSHA256,
		rec.Approval.Digest, ceilMicro(rec.Approval.ExpiresAt), sum, s.capacity,
		principal, s.perCount, s.perBytes, size,
	).QueryRow(func(row pgx.Row) error {
		return row.Scan(&inserted, &found, &same, &countOK, &bytesOK)
	})
	br := conn.SendBatch(ctx, b)
	tx := br.Tx()
	defer func() { // a no-op after Commit
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		_ = tx.Rollback(rctx)
	}()
	if err := br.Close(); err != nil {
		if isCode(err, "23505") { // unique_violation: a row added without the lock
			return execgate.ErrDuplicateID
		}
		// The COMMIT was not sent, so the transaction did not commit:
		// the server rolls it back, when the rollback above does not
		// reach it, as soon as it sees the connection gone.
		return &StateError{Op: OpSave, ID: id, State: NotApplied, Err: err, step: "before the COMMIT was sent"}
	}
	var outcome error
	switch {
	case found && !same:
		outcome = execgate.ErrDuplicateID
	case found:
		outcome = nil // this very record, stored before
	case !inserted && !countOK:
		outcome = &execgate.QuotaError{Principal: principal, Quota: execgate.QuotaCount, Limit: s.perCount}
	case !inserted && !bytesOK:
		outcome = &execgate.QuotaError{Principal: principal, Quota: execgate.QuotaBytes, Limit: s.perBytes}
	case !inserted:
		outcome = execgate.ErrStoreFull
	}
	if err := tx.Commit(ctx); err != nil {
		if !inserted {
			// Only the prune was left to commit; what there is to know
			// about rec was known before the COMMIT.
			return outcome
		}
		return failure(OpSave, id, "committing", err)
	}
	return outcome
}

// contentSHA256 is the SHA-256 of everything Save stores for a record, each
// field prefixed with its length. Save stores it with the record, Take and
// Delete keep it in the record's marker, and a retried Save compares it
// with the row or marker it finds.
func contentSHA256(id string, approval, input, salt []byte, fingerprint, stdinSHA256 string) []byte {
	h := sha256.New()
	h.Write([]byte("execgate pgstore record v1\x00"))
	for _, f := range [][]byte{[]byte(id), approval, input, salt, []byte(fingerprint), []byte(stdinSHA256)} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write(f)
	}
	return h.Sum(nil)
}

// Take implements execgate.ApprovalStore with one statement,
// DELETE ... WHERE id = $1 RETURNING ..., that also leaves the record's
// marker (its ID, content hash and expiry) in the marker table, so that
// of any number of concurrent Takes and Deletes of one ID, in any number
// of processes, at most one gets the record. It returns
// execgate.ErrNoRecord if there is no pending record with that ID. The
// marker keeps a retried Save from storing the record again (see Save)
// until ConsumedRetention after its expiry.
//
// A record that has expired is consumed and returned all the same, with
// its exact ExpiresAt, so that the Executor, which checks expiry again
// with its own clock, refuses it as expired rather than unknown. Code that
// calls Take itself must check ExpiresAt.
//
// Any other error is a *StateError: NotApplied when the statement did not
// run (no connection, a context done before sending, an error from the
// database), MaybeApplied when it was sent and its answer was lost, in
// which case the record may be consumed without having been returned,
// and Applied when the record was consumed but its stored envelope could
// not be read. A record is returned only once the database has confirmed
// the statement, so it can never be both returned and left pending.
func (s *Store) Take(ctx context.Context, id string) (execgate.Record, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return execgate.Record{}, acquireFailed(OpTake, id, err)
	}
	defer conn.Release()
	var ap, input, salt []byte
	var rec execgate.Record
	err = retrySerialization(func() error {
		return conn.QueryRow(ctx, s.takeSQL, id).Scan(&ap, &input, &salt, &rec.Fingerprint, &rec.StdinSHA256)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return execgate.Record{}, execgate.ErrNoRecord
	}
	if err != nil {
		return execgate.Record{}, failure(OpTake, id, "taking the record", err)
	}
	if len(input) > 0 {
		rec.Input = input
	}
	if len(salt) > 0 {
		rec.Salt = salt
	}
	// The record is consumed from here on, whatever follows.
	if err := json.Unmarshal(ap, &rec.Approval); err != nil {
		return execgate.Record{}, &StateError{Op: OpTake, ID: id, State: Applied, Err: err, step: "the stored envelope is refused"}
	}
	if rec.Approval.ID != id {
		return execgate.Record{}, &StateError{Op: OpTake, ID: id, State: Applied, step: "the stored envelope names another ID"}
	}
	return rec, nil
}

// Delete implements execgate.ApprovalStore with one statement that
// deletes the row and leaves its marker, as Take does. It reports whether
// the record it removed was pending: false for an unknown ID, a record
// already taken or deleted, or one whose ExpiresAt is not after the
// store's clock (the exact, nanosecond ExpiresAt of the stored approval,
// not the rounded column). Its errors are *StateErrors, as Take's are.
func (s *Store) Delete(ctx context.Context, id string) (bool, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, acquireFailed(OpDelete, id, err)
	}
	defer conn.Release()
	var exp string
	err = retrySerialization(func() error {
		return conn.QueryRow(ctx, s.deleteSQL, id).Scan(&exp)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, failure(OpDelete, id, "deleting the record", err)
	}
	at, err := time.Parse(time.RFC3339Nano, exp)
	if err != nil {
		return false, &StateError{Op: OpDelete, ID: id, State: Applied, Err: err, step: "the stored expiry is unreadable"}
	}
	return s.now().Before(at), nil
}

// Prune deletes the records that have expired by the store's clock, and
// the markers of consumed records ConsumedRetention after their expiry,
// and reports how many records it deleted. Save prunes by itself whenever
// it runs, so calling Prune is never needed for correctness; it is there
// for callers who want the tables kept small between Saves, on a schedule
// of their own.
func (s *Store) Prune(ctx context.Context) (int64, error) {
	now := floorMicro(s.now())
	tag, err := s.pool.Exec(ctx, s.pruneSQL, now, now.Add(-ConsumedRetention))
	if err != nil {
		return 0, fmt.Errorf("pgstore: pruning %s: %w", s.table.quoted, err)
	}
	return tag.RowsAffected(), nil
}

// Len reports how many records the table holds, expired ones that have
// not been pruned yet included. Markers of consumed records are not
// records and are not counted.
func (s *Store) Len(ctx context.Context) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, s.countSQL).Scan(&n); err != nil {
		return 0, fmt.Errorf("pgstore: counting %s: %w", s.table.quoted, err)
	}
	return n, nil
}

// retrySerialization runs f again, a few times, while it fails with a
// serialization failure. Take and Delete are single DELETE statements: at
// PostgreSQL's default isolation level, READ COMMITTED, one that loses a
// race deletes nothing; where the database's default is REPEATABLE READ or
// SERIALIZABLE it fails instead, having changed nothing, and running it
// again gives the READ COMMITTED answer.
func retrySerialization(f func() error) error {
	const attempts = 5
	var err error
	for range attempts {
		if err = f(); !isCode(err, "40001") { // serialization_failure
			return err
		}
	}
	return err
}

func isCode(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// floorMicro rounds t down to a whole microsecond, PostgreSQL's precision.
// The store compares "now" rounded down with expiry rounded up
// (ceilMicro), so that a record is never pruned before its exact
// ExpiresAt; it may be counted as pending for less than a microsecond
// after it.
func floorMicro(t time.Time) time.Time {
	return t.Truncate(time.Microsecond)
}

// ceilMicro rounds t up to a whole microsecond.
func ceilMicro(t time.Time) time.Time {
	f := t.Truncate(time.Microsecond)
	if f.Before(t) {
		f = f.Add(time.Microsecond)
	}
	return f
}
