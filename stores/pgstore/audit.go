package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit"
)

// AuditOptions configures NewAuditor.
type AuditOptions struct {
	// Table is the audit table, created beforehand by MigrateAudit: a
	// lowercase SQL identifier ([a-z_][a-z0-9_]*, at most 48 bytes),
	// optionally qualified by a schema. The empty string means
	// DefaultAuditTable. Every Auditor that names the same table in the
	// same database, in any number of processes, appends to one chain.
	Table string
	// Timeout bounds each Audit: getting a connection, waiting for the
	// table's lock and appending the entry. Zero means
	// DefaultAuditTimeout; negative is refused. An Audit that times out
	// records nothing, or, if its COMMIT had been sent, may have recorded
	// its entry (see AuditWriteError).
	Timeout time.Duration
}

// DefaultAuditTimeout is how long an Audit may take when
// AuditOptions.Timeout is zero.
const DefaultAuditTimeout = 10 * time.Second

// Auditor is an execgate.ReadyAuditor that appends one entry per
// execgate.Event to a hash-chained PostgreSQL table, which any number of
// gates, in one process or many, share as one chain. Each row holds the
// very line an audit.Chain would write to a file for the entry, so that
// VerifyAudit checks the table as audit.Verify checks a file.
//
// An entry is recorded when Audit returns nil: its transaction committed.
// The Executor hands a call's intent to Audit before it starts the call's
// process and starts nothing when Audit fails, so the table holds an
// intent for every process that started. When the database cannot be
// reached or refuses the entry, Audit returns an *AuditWriteError, and
// from then on Ready returns it too, so that the Executor refuses every
// call that needs a record (with an *execgate.AuditError) until an
// entry is recorded again: the Executor records each refusal it makes,
// and the first of those that the database takes clears the error.
//
// An Auditor is safe for concurrent use. It does not own its pool. See
// the package documentation for the table, the lock that orders the
// entries and what keeps the table append-only.
type Auditor struct {
	pool    *pgxpool.Pool
	table   auditTable
	timeout time.Duration

	headSQL, insertSQL string

	mu  sync.Mutex
	err error // the last failure; nil again once an entry is recorded
}

var _ execgate.ReadyAuditor = (*Auditor)(nil)

// auditLockSQL takes the transaction-scoped advisory lock on (lockClass,
// the table's OID) that an Audit holds while it reads the last entry and
// appends the next.
const auditLockSQL = `SELECT pg_advisory_xact_lock($1, $2::text::regclass::oid::int4)`

// NewAuditor returns an Auditor on the audit table opts names in the
// database pool connects to. It checks that the table and its triggers
// exist (create them with MigrateAudit) and that the database keeps text
// as UTF-8, and returns an error if they do not, if opts is invalid, or if
// the database cannot be reached. The Auditor does not own pool.
func NewAuditor(ctx context.Context, pool *pgxpool.Pool, opts AuditOptions) (*Auditor, error) {
	if pool == nil {
		return nil, errors.New("pgstore: NewAuditor needs a pool")
	}
	t, err := parseAuditTable(opts.Table)
	if err != nil {
		return nil, err
	}
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("pgstore: audit Timeout %v is negative", opts.Timeout)
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultAuditTimeout
	}
	if err := checkAuditTable(ctx, pool, t); err != nil {
		return nil, err
	}
	return &Auditor{
		pool:      pool,
		table:     t,
		timeout:   opts.Timeout,
		headSQL:   `SELECT seq, line_sha256 FROM ` + t.quoted + ` ORDER BY seq DESC LIMIT 1`,
		insertSQL: `INSERT INTO ` + t.quoted + ` (seq, prev_sha256, line_sha256, line) VALUES ($1, $2, $3, $4)`,
	}, nil
}

