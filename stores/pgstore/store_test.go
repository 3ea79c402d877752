package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/stores/pgstore"
)

func TestApprovalStore(t *testing.T) {
	pool := newPool(t, func(c *pgxpool.Config) { c.MaxConns = 16 })
	execgatetest.TestApprovalStore(t, func(t *testing.T, capacity int) execgate.ApprovalStore {
		return newStore(t, pool, newTable(t), capacity, nil)
	})
}

// TestApprovalStoreStricterIsolation runs the conformance kit on a pool
// whose sessions default to SERIALIZABLE (and REPEATABLE READ), where a
// DELETE that loses a race fails instead of deleting nothing, and where a
// Save's count would not see Saves that committed while it waited for the
// lock if it did not set READ COMMITTED itself.
func TestApprovalStoreStricterIsolation(t *testing.T) {
	for _, level := range []string{"serializable", "repeatable read"} {
		t.Run(strings.ReplaceAll(level, " ", "_"), func(t *testing.T) {
			pool := newPool(t, func(c *pgxpool.Config) {
				c.MaxConns = 16
				c.ConnConfig.RuntimeParams["default_transaction_isolation"] = level
			})
			execgatetest.TestApprovalStore(t, func(t *testing.T, capacity int) execgate.ApprovalStore {
				return newStore(t, pool, newTable(t), capacity, nil)
			})
		})
	}
}

func TestNewRefuses(t *testing.T) {
	pool := newPool(t, nil)
	ctx := context.Background()
	for _, name := range []string{
		"Approvals", "approvals-x", `a"b`, "a b", "1approvals", "a.b.c", ".a", "a.", "a;drop table x",
		strings.Repeat("a", 49), "s." + strings.Repeat("a", 49), strings.Repeat("s", 64) + ".a",
	} {
		if _, err := pgstore.New(ctx, pool, pgstore.Options{Table: name}); err == nil || !strings.Contains(err.Error(), "identifier") {
			t.Errorf("New(Table: %q) = %v; want an identifier error", name, err)
		}
		if err := pgstore.Migrate(ctx, pool, name); err == nil || !strings.Contains(err.Error(), "identifier") {
			t.Errorf("Migrate(%q) = %v; want an identifier error", name, err)
		}
	}
	if _, err := pgstore.New(ctx, pool, pgstore.Options{Table: "execgate_test_does_not_exist"}); err == nil || !strings.Contains(err.Error(), "Migrate") {
		t.Errorf("New on a missing table = %v; want an error pointing at Migrate", err)
	}
	if _, err := pgstore.New(ctx, pool, pgstore.Options{Table: newTable(t), Capacity: -1}); err == nil {
		t.Error("New with a negative capacity succeeded")
	}
	if _, err := pgstore.New(ctx, nil, pgstore.Options{}); err == nil {
		t.Error("New with a nil pool succeeded")
	}
}

func TestMigrateIsIdempotentAndConcurrent(t *testing.T) {
	pool := newPool(t, func(c *pgxpool.Config) { c.MaxConns = 8 })
	ctx := context.Background()
	schema := strings.TrimPrefix(newTable(t), "execgate_test_")
	schema = "execgate_test_schema_" + schema
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := pool.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Error(err)
		}
	})
	table := schema + ".pending"
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() { errs <- pgstore.Migrate(ctx, pool, table) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Migrate: %v", err)
		}
	}
	s := newStore(t, pool, table, 0, nil)
	rec := record(time.Now().Add(time.Hour))
	if err := s.Save(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, pool, table); err != nil {
		t.Fatalf("Migrate on an existing table: %v", err)
	}
	if _, err := s.Take(ctx, rec.Approval.ID); err != nil {
		t.Errorf("a second Migrate lost a record: %v", err)
	}
}

// record returns a record expiring at exp, with an input that is not even
// JSON, and envelope text that needs escaping.
func record(exp time.Time) execgate.Record {
	return execgate.Record{
		Approval: execgate.Approval{
			ID: uuid.Must(uuid.NewV7()).String(), Name: "deploy", Command: "/opt/tool",
			Args:   []string{"<&>", "tab\there", "\u2028", "ünï"},
			Digest: strings.Repeat("ab", 32), Reason: `"quoted" \ reason`, PolicyVersion: "7",
			CreatedAt: exp.Add(-time.Minute), ExpiresAt: exp,
		},
		Input:       json.RawMessage("{\"a\":1}  \x00\xff\xfe\n"),
		Salt:        []byte("\x00salt\xff"),
		Fingerprint: strings.Repeat("cd", 32),
		StdinSHA256: strings.Repeat("ef", 32),
	}
}

