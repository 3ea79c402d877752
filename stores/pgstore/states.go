package pgstore

import (
	"context"
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

// The states of an approval in a [States] table. They are the words the
// execgate binary shows (its GET /v1/approvals/{id}); States gives
// meaning to these four, and stores the others as it is handed them.
const (
	// StatePending is an approval no one has decided and that has not
	// expired.
	StatePending = "pending"
	// StateApproved is an approved call whose Result waits for its
	// proposer to claim it.
	StateApproved = "approved"
	// StateClaimed is an approved call whose Result its proposer got.
	StateClaimed = "claimed"
	// StateDropped is an approved call whose Result was not kept.
	StateDropped = "dropped"
	// StateExpired is an approval that expired undecided.
	StateExpired = "expired"
	// StateFailed is an approved call that did not run, or, for one an
	// approver took and never settled, whose outcome is not known.
	StateFailed = "failed"
)

// abandonedErr is the refusal kept for an approval whose approver took
// it and never settled it (its process ended), in the form the execgate
// binary keeps refusals.
const abandonedErr = `{"kind":"internal","message":"execgate: the server that took this approval to run it stopped before recording the outcome: the call ran at most once, and the audit trail says whether it ran"}`

// ErrTooManyPending is returned by [States.Add] when the table holds as
// many open approvals as the limit it is given.
var ErrTooManyPending = errors.New("pgstore: too many approvals are pending")

// States keeps, beside a [Store]'s table, what a server shows of the
// approvals it issued: the pending ones, for approvers to list and
// decide, and what became of each (approved, rejected, expired, failed),
// with the Result of an approved call until its proposer claims it. It
// is safe for concurrent use by many goroutines and by many processes
// whose States name the same table in the same database: each decision
// is taken by one of them (see [States.Take]), each Result claimed by
// one (see [States.Claim]).
//
// Its table is the Store's table name with "_states" appended, made by
// [MigrateStates]. Whether an approval has expired, a lease lapsed or an
// outcome's time passed is judged by the database's clock (now()), so
// that replicas whose clocks differ judge alike; the times it is given
// are the caller's, kept as when a decision was made.
type States struct {
	pool   *pgxpool.Pool
	quoted string
	// The bounds of the Results kept, resolved (see ResultBounds): < 0
	// is no bound.
	maxResultBytes, perResultBytes int64
}

// DefaultResultBytes is the bound of the bytes of the Results a [States]
// table keeps, all principals' together, when its [ResultBounds] set
// none: the memory store's byte budget, as the execgate binary keeps in
// memory.
const DefaultResultBytes = execgate.DefaultStoreMaxBytes

// ResultBounds bounds the bytes of the Results of approved calls a
// [States] table keeps for their proposers to claim, each counted as
// its [Settlement.ResultSize]. They are kept within each bound by
// dropping Results, never by refusing the settle of a call that ran: a
// principal over its share drops its own oldest Results, and beyond the
// total the principal that holds the most bytes drops its oldest, so
// that one principal's Results never push out another's while it holds
// more than its share. An approval whose Result was dropped reads
// [StateDropped]. See [States.Settle].
type ResultBounds struct {
	// MaxBytes bounds the bytes of the Results of all principals. Zero
	// means [DefaultResultBytes]; negative means no total bound.
	MaxBytes int64
	// PerPrincipalMaxBytes bounds the bytes of the Results of one
	// principal (the approval's Approval.Principal; those without one
	// share the bound of ""). Zero means
	// execgate.DefaultPerPrincipalQuota(MaxBytes), a quarter (of
	// [DefaultResultBytes] when MaxBytes sets no bound); negative means no
	// bound per principal.
	PerPrincipalMaxBytes int64
}

// resolve returns b's bounds with their defaults, < 0 for none.
func (b ResultBounds) resolve() (total, per int64) {
	total, per = b.MaxBytes, b.PerPrincipalMaxBytes
	if total == 0 {
		total = DefaultResultBytes
	}
	if per == 0 {
		per = execgate.DefaultPerPrincipalQuota(DefaultResultBytes)
		if total > 0 {
			per = execgate.DefaultPerPrincipalQuota(total)
		}
	}
	return total, per
}

// WithResultBounds returns States on the same table that keep the
// Results within b; s is left as it is. Every States on a table should
// use the same bounds: each enforces its own when it stores a Result.
func (s *States) WithResultBounds(b ResultBounds) *States {
	c := *s
	c.maxResultBytes, c.perResultBytes = b.resolve()
	return &c
}

// StateEntry is one approval of a [States] table and what became of it.
type StateEntry struct {
	// Approval is the approval as it was issued.
	Approval execgate.Approval
	// State is its state: [StatePending], a decision's, or the state
	// handed to [States.Settle].
	State string
	// Taken reports that an approver took it to decide (see
	// [States.Take]) and has not settled it yet.
	Taken bool
	// Owner is the owner of the lease it was taken under, while it is
	// taken; "" otherwise.
	Owner string
	// Result is the Result of an approved call as JSON, until it is
	// claimed or dropped; nil otherwise.
	Result json.RawMessage
	// TraceID is the approved call's Result ID, kept after the claim.
	TraceID string
	// Err is, as JSON, why an approved call did not run; nil otherwise.
	Err json.RawMessage
	// Finished is when it was decided or expired, Forget when it is
	// forgotten; both zero while it is open.
	Finished, Forget time.Time
}

// statesTable returns the quoted name of the States table of table and
// of its index.
func statesTable(table string) (quoted, index string, err error) {
	return statesIndex(table, "_st_open_idx")
}

// statesIndex returns the quoted name of the States table of table and
// the unqualified name of its index whose name ends with suffix.
func statesIndex(table, suffix string) (quoted, index string, err error) {
	if _, err := parseTable(table); err != nil {
		return "", "", err
	}
	if table == "" {
		table = DefaultTable
	}
	schema, tbl, qualified := strings.Cut(table, ".")
	if !qualified {
		return pgx.Identifier{table + "_states"}.Sanitize(), pgx.Identifier{table + suffix}.Sanitize(), nil
	}
	return pgx.Identifier{schema, tbl + "_states"}.Sanitize(), pgx.Identifier{tbl + suffix}.Sanitize(), nil
}

// MigrateStates creates the States table of table (its name with
// "_states" appended) if it does not exist, and adds to a table made by
// an older version the columns it lacks. It is idempotent and safe to
// run from many processes at once.
func MigrateStates(ctx context.Context, pool *pgxpool.Pool, table string) error {
	if pool == nil {
		return errors.New("pgstore: MigrateStates needs a pool")
	}
	q, idx, err := statesTable(table)
	if err != nil {
		return err
	}
	_, forgetIdx, err := statesIndex(table, "_st_forget_idx")
	if err != nil {
		return err
	}
	return migrateIn(ctx, pool, q, func(tx pgx.Tx) error {
		if err := execAll(ctx, tx,
			`CREATE TABLE IF NOT EXISTS `+q+` (
	id          text        PRIMARY KEY,
	approval    json        NOT NULL,
	principal   text        NOT NULL,
	created_at  timestamptz NOT NULL,
	expires_at  timestamptz NOT NULL,
	state       text        NOT NULL,
	taken       boolean     NOT NULL DEFAULT false,
	owner       text        NOT NULL DEFAULT '',
	lease_until timestamptz,
	result      json,
	result_size bigint      NOT NULL DEFAULT 0,
	trace_id    text        NOT NULL DEFAULT '',
	err         json,
	finished    timestamptz,
	forget      timestamptz
)`,
			`CREATE INDEX IF NOT EXISTS `+idx+` ON `+q+` (finished, created_at)`,
		); err != nil {
			return err
		}
		// Tables made before approvals were taken under a lease. ALTER
		// TABLE locks the table, which every replica's calls use, even
		// when it has nothing to add: it runs only for a table that
		// lacks a column.
		var has bool
		if err := tx.QueryRow(ctx, statesLeaseColumnsSQL, q).Scan(&has); err != nil {
			return err
		}
		if !has {
			if err := execAll(ctx, tx,
				`ALTER TABLE `+q+` ADD COLUMN IF NOT EXISTS owner text NOT NULL DEFAULT ''`,
				`ALTER TABLE `+q+` ADD COLUMN IF NOT EXISTS lease_until timestamptz`,
			); err != nil {
				return err
			}
		}
		// The expiry's DELETE of the outcomes whose time has passed.
		return execAll(ctx, tx, `CREATE INDEX IF NOT EXISTS `+forgetIdx+` ON `+q+` (forget) WHERE forget IS NOT NULL`)
	})
}

// statesLeaseColumnsSQL reports whether a States table has the columns
// of leases.
var statesLeaseColumnsSQL = hasColumnsSQL([]string{"owner", "lease_until"})

// NewStates returns the States of table in the database pool connects
// to, checking that its table exists (create it with [MigrateStates]).
// It keeps Results within the default [ResultBounds] (see
// [States.WithResultBounds]). It does not own pool.
func NewStates(ctx context.Context, pool *pgxpool.Pool, table string) (*States, error) {
	if pool == nil {
		return nil, errors.New("pgstore: NewStates needs a pool")
	}
	q, _, err := statesTable(table)
	if err != nil {
		return nil, err
	}
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, q).Scan(&exists); err != nil {
		return nil, fmt.Errorf("pgstore: looking up table %s: %w", q, err)
	}
	if !exists {
		return nil, fmt.Errorf("pgstore: table %s does not exist; create it with MigrateStates", q)
	}
	total, per := ResultBounds{}.resolve()
	return &States{pool: pool, quoted: q, maxResultBytes: total, perResultBytes: per}, nil
}

