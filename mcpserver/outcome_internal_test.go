package mcpserver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// claimThenGone is Outcomes whose Claim hands out a Result, and whose
// caller's context is done by the time Claim returns: the client went
// away between the claim and the answer.
type claimThenGone struct {
	cancel context.CancelFunc
	res    execgate.Result
}

func (c claimThenGone) Claim(context.Context, string, string, time.Duration) ApprovalOutcome {
	c.cancel()
	return ApprovalOutcome{State: ApprovalApproved, Result: &c.res}
}

// TestSingleUse_AClaimedResultIsAlwaysAnswered: once Outcomes.Claim has
// handed out an approved call's Result, the answer is that Result, even
// when the caller's context ended meanwhile: no later claim could get it,
// and answering pending would have the call proposed, and run, again.
func TestSingleUse_AClaimedResultIsAlwaysAnswered(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ap := execgate.Approval{ID: "0190b8d5-0000-7000-8000-000000000001", Name: "deploy", CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
	res := execgate.Result{ID: "0190b8d5-0000-7000-8000-000000000002", Name: "deploy", Termination: execgate.TerminationExit, OK: true, Stdout: "deployed\n"}
	s := &Server{opts: Options{Outcomes: claimThenGone{cancel: cancel, res: res}}, held: map[heldKey]*heldCall{}}
	k := heldKeyOf("ci-bot", "deploy", "digest")
	h := s.hold(k, ap)

	out := s.outcome(ctx, nil, k, h, true)
	require.NotNil(t, out)
	require.Error(t, ctx.Err())
	got, ok := out.StructuredContent.(execgate.Result)
	require.True(t, ok, "the answer is the Result, not %#v", out.StructuredContent)
	assert.Equal(t, res, got)
	assert.Nil(t, s.heldCallOf(k), "the held call is over")
}
