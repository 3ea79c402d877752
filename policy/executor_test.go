package policy_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/internal/fakeclock"
	"github.com/execgate/execgate/policy"
)

// dispatcher returns a spec serving every "<name>.<sub>" under floor.
// Nothing is started: the tests run it through a Recorder.
func dispatcher(name, floor string) execgate.CommandSpec {
	return execgate.CommandSpec{
		Name: name, Command: "/bin/echo", Dispatch: true, Floor: floor,
		Args: execgate.Subcommands(execgate.SubcommandSpec{}),
	}
}

func gatePolicies() []policy.Policy {
	return []policy.Policy{{Name: "ops", Principal: "*", Rules: []policy.Rule{
		{Name: "no-destroy", Tools: []string{"terraform.destroy"}, Action: deny},
		rule(allow, "terraform.plan", "kubectl.get"),
		rule(approval, "terraform.*", "kubectl.*"),
	}}}
}

// newGate builds an Executor over a terraform dispatcher whose floor is
// allow and a kubectl dispatcher whose floor is require_approval, asking
// an Engine with gatePolicies.
func newGate(t *testing.T) (*execgate.Executor, *policy.Engine, *execgatetest.Recorder, *fakeclock.Clock) {
	t.Helper()
	clk := newClock()
	allow, err := execgate.NewAllowlist(
		dispatcher("terraform", execgate.ActionAllow),
		dispatcher("kubectl", execgate.ActionRequireApproval),
	)
	require.NoError(t, err)
	eng := newEngine(t, policy.Options{Now: clk.Now}, gatePolicies()...)
	rec := execgatetest.NewRecorder()
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow, Policy: eng, ExecFn: rec.Exec, Now: clk.Now})
	require.NoError(t, err)
	return x, eng, rec, clk
}

func refusal(t *testing.T, err error) *execgate.PolicyError {
	t.Helper()
	var pe *execgate.PolicyError
	require.ErrorAs(t, err, &pe)
	return pe
}

func TestExecutor_FloorAndPolicy(t *testing.T) {
	ctx := execgate.WithPrincipal(context.Background(), "alice")
	for _, tc := range []struct {
		name   string
		tool   string
		action string // "" runs
		rule   string
	}{
		{"policy deny beats floor allow", "terraform.destroy", deny, "ops/no-destroy"},
		{"policy allow, floor allow: runs", "terraform.plan", "", ""},
		{"policy require_approval, floor allow", "terraform.apply", approval, "ops/3"},
		{"floor require_approval beats policy allow", "kubectl.get", approval, execgate.FloorRule},
		{"both require approval", "kubectl.delete", approval, "ops/3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, _, rec, _ := newGate(t)
			res, err := x.Run(ctx, tc.tool, nil)
			if tc.action == "" {
				require.NoError(t, err)
				assert.True(t, res.OK)
				assert.Equal(t, 1, rec.Count())
				return
			}
			pe := refusal(t, err)
			assert.Equal(t, execgate.PolicyError{Name: tc.tool, Action: tc.action, Rule: tc.rule}, *pe)
			assert.Zero(t, rec.Count())
		})
	}
}

func TestExecutor_ProposeAndExecute(t *testing.T) {
	ctx := execgate.WithPrincipal(context.Background(), "alice")
	x, _, rec, _ := newGate(t)

	_, err := x.Propose(ctx, "terraform.destroy", nil, "clean up")
	assert.Equal(t, deny, refusal(t, err).Action, "a denied call cannot even be proposed")

	for _, tool := range []string{"terraform.apply", "kubectl.get"} {
		ap, err := x.Propose(ctx, tool, json.RawMessage(`{"args":["-x"]}`), "ship it")
		require.NoError(t, err, tool)
		res, err := x.Execute(ctx, ap)
		require.NoError(t, err, tool)
		assert.Equal(t, tool, res.Name)
	}
	calls := rec.Calls()
	require.Len(t, calls, 2)
	assert.Equal(t, []string{"apply", "-x"}, calls[0].Args)
	assert.Equal(t, []string{"get", "-x"}, calls[1].Args)
}

func TestExecutor_ExecuteRefusesWhenThePolicyTurnedToDeny(t *testing.T) {
	ctx := execgate.WithPrincipal(context.Background(), "alice")
	x, eng, rec, _ := newGate(t)
	ap, err := x.Propose(ctx, "terraform.apply", nil, "ship it")
	require.NoError(t, err)

	freeze := gatePolicies()
	freeze[0].Rules = append([]policy.Rule{{Name: "change-freeze", Tools: []string{"terraform.*"}, Action: deny}}, freeze[0].Rules...)
	require.NoError(t, eng.Swap(freeze))

	_, err = x.Execute(ctx, ap)
	assert.Equal(t, execgate.PolicyError{Name: "terraform.apply", Action: deny, Rule: "ops/change-freeze"}, *refusal(t, err))
	assert.Zero(t, rec.Count())

	require.NoError(t, eng.Swap(gatePolicies()))
	_, err = x.Execute(ctx, ap)
	var ae *execgate.ApprovalError
	require.ErrorAs(t, err, &ae, "the refused approval stays consumed")
	assert.Equal(t, execgate.ReasonUnknown, ae.Reason)
	assert.Zero(t, rec.Count())
}

