package mcpserver_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/mcpserver"
)

// switched is an Outcomes whose one outcome for every claim the test
// changes.
type switched struct {
	o atomic.Pointer[mcpserver.ApprovalOutcome]
}

func (s *switched) Claim(context.Context, string, string, time.Duration) mcpserver.ApprovalOutcome {
	return *s.o.Load()
}

// An outcome the Outcomes cannot read now (its store is unreachable) is
// a refusal that says to call again later, never "pending": no approver
// may be able to decide it either. The held call stays, so that the
// retry made once the store is back learns the real outcome, and
// nothing is proposed again.
func TestRetry_UnavailableOutcomeIsARefusalToRetryLater(t *testing.T) {
	var proposed int
	out := &switched{}
	out.o.Store(&mcpserver.ApprovalOutcome{State: mcpserver.ApprovalUnavailable})
	f := start(t, setup{opts: mcpserver.Options{
		OnPending: func(context.Context, execgate.Approval) error { proposed++; return nil },
		Outcomes:  out,
	}})
	id := pendingID(t, f.call(t, "deploy", `{}`))
	for range 2 {
		res := f.call(t, "deploy", `{}`)
		st := status(t, res)
		assert.Equal(t, mcpserver.StatusRefused, st.Status, "not pending")
		assert.Equal(t, mcpserver.KindInternal, st.Kind)
		require.NotNil(t, st.Approval)
		assert.Equal(t, id, st.Approval.ID, "the refusal names the approval")
		assert.Contains(t, text(t, res), "cannot be read now")
		assert.Contains(t, text(t, res), "Call the tool again later")
	}
	assert.Equal(t, 1, proposed, "nothing was proposed again")

	done := execgate.Result{ID: "0190b8d5-0000-7000-8000-000000000001", Name: "deploy", Termination: execgate.TerminationExit, OK: true, Stdout: "deployed\n"}
	out.o.Store(&mcpserver.ApprovalOutcome{State: mcpserver.ApprovalApproved, Result: &done})
	assert.Equal(t, done.Stdout, ran(t, f.call(t, "deploy", `{}`)).Stdout, "once the store is back the retry gets the Result")
	assert.Equal(t, 1, proposed)
}
