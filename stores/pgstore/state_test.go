package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/internal/fakeclock"
	"github.com/execgate/execgate/stores/pgstore"
)

// wantState checks that err is a *pgstore.StateError for op in state,
// whose message says so in op's words and holds none of rec's input,
// salt or hashes.
func wantState(t *testing.T, err error, op pgstore.Op, state pgstore.State, rec *execgate.Record) *pgstore.StateError {
	t.Helper()
	var se *pgstore.StateError
	if !errors.As(err, &se) {
		t.Fatalf("got %v (%T); want a *pgstore.StateError", err, err)
	}
	if se.Op != op || se.State != state {
		t.Fatalf("got %s, %s (%v); want %s, %s", se.Op, se.State, err, op, state)
	}
	if se.Err == nil || !errors.Is(err, se.Err) {
		t.Errorf("StateError does not unwrap to its cause: %#v", se)
	}
	msg := err.Error()
	verb := map[pgstore.Op]string{pgstore.OpSave: "stored", pgstore.OpTake: "taken", pgstore.OpDelete: "deleted"}[op]
	phrase := map[pgstore.State]string{pgstore.NotApplied: "not " + verb, pgstore.MaybeApplied: "may have been " + verb, pgstore.Applied: verb}[state]
	if !strings.Contains(msg, ": "+phrase+":") {
		t.Errorf("message %q does not say %q", msg, phrase)
	}
	if rec != nil {
		if !strings.Contains(msg, rec.Approval.ID) {
			t.Errorf("message %q does not name the approval", msg)
		}
		for _, secret := range [][]byte{rec.Input, rec.Salt, []byte(rec.Fingerprint), []byte(rec.StdinSHA256), []byte("hunter2")} {
			if len(secret) > 0 && strings.Contains(msg, string(secret)) {
				t.Errorf("message %q echoes part of the record (%q)", msg, secret)
			}
		}
	}
	return se
}

// secretRecord is a record expiring in an hour whose input and salt are
// easy to spot in a message.
func secretRecord() execgate.Record {
	rec := record(time.Now().Add(time.Hour))
	rec.Input = json.RawMessage(`{"password":"hunter2"}`)
	rec.Salt = []byte("salt-that-must-stay-private")
	return rec
}

