package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execgate/execgate"
)

// BenchmarkProposeExecute is one approval's round trip through
// PostgreSQL: Propose (Save) and Execute (Take), with a Recorder as the
// ExecFn, so that no process is started.
func BenchmarkProposeExecute(b *testing.B) {
	ctx := context.Background()
	store := newStore(b, newPool(b, nil), newTable(b), 0, nil)
	x, _ := newExecutor(b, store, "1", nil)
	for b.Loop() {
		ap, err := x.Propose(ctx, "deploy", deployInput, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := x.Execute(ctx, ap); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTakeContention has 32 goroutines, on a pool of 32 connections,
// Take from one table at once. In "same-record" all 32 race for each
// record and exactly one wins (ns/op is per record); in
// "distinct-records" each Take has a record of its own (ns/op is per
// Take).
func BenchmarkTakeContention(b *testing.B) {
	const goroutines = 32
	ctx := context.Background()
	setup := func(b *testing.B, n int) (execgate.ApprovalStore, []string) {
		pool := newPool(b, func(c *pgxpool.Config) { c.MaxConns = goroutines })
		table := newTable(b)
		store := newStore(b, pool, table, n, nil)
		// Filled with one COPY: Save, serialized by its lock, would make
		// the setup take longer than the benchmark.
		ids := make([]string, n)
		rows := make([][]any, n)
		for i := range rows {
			rec := record(time.Now().Add(time.Hour))
			ap, err := json.Marshal(rec.Approval)
			if err != nil {
				b.Fatal(err)
			}
			ids[i] = rec.Approval.ID
			rows[i] = []any{rec.Approval.ID, string(ap), []byte(rec.Input), rec.Salt, rec.Fingerprint, rec.StdinSHA256, rec.Approval.Digest, rec.Approval.ExpiresAt}
		}
		cols := []string{"id", "approval", "input", "salt", "fingerprint", "stdin_sha256", "digest", "expires_at"}
		if _, err := pool.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows)); err != nil {
			b.Fatal(err)
		}
		return store, ids
	}

	b.Run("same-record", func(b *testing.B) {
		store, ids := setup(b, b.N)
		b.ResetTimer()
		for _, id := range ids {
			var wins atomic.Int32
			var wg sync.WaitGroup
			for range goroutines {
				wg.Go(func() {
					_, err := store.Take(ctx, id)
					switch {
					case err == nil:
						wins.Add(1)
					case !errors.Is(err, execgate.ErrNoRecord):
						b.Error(err)
					}
				})
			}
			wg.Wait()
			if wins.Load() != 1 {
				b.Fatalf("%d Takes of one record succeeded", wins.Load())
			}
		}
	})

	b.Run("distinct-records", func(b *testing.B) {
		store, ids := setup(b, b.N)
		var next atomic.Int64
		b.ResetTimer()
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for {
					i := next.Add(1) - 1
					if i >= int64(len(ids)) {
						return
					}
					if _, err := store.Take(ctx, ids[i]); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	})
}
