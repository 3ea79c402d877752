package policy_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// TestEngine_SubmitCountsACallOnce checks that a submitted call is counted
// against the rate limits once, whether it runs or is proposed: Submit
// asks the Engine once, with Request.ProposeIfHeld, and a proposal it
// stores is not counted again at Execute.
func TestEngine_SubmitCountsACallOnce(t *testing.T) {
	cases := []struct {
		why    string
		action string
		op     string
	}{
		{"an allowed call counts once, when it runs", execgate.ActionAllow, execgate.OpRun},
		{"a held call counts once, when it is proposed", execgate.ActionRequireApproval, execgate.OpPropose},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			x, rec := oneCallAMinute(t, c.action)
			ctx := context.Background()

			sub, err := x.Submit(ctx, "echo.hi", nil, execgate.SubmitOptions{})
			require.NoError(t, err, "the one call of the minute")
			assert.Equal(t, c.op, sub.Op)
			if sub.Op == execgate.OpPropose {
				_, err := x.Execute(ctx, sub.Approval)
				require.NoError(t, err, "the approved call is not counted again")
			}
			assert.Equal(t, 1, rec.Count())

			_, err = x.Submit(ctx, "echo.hi", nil, execgate.SubmitOptions{})
			var pe *execgate.PolicyError
			require.ErrorAs(t, err, &pe, "the bucket is empty after one call")
			assert.Equal(t, execgate.ActionRateLimited, pe.Action)
		})
	}
}

// TestEngine_SubmitWithoutProposingCountsNoHeldCall checks that a held
// call refused because the caller takes no approvals
// (SubmitOptions.NoPropose, as Run) holds nothing and is not counted.
func TestEngine_SubmitWithoutProposingCountsNoHeldCall(t *testing.T) {
	x, _ := oneCallAMinute(t, execgate.ActionRequireApproval)
	ctx := context.Background()
	for range 3 {
		_, err := x.Submit(ctx, "echo.hi", nil, execgate.SubmitOptions{NoPropose: true})
		assert.Equal(t, execgate.ActionRequireApproval, refusal(t, err).Action, "refused for the approval, never for the limit")
	}
	sub, err := x.Submit(ctx, "echo.hi", nil, execgate.SubmitOptions{})
	require.NoError(t, err, "the minute's call is still there")
	assert.Equal(t, execgate.OpPropose, sub.Op)
}

// TestEngine_DecideSpendsNoRateLimit checks that asking what a call would
// do (Executor.Decide, a dry run) leaves the rate limit as it was: the one
// call of the minute still runs after any number of Decides.
func TestEngine_DecideSpendsNoRateLimit(t *testing.T) {
	for _, action := range []string{execgate.ActionAllow, execgate.ActionRequireApproval} {
		t.Run(action, func(t *testing.T) {
			x, _ := oneCallAMinute(t, action)
			ctx := context.Background()
			for range 5 {
				_, err := x.Decide(ctx, "echo.hi", nil, execgate.SubmitOptions{})
				require.NoError(t, err, "a dry run is never rate limited by other dry runs")
			}
			_, err := x.Submit(ctx, "echo.hi", nil, execgate.SubmitOptions{})
			require.NoError(t, err, "the one call of the minute is still there")
		})
	}
}