// rowsWithID counts the pending rows and the consumed markers with id.
func rowsWithID(t *testing.T, pool *pgxpool.Pool, table, id string) (pending, consumed int) {
	t.Helper()
	err := pool.QueryRow(context.Background(),
		`SELECT (SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()+` WHERE id = $1),
			(SELECT count(*) FROM `+pgx.Identifier{table + "_spent"}.Sanitize()+` WHERE id = $1)`,
		id).Scan(&pending, &consumed)
	if err != nil {
		t.Fatal(err)
	}
	return pending, consumed
}

// waitFor waits for ch, failing the test after a while.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// capturingStore remembers the records the Executor saves through it.
type capturingStore struct {
	execgate.ApprovalStore
	mu    sync.Mutex
	saved []execgate.Record
}

func (c *capturingStore) Save(ctx context.Context, rec execgate.Record) error {
	c.mu.Lock()
	c.saved = append(c.saved, rec)
	c.mu.Unlock()
	return c.ApprovalStore.Save(ctx, rec)
}

func (c *capturingStore) last(t *testing.T) execgate.Record {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.saved) == 0 {
		t.Fatal("nothing was saved")
	}
	return c.saved[len(c.saved)-1]
}

// TestSaveWithUnknownOutcomeIsRetried: when the connection fails after a
// Save's COMMIT was sent, Save says the record may have been stored, and
// retrying it with the same record succeeds whether or not the first
// attempt stored it; the approval then executes exactly once, and a Save
// retried after that does not make it pending again. The table's
// capacity is one, so a retry that found its own record counted as
// "full" would fail.
func TestSaveWithUnknownOutcomeIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fault   fault
		timeout time.Duration
		stored  bool // whether the first attempt did store the record
	}{
		// The COMMIT reached the database and committed; only its
		// answer was lost. The retry must find the record and report
		// success, not ErrDuplicateID or ErrStoreFull.
		{"answer to the COMMIT lost", loseReply, 0, true},
		// The connection broke as the COMMIT was sent, so nothing
		// committed, yet the client cannot know that: the same error,
		// and the retry must store the record.
		{"COMMIT lost on the way", cut, 0, false},
		// The answer did not come before the context's deadline: a
		// timeout waiting for a COMMIT is unknown, never "not stored".
		{"no answer before the deadline", stall, 500 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := newTable(t)
			direct := newPool(t, nil)
			proxy, proxied := newFaultProxy(t)
			viaProxy := newStore(t, proxied, table, 1, nil)
			capture := &capturingStore{ApprovalStore: viaProxy}
			proposer, _ := newExecutor(t, capture, "1", nil)

			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			answered := proxy.arm(tc.fault, commit)
			_, err := proposer.Propose(ctx, "deploy", deployInput, "retry me")
			rec := capture.last(t)
			se := wantState(t, err, pgstore.OpSave, pgstore.MaybeApplied, &rec)
			if !strings.Contains(err.Error(), "retry Save with the same record") || strings.Contains(err.Error(), "service") {
				t.Errorf("message %q does not say to retry, or echoes the input", err)
			}
			if tc.timeout > 0 && (!pgconn.Timeout(se.Err) || !errors.Is(err, context.DeadlineExceeded)) {
				t.Errorf("a deadline while waiting for the COMMIT's answer: %v; want a timeout", err)
			}
			if tc.stored {
				waitFor(t, answered, "the COMMIT's answer")
			}
			wantPending := 0
			if tc.stored {
				wantPending = 1
			}
			if p, c := rowsWithID(t, direct, table, rec.Approval.ID); p != wantPending || c != 0 {
				t.Fatalf("before the retry: %d pending, %d consumed; want %d, 0", p, c, wantPending)
			}

			// The retry, through the same Store (its connection is new),
			// and a second one: both succeed, one row.
			for i := range 2 {
				if err := viaProxy.Save(context.Background(), rec); err != nil {
					t.Fatalf("retry %d: %v", i+1, err)
				}
			}
			if p, _ := rowsWithID(t, direct, table, rec.Approval.ID); p != 1 {
				t.Fatalf("after the retries: %d pending rows; want 1", p)
			}
			other := rec
			other.Salt = []byte("another record under the same ID")
			if err := viaProxy.Save(context.Background(), other); !errors.Is(err, execgate.ErrDuplicateID) {
				t.Errorf("Save of another record with the ID: %v; want ErrDuplicateID", err)
			}

			x, ran := newExecutor(t, newStore(t, direct, table, 1, nil), "1", nil)
			if res, err := x.Execute(context.Background(), rec.Approval); err != nil || !res.OK {
				t.Fatalf("Execute after the retry = %+v, %v", res, err)
			}
			_, err = x.Execute(context.Background(), rec.Approval)
			wantApprovalError(t, err, execgate.ReasonUnknown)

			// A Save retried after the approval ran succeeds, as the
			// retry of a Save that stored it must, but does not make it
			// pending again.
			if err := viaProxy.Save(context.Background(), rec); err != nil {
				t.Fatalf("Save retried after Execute: %v", err)
			}
			_, err = x.Execute(context.Background(), rec.Approval)
			wantApprovalError(t, err, execgate.ReasonUnknown)
			if ran.Count() != 1 {
				t.Errorf("the approval ran %d times; want exactly once", ran.Count())
			}
			if n, err := viaProxy.Len(context.Background()); err != nil || n != 0 {
				t.Errorf("Len = %d, %v; want 0", n, err)
			}
		})
	}
}

// addTrigger makes the database refuse inserts into table with an
// error: at once, or at COMMIT when deferred. It is dropped with the
// table; its function is dropped when the test ends.
func addTrigger(t *testing.T, pool *pgxpool.Pool, table string, deferred bool) {
	t.Helper()
	fn := pgx.Identifier{table + "_refuse"}.Sanitize()
	stmts := []string{
		`CREATE FUNCTION ` + fn + `() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by a test trigger'; END $$`,
		`CREATE TRIGGER refuse BEFORE INSERT ON ` + pgx.Identifier{table}.Sanitize() + ` FOR EACH ROW EXECUTE FUNCTION ` + fn + `()`,
	}
	if deferred {
		stmts[1] = `CREATE CONSTRAINT TRIGGER refuse AFTER INSERT ON ` + pgx.Identifier{table}.Sanitize() +
			` DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ` + fn + `()`
	}
	for _, s := range stmts {
		if _, err := pool.Exec(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if _, err := pool.Exec(context.Background(), `DROP FUNCTION IF EXISTS `+fn+`() CASCADE`); err != nil {
			t.Error(err)
		}
	})
}

