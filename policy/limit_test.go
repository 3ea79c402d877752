package policy_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/internal/fakeclock"
	"github.com/execgate/execgate/policy"
)

func limitedPolicy(rl policy.RateLimit) policy.Policy {
	return policy.Policy{Name: "agents", Principal: "*", Rules: []policy.Rule{
		rule(deny, "rm"),
		rule(approval, "kubectl.*"),
		rule(allow, "*"),
	}, RateLimit: rl}
}

// step is one decision in a rate-limit scenario: advance the clock, then
// ask for principal calling name with args.
type step struct {
	advance   time.Duration
	principal string
	name      string
	args      []string
	action    string
	rule      string
}

func runSteps(t *testing.T, e *policy.Engine, clk *fakeclock.Clock, steps []step) {
	t.Helper()
	for i, s := range steps {
		clk.Advance(s.advance)
		d := decide(t, e, s.principal, s.name, s.args...)
		assert.Equal(t, s.action, d.Action, "step %d: %s %s %v", i, s.principal, s.name, s.args)
		if s.rule != "" {
			assert.Equal(t, s.rule, d.Rule, "step %d", i)
		}
	}
}

func TestRateLimit(t *testing.T) {
	const (
		perMinute = "agents/rate_limit.per_minute"
		budget    = "agents/rate_limit.budget"
		loop      = "agents/rate_limit.loop"
	)
	for _, tc := range []struct {
		name  string
		limit policy.RateLimit
		steps []step
	}{
		{
			name:  "per minute, per principal",
			limit: policy.RateLimit{PerMinute: 2},
			steps: []step{
				{principal: "a", name: "git.log", args: []string{"1"}, action: allow},
				{principal: "a", name: "git.log", args: []string{"2"}, action: allow},
				{principal: "a", name: "git.log", args: []string{"3"}, action: limited, rule: perMinute},
				{principal: "b", name: "git.log", args: []string{"1"}, action: allow, rule: "agents/3"},
				{advance: 29 * time.Second, principal: "a", name: "git.log", action: limited},
				{advance: time.Second, principal: "a", name: "git.log", action: allow},
				{principal: "a", name: "git.log", action: limited},
			},
		},
		{
			name:  "burst smaller than the rate",
			limit: policy.RateLimit{PerMinute: 60, Burst: 1},
			steps: []step{
				{principal: "a", name: "git.log", action: allow},
				{principal: "a", name: "git.log", action: limited, rule: perMinute},
				{advance: time.Second, principal: "a", name: "git.log", action: allow},
			},
		},
		{
			name:  "denied and approval-gated calls are not counted",
			limit: policy.RateLimit{PerMinute: 1, Budget: 2, Loop: policy.Loop{Max: 1, Window: time.Hour}},
			steps: []step{
				{principal: "a", name: "rm", action: deny},
				{principal: "a", name: "rm", action: deny},
				{principal: "a", name: "kubectl.delete", action: approval},
				{principal: "a", name: "kubectl.delete", action: approval},
				{principal: "a", name: "git.log", action: allow},
			},
		},
		{
			name:  "budget shared by the policy's principals, never refilled",
			limit: policy.RateLimit{Budget: 3},
			steps: []step{
				{principal: "a", name: "git.log", action: allow},
				{principal: "b", name: "git.log", action: allow},
				{principal: "c", name: "git.log", action: allow},
				{principal: "d", name: "git.log", action: limited, rule: budget},
				{advance: 365 * 24 * time.Hour, principal: "a", name: "git.log", action: limited, rule: budget},
			},
		},
		{
			name:  "budget per window",
			limit: policy.RateLimit{Budget: 2, BudgetWindow: time.Hour},
			steps: []step{
				{principal: "a", name: "git.log", action: allow},
				{advance: 30 * time.Minute, principal: "b", name: "git.log", action: allow},
				{principal: "c", name: "git.log", action: limited, rule: budget},
				{advance: 30*time.Minute - time.Nanosecond, principal: "c", name: "git.log", action: limited},
				{advance: time.Nanosecond, principal: "c", name: "git.log", action: allow},
				{principal: "c", name: "git.log", action: allow},
				{principal: "c", name: "git.log", action: limited},
			},
		},
		{
			name:  "refused by the per-minute rate: the budget is not spent",
			limit: policy.RateLimit{PerMinute: 1, Budget: 2},
			steps: []step{
				{principal: "a", name: "git.log", action: allow},
				{principal: "a", name: "git.log", action: limited, rule: perMinute},
				{principal: "a", name: "git.log", action: limited, rule: perMinute},
				{principal: "b", name: "git.log", action: allow},
				{principal: "c", name: "git.log", action: limited, rule: budget},
			},
		},
		{
			name:  "loop: the same call Max times per window",
			limit: policy.RateLimit{Loop: policy.Loop{Max: 3, Window: time.Minute}},
			steps: []step{
				{principal: "a", name: "git.log", args: []string{"-n", "1"}, action: allow},
				{advance: 10 * time.Second, principal: "a", name: "git.log", args: []string{"-n", "1"}, action: allow},
				{advance: 10 * time.Second, principal: "a", name: "git.log", args: []string{"-n", "1"}, action: allow},
				{principal: "a", name: "git.log", args: []string{"-n", "1"}, action: limited, rule: loop},
				{principal: "a", name: "git.log", args: []string{"-n", "2"}, action: allow, rule: "agents/3"},
				{principal: "a", name: "git.log", args: []string{"-n 1"}, action: allow},
				{principal: "a", name: "git.diff", args: []string{"-n", "1"}, action: allow},
				{principal: "b", name: "git.log", args: []string{"-n", "1"}, action: allow},
				// The first call leaves the window a minute after it was made.
				{advance: 40*time.Second - time.Nanosecond, principal: "a", name: "git.log", args: []string{"-n", "1"}, action: limited},
				{advance: time.Nanosecond, principal: "a", name: "git.log", args: []string{"-n", "1"}, action: allow},
				{principal: "a", name: "git.log", args: []string{"-n", "1"}, action: limited},
			},
		},
		{
			name:  "loop: a refused repeat is not recorded",
			limit: policy.RateLimit{Loop: policy.Loop{Max: 1, Window: time.Minute}},
			steps: []step{
				{principal: "a", name: "git.log", action: allow},
				{advance: 59 * time.Second, principal: "a", name: "git.log", action: limited},
				{advance: time.Second, principal: "a", name: "git.log", action: allow},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			e := newEngine(t, policy.Options{Now: clk.Now}, limitedPolicy(tc.limit))
			runSteps(t, e, clk, tc.steps)
		})
	}
}

