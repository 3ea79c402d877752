package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/mcpserver"
	"github.com/execgate/execgate/stores/pgstore"
)

// newLeaseBooks returns two pgBooks on one States table, as two
// replicas hold them, and a function that runs a statement on the
// table's rows ($table), to stand for time the test cannot wait for.
func newLeaseBooks(t *testing.T) (a, b *pgBook, sql func(stmt string, args ...any)) {
	t.Helper()
	dsn := pgTestDSN(t)
	table := replicaTable(t, dsn)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, pgstore.MigrateStates(ctx, pool, table))
	states, err := pgstore.NewStates(ctx, pool, table)
	require.NoError(t, err)
	return newPGBook(states, nil), newPGBook(states, nil), func(stmt string, args ...any) {
		t.Helper()
		stmt = strings.ReplaceAll(stmt, "$table", pgx.Identifier{table + "_states"}.Sanitize())
		_, err := pool.Exec(ctx, stmt, args...)
		require.NoError(t, err, stmt)
	}
}

// TestRecordIsTrue_LongApprovedCallKeepsItsResult: a call approved
// just before its approval expires that still runs, on a live replica,
// when the approval's lifetime has passed again after its expiry reads
// running on every replica (its replica holds it under a lease it
// renews), no other replica can settle it, and when it ends its real
// Result reaches its proposer. The memory book never expires a taken
// approval either.
func TestRecordIsTrue_LongApprovedCallKeepsItsResult(t *testing.T) {
	runner, other, sql := newLeaseBooks(t)
	ctx := context.Background()

	t0 := time.Now().UTC().Truncate(time.Microsecond)
	ap := execgate.Approval{ID: "018f0000-0000-7000-8000-00000000cafe", Name: "slow.run", Principal: "bot",
		CreatedAt: t0.Add(-15*time.Minute + time.Second), ExpiresAt: t0.Add(time.Second)}
	require.NoError(t, runner.Add(ctx, ap))
	_, found, err := runner.Take(ctx, ap.ID, true, func(execgate.Approval) error { return nil })
	require.NoError(t, err)
	require.True(t, found, "approved just before expiry")

	// The call (timeout 45m, allowed by config) is still running 16
	// minutes later: the approval's lifetime has passed again after its
	// expiry, by any clock. The proposer polls through another replica.
	sql(`UPDATE $table SET created_at = created_at - interval '16 minutes', expires_at = expires_at - interval '16 minutes' WHERE id = $1`, ap.ID)
	for _, b := range []*pgBook{runner, other} {
		b.now = func() time.Time { return time.Now().Add(16 * time.Minute) }
	}
	v, ans, err := other.Look(ctx, ap.ID, "bot", false, 0)
	require.NoError(t, err)
	require.Equal(t, claimFound, ans)
	require.Equal(t, mcpserver.ApprovalRunning, v.state, "while the call still runs, its proposer reads running: %v", v.err)

	// Another replica cannot settle what the runner holds.
	require.NoError(t, other.Settle(ctx, ap.ID, "mallory", mcpserver.ApprovalFailed, nil, nil))
	v, _, err = other.Look(ctx, ap.ID, "bot", false, 0)
	require.NoError(t, err)
	require.Equal(t, mcpserver.ApprovalRunning, v.state, "another replica settled the runner's take")

	// The call ends and its replica settles it.
	res := &execgate.Result{ID: "trace", Name: "slow.run", OK: true, Termination: "exit", Stdout: "the real output"}
	require.NoError(t, runner.Settle(ctx, ap.ID, "alice", mcpserver.ApprovalApproved, res, nil))
	v, _, err = other.Look(ctx, ap.ID, "bot", false, 0)
	require.NoError(t, err)
	require.Equal(t, mcpserver.ApprovalApproved, v.state, "the approved call ran and succeeded: %v", v.err)
	require.NotNil(t, v.result)
	require.Equal(t, "the real output", v.result.Stdout)
}

// TestRecordIsTrue_LapsedLeaseReadsFailedAndTheLateDecisionIsLogged: a
// replica whose lease on an approval lapsed (it stopped, or lost the
// database for longer than pgLeaseFor) has the approval read failed on
// every replica; its decision, when it comes, changes nothing and is
// told at warn, never dropped in silence.
func TestRecordIsTrue_LapsedLeaseReadsFailedAndTheLateDecisionIsLogged(t *testing.T) {
	runner, other, sql := newLeaseBooks(t)
	var logged bytes.Buffer
	runner.log = slog.New(slog.NewTextHandler(&logged, nil))
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Microsecond)
	ap := execgate.Approval{ID: "018f0000-0000-7000-8000-00000000beef", Name: "slow.run", Principal: "bot",
		CreatedAt: t0, ExpiresAt: t0.Add(15 * time.Minute)}
	require.NoError(t, runner.Add(ctx, ap))
	_, found, err := runner.Take(ctx, ap.ID, true, func(execgate.Approval) error { return nil })
	require.NoError(t, err)
	require.True(t, found)

	sql(`UPDATE $table SET lease_until = now() - interval '1 second' WHERE id = $1`, ap.ID)
	v, _, err := other.Look(ctx, ap.ID, "bot", false, 0)
	require.NoError(t, err)
	require.Equal(t, mcpserver.ApprovalFailed, v.state, "an approval whose lease lapsed")
	require.Error(t, v.err, "a failed approval says why")

	res := &execgate.Result{ID: "trace", Name: "slow.run", OK: true, Termination: "exit"}
	require.NoError(t, runner.Settle(ctx, ap.ID, "alice", mcpserver.ApprovalApproved, res, nil))
	require.Contains(t, logged.String(), "level=WARN")
	require.Contains(t, logged.String(), ap.ID)
	v, _, err = other.Look(ctx, ap.ID, "bot", false, 0)
	require.NoError(t, err)
	require.Equal(t, mcpserver.ApprovalFailed, v.state, "a late decision changes what the store holds")
}