// TestSaveNotStored: failures that leave the record certainly not stored
// say so, also when the statement was sent, and a Save afterwards stores
// the record.
func TestSaveNotStored(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup prepares the fault; it returns the context for Save.
		setup func(t *testing.T, proxy *faultProxy, proxied *pgxpool.Pool, direct *pgxpool.Pool, table string, rec execgate.Record) context.Context
		// undo, if set, removes the fault before the Save that must work.
		undo func(t *testing.T, proxy *faultProxy, direct *pgxpool.Pool, table string)
	}{
		{
			// No connection can be had: nothing was sent.
			name: "the database cannot be reached",
			setup: func(t *testing.T, proxy *faultProxy, proxied, _ *pgxpool.Pool, _ string, _ execgate.Record) context.Context {
				proxy.refuse(true)
				proxied.Reset() // drop the idle connection, so that Save must connect
				return context.Background()
			},
			undo: func(_ *testing.T, proxy *faultProxy, _ *pgxpool.Pool, _ string) { proxy.refuse(false) },
		},
		{
			// The insert ran, inside the transaction, and the connection
			// was lost before the COMMIT was sent: the database rolls
			// the transaction back, so the record is not stored, though
			// the statement was sent.
			name: "connection lost before the COMMIT",
			setup: func(_ *testing.T, proxy *faultProxy, _, _ *pgxpool.Pool, _ string, rec execgate.Record) context.Context {
				proxy.arm(loseReply, bindsID(rec.Approval.ID))
				return context.Background()
			},
		},
		{
			// A context that is done before Save is called: nothing was
			// sent.
			name: "context canceled before the call",
			setup: func(*testing.T, *faultProxy, *pgxpool.Pool, *pgxpool.Pool, string, execgate.Record) context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx
			},
		},
		{
			// The database refused the insert with an error: its
			// transaction rolled back.
			name: "the database refuses the insert",
			setup: func(t *testing.T, _ *faultProxy, _, direct *pgxpool.Pool, table string, _ execgate.Record) context.Context {
				addTrigger(t, direct, table, false)
				return context.Background()
			},
			undo: func(t *testing.T, _ *faultProxy, direct *pgxpool.Pool, table string) {
				if _, err := direct.Exec(context.Background(), `DROP TRIGGER refuse ON `+pgx.Identifier{table}.Sanitize()); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			// The database refused the COMMIT itself (a deferred
			// constraint): an ERROR answering a COMMIT means it rolled
			// back, so the state is known.
			name: "the database refuses the COMMIT",
			setup: func(t *testing.T, _ *faultProxy, _, direct *pgxpool.Pool, table string, _ execgate.Record) context.Context {
				addTrigger(t, direct, table, true)
				return context.Background()
			},
			undo: func(t *testing.T, _ *faultProxy, direct *pgxpool.Pool, table string) {
				if _, err := direct.Exec(context.Background(), `DROP TRIGGER refuse ON `+pgx.Identifier{table}.Sanitize()); err != nil {
					t.Fatal(err)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := newTable(t)
			direct := newPool(t, nil)
			proxy, proxied := newFaultProxy(t)
			s := newStore(t, proxied, table, 0, nil)
			rec := secretRecord()
			ctx := tc.setup(t, proxy, proxied, direct, table, rec)
			err := s.Save(ctx, rec)
			wantState(t, err, pgstore.OpSave, pgstore.NotApplied, &rec)
			if p, c := rowsWithID(t, direct, table, rec.Approval.ID); p != 0 || c != 0 {
				t.Fatalf("a Save reported as not stored left %d pending and %d consumed rows", p, c)
			}
			if tc.undo != nil {
				tc.undo(t, proxy, direct, table)
			}
			if err := s.Save(context.Background(), rec); err != nil {
				t.Fatalf("Save after the fault: %v", err)
			}
			if got, err := s.Take(context.Background(), rec.Approval.ID); err != nil || string(got.Input) != string(rec.Input) {
				t.Errorf("Take = %q, %v", got.Input, err)
			}
		})
	}
}

