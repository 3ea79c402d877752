package execgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// storeRecord is a record that expires at exp.
func storeRecord(exp time.Time) execgate.Record {
	return execgate.Record{
		Approval: execgate.Approval{ID: uuid.Must(uuid.NewV7()).String(), Name: "echo.say", Args: []string{"a"}, ExpiresAt: exp},
		Input:    []byte(`{}`),
	}
}

// A zero MemoryStore is the store NewMemoryStore makes with zero options:
// it does not need constructing, and it neither panics nor refuses.
func TestMemoryStore_ZeroValueIsUsable(t *testing.T) {
	ctx := context.Background()

	t.Run("save, take and delete", func(t *testing.T) {
		var s execgate.MemoryStore
		ok, err := s.Delete(ctx, uuid.NewString())
		require.NoError(t, err)
		assert.False(t, ok, "an empty store deletes nothing")
		_, err = s.Take(ctx, uuid.NewString())
		require.ErrorIs(t, err, execgate.ErrNoRecord)

		rec := storeRecord(time.Now().Add(time.Hour))
		require.NoError(t, s.Save(ctx, rec))
		require.ErrorIs(t, s.Save(ctx, rec), execgate.ErrDuplicateID)
		got, err := s.Take(ctx, rec.Approval.ID)
		require.NoError(t, err)
		assert.Equal(t, rec.Approval.ID, got.Approval.ID)

		rec = storeRecord(time.Now().Add(time.Hour))
		require.NoError(t, s.Save(ctx, rec))
		ok, err = s.Delete(ctx, rec.Approval.ID)
		require.NoError(t, err)
		assert.True(t, ok)
	})

	t.Run("the default capacity, without eviction", func(t *testing.T) {
		var s execgate.MemoryStore
		// Each record has a principal of its own, so that no quota per
		// principal is what fills the store.
		first := quotaRecord("p0", 2, time.Now().Add(time.Hour))
		require.NoError(t, s.Save(ctx, first))
		for i := 1; i < execgate.DefaultStoreCapacity; i++ {
			require.NoError(t, s.Save(ctx, quotaRecord(fmt.Sprintf("p%d", i), 2, time.Now().Add(time.Hour))), "record %d", i)
		}
		err := s.Save(ctx, quotaRecord("another", 2, time.Now().Add(time.Hour)))
		assert.ErrorIs(t, err, execgate.ErrStoreFull)
		var qe *execgate.QuotaError
		assert.False(t, errors.As(err, &qe), "the store is full, not a quota")
		_, err = s.Take(ctx, first.Approval.ID)
		assert.NoError(t, err, "a full store evicts nothing")
	})

	t.Run("expiry by time.Now", func(t *testing.T) {
		var s execgate.MemoryStore
		for range execgate.DefaultStoreCapacity {
			require.NoError(t, s.Save(ctx, storeRecord(time.Now().Add(-time.Second))))
		}
		require.NoError(t, s.Save(ctx, storeRecord(time.Now().Add(time.Hour))), "expired records are pruned to make room")
		assert.Equal(t, 1, s.Len())

		past := storeRecord(time.Now().Add(-time.Second))
		require.NoError(t, s.Save(ctx, past))
		ok, err := s.Delete(ctx, past.Approval.ID)
		require.NoError(t, err)
		assert.False(t, ok, "an expired record is not pending")
	})

	t.Run("the default byte budget", func(t *testing.T) {
		var s execgate.MemoryStore
		big := storeRecord(time.Now().Add(time.Hour))
		big.Input = make([]byte, execgate.DefaultStoreMaxBytes+1)
		assert.ErrorIs(t, s.Save(ctx, big), execgate.ErrStoreFull)
	})

	t.Run("as an Executor's store", func(t *testing.T) {
		s := &execgate.MemoryStore{}
		x, rec := newGate(t, execgate.Config{Store: s}, echoSpec())
		ap := propose(t, x, `{"args":["zero"]}`)
		assert.Equal(t, 1, s.Len())
		_, err := x.Execute(ctx, ap)
		require.NoError(t, err)
		assert.Equal(t, 1, rec.Count())
	})
}

// Invariant 8 of DESIGN.md.
func TestSingleUse_MemoryStoreBoundsBytes(t *testing.T) {
	store := execgate.NewMemoryStore(execgate.MemoryStoreOptions{MaxBytes: 3 << 10, PerPrincipalMaxBytes: -1})
	x, _ := newGate(t, execgate.Config{Store: store}, echoSpec())
	big, err := json.Marshal(map[string]any{"args": []string{strings.Repeat("a", 1000)}})
	require.NoError(t, err)
	_, err = x.Propose(context.Background(), "echo.say", big, "")
	require.NoError(t, err) // about 2 KiB: input and argument
	_, err = x.Propose(context.Background(), "echo.say", big, "")
	assert.ErrorIs(t, err, execgate.ErrStoreFull, "a second record would pass the byte budget")
	_, err = x.Propose(context.Background(), "echo.say", json.RawMessage(`{}`), "")
	assert.NoError(t, err, "a small record still fits")
	assert.Equal(t, 2, store.Len())
}
