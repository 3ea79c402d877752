package policy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/policy"
)

func TestMayRun(t *testing.T) {
	e := newEngine(t, policy.Options{},
		policy.Policy{Name: "agents", Principal: "agent-*", Rules: []policy.Rule{
			rule(deny, "terraform.destroy"),
			rule(approval, "terraform.*"),
			rule(allow, "git.*", "terraform.destroy"),
		}},
		policy.Policy{Name: "ci", Principal: "ci", Rules: []policy.Rule{rule(allow, "go.test")}},
		policy.Policy{Name: "nothing", Principal: "guest"},
	)
	for _, tc := range []struct {
		about, principal, name string
		want                   bool
	}{
		{"a name a rule allows may run", "agent-1", "git.log", true},
		{"a name held for approval may run once approved", "agent-1", "terraform.plan", true},
		{"a name whose first matching rule denies never runs", "agent-1", "terraform.destroy", false},
		{"a later allow of a denied name does not count", "agent-2", "terraform.destroy", false},
		{"a name no rule matches never runs", "agent-1", "kubectl.get", false},
		{"the principal's own policy is the only one asked", "ci", "git.log", false},
		{"an exact principal's rule counts", "ci", "go.test", true},
		{"a policy without rules runs nothing", "guest", "go.test", false},
		{"a principal no policy governs runs nothing", "stranger", "go.test", false},
		{"the unknown principal has no star policy here", "", "git.log", false},
	} {
		assert.Equal(t, tc.want, e.MayRun(tc.principal, tc.name), tc.about)
		d := decide(t, e, tc.principal, tc.name)
		assert.Equal(t, tc.want, d.Action != deny, "%s: MayRun agrees with Decide (%s)", tc.about, d.Rule)
	}

	var zero policy.Engine
	assert.False(t, zero.MayRun("agent-1", "git.log"), "the zero Engine runs nothing")
}

// TestMayRun_RateLimitsAndGrantsChangeNothing: a principal over its
// limits is refused for now, not for good, and a grant only waives an
// approval, which MayRun already counts; neither changes the answer.
func TestMayRun_RateLimitsAndGrantsChangeNothing(t *testing.T) {
	clk := newClock()
	e := newEngine(t, policy.Options{Now: clk.Now}, policy.Policy{
		Name: "agents", Principal: "*",
		Rules: []policy.Rule{
			rule(deny, "terraform.destroy"),
			rule(approval, "terraform.*"),
			rule(allow, "git.*"),
		},
		RateLimit: policy.RateLimit{Budget: 1},
	})
	require.Equal(t, allow, decide(t, e, "alice", "git.log").Action)
	require.Equal(t, limited, decide(t, e, "alice", "git.log").Action, "the budget is spent for good")
	assert.True(t, e.MayRun("alice", "git.log"), "a rate limit does not hide a tool")

	for _, tool := range []string{"*", "terraform.*", "terraform.destroy"} {
		_, err := e.Grant(policy.Grant{Principal: "alice", Tool: tool, Expires: clk.Now().Add(time.Hour)})
		require.NoError(t, err)
	}
	assert.True(t, e.MayRun("alice", "terraform.plan"), "held, and granted: may run either way")
	assert.False(t, e.MayRun("alice", "terraform.destroy"), "a grant never overturns a deny")
	assert.False(t, e.MayRun("alice", "docker.run"), "nor applies where no rule matches")
}

func TestMayRun_FollowsSwap(t *testing.T) {
	e := newEngine(t, policy.Options{}, policy.Policy{Name: "p", Principal: "*", Rules: []policy.Rule{rule(allow, "git.log")}})
	require.True(t, e.MayRun("alice", "git.log"))
	require.NoError(t, e.Swap([]policy.Policy{{Name: "p", Principal: "*", Rules: []policy.Rule{rule(deny, "git.log")}}}))
	assert.False(t, e.MayRun("alice", "git.log"), "the next answer uses the new rules")
	require.Error(t, e.Swap([]policy.Policy{{Name: "p", Principal: "*", Rules: []policy.Rule{rule("maybe", "git.log")}}}))
	assert.False(t, e.MayRun("alice", "git.log"), "rules that fail to swap in change nothing")
}

// dispatchAllowlist has a dispatcher "terraform" with an own spec for
// terraform.plan, a dispatcher "git" whose Floor denies every call, and
// the ordinary specs "echo.run" (Floor allow) and "deploy.run" (Floor
// require_approval).
func dispatchAllowlist(t *testing.T) *execgate.Allowlist {
	t.Helper()
	dispatcher := func(name, floor string) execgate.CommandSpec {
		return execgate.CommandSpec{Name: name, Command: "/bin/echo", Dispatch: true, Floor: floor,
			Args: execgate.Subcommands(execgate.SubcommandSpec{})}
	}
	a, err := execgate.NewAllowlist(
		dispatcher("terraform", execgate.ActionRequireApproval),
		execgate.CommandSpec{Name: "terraform.plan", Command: "/bin/echo", Args: execgate.Fixed("plan")},
		dispatcher("git", ""),
		execgate.CommandSpec{Name: "echo.run", Command: "/bin/echo", Args: execgate.Fixed()},
		execgate.CommandSpec{Name: "deploy.run", Command: "/bin/echo", Args: execgate.Fixed(), Floor: execgate.ActionRequireApproval},
	)
	require.NoError(t, err)
	return a
}

