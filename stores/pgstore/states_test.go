package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/stores/pgstore"
)

// newStates returns the States of a table of the test's own, dropped
// when the test ends.
func newStates(t *testing.T) *pgstore.States {
	t.Helper()
	s, _ := newStatesSQL(t)
	return s
}

// statesSQL runs a statement on the rows of a test's States table, which
// it names $table, to stand for what the tests cannot wait for: a lease
// that lapses, a row an older version took.
type statesSQL func(stmt string, args ...any)

// newStatesSQL is newStates, with a statesSQL on its table.
func newStatesSQL(t *testing.T) (*pgstore.States, statesSQL) {
	t.Helper()
	return newStatesOn(t, newPool(t, nil), newTable(t))
}

// newStatesOn is newStatesSQL for table, on pool.
func newStatesOn(t *testing.T, pool *pgxpool.Pool, table string) (*pgstore.States, statesSQL) {
	t.Helper()
	ctx := context.Background()
	for range 2 {
		if err := pgstore.MigrateStates(ctx, pool, table); err != nil {
			t.Fatalf("MigrateStates (twice: it is idempotent): %v", err)
		}
	}
	t.Cleanup(func() {
		if _, err := pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{table + "_states"}.Sanitize()); err != nil {
			t.Errorf("dropping: %v", err)
		}
	})
	s, err := pgstore.NewStates(ctx, pool, table)
	if err != nil {
		t.Fatalf("NewStates: %v", err)
	}
	return s, func(stmt string, args ...any) {
		t.Helper()
		stmt = strings.ReplaceAll(stmt, "$table", pgx.Identifier{table + "_states"}.Sanitize())
		if _, err := pool.Exec(ctx, stmt, args...); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

// lease is the lease under which the tests take approvals, of an
// owner named for the test.
var lease = pgstore.Lease{Owner: "replica-a", For: time.Hour}

func stateApproval(id, principal string, created time.Time, ttl time.Duration) execgate.Approval {
	return execgate.Approval{ID: id, Name: "deploy.run", Principal: principal, CreatedAt: created, ExpiresAt: created.Add(ttl)}
}

// TestStates_OneTakerOneClaimer: of many concurrent Takes of one
// approval exactly one gets it, a check that refuses leaves it pending,
// and of many concurrent Claims of its Result exactly one gets it.
func TestStates_OneTakerOneClaimer(t *testing.T) {
	oneTakerOneClaimer(t, newStates(t))
}

// TestStates_StricterIsolation runs States on pools whose sessions
// default to SERIALIZABLE and to REPEATABLE READ: a Take or a Claim that
// loses a race finds nothing rather than failing, and Adds from several
// pools at once keep the bound on open approvals, since every
// transaction of States runs at READ COMMITTED and sees what the others
// committed before it had the table's lock. At REPEATABLE READ, an Add's
// count missed the Adds that committed while it waited for the lock.
func TestStates_StricterIsolation(t *testing.T) {
	for _, level := range []string{"serializable", "repeatable read"} {
		t.Run(strings.ReplaceAll(level, " ", "_"), func(t *testing.T) {
			configure := func(c *pgxpool.Config) {
				c.MaxConns = 16
				c.ConnConfig.RuntimeParams["default_transaction_isolation"] = level
			}
			table := newTable(t)
			s, _ := newStatesOn(t, newPool(t, configure), table)
			oneTakerOneClaimer(t, s)

			// Four pools, one table, 40 Adds at once, room for 5.
			others := []*pgstore.States{s}
			for range 3 {
				o, err := pgstore.NewStates(context.Background(), newPool(t, configure), table)
				if err != nil {
					t.Fatal(err)
				}
				others = append(others, o)
			}
			now := time.Now().UTC().Truncate(time.Microsecond)
			var added, full atomic.Int64
			var wg sync.WaitGroup
			for i := range 40 {
				wg.Go(func() {
					id := fmt.Sprintf("018f0000-0000-7000-8000-%012d", 100+i)
					err := others[i%len(others)].Add(context.Background(), stateApproval(id, "bot", now, time.Hour), now, 5)
					switch {
					case err == nil:
						added.Add(1)
					case errors.Is(err, pgstore.ErrTooManyPending):
						full.Add(1)
					default:
						t.Errorf("Add: %v", err)
					}
				})
			}
			wg.Wait()
			if added.Load() != 5 || full.Load() != 35 {
				t.Fatalf("%d Adds kept and %d refused as full; want 5 and 35", added.Load(), full.Load())
			}
		})
	}
}

// oneTakerOneClaimer is TestStates_OneTakerOneClaimer on s.
func oneTakerOneClaimer(t *testing.T, s *pgstore.States) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	const id = "018f0000-0000-7000-8000-000000000001"
	if err := s.Add(ctx, stateApproval(id, "bot", now, time.Hour), now, 10); err != nil {
		t.Fatalf("Add: %v", err)
	}
	refused := errors.New("self-approval")
	if _, found, err := s.Take(ctx, id, now, "running", lease, func(execgate.Approval) error { return refused }); !found || !errors.Is(err, refused) {
		t.Fatalf("Take with a refusing check: found %v, err %v; want found and the check's error", found, err)
	}
	var wins atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			_, found, err := s.Take(ctx, id, now, "running", lease, func(execgate.Approval) error { return nil })
			if err != nil {
				t.Errorf("Take: %v", err)
			}
			if found {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d Takes got the approval; want exactly 1", wins.Load())
	}
	list, err := s.List(ctx, now)
	if err != nil || len(list) != 0 {
		t.Fatalf("List after Take: %v, %v; want none: a taken approval is listed no more", list, err)
	}
	if ok, err := s.Settle(ctx, id, pgstore.Settlement{State: pgstore.StateApproved, Result: json.RawMessage(`{"id":"r1"}`), ResultSize: 11, TraceID: "r1", At: now, Owner: lease.Owner}); !ok || err != nil {
		t.Fatalf("Settle: %v, %v", ok, err)
	}
	if ok, _ := s.Settle(ctx, id, pgstore.Settlement{State: "rejected", At: now, Owner: lease.Owner}); ok {
		t.Fatalf("a second Settle changed a settled approval")
	}
	if _, got, _ := s.Claim(ctx, id, "someone-else"); got {
		t.Fatalf("another principal claimed the Result")
	}
	var claims atomic.Int64
	for range 16 {
		wg.Go(func() {
			res, got, err := s.Claim(ctx, id, "bot")
			if err != nil {
				t.Errorf("Claim: %v", err)
			}
			if got && string(res) == `{"id":"r1"}` {
				claims.Add(1)
			}
		})
	}
	wg.Wait()
	if claims.Load() != 1 {
		t.Fatalf("%d Claims got the Result; want exactly 1", claims.Load())
	}
	e, ok, err := s.Get(ctx, id, now)
	if err != nil || !ok || e.State != pgstore.StateClaimed || e.Result != nil || e.TraceID != "r1" {
		t.Fatalf("Get after the claim: %+v, %v, %v; want claimed, no Result, the trace ID", e, ok, err)
	}
}

