package execgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/internal/fakeclock"
)

// quotaRecord is a record of principal holding an input of inputBytes
// bytes that expires at exp.
func quotaRecord(principal string, inputBytes int, exp time.Time) execgate.Record {
	rec := storeRecord(exp)
	rec.Approval.Principal = principal
	rec.Input = []byte(`"` + strings.Repeat("s", max(0, inputBytes-2)) + `"`)
	return rec
}

// requireQuotaError checks that err is the *QuotaError of principal's
// quota, and that it still counts as a full store.
func requireQuotaError(t *testing.T, err error, principal, quota string, limit int64) {
	t.Helper()
	var qe *execgate.QuotaError
	require.ErrorAs(t, err, &qe, "want the QuotaError of %q", principal)
	assert.Equal(t, execgate.QuotaError{Principal: principal, Quota: quota, Limit: limit}, *qe)
	assert.ErrorIs(t, err, execgate.ErrStoreFull, "a full quota is a full store to callers that know no quotas")
	assert.Equal(t, execgate.ErrorKind(execgate.ErrorKindStoreFull), execgate.KindOf(err))
}

// Invariant 8 of DESIGN.md: the store is bounded, and so is every
// principal's part of it, so that one principal cannot fill it for the
// others.
func TestSingleUse_MemoryStoreQuotaPerPrincipal(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		why      string
		opts     execgate.MemoryStoreOptions
		size     int // bytes of each record's input
		fits     int // records alice saves before her quota is full
		quota    string
		limit    int64 // the quota alice's refusal names
		bobsFits int   // records bob saves after alice is refused
	}{
		{"a principal holding its count quota is refused, another is not",
			execgate.MemoryStoreOptions{Capacity: 100, PerPrincipalCapacity: 3}, 10, 3, execgate.QuotaCount, 3, 3},
		{"a principal holding its byte quota is refused, another is not",
			execgate.MemoryStoreOptions{MaxBytes: 1 << 20, PerPrincipalMaxBytes: 3000}, 1000, 2, execgate.QuotaBytes, 3000, 2},
		{"by default a principal holds a quarter of the store's records",
			execgate.MemoryStoreOptions{Capacity: 40}, 10, 10, execgate.QuotaCount, 10, 10},
		{"by default a principal holds a quarter of the store's bytes",
			execgate.MemoryStoreOptions{MaxBytes: 40 << 10}, 4 << 10, 2, execgate.QuotaBytes, 10 << 10, 2},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			clk := fakeclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			c.opts.Now = clk.Now
			s := execgate.NewMemoryStore(c.opts)
			exp := clk.Now().Add(time.Hour)
			var alices []string
			for i := range c.fits {
				rec := quotaRecord("alice", c.size, exp)
				require.NoError(t, s.Save(ctx, rec), "alice's record %d fits her quota", i)
				alices = append(alices, rec.Approval.ID)
			}
			err := s.Save(ctx, quotaRecord("alice", c.size, exp))
			requireQuotaError(t, err, "alice", c.quota, c.limit)
			assert.Contains(t, err.Error(), `principal "alice"`, "the refusal says whose quota is full")
			assert.NotContains(t, err.Error(), "sss", "the refusal never repeats the input")
			for i := range c.bobsFits {
				require.NoError(t, s.Save(ctx, quotaRecord("bob", c.size, exp)), "bob's record %d is not refused for alice's quota", i)
			}

			// A record taken (executed) or deleted (rejected) frees its place.
			_, err = s.Take(ctx, alices[0])
			require.NoError(t, err)
			require.NoError(t, s.Save(ctx, quotaRecord("alice", c.size, exp)), "a taken record frees alice's quota")
			requireQuotaError(t, s.Save(ctx, quotaRecord("alice", c.size, exp)), "alice", c.quota, c.limit)
			ok, err := s.Delete(ctx, alices[1])
			require.NoError(t, err)
			require.True(t, ok)
			require.NoError(t, s.Save(ctx, quotaRecord("alice", c.size, exp)), "a rejected record frees alice's quota")

			// Records that expired free it too.
			clk.Advance(2 * time.Hour)
			for range c.fits {
				require.NoError(t, s.Save(ctx, quotaRecord("alice", c.size, clk.Now().Add(time.Hour))), "expired records free alice's quota")
			}
			requireQuotaError(t, s.Save(ctx, quotaRecord("alice", c.size, clk.Now().Add(time.Hour))), "alice", c.quota, c.limit)
		})
	}
}