// TestSaveOfUnencodableRecord: a record that cannot be encoded (an
// expiry past year 9999, which JSON cannot hold) is refused before
// anything is sent, and the error says it was not stored.
func TestSaveOfUnencodableRecord(t *testing.T) {
	table := newTable(t)
	pool := newPool(t, nil)
	s := newStore(t, pool, table, 0, nil)
	rec := secretRecord()
	rec.Approval.ExpiresAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	wantState(t, s.Save(context.Background(), rec), pgstore.OpSave, pgstore.NotApplied, &rec)
	if p, c := rowsWithID(t, pool, table, rec.Approval.ID); p != 0 || c != 0 {
		t.Errorf("%d pending rows and %d markers; want none", p, c)
	}
}

// TestTakeStateIsReported: an Execute whose Take failed reports whether
// the approval may have been consumed, never runs it, and a second
// Execute runs it exactly when the first did not consume it; in no case
// does it run twice.
func TestTakeStateIsReported(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fault    fault // 0: none
		refuse   bool
		canceled bool
		timeout  time.Duration
		state    pgstore.State
		consumed bool // whether the failed Take did consume the record
	}{
		// The Take ran and its answer was lost: the record is consumed
		// without having been returned, and must not run later.
		{name: "answer lost", fault: loseReply, state: pgstore.MaybeApplied, consumed: true},
		// The request was lost on the way: the client sees the same
		// failure, but the record is still pending and runs once later.
		{name: "request lost", fault: cut, state: pgstore.MaybeApplied},
		// A timeout waiting for the answer is unknown, not "not taken".
		{name: "no answer before the deadline", fault: stall, timeout: 500 * time.Millisecond, state: pgstore.MaybeApplied, consumed: true},
		// No connection: nothing was sent, the record is pending.
		{name: "the database cannot be reached", refuse: true, state: pgstore.NotApplied},
		// A context done before the call: nothing was sent.
		{name: "context canceled before the call", canceled: true, state: pgstore.NotApplied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := newTable(t)
			direct := newPool(t, nil)
			proxy, proxied := newFaultProxy(t)
			x, ran := newExecutor(t, newStore(t, direct, table, 0, nil), "1", nil)
			viaProxy, ranViaProxy := newExecutor(t, newStore(t, proxied, table, 0, nil), "1", nil)
			ap, err := x.Propose(context.Background(), "deploy", deployInput, "take me")
			if err != nil {
				t.Fatal(err)
			}

			ctx := context.Background()
			var answered <-chan struct{}
			switch {
			case tc.fault != 0:
				answered = proxy.arm(tc.fault, bindsID(ap.ID))
			case tc.refuse:
				proxy.refuse(true)
				proxied.Reset()
			}
			if tc.canceled {
				c, cancel := context.WithCancel(ctx)
				cancel()
				ctx = c
			}
			if tc.timeout > 0 {
				c, cancel := context.WithTimeout(ctx, tc.timeout)
				defer cancel()
				ctx = c
			}
			_, err = viaProxy.Execute(ctx, ap)
			wantState(t, err, pgstore.OpTake, tc.state, nil)
			if !strings.Contains(err.Error(), ap.ID) {
				t.Errorf("message %q does not name the approval", err)
			}
			if tc.consumed {
				waitFor(t, answered, "the Take's answer")
			}
			if ranViaProxy.Count() != 0 {
				t.Fatal("an Execute whose Take failed ran the approval")
			}

			res, err := x.Execute(context.Background(), ap)
			if tc.consumed {
				wantApprovalError(t, err, execgate.ReasonUnknown)
			} else if err != nil || !res.OK {
				t.Fatalf("Execute after a Take that consumed nothing = %+v, %v", res, err)
			}
			_, err = x.Execute(context.Background(), ap)
			wantApprovalError(t, err, execgate.ReasonUnknown)
			if want := map[bool]int{true: 0, false: 1}[tc.consumed]; ran.Count() != want {
				t.Errorf("the approval ran %d times; want %d", ran.Count(), want)
			}
		})
	}
}

