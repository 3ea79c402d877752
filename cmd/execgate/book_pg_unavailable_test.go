package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/mcpserver"
	"github.com/execgate/execgate/stores/pgstore"
)

// TestRecordIsTrue_UnreachableStoreSaysWhatHappened: when the approval
// store cannot be reached, each operation's refusal says what is true
// of the approval and its call: a read changed nothing, a proposal
// stored and ran nothing, and a decision recorded after the call ran
// says that it ran, never that nothing ran.
func TestRecordIsTrue_UnreachableStoreSaysWhatHappened(t *testing.T) {
	dsn := pgTestDSN(t)
	table := replicaTable(t, dsn)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	require.NoError(t, err)
	require.NoError(t, pgstore.MigrateStates(ctx, pool, table))
	states, err := pgstore.NewStates(ctx, pool, table)
	require.NoError(t, err)
	b := newPGBook(states, nil)
	pool.Close() // the database is out of reach from here on

	const id = "018f0000-0000-7000-8000-00000000dead"
	now := time.Now()
	ran := &execgate.Result{ID: "trace", OK: true, Termination: "exit"}
	for _, tc := range []struct {
		why        string
		op         func() error
		say, never string
	}{
		{"a proposer's look changed nothing", func() error { _, _, err := b.Look(ctx, id, "bot", false, 0); return err },
			"the approval's state cannot be read now", "nothing ran"},
		{"an approver's list changed nothing", func() error { _, err := b.List(ctx); return err },
			"cannot be read now", "nothing ran"},
		{"a proposal stored nothing and ran nothing", func() error {
			return b.Add(ctx, execgate.Approval{ID: id, Principal: "bot", CreatedAt: now, ExpiresAt: now.Add(time.Minute)})
		}, "nothing was stored and nothing ran", ""},
		{"a decision that could not take the approval decided nothing", func() error {
			_, _, err := b.Take(ctx, id, true, func(execgate.Approval) error { return nil })
			return err
		}, "nothing was decided and nothing ran", ""},
		{"an approved call's outcome says the call ran", func() error { return b.Settle(ctx, id, "alice", mcpserver.ApprovalApproved, ran, nil) },
			"the call ran; its outcome is recorded when the database is back", "nothing ran"},
		{"a rejection says it was rejected", func() error { return b.Settle(ctx, id, "alice", mcpserver.ApprovalRejected, nil, nil) },
			"was rejected", "nothing was stored"},
		{"a call that failed to start says it did not run", func() error {
			return b.Settle(ctx, id, "alice", mcpserver.ApprovalFailed, nil, errors.New("refused"))
		}, "the call did not run", "nothing was stored"},
		{"an approval put back says the call did not run", func() error { return b.Release(ctx, id) },
			"the call did not run", "nothing was stored"},
	} {
		err := tc.op()
		var su *storeUnavailableError
		if !assert.ErrorAs(t, err, &su, tc.why) {
			continue
		}
		assert.Contains(t, err.Error(), tc.say, tc.why)
		if tc.never != "" {
			assert.NotContains(t, err.Error(), tc.never, tc.why)
		}
		assert.NotContains(t, err.Error(), dsn, "%s: the connection string is never shown", tc.why)
	}

	// Over MCP, a retry's claim reads unavailable, which mcpserver
	// refuses with "call again later", never pending.
	o := b.Claim(ctx, id, "bot", 0)
	assert.Equal(t, mcpserver.ApprovalUnavailable, o.State, "an unreachable store is not a pending approval")
	assert.Nil(t, o.Result)
}