// Invariant 8 of DESIGN.md: every call without a principal shares one
// quota, and a negative quota turns quotas per principal off.
func TestSingleUse_MemoryStoreQuotaBuckets(t *testing.T) {
	ctx := context.Background()
	exp := time.Now().Add(time.Hour)

	t.Run("the calls without a principal share one quota", func(t *testing.T) {
		s := execgate.NewMemoryStore(execgate.MemoryStoreOptions{Capacity: 10, PerPrincipalCapacity: 2})
		require.NoError(t, s.Save(ctx, quotaRecord("", 10, exp)))
		require.NoError(t, s.Save(ctx, quotaRecord("", 10, exp)))
		err := s.Save(ctx, quotaRecord("", 10, exp))
		requireQuotaError(t, err, "", execgate.QuotaCount, 2)
		assert.Contains(t, err.Error(), "the calls without a principal")
		require.NoError(t, s.Save(ctx, quotaRecord("alice", 10, exp)), "a named principal has a quota of its own")
	})

	t.Run("a negative quota leaves only the store's bounds", func(t *testing.T) {
		s := execgate.NewMemoryStore(execgate.MemoryStoreOptions{Capacity: 5, PerPrincipalCapacity: -1, PerPrincipalMaxBytes: -1})
		for range 5 {
			require.NoError(t, s.Save(ctx, quotaRecord("alice", 10, exp)))
		}
		err := s.Save(ctx, quotaRecord("bob", 10, exp))
		require.ErrorIs(t, err, execgate.ErrStoreFull)
		var qe *execgate.QuotaError
		assert.False(t, errors.As(err, &qe), "a full store is not a principal's quota: %v", err)
	})

	t.Run("the zero MemoryStore has the default quotas", func(t *testing.T) {
		var s execgate.MemoryStore
		quota := execgate.DefaultPerPrincipalQuota(execgate.DefaultStoreCapacity)
		for range quota {
			require.NoError(t, s.Save(ctx, quotaRecord("alice", 10, exp)))
		}
		requireQuotaError(t, s.Save(ctx, quotaRecord("alice", 10, exp)), "alice", execgate.QuotaCount, quota)
		require.NoError(t, s.Save(ctx, quotaRecord("bob", 10, exp)))
	})

	t.Run("large proposals of one principal no longer fill the default store", func(t *testing.T) {
		// What issue 21 found: about 64 proposals of 1 MiB filled the
		// 64 MiB budget. Now the sixteenth is refused, and another
		// principal still has room.
		s := execgate.NewMemoryStore(execgate.MemoryStoreOptions{})
		n := 0
		var err error
		for ; n < 64; n++ {
			if err = s.Save(ctx, quotaRecord("alice", 1<<20, exp)); err != nil {
				break
			}
		}
		assert.Equal(t, 15, n, "alice stores 15 records of 1 MiB")
		requireQuotaError(t, err, "alice", execgate.QuotaBytes, execgate.DefaultStoreMaxBytes/4)
		require.NoError(t, s.Save(ctx, quotaRecord("bob", 1<<20, exp)))
	})
}

// Invariant 8 of DESIGN.md: Propose reports a full quota as the quota of
// the calling principal, and the other principals' proposals go through.
func TestSingleUse_ProposeRefusesAFullQuota(t *testing.T) {
	store := execgate.NewMemoryStore(execgate.MemoryStoreOptions{PerPrincipalCapacity: 2})
	log := &eventLog{}
	x, _ := newGate(t, execgate.Config{Store: store, Auditor: log}, echoSpec())
	alice := execgate.WithPrincipal(context.Background(), "alice")
	bob := execgate.WithPrincipal(context.Background(), "bob")
	in := json.RawMessage(`{"args":["hi"]}`)
	for range 2 {
		_, err := x.Propose(alice, "echo.say", in, "")
		require.NoError(t, err)
	}
	ap, err := x.Propose(alice, "echo.say", in, "")
	requireQuotaError(t, err, "alice", execgate.QuotaCount, 2)
	assert.Empty(t, ap.ID, "nothing was proposed")
	events := log.take()
	require.NotEmpty(t, events)
	last := events[len(events)-1]
	assert.Equal(t, execgate.ErrorKindStoreFull, last.Error, "the trail records the refusal")
	assert.Equal(t, execgate.StoreFullPrincipal, last.Reason, "and that it was the principal's quota")
	_, err = x.Propose(bob, "echo.say", in, "")
	require.NoError(t, err, "bob is not refused for alice's quota")
	assert.Equal(t, 3, store.Len())
}