// TestDeleteStateIsReported: a Reject whose Delete failed says whether
// the approval may have been withdrawn; retrying it leaves the approval
// unable to run either way.
func TestDeleteStateIsReported(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fault   fault
		refuse  bool
		state   pgstore.State
		deleted bool // whether the failed Delete did consume the record
	}{
		// The Delete ran and its answer was lost.
		{name: "answer lost", fault: loseReply, state: pgstore.MaybeApplied, deleted: true},
		// The request was lost on the way: the same report, and the
		// record is still pending until the retry.
		{name: "request lost", fault: cut, state: pgstore.MaybeApplied},
		// No connection: nothing was sent.
		{name: "the database cannot be reached", refuse: true, state: pgstore.NotApplied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := newTable(t)
			direct := newPool(t, nil)
			proxy, proxied := newFaultProxy(t)
			x, ran := newExecutor(t, newStore(t, direct, table, 0, nil), "1", nil)
			viaProxy, _ := newExecutor(t, newStore(t, proxied, table, 0, nil), "1", nil)
			ap, err := x.Propose(context.Background(), "deploy", deployInput, "reject me")
			if err != nil {
				t.Fatal(err)
			}
			var answered <-chan struct{}
			if tc.fault != 0 {
				answered = proxy.arm(tc.fault, bindsID(ap.ID))
			} else if tc.refuse {
				proxy.refuse(true)
				proxied.Reset()
			}
			_, err = viaProxy.Reject(context.Background(), ap.ID)
			wantState(t, err, pgstore.OpDelete, tc.state, nil)
			if tc.deleted {
				waitFor(t, answered, "the Delete's answer")
			}
			proxy.refuse(false)
			// The retry, through the same Executor.
			ok, err := viaProxy.Reject(context.Background(), ap.ID)
			if err != nil || ok == tc.deleted {
				t.Errorf("retried Reject = %v, %v; want %v", ok, err, !tc.deleted)
			}
			_, err = x.Execute(context.Background(), ap)
			wantApprovalError(t, err, execgate.ReasonUnknown)
			if ran.Count() != 0 {
				t.Error("a rejected approval ran")
			}
		})
	}
}