func TestExecutor_Grants(t *testing.T) {
	alice := execgate.WithPrincipal(context.Background(), "alice")
	bob := execgate.WithPrincipal(context.Background(), "bob")
	x, eng, rec, clk := newGate(t)
	id, err := eng.Grant(policy.Grant{Principal: "alice", Tool: "*", Expires: clk.Now().Add(time.Hour)})
	require.NoError(t, err)

	_, err = x.Run(alice, "terraform.apply", nil)
	require.NoError(t, err, "the grant waives the policy's approval")
	assert.Equal(t, 1, rec.Count())

	_, err = x.Run(bob, "terraform.apply", nil)
	assert.Equal(t, approval, refusal(t, err).Action, "only for alice")
	_, err = x.Run(alice, "terraform.destroy", nil)
	assert.Equal(t, execgate.PolicyError{Name: "terraform.destroy", Action: deny, Rule: "ops/no-destroy"}, *refusal(t, err), "never a deny")
	_, err = x.Run(alice, "kubectl.delete", nil)
	assert.Equal(t, execgate.PolicyError{Name: "kubectl.delete", Action: approval, Rule: execgate.FloorRule}, *refusal(t, err), "never the spec's floor")

	clk.Advance(time.Hour)
	_, err = x.Run(alice, "terraform.apply", nil)
	assert.Equal(t, approval, refusal(t, err).Action, "expired")
	assert.Equal(t, 1, rec.Count())
	assert.False(t, eng.Revoke(id))
}

func TestExecutor_RateLimited(t *testing.T) {
	ctx := execgate.WithPrincipal(context.Background(), "alice")
	x, eng, rec, clk := newGate(t)
	limitedOps := gatePolicies()
	limitedOps[0].RateLimit = policy.RateLimit{Loop: policy.Loop{Max: 2, Window: time.Minute}}
	require.NoError(t, eng.Swap(limitedOps))

	for range 2 {
		_, err := x.Run(ctx, "terraform.plan", json.RawMessage(`{"args":["-out","p"]}`))
		require.NoError(t, err)
	}
	_, err := x.Run(ctx, "terraform.plan", json.RawMessage(`{"args":["-out","p"]}`))
	assert.Equal(t, execgate.PolicyError{Name: "terraform.plan", Action: limited, Rule: "ops/rate_limit.loop"}, *refusal(t, err))
	assert.Contains(t, err.Error(), "rate_limited")

	clk.Advance(time.Minute)
	_, err = x.Run(ctx, "terraform.plan", json.RawMessage(`{"args":["-out","p"]}`))
	require.NoError(t, err)
	assert.Equal(t, 3, rec.Count())
}

// TestEngine_ExecuteIsNotRateLimitedTwice checks that a call counted when
// it was proposed is not counted, or refused, again at Execute.
func TestEngine_ExecuteIsNotRateLimitedTwice(t *testing.T) {
	x, rec := oneCallAMinute(t, execgate.ActionAllow)

	ap, err := x.Propose(context.Background(), "echo.hi", nil, "")
	require.NoError(t, err, "the one call of the minute")
	_, err = x.Execute(context.Background(), ap)
	require.NoError(t, err, "Execute does not count the call again")
	assert.Equal(t, 1, rec.Count())

	_, err = x.Run(context.Background(), "echo.hi", nil)
	var pe *execgate.PolicyError
	require.ErrorAs(t, err, &pe, "the bucket is empty")
	assert.Equal(t, execgate.ActionRateLimited, pe.Action)
}

// TestEngine_ProposalsAreRateLimited checks that calls which need an
// approval count against the limits when they are proposed, so one
// principal cannot flood the approval store and the approvers.
func TestEngine_ProposalsAreRateLimited(t *testing.T) {
	x, rec := oneCallAMinute(t, execgate.ActionRequireApproval)

	ap, err := x.Propose(context.Background(), "echo.hi", nil, "")
	require.NoError(t, err)
	_, err = x.Propose(context.Background(), "echo.hi", nil, "")
	var pe *execgate.PolicyError
	require.ErrorAs(t, err, &pe, "the second proposal of the minute")
	assert.Equal(t, execgate.ActionRateLimited, pe.Action)

	_, err = x.Execute(context.Background(), ap)
	require.NoError(t, err, "the approved call is not limited again")
	assert.Equal(t, 1, rec.Count())
}

// oneCallAMinute is an Executor over echo.hi whose policy gives every call
// action and allows one call a minute, on a clock that stands still.
func oneCallAMinute(t *testing.T, action string) (*execgate.Executor, *execgatetest.Recorder) {
	t.Helper()
	e, err := policy.New([]policy.Policy{{
		Name: "p", Principal: "*",
		Rules:     []policy.Rule{{Tools: []string{"*"}, Action: action}},
		RateLimit: policy.RateLimit{PerMinute: 1, Burst: 1},
	}}, policy.Options{Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }})
	require.NoError(t, err)
	a, err := execgate.NewAllowlist(execgate.CommandSpec{Name: "echo.hi", Command: "/bin/echo", Args: execgate.Fixed("hi")})
	require.NoError(t, err)
	rec := execgatetest.NewRecorder()
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: a, ExecFn: rec.Exec, Policy: e})
	require.NoError(t, err)
	return x, rec
}