// TestStates_ExpiryAndAbandonment: an approval no one took reads expired
// once its time has passed; one an approver took reads running while
// its lease runs, however long after its expiry; outcomes are forgotten
// after their lifetime.
func TestStates_ExpiryAndAbandonment(t *testing.T) {
	s, sql := newStatesSQL(t)
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Microsecond)
	const open, taken = "018f0000-0000-7000-8000-0000000000a1", "018f0000-0000-7000-8000-0000000000a2"
	for _, id := range []string{open, taken} {
		if err := s.Add(ctx, stateApproval(id, "bot", t0, time.Minute), t0, 10); err != nil {
			t.Fatalf("Add: %v", err)
		}
	}
	if _, found, err := s.Take(ctx, taken, t0, "running", lease, func(execgate.Approval) error { return nil }); !found || err != nil {
		t.Fatalf("Take: %v, %v", found, err)
	}
	// Time passes for the rows: their times move into the past, as
	// the database's clock, which judges expiry, moves on.
	var elapsed time.Duration
	for _, tc := range []struct {
		why         string
		at          time.Duration
		open, taken string
	}{
		{"before expiry both are as they were", 30 * time.Second, pgstore.StatePending, "running"},
		{"at expiry the open one expires; the taken one may still be running", time.Minute, pgstore.StateExpired, "running"},
		{"a lifetime after expiry the expired one is forgotten; the taken one, under its lease, still runs", 2 * time.Minute, "", "running"},
		{"long after, the taken one still runs: its lease, not the approval's lifetime, says when it is abandoned", 50 * time.Minute, "", "running"},
	} {
		sql(`UPDATE $table SET created_at = created_at - $1::interval, expires_at = expires_at - $1::interval,
			finished = finished - $1::interval, forget = forget - $1::interval, lease_until = lease_until - $1::interval`, tc.at-elapsed)
		elapsed = tc.at
		for id, want := range map[string]string{open: tc.open, taken: tc.taken} {
			e, ok, err := s.Get(ctx, id, t0.Add(tc.at))
			if want == "" && !ok && err == nil {
				continue
			}
			if err != nil || !ok || e.State != want {
				t.Errorf("%s: %s reads %q (%v, %v); want %q", tc.why, id, e.State, ok, err, want)
			}
		}
	}

	// The bound of open approvals counts what is open.
	// (The expiry runs in Add; the taken one is open.)
	later := t0
	if err := s.Add(ctx, stateApproval("018f0000-0000-7000-8000-0000000000a3", "bot", later, time.Hour), later, 2); err != nil {
		t.Fatalf("Add under the bound: %v", err)
	}
	if err := s.Add(ctx, stateApproval("018f0000-0000-7000-8000-0000000000a4", "bot", later, time.Hour), later, 2); !errors.Is(err, pgstore.ErrTooManyPending) {
		t.Fatalf("Add over the bound: %v; want ErrTooManyPending", err)
	}
}

