package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	// empty string means DefaultTable. Several Stores, in one process or
	// many, share pending approvals by naming the same table in the same
	// database.
	Table string
	// Capacity is the most pending records the table holds; a Save into a
	// full table fails with execgate.ErrStoreFull. Zero means
	// execgate.DefaultStoreCapacity; negative is refused. Every Store on a
	// table should use the same Capacity: each enforces its own.
	Capacity int
	// Now is the store's clock, for deciding which records have expired
	// (when Save prunes and Delete reports). Nil means time.Now. Pass the
	// Executor's clock (execgate.Config.Now) so that the store and the
	// Executor judge expiry alike; the database's clock is never used.
	Now func() time.Time
}

// Store is an execgate.ApprovalStore backed by a PostgreSQL table. It is
// safe for concurrent use by many goroutines, and by many processes whose
// Stores name the same table in the same database. See the package
// documentation for the table and how each method uses it.
type Store struct {
	pool     *pgxpool.Pool
	table    table
	capacity int
	now      func() time.Time

	lockSQL, pruneSQL, insertSQL, takeSQL, deleteSQL, countSQL string
}

// lockClass is the first key of the transaction-scoped advisory lock that
// serializes Saves on one table; the second is the table's OID. It spells
// "exeg".
const lockClass = 0x65786567

// New returns a Store on the table opts names in the database pool
// connects to. It checks that the table exists (create it with Migrate)
// and returns an error if it does not, if opts is invalid, or if the
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
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, t.quoted).Scan(&exists); err != nil {
		return nil, fmt.Errorf("pgstore: looking up table %s: %w", t.quoted, err)
	}
	if !exists {
		return nil, fmt.Errorf("pgstore: table %s does not exist; create it with Migrate", t.quoted)
	}
	q := t.quoted
	return &Store{
		pool:     pool,
		table:    t,
		capacity: opts.Capacity,
		now:      opts.Now,
		lockSQL:  `SELECT pg_advisory_xact_lock($1, $2::text::regclass::oid::int4)`,
		pruneSQL: `DELETE FROM ` + q + ` WHERE expires_at <= $1`,
		insertSQL: `INSERT INTO ` + q + ` (id, approval, input, salt, fingerprint, stdin_sha256, digest, expires_at)
			SELECT $1::text, $2::json, $3::bytea, $4::bytea, $5::text, $6::text, $7::text, $8::timestamptz
			WHERE (SELECT count(*) FROM ` + q + `) < $9`,
		takeSQL:   `DELETE FROM ` + q + ` WHERE id = $1 RETURNING approval, input, salt, fingerprint, stdin_sha256`,
		deleteSQL: `DELETE FROM ` + q + ` WHERE id = $1 RETURNING approval->>'expiresAt'`,
		countSQL:  `SELECT count(*) FROM ` + q,
	}, nil
}