// lifetimeSQL is how long an outcome is kept once decided or expired:
// as long as the approval was valid.
const lifetimeSQL = `(expires_at - created_at)`

// Add keeps ap as pending, unless the table holds maxOpen approvals that
// are neither decided nor expired at now, when it returns
// [ErrTooManyPending]. Adds on one table are serialized by a
// transaction-scoped advisory lock, so that the count and the insert see
// the same table; an ID already there is left as it is.
func (s *States) Add(ctx context.Context, ap execgate.Approval, now time.Time, maxOpen int) error {
	b, err := json.Marshal(ap)
	if err != nil {
		return fmt.Errorf("pgstore: encoding approval %s: %w", ap.ID, err)
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if err := s.lock(ctx, tx); err != nil {
			return err
		}
		if err := s.expire(ctx, tx); err != nil {
			return err
		}
		var open int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+s.quoted+` WHERE finished IS NULL`).Scan(&open); err != nil {
			return err
		}
		if open >= maxOpen {
			return ErrTooManyPending
		}
		_, err := tx.Exec(ctx, `INSERT INTO `+s.quoted+` (id, approval, principal, created_at, expires_at, state)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
			ap.ID, b, ap.Principal, ap.CreatedAt, ap.ExpiresAt, StatePending)
		return err
	})
}

// expire marks the open approvals no approver took whose time has
// passed expired, marks failed those an approver took whose lease (see
// [Lease]) lapsed unsettled (its owner stopped, or lost the database for
// longer than the lease), and deletes the outcomes whose time has
// passed, each by the database's clock, so that every replica judges
// alike whatever its own clock says. A row taken by a version that gave
// no lease is failed once the approval's lifetime has passed again
// after its expiry.
func (s *States) expire(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `UPDATE `+s.quoted+` SET state = $1, finished = expires_at, forget = expires_at + `+lifetimeSQL+`
		WHERE finished IS NULL AND NOT taken AND expires_at <= now()`, StateExpired); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE `+s.quoted+` SET state = $1, taken = false, err = $2::json, finished = now(), forget = now() + `+lifetimeSQL+`
		WHERE finished IS NULL AND taken AND (lease_until <= now() OR (lease_until IS NULL AND expires_at + `+lifetimeSQL+` <= now()))`, StateFailed, abandonedErr); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM `+s.quoted+` WHERE forget <= now()`)
	return err
}

// Expire marks the approvals that expired undecided expired, and those
// whose lease lapsed failed, and forgets the outcomes whose time has
// passed, all by the database's clock; now is the caller's time, which
// does not decide expiry.
func (s *States) Expire(ctx context.Context, now time.Time) error {
	return s.inTx(ctx, func(tx pgx.Tx) error { return s.expire(ctx, tx) })
}

// List returns the approvals that wait for a decision, oldest first:
// open, taken by no approver, not expired by the database's clock.
func (s *States) List(ctx context.Context, now time.Time) ([]execgate.Approval, error) {
	if err := s.Expire(ctx, now); err != nil {
		return nil, fmt.Errorf("pgstore: listing approvals: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT approval FROM `+s.quoted+`
		WHERE finished IS NULL AND NOT taken AND expires_at > now() ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("pgstore: listing approvals: %w", err)
	}
	out := []execgate.Approval{}
	for rows.Next() {
		var raw []byte
		var ap execgate.Approval
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("pgstore: listing approvals: %w", err)
		}
		if err := json.Unmarshal(raw, &ap); err != nil {
			return nil, fmt.Errorf("pgstore: listing approvals: %w", err)
		}
		out = append(out, ap)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: listing approvals: %w", err)
	}
	return out, nil
}

// Lease names who took an approval (see [States.Take]) and for how
// long it answers for it. While the lease runs the approval is the
// owner's alone: only the owner settles ([States.Settle]), releases
// ([States.Release]) or renews it ([States.Renew]), however long its
// call runs. Once the lease has lapsed unsettled, by the database's
// clock, the owner is taken to have stopped and the approval reads
// [StateFailed].
type Lease struct {
	// Owner identifies the taker, a process say: a random ID made when
	// it starts, never empty.
	Owner string
	// For is how long the lease runs from each Take or Renew; it must
	// be positive. An owner that runs a call longer renews the lease
	// well before it lapses.
	For time.Duration
}

func (l Lease) check() error {
	if l.Owner == "" || l.For <= 0 {
		return errors.New("pgstore: a lease needs an owner and a positive duration")
	}
	return nil
}

// Take hands the pending approval with the given ID to one approver, if
// check accepts it, marking it taken under lease and giving it state
// when state is not "": exactly one caller of any process gets it. It
// reports false when no such approval is pending, unexpired by the
// database's clock; now is the caller's time. An error from
// check leaves it pending and is returned.
//
// Take's SELECT ... FOR UPDATE locks the approval's row until its
// transaction ends; a concurrent Take of the same ID waits for that lock
// and, under READ COMMITTED, evaluates its condition again on the row as
// the winner left it, taken, and finds nothing.
func (s *States) Take(ctx context.Context, id string, now time.Time, state string, lease Lease, check func(execgate.Approval) error) (execgate.Approval, bool, error) {
	if err := lease.check(); err != nil {
		return execgate.Approval{}, false, err
	}
	var (
		ap    execgate.Approval
		found bool
		cerr  error
	)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		found, cerr = false, nil
		var raw []byte
		err := tx.QueryRow(ctx, `SELECT approval FROM `+s.quoted+`
			WHERE id = $1 AND finished IS NULL AND NOT taken AND expires_at > now() FOR UPDATE`, id).Scan(&raw)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &ap); err != nil {
			return err
		}
		found = true
		if cerr = check(ap); cerr != nil {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE `+s.quoted+` SET taken = true, state = CASE WHEN $2 = '' THEN state ELSE $2 END,
			owner = $3, lease_until = now() + $4::interval WHERE id = $1`, id, state, lease.Owner, lease.For)
		return err
	})
	if err != nil {
		return execgate.Approval{}, false, fmt.Errorf("pgstore: taking approval %s: %w", id, err)
	}
	if !found || cerr != nil {
		return execgate.Approval{}, found, cerr
	}
	return ap, true, nil
}

