package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/internal/fakeclock"
	"github.com/execgate/execgate/stores/pgstore"
)

// principalRecord is a record of principal that expires at exp.
func principalRecord(principal string, exp time.Time) execgate.Record {
	rec := record(exp)
	rec.Approval.Principal = principal
	return rec
}

// quotaStore returns a Store on a table of its own with opts (Table set
// here).
func quotaStore(t *testing.T, pool *pgxpool.Pool, table string, opts pgstore.Options) *pgstore.Store {
	t.Helper()
	opts.Table = table
	s, err := pgstore.New(context.Background(), pool, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// checkQuotaError checks that err is the *QuotaError of principal's
// quota, which still counts as a full store.
func checkQuotaError(t *testing.T, err error, principal, quota string, limit int64) {
	t.Helper()
	var qe *execgate.QuotaError
	if !errors.As(err, &qe) {
		t.Fatalf("Save: %v; want the QuotaError of %q", err, principal)
	}
	if want := (execgate.QuotaError{Principal: principal, Quota: quota, Limit: limit}); *qe != want {
		t.Errorf("QuotaError = %+v; want %+v", *qe, want)
	}
	if !errors.Is(err, execgate.ErrStoreFull) {
		t.Errorf("a full quota is not ErrStoreFull to callers that know no quotas: %v", err)
	}
	if !strings.Contains(err.Error(), `principal "`+principal+`"`) && principal != "" {
		t.Errorf("the message does not say whose quota is full: %v", err)
	}
}

// Invariant 8 of DESIGN.md, for a table shared by processes: one
// principal holding its quota of records or bytes is refused, the others
// are not, and records taken, deleted or expired free the quota.
func TestSingleUse_QuotaPerPrincipal(t *testing.T) {
	size := principalRecord("alice", time.Now()).Bytes()
	pool := newPool(t, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		why   string
		opts  pgstore.Options
		quota string
		limit int64
	}{
		{"two pending records fill a count quota of 2",
			pgstore.Options{Capacity: 100, PerPrincipalCapacity: 2}, execgate.QuotaCount, 2},
		{"two records fill a byte quota of two and a half records",
			pgstore.Options{Capacity: 100, PerPrincipalMaxBytes: 2*size + size/2}, execgate.QuotaBytes, 2*size + size/2},
		{"by default a principal holds a quarter of Capacity",
			pgstore.Options{Capacity: 8}, execgate.QuotaCount, 2},
	} {
		t.Run(tc.why, func(t *testing.T) {
			clk := fakeclock.New(time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC))
			tc.opts.Now = clk.Now
			s := quotaStore(t, pool, newTable(t), tc.opts)
			exp := clk.Now().Add(time.Hour)
			var alices []string
			for i := range 2 {
				rec := principalRecord("alice", exp)
				if err := s.Save(ctx, rec); err != nil {
					t.Fatalf("alice's record %d: %v", i, err)
				}
				alices = append(alices, rec.Approval.ID)
			}
			checkQuotaError(t, s.Save(ctx, principalRecord("alice", exp)), "alice", tc.quota, tc.limit)
			for i := range 2 {
				if err := s.Save(ctx, principalRecord("bob", exp)); err != nil {
					t.Fatalf("bob's record %d is refused for alice's quota: %v", i, err)
				}
			}

			if _, err := s.Take(ctx, alices[0]); err != nil {
				t.Fatal(err)
			}
			if err := s.Save(ctx, principalRecord("alice", exp)); err != nil {
				t.Errorf("a taken record does not free alice's quota: %v", err)
			}
			checkQuotaError(t, s.Save(ctx, principalRecord("alice", exp)), "alice", tc.quota, tc.limit)
			if ok, err := s.Delete(ctx, alices[1]); err != nil || !ok {
				t.Fatalf("Delete = %v, %v", ok, err)
			}
			if err := s.Save(ctx, principalRecord("alice", exp)); err != nil {
				t.Errorf("a deleted record does not free alice's quota: %v", err)
			}

			clk.Advance(2 * time.Hour)
			for i := range 2 {
				if err := s.Save(ctx, principalRecord("alice", clk.Now().Add(time.Hour))); err != nil {
					t.Fatalf("expired records do not free alice's quota (record %d): %v", i, err)
				}
			}
			checkQuotaError(t, s.Save(ctx, principalRecord("alice", clk.Now().Add(time.Hour))), "alice", tc.quota, tc.limit)
		})
	}
}

// Invariant 8 of DESIGN.md: the records without a principal share one
// quota, and a negative quota leaves only Capacity.
func TestSingleUse_QuotaBuckets(t *testing.T) {
	pool := newPool(t, nil)
	ctx := context.Background()
	exp := time.Now().Add(time.Hour)

	s := quotaStore(t, pool, newTable(t), pgstore.Options{Capacity: 10, PerPrincipalCapacity: 1})
	if err := s.Save(ctx, principalRecord("", exp)); err != nil {
		t.Fatal(err)
	}
	err := s.Save(ctx, principalRecord("", exp))
	checkQuotaError(t, err, "", execgate.QuotaCount, 1)
	if !strings.Contains(err.Error(), "the calls without a principal") {
		t.Errorf("the message does not say the quota is the shared one: %v", err)
	}
	if err := s.Save(ctx, principalRecord("alice", exp)); err != nil {
		t.Errorf("a named principal has a quota of its own: %v", err)
	}

	s = quotaStore(t, pool, newTable(t), pgstore.Options{Capacity: 3, PerPrincipalCapacity: -1, PerPrincipalMaxBytes: -1})
	for range 3 {
		if err := s.Save(ctx, principalRecord("alice", exp)); err != nil {
			t.Fatal(err)
		}
	}
	err = s.Save(ctx, principalRecord("bob", exp))
	var qe *execgate.QuotaError
	if !errors.Is(err, execgate.ErrStoreFull) || errors.As(err, &qe) {
		t.Errorf("Save into a full table without quotas: %v; want ErrStoreFull and no QuotaError", err)
	}
}

// Invariant 8 of DESIGN.md, across processes: Stores on their own pools,
// as processes would have, race Saves of one principal (and of another)
// into one table, and no principal ever holds more than its quota, of
// records or of bytes.
func TestSingleUse_QuotaUnderRacingSaves(t *testing.T) {
	size := principalRecord("alice", time.Now()).Bytes()
	for _, tc := range []struct {
		why   string
		opts  pgstore.Options
		quota string
	}{
		{"a count quota of 5", pgstore.Options{Capacity: 1000, PerPrincipalCapacity: 5, PerPrincipalMaxBytes: -1}, execgate.QuotaCount},
		{"a byte quota of 5 records", pgstore.Options{Capacity: 1000, PerPrincipalCapacity: -1, PerPrincipalMaxBytes: 5*size + size/2}, execgate.QuotaBytes},
	} {
		t.Run(tc.why, func(t *testing.T) {
			const stores, goroutines, each = 4, 8, 5
			table := newTable(t)
			var all []*pgstore.Store
			for range stores {
				all = append(all, quotaStore(t, newPool(t, nil), table, tc.opts))
			}
			var mu sync.Mutex
			saved := map[string]int{}
			var wg sync.WaitGroup
			start := make(chan struct{})
			for g := range goroutines {
				principal := "alice"
				if g%4 == 3 {
					principal = "bob" // another principal races alongside
				}
				s := all[g%stores]
				wg.Go(func() {
					<-start
					for range each {
						err := s.Save(context.Background(), principalRecord(principal, time.Now().Add(time.Hour)))
						var qe *execgate.QuotaError
						switch {
						case err == nil:
							mu.Lock()
							saved[principal]++
							mu.Unlock()
						case errors.As(err, &qe) && qe.Principal == principal && qe.Quota == tc.quota:
						default:
							t.Errorf("Save for %s: %v", principal, err)
						}
					}
				})
			}
			close(start)
			wg.Wait()
			if saved["alice"] != 5 || saved["bob"] != 5 {
				t.Errorf("saved %v; want 5 for each principal, its quota", saved)
			}
			var n int
			var b int64
			err := newPool(t, nil).QueryRow(context.Background(), `SELECT count(*), coalesce(sum(record_bytes), 0) FROM `+
				pgx.Identifier{table}.Sanitize()+` WHERE principal = 'alice'`).Scan(&n, &b)
			if err != nil || n != 5 || b != 5*size {
				t.Errorf("alice holds %d rows of %d bytes (%v); want 5 of %d", n, b, err, 5*size)
			}
		})
	}
}

// TestMigrateAddsPrincipalColumns: a table made before the quotas (with
// content_sha256, without principal and record_bytes) is refused by New
// until Migrate adds the columns, which it fills in from the rows it
// holds, so that the rows pending since before the upgrade count against
// their principals' quotas.
func TestMigrateAddsPrincipalColumns(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, nil)
	table := newTable(t)
	q := pgx.Identifier{table}.Sanitize()
	if _, err := pool.Exec(ctx, `ALTER TABLE `+q+` DROP COLUMN principal, DROP COLUMN record_bytes`); err != nil {
		t.Fatal(err)
	}
	old := principalRecord("alice", time.Now().Add(time.Hour))
	ap, _ := json.Marshal(old.Approval)
	if _, err := pool.Exec(ctx, `INSERT INTO `+q+` (id, approval, input, salt, fingerprint, stdin_sha256, digest, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		old.Approval.ID, string(ap), []byte(old.Input), old.Salt, old.Fingerprint, old.StdinSHA256, old.Approval.Digest, old.Approval.ExpiresAt); err != nil {
		t.Fatal(err)
	}
	if _, err := pgstore.New(ctx, pool, pgstore.Options{Table: table}); err == nil || !strings.Contains(err.Error(), "Migrate") {
		t.Fatalf("New on a table without the principal columns = %v; want an error pointing at Migrate", err)
	}
	for range 2 {
		if err := pgstore.Migrate(ctx, pool, table); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
	}
	var principal string
	var size int64
	if err := pool.QueryRow(ctx, `SELECT principal, record_bytes FROM `+q+` WHERE id = $1`, old.Approval.ID).Scan(&principal, &size); err != nil {
		t.Fatal(err)
	}
	if principal != "alice" || size != old.Bytes() {
		t.Errorf("the old row has principal %q and %d bytes; want alice and %d", principal, size, old.Bytes())
	}
	s := quotaStore(t, pool, table, pgstore.Options{PerPrincipalCapacity: 1})
	checkQuotaError(t, s.Save(ctx, principalRecord("alice", time.Now().Add(time.Hour))), "alice", execgate.QuotaCount, 1)
	if err := s.Save(ctx, principalRecord("bob", time.Now().Add(time.Hour))); err != nil {
		t.Errorf("bob: %v", err)
	}
}

// Invariant 8 of DESIGN.md: Propose through an Executor on the table
// refuses the principal whose quota is full, naming it, and not another.
func TestSingleUse_ProposeRefusesAFullQuota(t *testing.T) {
	pool := newPool(t, nil)
	s := quotaStore(t, pool, newTable(t), pgstore.Options{PerPrincipalCapacity: 1})
	x, _ := newExecutor(t, s, "1", nil)
	alice := execgate.WithPrincipal(context.Background(), "alice")
	if _, err := x.Propose(alice, "deploy", deployInput, ""); err != nil {
		t.Fatal(err)
	}
	_, err := x.Propose(alice, "deploy", deployInput, "")
	checkQuotaError(t, err, "alice", execgate.QuotaCount, 1)
	if k := execgate.KindOf(err); k != execgate.ErrorKindStoreFull {
		t.Errorf("KindOf = %q; want store_full", k)
	}
	if _, err := x.Propose(execgate.WithPrincipal(context.Background(), "bob"), "deploy", deployInput, ""); err != nil {
		t.Errorf("bob: %v", err)
	}
}
