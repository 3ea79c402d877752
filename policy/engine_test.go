package policy_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/policy"
)

func TestDecide_Resolution(t *testing.T) {
	e := newEngine(t, policy.Options{},
		policy.Policy{Name: "everyone", Principal: "*", Rules: []policy.Rule{
			rule(allow, "git.status"),
		}},
		policy.Policy{Name: "agents", Principal: "agent-*", Rules: []policy.Rule{
			rule(deny, "gh.pr.merge"),
			rule(approval, "gh.*"),
			rule(allow, "gh.pr.merge", "git.*"), // shadowed for gh.pr.merge by rule 1
		}},
		policy.Policy{Name: "agent-7", Principal: "agent-7", Rules: []policy.Rule{
			{Name: "only-log", Tools: []string{"git.log"}, Action: allow},
		}},
		policy.Policy{Name: "short-glob", Principal: "a*", Rules: []policy.Rule{
			rule(deny, "*"),
		}},
		policy.Policy{Name: "same-prefix-later", Principal: "agent-?", Rules: []policy.Rule{
			rule(deny, "*"),
		}},
		policy.Policy{Name: "bots", Principal: "*-bot", Rules: []policy.Rule{
			rule(approval, "*"),
		}},
	)
	for _, tc := range []struct {
		name, principal, tool string
		action, rule          string
	}{
		{"exact principal beats every glob", "agent-7", "git.log", allow, "agent-7/only-log"},
		{"exact policy is the only one asked", "agent-7", "git.status", deny, "agent-7/default"},
		{"longest literal prefix among globs", "agent-1", "gh.issue.list", approval, "agents/2"},
		{"equal prefixes: declared first wins", "agent-1", "git.diff", allow, "agents/3"},
		{"shorter prefix still beats star", "alice", "git.status", deny, "short-glob/1"},
		{"glob with no prefix beats star", "ci-bot", "git.status", approval, "bots/1"},
		{"star governs the rest", "bob", "git.status", allow, "everyone/1"},
		{"star governs calls without a principal", "", "git.status", allow, "everyone/1"},
		{"first matching rule wins", "agent-1", "gh.pr.merge", deny, "agents/1"},
		{"no matching rule denies", "agent-1", "terraform.plan", deny, "agents/default"},
		{"no matching rule denies under star", "bob", "git.log", deny, "everyone/default"},
		{"principals are case-sensitive", "Agent-1", "git.status", allow, "everyone/1"},
		{"names are case-sensitive", "agent-1", "GH.pr", deny, "agents/default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(t, e, tc.principal, tc.tool)
			assert.Equal(t, tc.action, d.Action)
			assert.Equal(t, tc.rule, d.Rule)
			assert.Empty(t, d.Grant)
		})
	}
}

func TestDecide_NoPolicyDenies(t *testing.T) {
	e := newEngine(t, policy.Options{}, policy.Policy{Name: "ci", Principal: "ci", Rules: []policy.Rule{rule(allow, "*")}})
	d := decide(t, e, "someone-else", "git.log")
	assert.Equal(t, execgate.Decision{Action: deny, Rule: policy.DefaultRule}, d)

	empty := newEngine(t, policy.Options{})
	assert.Equal(t, execgate.Decision{Action: deny, Rule: policy.DefaultRule}, decide(t, empty, "ci", "git.log"))

	var zero policy.Engine
	assert.Equal(t, execgate.Decision{Action: deny, Rule: policy.DefaultRule}, decide(t, &zero, "ci", "git.log"), "the zero Engine denies everything")
}

func TestGlobs(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		match   []string
		noMatch []string
	}{
		{"*", []string{"git", "git.log", "a.b.c"}, nil},
		{"gh.*", []string{"gh.pr", "gh.pr.create", "gh."}, []string{"gh", "ghx.pr", "GH.pr", "xgh.pr"}},
		{"kubectl.delete*", []string{"kubectl.delete", "kubectl.delete-all", "kubectl.delete.pod"}, []string{"kubectl.dele", "kubectl.get", "kubectl.Delete"}},
		{"*.delete", []string{"kubectl.delete", "a.b.delete"}, []string{"kubectl.delete-all", "delete"}},
		{"git.?og", []string{"git.log", "git.fog"}, []string{"git.og", "git.llog"}},
		{"a*b*c", []string{"abc", "aXbYc", "abbbc", "acbc"}, []string{"ab", "acb", "abcd"}},
		{"git.log", []string{"git.log"}, []string{"git.logs", "git.lo", "xgit.log"}},
	} {
		t.Run(tc.pattern, func(t *testing.T) {
			e := newEngine(t, policy.Options{}, policy.Policy{Name: "p", Principal: "*", Rules: []policy.Rule{rule(allow, tc.pattern)}})
			for _, name := range tc.match {
				assert.Equal(t, allow, decide(t, e, "x", name).Action, "%q should match %q", tc.pattern, name)
			}
			for _, name := range tc.noMatch {
				assert.Equal(t, deny, decide(t, e, "x", name).Action, "%q should not match %q", tc.pattern, name)
			}
		})
	}
}