func TestRecordsComeBackExactly(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool, newTable(t), 0, nil)
	ctx := context.Background()
	zone := time.FixedZone("x", -(3*3600 + 30*60))
	want := record(time.Date(2999, 12, 31, 23, 59, 59, 999_999_999, zone))
	if err := s.Save(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.Take(ctx, want.Approval.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Input) != string(want.Input) {
		t.Errorf("Input = %q; want %q", got.Input, want.Input)
	}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Errorf("record changed on its way through the table:\n got %s\nwant %s", gj, wj)
	}

	empty := record(time.Now().Add(time.Hour))
	empty.Input, empty.Salt = nil, nil
	if err := s.Save(ctx, empty); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Take(ctx, empty.Approval.ID); err != nil || got.Input != nil || got.Salt != nil {
		t.Errorf("empty input and salt: Take = %q, %q, %v; want nil, nil, nil", got.Input, got.Salt, err)
	}
}

func TestPruneAndLen(t *testing.T) {
	pool := newPool(t, nil)
	table := newTable(t)
	s := newStore(t, pool, table, 0, nil)
	ctx := context.Background()
	// Saved through a store whose clock is two hours behind, so that
	// Save does not prune them.
	behind := newStore(t, pool, table, 0, func() time.Time { return time.Now().Add(-2 * time.Hour) })
	for _, exp := range []time.Duration{-time.Hour, -time.Minute, time.Hour} {
		if err := behind.Save(ctx, record(time.Now().Add(exp))); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.Len(ctx); err != nil || n != 3 {
		t.Fatalf("Len = %d, %v; want 3", n, err)
	}
	if n, err := s.Prune(ctx); err != nil || n != 2 {
		t.Errorf("Prune = %d, %v; want 2", n, err)
	}
	if n, err := s.Len(ctx); err != nil || n != 1 {
		t.Errorf("Len after Prune = %d, %v; want 1", n, err)
	}
}

// TestCapacityAcrossStores has Stores with pools of their own, as separate
// processes would, Save into one table at once: the table never holds
// more than its capacity.
func TestCapacityAcrossStores(t *testing.T) {
	const capacity, stores, each = 7, 4, 10
	table := newTable(t)
	var saved, full atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range stores {
		// One principal saves every record: no quota per principal, so
		// that what fills the table is Capacity.
		s, err := pgstore.New(context.Background(), newPool(t, nil), pgstore.Options{Table: table, Capacity: capacity, PerPrincipalCapacity: -1})
		if err != nil {
			t.Fatal(err)
		}
		for range each {
			wg.Go(func() {
				<-start
				switch err := s.Save(context.Background(), record(time.Now().Add(time.Hour))); {
				case err == nil:
					saved.Add(1)
				case errors.Is(err, execgate.ErrStoreFull):
					full.Add(1)
				default:
					t.Errorf("Save: %v", err)
				}
			})
		}
	}
	close(start)
	wg.Wait()
	if saved.Load() != capacity || full.Load() != stores*each-capacity {
		t.Errorf("%d saved, %d refused as full; want %d and %d", saved.Load(), full.Load(), capacity, stores*each-capacity)
	}
}

// TestCanceledContext: a context canceled before the call sends nothing,
// and the errors say the state is known (not stored, not taken, not
// deleted) while still matching context.Canceled.
func TestCanceledContext(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool, newTable(t), 0, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := record(time.Now().Add(time.Hour))
	wantNotApplied := func(op string, err error) {
		t.Helper()
		var se *pgstore.StateError
		if !errors.Is(err, context.Canceled) || !errors.As(err, &se) || string(se.Op) != op || se.State != pgstore.NotApplied {
			t.Errorf("%s with a canceled context: %v; want a NotApplied StateError matching context.Canceled", op, err)
		}
	}
	wantNotApplied("Save", s.Save(ctx, rec))
	_, err := s.Take(ctx, rec.Approval.ID)
	wantNotApplied("Take", err)
	_, err = s.Delete(ctx, rec.Approval.ID)
	wantNotApplied("Delete", err)
	if err := s.Save(context.Background(), rec); err != nil {
		t.Fatalf("the pool did not recover: %v", err)
	}
}