// TestSaveIsIdempotentByID: a second Save of the very same record
// succeeds and stores nothing new; a Save of any other record under that
// ID is refused with ErrDuplicateID and leaves the stored one as it was.
func TestSaveIsIdempotentByID(t *testing.T) {
	pool := newPool(t, nil)
	for _, tc := range []struct {
		name   string
		change func(*execgate.Record) // nil: the same record
	}{
		// A retry of a Save that did store the record.
		{"the same record", nil},
		// Each field below makes another record, which must never be
		// taken for the stored one: the salt and the fingerprint decide
		// the digest, the input what runs, the envelope what the
		// approver saw.
		{"another salt", func(r *execgate.Record) { r.Salt = []byte("other salt") }},
		{"another input", func(r *execgate.Record) { r.Input = json.RawMessage(`{"a":2}`) }},
		{"no input", func(r *execgate.Record) { r.Input = nil }},
		{"another fingerprint", func(r *execgate.Record) { r.Fingerprint = strings.Repeat("00", 32) }},
		{"another stdin hash", func(r *execgate.Record) { r.StdinSHA256 = strings.Repeat("00", 32) }},
		{"another reason", func(r *execgate.Record) { r.Approval.Reason = "other" }},
		{"another argument", func(r *execgate.Record) { r.Approval.Args = append([]string{}, "x") }},
		{"another expiry", func(r *execgate.Record) { r.Approval.ExpiresAt = r.Approval.ExpiresAt.Add(time.Nanosecond) }},
		{"another digest", func(r *execgate.Record) { r.Approval.Digest = strings.Repeat("00", 32) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Capacity one: the second Save meets a full table, which
			// must not hide what it finds.
			s := newStore(t, pool, newTable(t), 1, nil)
			ctx := context.Background()
			rec := record(time.Now().Add(time.Hour))
			if err := s.Save(ctx, rec); err != nil {
				t.Fatal(err)
			}
			again := rec
			again.Approval.Args = append([]string(nil), rec.Approval.Args...)
			again.Input = append(json.RawMessage(nil), rec.Input...)
			again.Salt = append([]byte(nil), rec.Salt...)
			want := error(nil)
			if tc.change != nil {
				tc.change(&again)
				want = execgate.ErrDuplicateID
			}
			if err := s.Save(ctx, again); (want == nil && err != nil) || !errors.Is(err, want) {
				t.Fatalf("second Save = %v; want %v", err, want)
			}
			if n, err := s.Len(ctx); err != nil || n != 1 {
				t.Errorf("Len = %d, %v; want 1", n, err)
			}
			got, err := s.Take(ctx, rec.Approval.ID)
			if err != nil {
				t.Fatal(err)
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(rec)
			if string(gj) != string(wj) {
				t.Errorf("the stored record changed:\n got %s\nwant %s", gj, wj)
			}
			if _, err := s.Take(ctx, rec.Approval.ID); !errors.Is(err, execgate.ErrNoRecord) {
				t.Errorf("second Take: %v; want ErrNoRecord", err)
			}
		})
	}
}

// TestSaveDoesNotResurrect: once a record was taken or deleted, a Save
// of it (a retry that comes late) succeeds without making it pending
// again, and a Save of another record under its ID is refused: single
// use holds whatever a Save retry does.
func TestSaveDoesNotResurrect(t *testing.T) {
	pool := newPool(t, nil)
	for _, tc := range []struct {
		name    string
		expired bool
		consume func(t *testing.T, s *pgstore.Store, id string)
	}{
		// Taken by an Execute.
		{"taken", false, func(t *testing.T, s *pgstore.Store, id string) {
			if _, err := s.Take(context.Background(), id); err != nil {
				t.Fatal(err)
			}
		}},
		// Withdrawn by a Reject.
		{"deleted", false, func(t *testing.T, s *pgstore.Store, id string) {
			if ok, err := s.Delete(context.Background(), id); err != nil || !ok {
				t.Fatalf("Delete = %v, %v", ok, err)
			}
		}},
		// Taken after it expired, as an Execute that refuses it as
		// expired does: it is consumed all the same.
		{"taken after expiry", true, func(t *testing.T, s *pgstore.Store, id string) {
			if _, err := s.Take(context.Background(), id); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := newTable(t)
			s := newStore(t, pool, table, 0, nil)
			ctx := context.Background()
			exp := time.Now().Add(time.Hour)
			if tc.expired {
				exp = time.Now().Add(-time.Minute)
			}
			rec := record(exp)
			if err := s.Save(ctx, rec); err != nil {
				t.Fatal(err)
			}
			tc.consume(t, s, rec.Approval.ID)
			for range 2 {
				if err := s.Save(ctx, rec); err != nil {
					t.Fatalf("Save of a consumed record: %v; want nil", err)
				}
			}
			other := record(exp)
			other.Approval.ID = rec.Approval.ID
			other.Salt = []byte("another record under the same ID")
			if err := s.Save(ctx, other); !errors.Is(err, execgate.ErrDuplicateID) {
				t.Errorf("Save of another record under a consumed ID: %v; want ErrDuplicateID", err)
			}
			if _, err := s.Take(ctx, rec.Approval.ID); !errors.Is(err, execgate.ErrNoRecord) {
				t.Errorf("Take after the Save retry: %v; want ErrNoRecord", err)
			}
			if ok, err := s.Delete(ctx, rec.Approval.ID); err != nil || ok {
				t.Errorf("Delete after the Save retry = %v, %v; want false", ok, err)
			}
			if n, err := s.Len(ctx); err != nil || n != 0 {
				t.Errorf("Len = %d, %v; want 0", n, err)
			}
			// The marker keeps nothing of the record but what Save
			// compares, and the expiry.
			if p, c := rowsWithID(t, pool, table, rec.Approval.ID); p != 0 || c != 1 {
				t.Errorf("%d pending rows and %d markers; want 0 and 1", p, c)
			}
			var cols []string
			err := pool.QueryRow(ctx, `SELECT array_agg(attname::text ORDER BY attnum) FROM pg_attribute
				WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`, table+"_spent").Scan(&cols)
			if err != nil || strings.Join(cols, " ") != "id content_sha256 expires_at" {
				t.Errorf("the marker table has the columns %q, %v", cols, err)
			}
		})
	}
}

// TestConsumedMarkers follows the marker of an executed approval through
// the store's clock: it does not count against Capacity; until
// ConsumedRetention after the approval's expiry a retried Save does not
// make the approval pending again; after that it is pruned, and an
// approval a Save stores again is expired, so the Executor refuses it.
// Either way it ran once.
func TestConsumedMarkers(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2031, 5, 6, 7, 8, 9, 123_456_789, time.UTC)
	clk := fakeclock.New(base)
	pool := newPool(t, nil)
	table := newTable(t)
	store := newStore(t, pool, table, 1, clk.Now)
	capture := &capturingStore{ApprovalStore: store}
	x, ran := newExecutor(t, capture, "1", clk.Now)

	ap, err := x.Propose(ctx, "deploy", deployInput, "")
	if err != nil {
		t.Fatal(err)
	}
	rec := capture.last(t)
	if res, err := x.Execute(ctx, ap); err != nil || !res.OK {
		t.Fatalf("Execute = %+v, %v", res, err)
	}
	// Capacity one, and the marker does not take it.
	ap2, err := x.Propose(ctx, "deploy", deployInput, "")
	if err != nil {
		t.Fatalf("Propose next to a marker in a table of capacity 1: %v", err)
	}
	if ok, err := x.Reject(ctx, ap2.ID); err != nil || !ok {
		t.Fatalf("Reject = %v, %v", ok, err)
	}
	markers := func() int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{table + "_spent"}.Sanitize()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// The last instant before the markers may go.
	clk.Set(ap.ExpiresAt.Add(pgstore.ConsumedRetention - time.Microsecond))
	if n, err := store.Prune(ctx); err != nil || n != 0 || markers() != 2 {
		t.Fatalf("Prune = %d, %v, %d markers left; want 0, nil, 2", n, err, markers())
	}
	if err := store.Save(ctx, rec); err != nil {
		t.Fatalf("Save retried before the marker went: %v", err)
	}
	if n, err := store.Len(ctx); err != nil || n != 0 {
		t.Fatalf("Len = %d, %v; want 0: a retried Save made a taken record pending", n, err)
	}

	// At the first whole microsecond ConsumedRetention after expiry.
	clk.Set(ap.ExpiresAt.Add(pgstore.ConsumedRetention + time.Microsecond - 1).Truncate(time.Microsecond))
	if n, err := store.Prune(ctx); err != nil || n != 0 || markers() != 0 {
		t.Fatalf("Prune = %d, %v, %d markers left; want 0, nil, 0", n, err, markers())
	}
	if err := store.Save(ctx, rec); err != nil {
		t.Fatalf("Save after the marker went: %v", err)
	}
	_, err = x.Execute(ctx, ap)
	wantApprovalError(t, err, execgate.ReasonExpired)
	if ran.Count() != 1 {
		t.Errorf("the approval ran %d times; want once", ran.Count())
	}
}