// Renew extends the lease of owner's take of the approval with the
// given ID to lease.For from now, by the database's clock, and reports
// whether owner still holds it: false once it is settled, released, or
// its lease has lapsed (the approval then reads failed).
func (s *States) Renew(ctx context.Context, id string, lease Lease) (bool, error) {
	if err := lease.check(); err != nil {
		return false, err
	}
	var tag pgconn.CommandTag
	err := retrySerialization(func() (err error) {
		tag, err = s.pool.Exec(ctx, `UPDATE `+s.quoted+` SET lease_until = now() + $3::interval
		WHERE id = $1 AND taken AND finished IS NULL AND owner = $2 AND lease_until > now()`, id, lease.Owner, lease.For)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("pgstore: renewing the lease of approval %s: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Release puts the approval with the given ID, taken by owner and not
// settled, back to [StatePending], listed and takeable again: for an
// approver whose decision could not take the Store's record (the record
// is still pending). One UPDATE; a settled approval, or one another
// owner took, is left as it is.
func (s *States) Release(ctx context.Context, id, owner string) error {
	if err := retrySerialization(func() error {
		_, err := s.pool.Exec(ctx, `UPDATE `+s.quoted+` SET taken = false, state = $2, owner = '', lease_until = NULL
		WHERE id = $1 AND taken AND finished IS NULL AND owner = $3`, id, StatePending, owner)
		return err
	}); err != nil {
		return fmt.Errorf("pgstore: putting back approval %s: %w", id, err)
	}
	return nil
}

// Settlement is the decision on an approval, for [States.Settle].
type Settlement struct {
	// State is what became of it.
	State string
	// Result is an approved call's Result as JSON, nil for none;
	// ResultSize is counted against the [ResultBounds] and the bound of
	// [States.Bound].
	Result     json.RawMessage
	ResultSize int64
	// TraceID is the approved call's Result ID.
	TraceID string
	// Err is why an approved call did not run, as JSON; nil for none.
	Err json.RawMessage
	// At is when it was decided.
	At time.Time
	// Owner is the owner of the lease under which it was taken (see
	// [Lease]): only that take is settled.
	Owner string
}

// Settle records the decision on the approval with the given ID, open
// and taken under st.Owner's lease that has not lapsed, and reports
// whether it was. An approval already settled (or failed after its
// lease lapsed), or taken by another owner, is left as it is.
//
// Settle holds the table's advisory lock (as [States.Add] does) while
// it updates the row and, when st has a Result, keeps the Results within
// s's [ResultBounds] in the same transaction: the principal's own oldest
// Results are dropped beyond its share (st's own, when it alone is
// larger), then, beyond the total, those of the principal holding the
// most. The settle itself is never refused for the bounds: the call ran.
func (s *States) Settle(ctx context.Context, id string, st Settlement) (bool, error) {
	var res, e any
	if st.Result != nil {
		res = []byte(st.Result)
	}
	if st.Err != nil {
		e = []byte(st.Err)
	}
	var settled bool
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := s.lock(ctx, tx); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE `+s.quoted+` SET state = $2, taken = false, result = $3::json, result_size = $4,
		trace_id = $5, err = $6::json, finished = $7, forget = $7::timestamptz + `+lifetimeSQL+`, lease_until = NULL
		WHERE id = $1 AND finished IS NULL AND taken AND owner = $8 AND (lease_until IS NULL OR lease_until > now())`, id, st.State, res, st.ResultSize, st.TraceID, e, st.At, st.Owner)
		if err != nil {
			return err
		}
		settled = tag.RowsAffected() == 1
		if !settled || st.Result == nil {
			return nil
		}
		return s.fairTrim(ctx, tx, trimResults, s.maxResultBytes, s.perResultBytes)
	})
	if err != nil {
		return false, fmt.Errorf("pgstore: settling approval %s: %w", id, err)
	}
	return settled, nil
}

// lock takes the table's transaction-scoped advisory lock, which
// serializes the writes that count rows: Add, Settle, Unclaim and Bound.
func (s *States) lock(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2::text::regclass::oid::int4)`, lockClass, s.quoted)
	return err
}

// Get returns the approval with the given ID and what became of it, or
// false when the table does not hold it. Like the expiry, it judges
// time by the database's clock; now is the caller's time, which does
// not decide it. It only reads: an approval whose time has passed reads
// as the expiry will mark
// it (expired, or failed once its lease lapsed; see [States.List]),
// and an outcome whose time has passed is not found, so that a waiting
// poll writes nothing.
func (s *States) Get(ctx context.Context, id string, now time.Time) (StateEntry, bool, error) {
	var (
		e                StateEntry
		raw              []byte
		finished, forget *time.Time
		created, expires time.Time
		dbNow            time.Time
		due              int
	)
	err := s.pool.QueryRow(ctx, `SELECT approval, state, taken, CASE WHEN taken THEN owner ELSE '' END, result, trace_id, err, finished, forget,
		created_at, expires_at, now(), CASE
			WHEN finished IS NOT NULL THEN 0
			WHEN NOT taken AND expires_at <= now() THEN 1
			WHEN taken AND (lease_until <= now() OR (lease_until IS NULL AND expires_at + `+lifetimeSQL+` <= now())) THEN 2
			ELSE 0 END
		FROM `+s.quoted+` WHERE id = $1`, id).
		Scan(&raw, &e.State, &e.Taken, &e.Owner, &e.Result, &e.TraceID, &e.Err, &finished, &forget, &created, &expires, &dbNow, &due)
	if errors.Is(err, pgx.ErrNoRows) {
		return StateEntry{}, false, nil
	}
	if err != nil {
		return StateEntry{}, false, fmt.Errorf("pgstore: reading approval %s: %w", id, err)
	}
	if err := json.Unmarshal(raw, &e.Approval); err != nil {
		return StateEntry{}, false, fmt.Errorf("pgstore: reading approval %s: %w", id, err)
	}
	if finished != nil {
		e.Finished = *finished
	}
	if forget != nil {
		e.Forget = *forget
	}
	switch lifetime := expires.Sub(created); due {
	case 1: // as expire marks it
		e.State, e.Finished, e.Forget = StateExpired, expires, expires.Add(lifetime)
	case 2:
		e.State, e.Taken, e.Owner, e.Err = StateFailed, false, "", json.RawMessage(abandonedErr)
		e.Finished, e.Forget = dbNow, dbNow.Add(lifetime)
	}
	if !e.Forget.IsZero() && !e.Forget.After(dbNow) {
		return StateEntry{}, false, nil
	}
	return e, true, nil
}

// Claim hands out the Result of the approved call with the given ID to
// its proposer, principal, once: the approval becomes [StateClaimed]
// and its Result is cleared in the same UPDATE, whose row lock lets one
// claim of any process have it. It reports false when the approval is
// not approved, or not principal's.
func (s *States) Claim(ctx context.Context, id, principal string) (json.RawMessage, bool, error) {
	var res json.RawMessage
	err := retrySerialization(func() error {
		return s.pool.QueryRow(ctx, `UPDATE `+s.quoted+` AS t SET state = $3, result = NULL, result_size = 0
		FROM (SELECT id, result FROM `+s.quoted+` WHERE id = $1 AND principal = $2 AND state = $4 FOR UPDATE) AS old
		WHERE t.id = old.id RETURNING old.result`, id, principal, StateClaimed, StateApproved).Scan(&res)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("pgstore: claiming approval %s: %w", id, err)
	}
	return res, true, nil
}

// Unclaim puts back the Result a claim got, when it could not be handed
// to the claimer: the next claim gets it. It does nothing unless the
// approval reads as claimed with no Result. Like [States.Settle], it
// keeps the Results within s's [ResultBounds], under the table's lock:
// a Result put back past its principal's share drops that principal's
// oldest.
func (s *States) Unclaim(ctx context.Context, id string, result json.RawMessage) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := s.lock(ctx, tx); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE `+s.quoted+` SET state = $2, result = $3::json, result_size = $4
			WHERE id = $1 AND state = $5 AND result IS NULL`, id, StateApproved, []byte(result), int64(len(result)), StateClaimed)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		return s.fairTrim(ctx, tx, trimResults, s.maxResultBytes, s.perResultBytes)
	})
	if err != nil {
		return fmt.Errorf("pgstore: putting back the result of approval %s: %w", id, err)
	}
	return nil
}

// Bound keeps at most maxFinished outcomes, forgetting the oldest by
// when they were decided, and at most maxResultBytes of Results,
// dropping the Results of the oldest ([StateDropped]), and of each a
// share per principal, execgate.DefaultPerPrincipalQuota of it (a
// quarter): a principal beyond its share loses its own oldest, and
// beyond a total the principal that holds the most loses its oldest, so
// that one principal's outcomes never push out another's. It holds the
// table's advisory lock, as [States.Settle] does.
func (s *States) Bound(ctx context.Context, maxFinished int, maxResultBytes int64) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if err := s.lock(ctx, tx); err != nil {
			return err
		}
		total := int64(maxFinished)
		if err := s.fairTrim(ctx, tx, trimOutcomes, total, execgate.DefaultPerPrincipalQuota(total)); err != nil {
			return err
		}
		return s.fairTrim(ctx, tx, trimResults, maxResultBytes, execgate.DefaultPerPrincipalQuota(maxResultBytes))
	})
}

// trim is what fairTrim bounds: the rows that count (where), what each
// weighs (weight), and what becomes of a row trimmed (set, the SET of an
// UPDATE, or "" to delete it). All three are SQL of this file's.
type trim struct{ where, weight, set string }

var (
	// trimOutcomes forgets decided or expired approvals.
	trimOutcomes = trim{where: `finished IS NOT NULL`, weight: `1`}
	// trimResults drops Results; their approvals read dropped.
	trimResults = trim{where: `result IS NOT NULL`, weight: `result_size`,
		set: `state = '` + StateDropped + `', result = NULL, result_size = 0`}
)

// apply returns the statement that trims the rows of tbl whose IDs the
// query ids returns; it checks t.where again, so that a row a
// concurrent Claim changed meanwhile is left as it is.
func (t trim) apply(tbl, ids string) string {
	if t.set == "" {
		return `DELETE FROM ` + tbl + ` WHERE ` + t.where + ` AND id IN (` + ids + `)`
	}
	return `UPDATE ` + tbl + ` SET ` + t.set + ` WHERE ` + t.where + ` AND id IN (` + ids + `)`
}

// fairTrim keeps the rows t counts within per for each principal and
// total for all (a bound < 0 is none), oldest (by finished) first: first
// each principal's oldest beyond its share, so that one at its share
// makes room with its own, then, while the total is over, the oldest of
// the principal whose rows weigh the most (of equals, the one whose
// oldest is older), down to the next one's weight at most, as many
// times as it takes. No principal's row is trimmed for another while
// that one is over its share. The caller holds the table's lock.
func (s *States) fairTrim(ctx context.Context, tx pgx.Tx, t trim, total, per int64) error {
	if per >= 0 {
		ids := `SELECT id FROM (SELECT id, sum(` + t.weight + `) OVER (PARTITION BY principal ORDER BY finished DESC, id DESC) AS acc
			FROM ` + s.quoted + ` WHERE ` + t.where + `) AS r WHERE acc > $1`
		if _, err := tx.Exec(ctx, t.apply(s.quoted, ids), per); err != nil {
			return err
		}
	}
	if total < 0 {
		return nil
	}
	// Each round trims the principal that holds the most to the total,
	// or to the next one's weight: at most one round per principal.
	for {
		rows, err := tx.Query(ctx, `SELECT principal, sum(`+t.weight+`)::bigint FROM `+s.quoted+` WHERE `+t.where+`
			GROUP BY principal ORDER BY 2 DESC, min(finished), min(id)`)
		if err != nil {
			return err
		}
		var (
			top          string
			sum, w, next int64
			n            int
		)
		for rows.Next() {
			var who string
			var v int64
			if err := rows.Scan(&who, &v); err != nil {
				rows.Close()
				return err
			}
			switch n++; n {
			case 1:
				top, w = who, v
			case 2:
				next = v
			}
			sum += v
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if sum <= total {
			return nil
		}
		need := max(min(sum-total, w-next), 1)
		ids := `SELECT id FROM (SELECT id, ` + t.weight + ` AS w, sum(` + t.weight + `) OVER (ORDER BY finished, id) AS acc
			FROM ` + s.quoted + ` WHERE ` + t.where + ` AND principal = $1) AS r WHERE acc - w < $2`
		if _, err := tx.Exec(ctx, t.apply(s.quoted, ids), top, need); err != nil {
			return err
		}
	}
}

// inTx runs f in a transaction at READ COMMITTED, whatever the
// database's default, committing when it returns nil: each statement then
// sees what other replicas committed before it, once it has the locks it
// waited for.
func (s *States) inTx(ctx context.Context, f func(pgx.Tx) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