func TestNew_RefusesBadConfig(t *testing.T) {
	ok := func() policy.Policy {
		return policy.Policy{Name: "p", Principal: "*", Rules: []policy.Rule{rule(allow, "git.*")}}
	}
	with := func(f func(p *policy.Policy)) []policy.Policy {
		p := ok()
		f(&p)
		return []policy.Policy{p}
	}
	for _, tc := range []struct {
		name     string
		policies []policy.Policy
		opts     policy.Options
		path     string
	}{
		{"typo'd action", with(func(p *policy.Policy) { p.Rules[0].Action = "alow" }), policy.Options{}, "policies[0].rules[0].action"},
		{"action in capitals", with(func(p *policy.Policy) { p.Rules[0].Action = "ALLOW" }), policy.Options{}, "policies[0].rules[0].action"},
		{"rate_limited is not a rule action", with(func(p *policy.Policy) { p.Rules[0].Action = limited }), policy.Options{}, "policies[0].rules[0].action"},
		{"missing action", with(func(p *policy.Policy) { p.Rules[0].Action = "" }), policy.Options{}, "policies[0].rules[0].action"},
		{"no tools", with(func(p *policy.Policy) { p.Rules[0].Tools = nil }), policy.Options{}, "policies[0].rules[0].tools"},
		{"empty tool pattern", with(func(p *policy.Policy) { p.Rules[0].Tools = []string{"git.log", ""} }), policy.Options{}, "policies[0].rules[0].tools[1]"},
		{"regex instead of glob", with(func(p *policy.Policy) { p.Rules[0].Tools = []string{`git\..*`} }), policy.Options{}, "policies[0].rules[0].tools[0]"},
		{"character class", with(func(p *policy.Policy) { p.Rules[0].Tools = []string{"git.[lp]og"} }), policy.Options{}, "policies[0].rules[0].tools[0]"},
		{"double star", with(func(p *policy.Policy) { p.Rules[0].Tools = []string{"kubectl.**"} }), policy.Options{}, "policies[0].rules[0].tools[0]"},
		{"space in tool", with(func(p *policy.Policy) { p.Rules[0].Tools = []string{"git log"} }), policy.Options{}, "policies[0].rules[0].tools[0]"},
		{"empty principal", with(func(p *policy.Policy) { p.Principal = "" }), policy.Options{}, "policies[0].principal"},
		{"principal with brackets", with(func(p *policy.Policy) { p.Principal = "agent-[0-9]" }), policy.Options{}, "policies[0].principal"},
		{"principal with space", with(func(p *policy.Policy) { p.Principal = "agent 7" }), policy.Options{}, "policies[0].principal"},
		{"missing name", with(func(p *policy.Policy) { p.Name = "" }), policy.Options{}, "policies[0].name"},
		{"name with slash", with(func(p *policy.Policy) { p.Name = "ops/x" }), policy.Options{}, "policies[0].name"},
		{"rule name all digits", with(func(p *policy.Policy) { p.Rules[0].Name = "2" }), policy.Options{}, "policies[0].rules[0].name"},
		{"rule name default", with(func(p *policy.Policy) { p.Rules[0].Name = "default" }), policy.Options{}, "policies[0].rules[0].name"},
		{"rule name with dot", with(func(p *policy.Policy) { p.Rules[0].Name = "rate_limit.loop" }), policy.Options{}, "policies[0].rules[0].name"},
		{"duplicate rule name", with(func(p *policy.Policy) {
			p.Rules = []policy.Rule{{Name: "r", Tools: []string{"a"}, Action: allow}, {Name: "r", Tools: []string{"b"}, Action: deny}}
		}), policy.Options{}, "policies[0].rules[1].name"},
		{"duplicate policy name", []policy.Policy{ok(), {Name: "p", Principal: "x", Rules: nil}}, policy.Options{}, "policies[1].name"},
		{"duplicate principal", []policy.Policy{ok(), {Name: "q", Principal: "*"}}, policy.Options{}, "policies[1].principal"},
		{"negative per_minute", with(func(p *policy.Policy) { p.RateLimit.PerMinute = -1 }), policy.Options{}, "policies[0].rate_limit.per_minute"},
		{"burst without rate", with(func(p *policy.Policy) { p.RateLimit.Burst = 3 }), policy.Options{}, "policies[0].rate_limit.burst"},
		{"budget window without budget", with(func(p *policy.Policy) { p.RateLimit.BudgetWindow = time.Hour }), policy.Options{}, "policies[0].rate_limit.budget_window"},
		{"loop without window", with(func(p *policy.Policy) { p.RateLimit.Loop.Max = 3 }), policy.Options{}, "policies[0].rate_limit.loop.window"},
		{"loop window without max", with(func(p *policy.Policy) { p.RateLimit.Loop.Window = time.Minute }), policy.Options{}, "policies[0].rate_limit.loop.max"},
		{"loop too long", with(func(p *policy.Policy) { p.RateLimit.Loop = policy.Loop{Max: policy.MaxLoop + 1, Window: time.Minute} }), policy.Options{}, "policies[0].rate_limit.loop.max"},
		{"negative option", []policy.Policy{ok()}, policy.Options{MaxGrants: -1}, "options.MaxGrants"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := policy.New(tc.policies, tc.opts)
			assert.Nil(t, e)
			var ce *policy.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.path, ce.Path)
			assert.Contains(t, err.Error(), "policy: "+tc.path+": ")
		})
	}
}