// TestTakeOfUnreadableRecord: a row whose envelope cannot be read is
// consumed by Take, which says so (Applied): the approval can never run,
// and the message says to propose again.
func TestTakeOfUnreadableRecord(t *testing.T) {
	pool := newPool(t, nil)
	for _, tc := range []struct {
		name     string
		approval string
	}{
		// An envelope the strict decoder refuses.
		{"refused envelope", `{"id": "x", "env": {"A": "B"}}`},
		// A well-formed envelope for another ID.
		{"another ID", `{"id": "0190a0a0-0000-7000-8000-000000000000"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := newTable(t)
			s := newStore(t, pool, table, 0, nil)
			ctx := context.Background()
			rec := secretRecord()
			if err := s.Save(ctx, rec); err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(ctx, `UPDATE `+pgx.Identifier{table}.Sanitize()+` SET approval = $1::json WHERE id = $2`, tc.approval, rec.Approval.ID); err != nil {
				t.Fatal(err)
			}
			_, err := s.Take(ctx, rec.Approval.ID)
			var se *pgstore.StateError
			if !errors.As(err, &se) || se.Op != pgstore.OpTake || se.State != pgstore.Applied {
				t.Fatalf("Take = %v; want a StateError, Take, Applied", err)
			}
			if !strings.Contains(err.Error(), "can never run") {
				t.Errorf("message %q does not say the approval is spent", err)
			}
			if _, err := s.Take(ctx, rec.Approval.ID); !errors.Is(err, execgate.ErrNoRecord) {
				t.Errorf("second Take: %v; want ErrNoRecord", err)
			}
		})
	}
}

// TestMigrateUpgradesFirstVersionTable: a table made by the first
// version of Migrate (no content hash, no marker table) is refused by
// New, which points at Migrate; Migrate adds the column and the marker
// table and keeps the rows, which stay pending; a Save never takes an old
// row, which has no hash, or its marker for its own record.
func TestMigrateUpgradesFirstVersionTable(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, nil)
	table := newTable(t)
	q := pgx.Identifier{table}.Sanitize()
	if _, err := pool.Exec(ctx, `DROP TABLE `+q+`, `+pgx.Identifier{table + "_spent"}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE `+q+` (
		id text PRIMARY KEY, approval json NOT NULL, input bytea NOT NULL, salt bytea NOT NULL,
		fingerprint text NOT NULL, stdin_sha256 text NOT NULL, digest text NOT NULL, expires_at timestamptz NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	old := record(time.Now().Add(time.Hour))
	ap, _ := json.Marshal(old.Approval)
	if _, err := pool.Exec(ctx, `INSERT INTO `+q+` VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		old.Approval.ID, string(ap), []byte(old.Input), old.Salt, old.Fingerprint, old.StdinSHA256, old.Approval.Digest, old.Approval.ExpiresAt); err != nil {
		t.Fatal(err)
	}
	if _, err := pgstore.New(ctx, pool, pgstore.Options{Table: table}); err == nil || !strings.Contains(err.Error(), "Migrate") {
		t.Fatalf("New on a first-version table = %v; want an error pointing at Migrate", err)
	}
	for range 2 {
		if err := pgstore.Migrate(ctx, pool, table); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
	}
	s := newStore(t, pool, table, 0, nil)
	if n, err := s.Len(ctx); err != nil || n != 1 {
		t.Fatalf("Len after Migrate = %d, %v; want 1", n, err)
	}
	if err := s.Save(ctx, old); !errors.Is(err, execgate.ErrDuplicateID) {
		t.Errorf("Save of a record under an old row's ID: %v; want ErrDuplicateID", err)
	}
	if got, err := s.Take(ctx, old.Approval.ID); err != nil || string(got.Input) != string(old.Input) {
		t.Errorf("Take of the old row = %q, %v", got.Input, err)
	}
	if err := s.Save(ctx, old); !errors.Is(err, execgate.ErrDuplicateID) {
		t.Errorf("Save after taking the old row: %v; want ErrDuplicateID", err)
	}
}

// TestStateErrorMessages pins what each message says: what failed, the
// state in the operation's words, and what to do.
func TestStateErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		op    pgstore.Op
		state pgstore.State
		want  []string
	}{
		// A Save that may have stored the record must say that a retry
		// with the same record is safe.
		{pgstore.OpSave, pgstore.MaybeApplied, []string{"may have been stored", "retry Save with the same record", "idempotent by ID"}},
		{pgstore.OpSave, pgstore.NotApplied, []string{"not stored", "Save may be called again"}},
		// A Take that may have consumed the record must say that the
		// approval may be spent, and how to find out.
		{pgstore.OpTake, pgstore.MaybeApplied, []string{"may have been taken", "call Execute again", "proposed again"}},
		{pgstore.OpTake, pgstore.NotApplied, []string{"not taken", "still is"}},
		{pgstore.OpTake, pgstore.Applied, []string{": taken", "can never run"}},
		{pgstore.OpDelete, pgstore.MaybeApplied, []string{"may have been deleted", "retry Reject"}},
		{pgstore.OpDelete, pgstore.NotApplied, []string{"not deleted", "retry Reject"}},
	} {
		t.Run(fmt.Sprintf("%s/%s", tc.op, tc.state), func(t *testing.T) {
			err := error(&pgstore.StateError{Op: tc.op, ID: "0190a0a0-0000-7000-8000-000000000001", State: tc.state, Err: io.ErrUnexpectedEOF})
			msg := err.Error()
			for _, w := range append(tc.want, "pgstore: ", "0190a0a0-0000-7000-8000-000000000001", "unexpected EOF") {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Error("does not unwrap to its cause")
			}
		})
	}
}