func TestRateLimit_StdinMakesADifferentCall(t *testing.T) {
	clk := newClock()
	e := newEngine(t, policy.Options{Now: clk.Now}, limitedPolicy(policy.RateLimit{Loop: policy.Loop{Max: 1, Window: time.Minute}}))
	ask := func(stdin string) string {
		d, err := e.Decide(context.Background(), execgate.Request{Principal: "a", Name: "jq", Argv: execgate.Argv{Args: []string{"."}, Stdin: []byte(stdin)}})
		require.NoError(t, err)
		return d.Action
	}
	assert.Equal(t, allow, ask("{}"))
	assert.Equal(t, allow, ask("[]"))
	assert.Equal(t, limited, ask("{}"))
}

func TestRateLimit_GrantedCallsAreCounted(t *testing.T) {
	clk := newClock()
	e := newEngine(t, policy.Options{Now: clk.Now}, limitedPolicy(policy.RateLimit{PerMinute: 1}))
	_, err := e.Grant(policy.Grant{Principal: "a", Tool: "kubectl.*", Expires: clk.Now().Add(time.Hour)})
	require.NoError(t, err)
	assert.Equal(t, allow, decide(t, e, "a", "kubectl.get").Action)
	assert.Equal(t, execgate.Decision{Action: limited, Rule: "agents/rate_limit.per_minute"}, decide(t, e, "a", "kubectl.get"))
}

func TestRateLimit_StateSurvivesSwap(t *testing.T) {
	clk := newClock()
	e := newEngine(t, policy.Options{Now: clk.Now}, limitedPolicy(policy.RateLimit{PerMinute: 2, Budget: 3}))
	assert.Equal(t, allow, decide(t, e, "a", "git.log").Action)
	assert.Equal(t, allow, decide(t, e, "a", "git.log").Action)

	// Same rate: the bucket is still empty after the swap.
	require.NoError(t, e.Swap([]policy.Policy{limitedPolicy(policy.RateLimit{PerMinute: 2, Budget: 3})}))
	assert.Equal(t, limited, decide(t, e, "a", "git.log").Action)

	// The budget is kept by policy name: one call left.
	assert.Equal(t, allow, decide(t, e, "b", "git.log").Action)
	assert.Equal(t, execgate.Decision{Action: limited, Rule: "agents/rate_limit.budget"}, decide(t, e, "c", "git.log"))

	// A larger budget under the same name counts what was spent.
	require.NoError(t, e.Swap([]policy.Policy{limitedPolicy(policy.RateLimit{PerMinute: 2, Budget: 4})}))
	assert.Equal(t, allow, decide(t, e, "c", "git.log").Action)
	assert.Equal(t, limited, decide(t, e, "d", "git.log").Action)

	// Dropping the budget forgets it; bringing it back starts afresh.
	require.NoError(t, e.Swap([]policy.Policy{limitedPolicy(policy.RateLimit{})}))
	require.NoError(t, e.Swap([]policy.Policy{limitedPolicy(policy.RateLimit{Budget: 1})}))
	assert.Equal(t, allow, decide(t, e, "e", "git.log").Action)
	assert.Equal(t, limited, decide(t, e, "e", "git.log").Action)

	// An existing bucket takes a new rate from its next call on, and keeps
	// its tokens: a's bucket is still empty.
	require.NoError(t, e.Swap([]policy.Policy{limitedPolicy(policy.RateLimit{PerMinute: 60})}))
	assert.Equal(t, limited, decide(t, e, "a", "git.log").Action)
	clk.Advance(time.Second)
	assert.Equal(t, allow, decide(t, e, "a", "git.log").Action, "a refills at the new rate of one per second")
	assert.Equal(t, limited, decide(t, e, "a", "git.log").Action)
}

func TestRateLimit_Concurrent(t *testing.T) {
	clk := newClock()
	e := newEngine(t, policy.Options{Now: clk.Now}, limitedPolicy(policy.RateLimit{PerMinute: 100, Budget: 150}))
	results := make(chan string, 400)
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 100 {
				d, _ := e.Decide(context.Background(), execgate.Request{Principal: fmt.Sprint("p", g%2), Name: "git.log", Argv: execgate.Argv{Args: []string{fmt.Sprint(i)}}})
				results <- d.Action
			}
		}()
	}
	for range 4 {
		<-done
	}
	close(results)
	allowed := 0
	for a := range results {
		if a == allow {
			allowed++
		}
	}
	assert.Equal(t, 150, allowed, "two principals, 100 each per minute, 150 in all")
}