// checkAuditTable checks that t exists with its triggers, in a database
// that keeps text as UTF-8.
func checkAuditTable(ctx context.Context, pool *pgxpool.Pool, t auditTable) error {
	var (
		exists   bool
		encoding string
	)
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, current_setting('server_encoding')`, t.quoted).Scan(&exists, &encoding); err != nil {
		return fmt.Errorf("pgstore: looking up audit table %s: %w", t.quoted, err)
	}
	if !exists {
		return fmt.Errorf("pgstore: audit table %s does not exist; create it with MigrateAudit", t.quoted)
	}
	if encoding != "UTF8" {
		return fmt.Errorf("pgstore: the database's encoding is %s; an audit table needs UTF8, so that each line is kept byte for byte (create the database with ENCODING 'UTF8')", encoding)
	}
	for _, trg := range t.triggers() {
		var has bool
		if err := pool.QueryRow(ctx, hasTriggerSQL, t.quoted, trg.name).Scan(&has); err != nil {
			return fmt.Errorf("pgstore: looking up audit table %s: %w", t.quoted, err)
		}
		if !has {
			return fmt.Errorf("pgstore: audit table %s lacks its trigger %s; run MigrateAudit as the table's owner to add it", t.quoted, trg.name)
		}
	}
	return nil
}

// Audit appends ev as the next entry of the table's chain and returns nil
// once its transaction has committed. It runs one READ COMMITTED
// transaction: it takes the table's advisory lock, reads the last entry,
// makes the next line from it with audit.NextLine and inserts it. The
// lock is what orders the entries of every Auditor on the table into
// one chain; the table's insert trigger refuses a row that does not
// continue it. ctx's deadline and cancellation are not used, so that the
// outcome of a call whose context ended is still recorded; each Audit is
// bounded by AuditOptions.Timeout instead.
//
// When the entry cannot be recorded, Audit returns an *AuditWriteError,
// which Ready returns from then on until an Audit succeeds.
func (a *Auditor) Audit(ctx context.Context, ev execgate.Event) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.timeout)
	defer cancel()
	err := a.append(ctx, ev)
	a.mu.Lock()
	a.err = err
	a.mu.Unlock()
	return err
}

// append runs the transaction of one Audit.
func (a *Auditor) append(ctx context.Context, ev execgate.Event) error {
	fail := func(seq uint64, step string, state State, err error) error {
		return &AuditWriteError{Table: a.table.quoted, Seq: seq, State: state, Err: err, step: step}
	}
	conn, err := a.pool.Acquire(ctx)
	if err != nil {
		return fail(0, "getting a connection", NotApplied, err)
	}
	defer conn.Release()
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return fail(0, "beginning the transaction", NotApplied, err)
	}
	// Until the COMMIT is sent, a failure leaves nothing: the transaction
	// rolls back, or dies with its connection.
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		_ = tx.Rollback(rctx) // a no-op after Commit
	}()
	if _, err := tx.Exec(ctx, `SELECT set_config('idle_in_transaction_session_timeout', $1, true), set_config('lock_timeout', $1, true)`, strconv.FormatInt(a.timeout.Milliseconds(), 10)); err != nil {
		return fail(0, "setting the transaction's timeouts", NotApplied, err)
	}
	if _, err := tx.Exec(ctx, auditLockSQL, lockClass, a.table.quoted); err != nil {
		return fail(0, "waiting for the table's lock", NotApplied, err)
	}
	// A statement of its own, so that its snapshot is taken after the
	// lock is held: it sees the entry the previous holder committed.
	head := audit.Head{SHA256: audit.Genesis}
	var seq int64
	switch err := tx.QueryRow(ctx, a.headSQL).Scan(&seq, &head.SHA256); {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return fail(0, "reading the last entry", NotApplied, err)
	default:
		head.Seq = uint64(seq)
	}
	line, next, err := audit.NextLine(head, ev)
	if err != nil {
		return fail(head.Seq+1, "encoding the entry", NotApplied, err)
	}
	if _, err := tx.Exec(ctx, a.insertSQL, int64(next.Seq), head.SHA256, next.SHA256, string(line)); err != nil {
		return fail(next.Seq, "inserting the entry", NotApplied, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fail(next.Seq, "committing", classify(err), err)
	}
	return nil
}

// Ready reports whether the Auditor can record: nil, or the
// *AuditWriteError of the last Audit, until an Audit records an entry
// again. It does not talk to the database, so it costs nothing per call
// and never stands in the way of the Audit that recovers; a database that
// became unreachable since the last Audit is found by the next one, which
// refuses the call whose intent it was.
func (a *Auditor) Ready(context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// Head returns the end of the table's chain: its last entry's seq and the
// SHA-256 of its line, or seq 0 and audit.Genesis for an empty table.
// Keep it, now and then, somewhere the table's writers cannot change, and
// check a copy of the table against it (see ExportAudit and
// audit.VerifyAnchored), to detect entries cut from its end.
func (a *Auditor) Head(ctx context.Context) (audit.Head, error) {
	head := audit.Head{SHA256: audit.Genesis}
	var seq int64
	switch err := a.pool.QueryRow(ctx, a.headSQL).Scan(&seq, &head.SHA256); {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return audit.Head{}, fmt.Errorf("pgstore: reading the last entry of audit table %s: %w", a.table.quoted, err)
	default:
		head.Seq = uint64(seq)
	}
	return head, nil
}

// AuditWriteError is the error of an Audit that did not record its entry,
// or may not have. It says which table and entry, what is known of the
// entry and what happens next; it unwraps to the pgx or context error. It
// never holds the entry's content.
type AuditWriteError struct {
	// Table is the audit table, quoted.
	Table string
	// Seq is the seq the entry was to have, or 0 if the last entry could
	// not be read.
	Seq uint64
	// State is NotApplied when the entry is certainly not in the table,
	// and MaybeApplied when the COMMIT was sent and its answer lost: the
	// entry may be in the table. Either way the call whose intent it was
	// did not start.
	State State
	// Err is the underlying error.
	Err error
	// step says which part of the Audit failed, for the message.
	step string
}

// Error returns a message such as "pgstore: audit entry 7 of table
// "execgate_audit" not recorded: getting a connection: ...; calls that
// need a record are refused until an entry is recorded again".
func (e *AuditWriteError) Error() string {
	var b strings.Builder
	b.WriteString("pgstore: audit entry ")
	if e.Seq != 0 {
		b.WriteString(strconv.FormatUint(e.Seq, 10))
		b.WriteString(" ")
	}
	b.WriteString("of table ")
	b.WriteString(e.Table)
	if e.State == MaybeApplied {
		b.WriteString(" may have been recorded")
	} else {
		b.WriteString(" not recorded")
	}
	b.WriteString(": ")
	b.WriteString(e.step)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	b.WriteString("; calls that need a record are refused until the database records an entry again")
	return b.String()
}

// Unwrap returns the underlying error.
func (e *AuditWriteError) Unwrap() error { return e.Err }