// Save implements execgate.ApprovalStore. In one transaction, and one
// round trip before the commit, it takes the table's Save lock, deletes
// the records that have expired by the store's clock, and inserts rec
// unless the table still holds Capacity records, in which case it returns
// execgate.ErrStoreFull and evicts nothing. A record whose ID is already
// stored gives execgate.ErrDuplicateID. The lock serializes Saves on the
// table, across processes too, so concurrent Saves never overshoot
// Capacity; Take and Delete do not wait for it.
func (s *Store) Save(ctx context.Context, rec execgate.Record) error {
	ap, err := json.Marshal(rec.Approval)
	if err != nil {
		return fmt.Errorf("pgstore: encoding approval %s: %w", rec.Approval.ID, err)
	}
	// The columns are NOT NULL; an empty input or salt comes back as nil.
	input := append([]byte{}, rec.Input...)
	salt := append([]byte{}, rec.Salt...)
	var inserted int64
	b := &pgx.Batch{}
	// READ COMMITTED whatever the database's default, so that the count
	// below sees every Save that committed while this one waited for the
	// lock.
	b.BeginTx(pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	b.Queue(s.lockSQL, lockClass, s.table.quoted)
	b.Queue(s.pruneSQL, floorMicro(s.now()))
	b.Queue(s.insertSQL, rec.Approval.ID, ap, input, salt, rec.Fingerprint, rec.StdinSHA256,
		rec.Approval.Digest, ceilMicro(rec.Approval.ExpiresAt), s.capacity,
	).Exec(func(tag pgconn.CommandTag) error {
		inserted = tag.RowsAffected()
		return nil
	})
	br := s.pool.SendBatch(ctx, b)
	tx := br.Tx()
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // a no-op after Commit
	if err := br.Close(); err != nil {
		if isCode(err, "23505") { // unique_violation
			return execgate.ErrDuplicateID
		}
		return fmt.Errorf("pgstore: saving approval %s: %w", rec.Approval.ID, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgstore: saving approval %s: %w", rec.Approval.ID, err)
	}
	if inserted == 0 {
		return execgate.ErrStoreFull
	}
	return nil
}

// Take implements execgate.ApprovalStore with one statement,
// DELETE ... WHERE id = $1 RETURNING ..., so that of any number of
// concurrent Takes and Deletes of one ID, in any number of processes, at
// most one gets the row. It returns execgate.ErrNoRecord if there is no
// such row.
//
// A record that has expired is deleted and returned all the same, with
// its exact ExpiresAt, so that the Executor, which checks expiry again
// with its own clock, refuses it as expired rather than unknown. Code that
// calls Take itself must check ExpiresAt.
func (s *Store) Take(ctx context.Context, id string) (execgate.Record, error) {
	var ap, input, salt []byte
	var rec execgate.Record
	err := retrySerialization(func() error {
		return s.pool.QueryRow(ctx, s.takeSQL, id).Scan(&ap, &input, &salt, &rec.Fingerprint, &rec.StdinSHA256)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return execgate.Record{}, execgate.ErrNoRecord
	}
	if err != nil {
		return execgate.Record{}, fmt.Errorf("pgstore: taking approval %s: %w", id, err)
	}
	if len(input) > 0 {
		rec.Input = input
	}
	if len(salt) > 0 {
		rec.Salt = salt
	}
	// The record is consumed from here on, whatever follows.
	if err := json.Unmarshal(ap, &rec.Approval); err != nil {
		return execgate.Record{}, fmt.Errorf("pgstore: approval %s: stored envelope refused: %w", id, err)
	}
	if rec.Approval.ID != id {
		return execgate.Record{}, fmt.Errorf("pgstore: approval %s: stored envelope names another ID", id)
	}
	return rec, nil
}

// Delete implements execgate.ApprovalStore with one DELETE statement. It
// reports whether the row it removed was pending: false for an unknown
// ID, a record already taken or deleted, or one whose ExpiresAt is not
// after the store's clock (the exact, nanosecond ExpiresAt of the stored
// approval, not the rounded column).
func (s *Store) Delete(ctx context.Context, id string) (bool, error) {
	var exp string
	err := retrySerialization(func() error {
		return s.pool.QueryRow(ctx, s.deleteSQL, id).Scan(&exp)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("pgstore: deleting approval %s: %w", id, err)
	}
	at, err := time.Parse(time.RFC3339Nano, exp)
	if err != nil {
		return false, fmt.Errorf("pgstore: approval %s was deleted, but its stored expiry %q is unreadable: %w", id, exp, err)
	}
	return s.now().Before(at), nil
}

// Prune deletes the records that have expired by the store's clock and
// reports how many it deleted. Save prunes by itself whenever it runs, so
// calling Prune is never needed for correctness; it is there for callers
// who want the table kept small between Saves, on a schedule of their own.
func (s *Store) Prune(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, s.pruneSQL, floorMicro(s.now()))
	if err != nil {
		return 0, fmt.Errorf("pgstore: pruning %s: %w", s.table.quoted, err)
	}
	return tag.RowsAffected(), nil
}

// Len reports how many records the table holds, expired ones that have
// not been pruned yet included.
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