func TestNew_ErrorNamesTheTypo(t *testing.T) {
	_, err := policy.New([]policy.Policy{{Name: "ops", Principal: "*", Rules: []policy.Rule{
		rule(allow, "git.log"), rule("requires_approval", "kubectl.*"),
	}}}, policy.Options{})
	require.EqualError(t, err, `policy: policies[0].rules[1].action: unknown action "requires_approval"; want allow, deny or require_approval`)
}

func TestDecide_DispatchedNames(t *testing.T) {
	// The Engine decides on the requested name, whatever spec serves it.
	e := newEngine(t, policy.Options{}, policy.Policy{Name: "ops", Principal: "*", Rules: []policy.Rule{
		{Name: "no-destroy", Tools: []string{"terraform.destroy"}, Action: deny},
		rule(approval, "terraform.*"),
	}})
	spec := execgate.CommandSpec{Name: "terraform", Dispatch: true}
	for name, want := range map[string]execgate.Decision{
		"terraform.destroy": {Action: deny, Rule: "ops/no-destroy"},
		"terraform.plan":    {Action: approval, Rule: "ops/2"},
		"terraform":         {Action: deny, Rule: "ops/default"},
	} {
		d, err := e.Decide(context.Background(), execgate.Request{Principal: "p", Name: name, Spec: spec})
		require.NoError(t, err)
		assert.Equal(t, want, d, name)
	}
}

func TestSwap(t *testing.T) {
	e := newEngine(t, policy.Options{}, policy.Policy{Name: "v1", Principal: "*", Rules: []policy.Rule{rule(allow, "*")}})
	require.Equal(t, allow, decide(t, e, "p", "git.log").Action)

	require.NoError(t, e.Swap([]policy.Policy{{Name: "v2", Principal: "*", Rules: []policy.Rule{rule(deny, "git.*")}}}))
	assert.Equal(t, execgate.Decision{Action: deny, Rule: "v2/1"}, decide(t, e, "p", "git.log"))

	err := e.Swap([]policy.Policy{{Name: "v3", Principal: "*", Rules: []policy.Rule{rule("permit", "*")}}})
	var ce *policy.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, execgate.Decision{Action: deny, Rule: "v2/1"}, decide(t, e, "p", "git.log"), "a refused swap keeps the rules in force")

	require.NoError(t, e.Swap(nil))
	assert.Equal(t, execgate.Decision{Action: deny, Rule: policy.DefaultRule}, decide(t, e, "p", "git.log"))

	var zero policy.Engine
	require.NoError(t, zero.Swap([]policy.Policy{{Name: "v1", Principal: "*", Rules: []policy.Rule{rule(allow, "*")}}}))
	assert.Equal(t, allow, decide(t, &zero, "p", "git.log").Action, "the zero Engine takes rules through Swap")
}

func TestDecide_DoesNotAllocate(t *testing.T) {
	e := newEngine(t, policy.Options{},
		policy.Policy{Name: "ops", Principal: "ops-*", Rules: []policy.Rule{rule(deny, "terraform.destroy"), rule(approval, "terraform.*"), rule(allow, "*")}},
		policy.Policy{Name: "all", Principal: "*", Rules: []policy.Rule{rule(allow, "git.*")}},
	)
	ctx := context.Background()
	req := execgate.Request{Principal: "ops-1", Name: "git.log", Argv: execgate.Argv{Args: []string{"log", "-n", "5"}}}
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = e.Decide(ctx, req)
	})
	assert.Zero(t, allocs)
}