// TestStates_Release: an approval taken and released, because its
// record could not be taken, is pending again: listed, and taken by the
// next approver; a settled one is not brought back.
func TestStates_Release(t *testing.T) {
	s := newStates(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	const id = "018f0000-0000-7000-8000-0000000000b1"
	if err := s.Add(ctx, stateApproval(id, "bot", now, time.Hour), now, 10); err != nil {
		t.Fatalf("Add: %v", err)
	}
	take := func() bool {
		_, found, err := s.Take(ctx, id, now, "running", lease, func(execgate.Approval) error { return nil })
		if err != nil {
			t.Fatalf("Take: %v", err)
		}
		return found
	}
	if !take() {
		t.Fatal("the first Take found nothing")
	}
	if err := s.Release(ctx, id, lease.Owner); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if list, err := s.List(ctx, now); err != nil || len(list) != 1 {
		t.Fatalf("List after Release: %v, %v; want the approval", list, err)
	}
	if !take() {
		t.Fatal("the approval released could not be taken again")
	}
	if _, err := s.Settle(ctx, id, pgstore.Settlement{State: "rejected", At: now, Owner: lease.Owner}); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	if err := s.Release(ctx, id, lease.Owner); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if e, _, _ := s.Get(ctx, id, now); e.State != "rejected" {
		t.Fatalf("a settled approval released reads %q; want rejected", e.State)
	}
}

// TestMigrateStates_LocksNoTableItHasNothingToAdd runs MigrateStates on
// an up-to-date table while another session reads it, as every replica's
// calls do, with a lock timeout: it returns at once, since ALTER TABLE,
// which waits for every reader, runs only for a table that lacks a
// column. It ran at every start, so a replica starting queued behind the
// others' reads and held up their next ones. A table without the lease
// columns still gets them.
func TestMigrateStates_LocksNoTableItHasNothingToAdd(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, func(c *pgxpool.Config) { c.ConnConfig.RuntimeParams["lock_timeout"] = "500ms" })
	table := newTable(t)
	_, run := newStatesOn(t, pool, table)
	reader, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(ctx)
	if _, err := reader.Exec(ctx, "SELECT count(*) FROM "+pgx.Identifier{table + "_states"}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.MigrateStates(ctx, pool, table); err != nil {
		t.Fatalf("MigrateStates beside a reader: %v; want it to take no lock the reader holds up", err)
	}
	if err := reader.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	run(`ALTER TABLE $table DROP COLUMN owner, DROP COLUMN lease_until`)
	if err := pgstore.MigrateStates(ctx, pool, table); err != nil {
		t.Fatalf("MigrateStates of a table without the lease columns: %v", err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_attribute WHERE attrelid = $1::regclass AND attname IN ('owner', 'lease_until') AND NOT attisdropped`,
		pgx.Identifier{table + "_states"}.Sanitize()).Scan(&n); err != nil || n != 2 {
		t.Fatalf("lease columns after the migration: %d, %v; want 2", n, err)
	}
}