func TestMayServe(t *testing.T) {
	a := dispatchAllowlist(t)
	spec := func(name string) execgate.CommandSpec {
		for _, s := range a.Specs() {
			if s.Name == name {
				return s
			}
		}
		t.Fatalf("no spec %q", name)
		return execgate.CommandSpec{}
	}
	for _, tc := range []struct {
		about string
		rules []policy.Rule
		spec  string
		want  bool
	}{
		{"an ordinary spec the rules allow is served",
			[]policy.Rule{rule(allow, "echo.run")}, "echo.run", true},
		{"an ordinary spec the rules deny is not",
			[]policy.Rule{rule(deny, "echo.*"), rule(allow, "*")}, "echo.run", false},
		{"a floor of require_approval holds an allowed call: served",
			[]policy.Rule{rule(allow, "*")}, "deploy.run", true},
		{"a floor of deny refuses every call whatever the rules",
			[]policy.Rule{rule(allow, "*")}, "git", false},
		{"a dispatcher with a rule over all its names is served",
			[]policy.Rule{rule(approval, "terraform.*")}, "terraform", true},
		{"a pattern that reaches its names another way counts",
			[]policy.Rule{rule(allow, "*form.a?ply")}, "terraform", true},
		{"a dispatcher with one allowed subcommand is served",
			[]policy.Rule{rule(allow, "terraform.apply")}, "terraform", true},
		{"a subcommand with its own spec is not the dispatcher's",
			[]policy.Rule{rule(allow, "terraform.plan")}, "terraform", false},
		{"a subcommand denied by an earlier rule does not count",
			[]policy.Rule{rule(deny, "terraform.apply"), rule(allow, "terraform.apply", "git.*")}, "terraform", false},
		{"a pattern shadowed by an earlier pattern over every name does not count",
			[]policy.Rule{rule(deny, "terraform.*"), rule(allow, "terraform.a*", "terraform.apply")}, "terraform", false},
		{"so does one shadowed by a star",
			[]policy.Rule{rule(deny, "*"), rule(allow, "terraform.*")}, "terraform", false},
		{"so does one shadowed by a prefix shorter than the dispatcher's",
			[]policy.Rule{rule(deny, "terra*"), rule(allow, "terraform.?*")}, "terraform", false},
		{"a pattern shadowed by the same pattern does not count",
			[]policy.Rule{rule(deny, "terraform.a*"), rule(allow, "terraform.a*")}, "terraform", false},
		{"a deny of some subcommands leaves the others",
			[]policy.Rule{rule(deny, "terraform.destroy", "terraform.a*"), rule(allow, "terraform.*")}, "terraform", true},
		{"a deny of every name of one length leaves the other lengths",
			[]policy.Rule{rule(deny, "terraform.?"), rule(allow, "terraform.*")}, "terraform", true},
		{"a pattern that matches no name of the dispatcher does not count",
			[]policy.Rule{rule(allow, "git.*", "terraform", "terraform.Apply", "terraform.x.y", "terraform.-x", "terraform.")}, "terraform", false},
		{"a name too long to be a subcommand is no subcommand",
			[]policy.Rule{rule(allow, "terraform."+strings.Repeat("a", 65))}, "terraform", false},
		{"no rule at all serves nothing",
			nil, "terraform", false},
		// Conservative: the checks see one earlier pattern at a time.
		{"a deny made of several patterns that cover every name is not seen: listed",
			[]policy.Rule{rule(deny, "terraform.?", "terraform.??*"), rule(allow, "terraform.*")}, "terraform", true},
		{"a wildcard pattern reaches the names beside an own spec",
			[]policy.Rule{rule(allow, "terraform.pla?")}, "terraform", true},
	} {
		e := newEngine(t, policy.Options{}, policy.Policy{Name: "p", Principal: "alice", Rules: tc.rules})
		assert.Equal(t, tc.want, e.MayServe("alice", spec(tc.spec), a), tc.about)
		assert.False(t, e.MayServe("bob", spec(tc.spec), a), "%s: a principal no policy governs is served nothing", tc.about)
	}
}

// TestMayServe_NeverHidesWhatRuns: whatever MayServe hides, no name the
// spec serves is allowed or held by Decide with the spec's Floor applied,
// for an Executor that asks the Engine.
func TestMayServe_NeverHidesWhatRuns(t *testing.T) {
	a := dispatchAllowlist(t)
	for _, rules := range [][]policy.Rule{
		{rule(deny, "terraform.?*"), rule(allow, "*")},
		{rule(deny, "terraform.a*"), rule(approval, "terraform.a*", "terraform.b")},
		{rule(allow, "terraform.plan"), rule(deny, "*")},
		{rule(deny, "*.run"), rule(allow, "*")},
	} {
		e := newEngine(t, policy.Options{}, policy.Policy{Name: "p", Principal: "*", Rules: rules})
		x, err := execgate.NewExecutor(execgate.Config{Allowlist: a, Policy: e, ExecFn: func(context.Context, execgate.Invocation) execgate.Outcome {
			return execgate.Outcome{}
		}})
		require.NoError(t, err)
		for _, s := range a.Specs() {
			if e.MayServe("alice", s, a) {
				continue
			}
			names := []string{s.Name}
			if s.Dispatch {
				names = []string{s.Name + ".a", s.Name + ".apply", s.Name + ".b", s.Name + ".plan", s.Name + ".z-9"}
			}
			for _, n := range names {
				if own, ok := a.Lookup(n); ok && own.Name != s.Name {
					continue
				}
				input := `{}`
				if s.Dispatch {
					input = `{"args":[]}`
				}
				v, err := x.Decide(execgate.WithPrincipal(context.Background(), "alice"), n, []byte(input), execgate.SubmitOptions{})
				var pe *execgate.PolicyError
				require.ErrorAs(t, err, &pe, "%v: %s", rules, n)
				assert.Equal(t, deny, v.Decision.Action, "%v: %s is hidden, so it must never run", rules, n)
			}
		}
	}
}
