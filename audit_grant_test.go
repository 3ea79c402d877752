package execgate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// TestRecordGrant_ReachesTheAuditor: each change to a grant is one
// outcome Event with the grant, the principal it covers, the command, the
// approval that made it and who made or revoked it (the context's
// principal); caller-chosen strings are cut, and nothing runs.
func TestRecordGrant_ReachesTheAuditor(t *testing.T) {
	log := &eventLog{}
	x, rec := newGate(t, execgate.Config{Auditor: log}, echoSpec())
	alice := execgate.WithPrincipal(context.Background(), "alice")
	for _, tc := range []struct {
		about    string
		ctx      context.Context
		op       string
		approver string
	}{
		{"a grant made by an approver", alice, execgate.OpGrant, "alice"},
		{"a grant revoked by an approver", alice, execgate.OpRevoke, "alice"},
		{"a grant ended by no one (a reload)", context.Background(), execgate.OpRevoke, ""},
		{"a grant that expired", context.Background(), execgate.OpExpire, ""},
	} {
		require.NoError(t, x.RecordGrant(tc.ctx, execgate.GrantChange{
			Op: tc.op, Grant: "g-1", Principal: "agent-7", Name: "echo.say",
			ApprovalID: "0197a0b0-0000-7000-8000-000000000007", Reason: "for 30m0s" + strings.Repeat("x", 1<<20),
		}), tc.about)
		evs := log.take()
		require.Len(t, evs, 1, tc.about)
		ev := evs[0]
		assert.Equal(t, tc.op, ev.Op, tc.about)
		assert.Equal(t, execgate.PhaseOutcome, ev.Phase, tc.about)
		assert.Equal(t, "agent-7", ev.Principal, "%s: the principal the grant covers", tc.about)
		assert.Equal(t, tc.approver, ev.Approver, tc.about)
		assert.Equal(t, "echo.say", ev.Name, tc.about)
		assert.Equal(t, "g-1", ev.Grant, tc.about)
		assert.Equal(t, "0197a0b0-0000-7000-8000-000000000007", ev.ApprovalID, tc.about)
		assert.True(t, strings.HasPrefix(ev.Reason, "for 30m0s"), tc.about)
		assert.LessOrEqual(t, len(ev.Reason), 260, "%s: a reason is cut", tc.about)
		assert.NotEmpty(t, ev.TraceID, tc.about)
		assert.Empty(t, ev.Error, tc.about)
	}
	assert.Zero(t, rec.Count())

	err := x.RecordGrant(alice, execgate.GrantChange{Op: execgate.OpRun, Grant: "g-1"})
	require.Error(t, err, "an op that is not a change to a grant")
	assert.Contains(t, err.Error(), "OpGrant")
	assert.Empty(t, log.take(), "and nothing is recorded")

	// The Auditor's error is returned, for a caller that must not make a
	// grant it could not record.
	failing := &failingLog{failPhase: execgate.PhaseOutcome}
	x, _ = newGate(t, execgate.Config{Auditor: failing}, echoSpec())
	err = x.RecordGrant(alice, execgate.GrantChange{Op: execgate.OpGrant, Grant: "g-1"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no space left")

	// Without an Auditor it is a no-op.
	x, _ = newGate(t, execgate.Config{}, echoSpec())
	assert.NoError(t, x.RecordGrant(alice, execgate.GrantChange{Op: execgate.OpGrant, Grant: "g-1"}))
}
