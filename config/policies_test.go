package config_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/internal/fakeclock"
	"github.com/execgate/execgate/policy"
)

const (
	allow    = execgate.ActionAllow
	deny     = execgate.ActionDeny
	approval = execgate.ActionRequireApproval
	limited  = execgate.ActionRateLimited
)

// testNow is where every test clock starts; the grants in testdata are
// written for it.
var testNow = time.Date(2030, 1, 2, 15, 4, 5, 0, time.UTC)

// newTestClock returns a clock at testNow that tests move by hand.
func newTestClock() *fakeclock.Clock { return fakeclock.New(testNow) }

// gate is a configuration loaded with a test clock, driving an Executor
// whose ExecFn records calls instead of starting processes.
type gate struct {
	l   *config.Loaded
	x   *execgate.Executor
	rec *execgatetest.Recorder
	clk *fakeclock.Clock
}

func newGate(t *testing.T, l *config.Loaded, clk *fakeclock.Clock) *gate {
	t.Helper()
	rec := execgatetest.NewRecorder()
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: l.Allowlist, Policy: l.Policy, ExecFn: rec.Exec, Now: clk.Now})
	require.NoError(t, err)
	return &gate{l: l, x: x, rec: rec, clk: clk}
}

// loadGate loads text with a test clock and builds a gate over it.
func loadGate(t *testing.T, text string) *gate {
	t.Helper()
	clk := newTestClock()
	l, err := config.LoadOptions{Now: clk.Now}.LoadBytes("test.yaml", []byte(text))
	require.NoError(t, err)
	return newGate(t, l, clk)
}

// fileGate loads a file of testdata with a test clock.
func fileGate(t *testing.T, name string) *gate {
	t.Helper()
	clk := newTestClock()
	l, err := config.LoadOptions{Now: clk.Now}.LoadFile(filepath.Join(testdataDir, name))
	require.NoError(t, err)
	return newGate(t, l, clk)
}

func as(principal string) context.Context {
	if principal == "" {
		return context.Background()
	}
	return execgate.WithPrincipal(context.Background(), principal)
}

// run calls name as principal and returns the refusal, nil when the call
// ran. It checks that a refused call reached no ExecFn.
func (g *gate) run(t *testing.T, principal, name string, input string) *execgate.PolicyError {
	t.Helper()
	before := g.rec.Count()
	res, err := g.x.Run(as(principal), name, json.RawMessage(input))
	if err == nil {
		assert.True(t, res.OK)
		assert.Equal(t, before+1, g.rec.Count())
		return nil
	}
	assert.Equal(t, before, g.rec.Count(), "a refused call reached the ExecFn")
	var pe *execgate.PolicyError
	require.ErrorAs(t, err, &pe)
	return pe
}

func TestPolicyFile(t *testing.T) {
	g := fileGate(t, "policies.yaml")
	l := g.l
	require.NotNil(t, l.Engine)
	assert.Same(t, l.Engine, l.Policy)

	var names []string
	for _, p := range l.Policies {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"release-bot", "ops-agents", "agents", "everyone"}, names)
	assert.Equal(t, policy.RateLimit{PerMinute: 30, Burst: 10, Budget: 1000, BudgetWindow: 24 * time.Hour,
		Loop: policy.Loop{Max: 3, Window: 10 * time.Minute}}, l.Policies[2].RateLimit)
	assert.Equal(t, []policy.Grant{{
		ID: "incident-4711", Principal: "agent-7", Tool: "terraform.*",
		Expires: time.Date(2030, 1, 2, 18, 0, 0, 0, time.UTC),
		Reason:  "incident 4711, approved by the on-call lead", Created: testNow,
	}}, l.Grants)
	assert.Equal(t, l.Grants, l.Engine.Grants())

	for _, tc := range []struct {
		why, principal, tool string
		action, rule         string // action "" runs; rule is then what the Engine decided
		grant                string
	}{
		{"an exact principal before every pattern", "release-bot", "terraform.apply", "", "release-bot/1", ""},
		{"only the chosen policy's rules count", "release-bot", "git.status", deny, "release-bot/default", ""},
		{"the longest literal prefix wins", "agent-ops-1", "terraform.apply", "", "ops-agents/2", ""},
		{"deny in the longer-prefix policy", "agent-ops-1", "terraform.destroy", deny, "ops-agents/no-destroy", ""},
		{"a floor of human_approval beats a policy allow", "agent-ops-1", "kubectl.get", approval, execgate.FloorRule, ""},
		{"a glob principal", "agent-3", "git.log", "", "agents/reads", ""},
		{"require_approval", "agent-3", "terraform.apply", approval, "agents/changes", ""},
		{"the first matching rule wins", "agent-3", "terraform.destroy", deny, "agents/no-destroy", ""},
		{"no rule matches: default deny", "agent-3", "kubectl.delete", deny, "agents/default", ""},
		{"the grant turns require_approval into allow", "agent-7", "terraform.apply", "", "agents/changes", "incident-4711"},
		{"deny beats the grant", "agent-7", "terraform.destroy", deny, "agents/no-destroy", ""},
		{"the grant does not lift a floor", "agent-7", "kubectl.get", approval, execgate.FloorRule, ""},
		{"the grant covers only its principal", "agent-8", "terraform.apply", approval, "agents/changes", ""},
		{"the catch-all principal", "bob", "git.status", "", "everyone/1", ""},
		{"calls without a principal", "", "git.status", "", "everyone/1", ""},
		{"the catch-all's default deny", "bob", "git.log", deny, "everyone/default", ""},
	} {
		t.Run(tc.why, func(t *testing.T) {
			pe := g.run(t, tc.principal, tc.tool, "")
			if tc.action == "" {
				require.Nil(t, pe)
				d, err := l.Engine.Decide(context.Background(), execgate.Request{Op: execgate.OpExecute, Principal: tc.principal, Name: tc.tool})
				require.NoError(t, err)
				assert.Equal(t, execgate.Decision{Action: allow, Rule: tc.rule, Grant: tc.grant}, d)
				return
			}
			require.NotNil(t, pe)
			assert.Equal(t, execgate.PolicyError{Name: tc.tool, Action: tc.action, Rule: tc.rule}, *pe)
		})
	}

	// The policies judge the requested name, but only allowlisted names
	// get that far: git is strict.
	_, err := g.x.Run(as("agent-ops-1"), "git.push", nil)
	var nf *execgate.NotFoundError
	assert.ErrorAs(t, err, &nf)
}

func TestPolicyGrantExpires(t *testing.T) {
	g := fileGate(t, "policies.yaml")
	assert.Nil(t, g.run(t, "agent-7", "terraform.apply", ""))

	g.clk.Advance(time.Date(2030, 1, 2, 18, 0, 0, 0, time.UTC).Sub(testNow) - time.Second)
	assert.Nil(t, g.run(t, "agent-7", "terraform.apply", ""), "a second before the expiry")

	g.clk.Advance(time.Second)
	pe := g.run(t, "agent-7", "terraform.apply", "")
	require.NotNil(t, pe)
	assert.Equal(t, execgate.PolicyError{Name: "terraform.apply", Action: approval, Rule: "agents/changes"}, *pe)
	assert.Empty(t, g.l.Engine.Grants())

	// The approval path still works.
	ap, err := g.x.Propose(as("agent-7"), "terraform.apply", nil, "ship it")
	require.NoError(t, err)
	_, err = g.x.Execute(as("agent-7"), ap)
	require.NoError(t, err)
}

func TestPolicyPresence(t *testing.T) {
	const tools = `
version: 1
tools:
  - {name: git, bin: /bin/echo, strict: true, commands: {log: {}}}
  - {name: tf, bin: /bin/echo, default_action: human_approval}
`
	t.Run("absent: every allowlisted call is allowed", func(t *testing.T) {
		g := loadGate(t, tools)
		assert.Nil(t, g.l.Policy)
		assert.Nil(t, g.l.Engine)
		assert.Nil(t, g.l.Policies)
		for _, p := range []string{"", "anyone"} {
			assert.Nil(t, g.run(t, p, "git.log", ""))
			pe := g.run(t, p, "tf.apply", "")
			require.NotNil(t, pe, "the floor still applies")
			assert.Equal(t, execgate.FloorRule, pe.Rule)
		}
	})
	t.Run("empty: every call is denied", func(t *testing.T) {
		g := loadGate(t, tools+"policies: []\ngrants: []\n")
		require.NotNil(t, g.l.Engine)
		assert.Empty(t, g.l.Policies)
		for _, p := range []string{"", "anyone"} {
			for _, name := range []string{"git.log", "tf.apply"} {
				pe := g.run(t, p, name, "")
				require.NotNil(t, pe)
				assert.Equal(t, execgate.PolicyError{Name: name, Action: deny, Rule: policy.DefaultRule}, *pe)
			}
		}
	})
	t.Run("a policy without rules denies its principals", func(t *testing.T) {
		g := loadGate(t, tools+`policies:
  - {name: blocked, principal: mallory, rules: []}
  - {name: rest, principal: "*", rules: [{tools: ["*"], action: allow}]}
`)
		pe := g.run(t, "mallory", "git.log", "")
		require.NotNil(t, pe)
		assert.Equal(t, "blocked/default", pe.Rule)
		assert.Nil(t, g.run(t, "alice", "git.log", ""))
	})
	t.Run("a pattern that matches no tool is fine", func(t *testing.T) {
		g := loadGate(t, tools+`policies:
  - {name: p, principal: "*", rules: [{tools: ["helm.*", "git.log"], action: allow}]}
`)
		assert.Nil(t, g.run(t, "alice", "git.log", ""))
	})
}

func TestPolicyRateLimit(t *testing.T) {
	g := loadGate(t, `
version: 1
tools: [{name: git, bin: /bin/echo, strict: true, commands: {log: {positionals: {max: 1}}}}]
policies:
  - name: paced
    principal: "paced-*"
    rules: [{tools: ["*"], action: allow}]
    rate_limit: {per_minute: 2}
  - name: looping
    principal: "loop-*"
    rules: [{tools: ["*"], action: allow}]
    rate_limit:
      loop: {max: 2, window: 1m}
  - name: budgeted
    principal: "budget-*"
    rules: [{tools: ["*"], action: allow}]
    rate_limit: {budget: 3, budget_window: 1h}
`)
	t.Run("per minute, per principal", func(t *testing.T) {
		for _, p := range []string{"paced-1", "paced-2"} {
			assert.Nil(t, g.run(t, p, "git.log", `{"args":["a"]}`))
			assert.Nil(t, g.run(t, p, "git.log", `{"args":["b"]}`))
		}
		pe := g.run(t, "paced-1", "git.log", `{"args":["c"]}`)
		require.NotNil(t, pe)
		assert.Equal(t, execgate.PolicyError{Name: "git.log", Action: limited, Rule: "paced/rate_limit.per_minute"}, *pe)
	})
	t.Run("loop", func(t *testing.T) {
		for range 2 {
			assert.Nil(t, g.run(t, "loop-1", "git.log", `{"args":["same"]}`))
		}
		pe := g.run(t, "loop-1", "git.log", `{"args":["same"]}`)
		require.NotNil(t, pe)
		assert.Equal(t, "looping/rate_limit.loop", pe.Rule)
		assert.Nil(t, g.run(t, "loop-1", "git.log", `{"args":["other"]}`), "another call is no loop")
	})
	t.Run("budget", func(t *testing.T) {
		for _, p := range []string{"budget-1", "budget-2", "budget-3"} {
			assert.Nil(t, g.run(t, p, "git.log", ""))
		}
		pe := g.run(t, "budget-4", "git.log", "")
		require.NotNil(t, pe)
		assert.Equal(t, "budgeted/rate_limit.budget", pe.Rule)
	})
	t.Run("time refills", func(t *testing.T) {
		g.clk.Advance(time.Hour)
		assert.Nil(t, g.run(t, "paced-1", "git.log", `{"args":["c"]}`))
		assert.Nil(t, g.run(t, "loop-1", "git.log", `{"args":["same"]}`))
		assert.Nil(t, g.run(t, "budget-4", "git.log", ""))
	})
}

// policyBase opens the configurations of TestPolicyErrors; its policies
// list comes last, so that a case appends entries to it.
const policyBase = `version: 1
tools: [{name: git, bin: /bin/echo, default_action: allow}]
policies:
`

func TestPolicyErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    config.LoadOptions // Now is the test clock unless set
		text    string             // after policyBase
		line    int
		path    string
		message string
	}{
		{name: "typo'd action", text: `  - name: p
    principal: "*"
    rules:
      - tools: [git.log]
        action: alow
`, line: 8, path: "policies[0].rules[0].action", message: `unknown action "alow"`},
		{name: "missing action", text: "  - {name: p, principal: \"*\", rules: [{tools: [git.log]}]}\n",
			line: 4, path: "policies[0].rules[0].action", message: "required: allow, deny or require_approval"},
		{name: "action of the wrong type", text: "  - {name: p, principal: \"*\", rules: [{tools: [git.log], action: true}]}\n",
			line: 4, path: "policies[0].rules[0].action", message: "must be a string, not a boolean"},
		{name: "malformed glob", text: `  - name: p
    principal: "*"
    rules:
      - action: allow
        tools:
          - git.log
          - "git.[lo]g"
`, line: 10, path: "policies[0].rules[0].tools[1]", message: `character '[' is not allowed`},
		{name: "tools not a list", text: "  - {name: p, principal: \"*\", rules: [{tools: git.log, action: allow}]}\n",
			line: 4, path: "policies[0].rules[0].tools", message: "must be a list, not a string"},
		{name: "bad principal", text: "  - {name: p, principal: \"team[1]\", rules: []}\n",
			line: 4, path: "policies[0].principal", message: "is reserved"},
		{name: "empty principal", text: "  - {name: p, principal: \"\", rules: []}\n",
			line: 4, path: "policies[0].principal", message: "empty pattern"},
		{name: "unknown rule key", text: "  - {name: p, principal: \"*\", rules: [{tools: [x], action: allow, when: always}]}\n",
			line: 4, path: "policies[0].rules[0].when", message: `unknown key "when" (known keys: action, examples, name, tools)`},
		{name: "duplicate key", text: "  - {name: p, principal: \"*\", rules: [], name: q}\n",
			line: 4, path: "policies[0].name", message: "duplicate key (first at line 4)"},
		{name: "unknown rate_limit key", text: "  - {name: p, principal: \"*\", rules: [], rate_limit: {per_hour: 5}}\n",
			line: 4, path: "policies[0].rate_limit.per_hour", message: `unknown key "per_hour"`},
		{name: "negative rate", text: "  - {name: p, principal: \"*\", rules: [], rate_limit: {per_minute: -1}}\n",
			line: 4, path: "policies[0].rate_limit.per_minute", message: "must not be negative"},
		{name: "zero window", text: "  - {name: p, principal: \"*\", rules: [], rate_limit: {loop: {max: 2, window: 0s}}}\n",
			line: 4, path: "policies[0].rate_limit.loop.window", message: "must be more than zero"},
		{name: "rules null", text: "  - {name: p, principal: \"*\", rules: }\n",
			line: 4, path: "policies[0].rules", message: "has no value"},
		{name: "policies null", text: "",
			line: 3, path: "policies", message: "has no value"},
		{name: "expired grant", text: `  - {name: p, principal: "*", rules: []}
grants:
  - {principal: a, tool: git.log, expires: "2030-01-02T15:04:05Z"}
`, line: 6, path: "grants[0].expires", message: "must be in the future"},
		{name: "grant beyond 24h", text: `  - {name: p, principal: "*", rules: []}
grants:
  - principal: a
    tool: git.log
    expires: 2030-01-03T15:04:06Z
`, line: 8, path: "grants[0].expires", message: "is 24h0m1s from now; at most 24h0m0s"},
		{name: "grant beyond a shorter max", opts: config.LoadOptions{Policy: policy.Options{MaxGrantDuration: time.Hour}},
			text: `  - {name: p, principal: "*", rules: []}
grants:
  - {principal: a, tool: git.log, expires: 2030-01-02T16:04:06Z}
`, line: 6, path: "grants[0].expires", message: "at most 1h0m0s"},
		{name: "too many grants", opts: config.LoadOptions{Policy: policy.Options{MaxGrants: 1}},
			text: `  - {name: p, principal: "*", rules: []}
grants:
  - {principal: a, tool: git.log, expires: 2030-01-02T16:00:00Z}
  - {principal: b, tool: git.log, expires: 2030-01-02T16:00:00Z}
`, line: 7, path: "grants[1]", message: "at most 1 live grants"},
		{name: "grant with an empty principal", text: `  - {name: p, principal: "*", rules: []}
grants:
  - {principal: "", tool: git.log, expires: 2030-01-02T16:00:00Z}
`, line: 6, path: "grants[0].principal", message: "empty pattern"},
		{name: "grant reason with a control character", text: `  - {name: p, principal: "*", rules: []}
grants:
  - {principal: a, tool: git.log, expires: 2030-01-02T16:00:00Z, reason: "a\tb"}
`, line: 6, path: "grants[0].reason", message: "must not contain control characters"},
		{name: "grant unknown key", text: `  - {name: p, principal: "*", rules: []}
grants:
  - {principal: a, tool: git.log, expires: 2030-01-02T16:00:00Z, until: tomorrow}
`, line: 6, path: "grants[0].until", message: `unknown key "until"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			if opts.Now == nil {
				opts.Now = newTestClock().Now
			}
			l, err := opts.LoadBytes("test.yaml", []byte(policyBase+tc.text))
			require.Error(t, err)
			require.Nil(t, l)
			var list config.ErrorList
			require.ErrorAs(t, err, &list)
			require.Len(t, list, 1, describe(list))
			assert.Equal(t, tc.line, list[0].Line, describe(list))
			assert.Equal(t, tc.path, list[0].Path)
			assert.Contains(t, list[0].Message, tc.message)
		})
	}
}

func TestPolicyGrantsWithinLimits(t *testing.T) {
	// The edge cases of the errors above, on the right side.
	g := loadGate(t, policyBase+`  - {name: p, principal: "*", rules: [{tools: ["*"], action: require_approval}]}
grants:
  - {principal: a, tool: git.log, expires: 2030-01-03T15:04:05Z}
  - {id: "b:1", principal: b, tool: "git.*", expires: "2030-01-02T16:34:05+01:00", reason: ""}
`)
	require.Len(t, g.l.Grants, 2)
	assert.Equal(t, "b:1", g.l.Grants[1].ID)
	assert.NotEmpty(t, g.l.Grants[0].ID, "the Engine names a grant without an id")
	assert.Nil(t, g.run(t, "a", "git.log", ""))
	assert.Nil(t, g.run(t, "b", "git.log", ""))
	g.clk.Advance(30 * time.Minute)
	assert.NotNil(t, g.run(t, "b", "git.log", ""), "16:34:05+01:00 is 30 minutes after 15:04:05Z")
	assert.Nil(t, g.run(t, "a", "git.log", ""))
}

func TestLoadOptionsRefused(t *testing.T) {
	_, err := config.LoadOptions{Policy: policy.Options{MaxGrants: -1}}.LoadBytes("test.yaml", []byte("version: 1\ntools: []\n"))
	require.Error(t, err)
	var list config.ErrorList
	assert.False(t, errors.As(err, &list), "a programming error, not a problem of the file")
	var ce *policy.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "options.MaxGrants", ce.Path)
}

// reloadV1 and reloadV2 differ in their rules for git and in their grants.
const reloadTools = `
version: 1
tools:
  - {name: git, bin: /bin/echo, strict: true, commands: {log: {}, status: {}}}
  - {name: tf, bin: /bin/echo, default_action: allow}
`

const reloadV1 = reloadTools + `policies:
  - name: agents
    principal: "agent-*"
    rules:
      - {tools: ["git.*"], action: allow}
      - {tools: ["tf.*"], action: require_approval}
grants:
  - {id: from-file, principal: agent-1, tool: tf.plan, expires: 2030-01-02T16:00:00Z}
`

const reloadV2 = reloadTools + `policies:
  - name: agents
    principal: "agent-*"
    rules:
      - {name: freeze, tools: [git.log], action: deny}
      - {tools: ["git.*"], action: allow}
      - {tools: ["tf.*"], action: require_approval}
grants:
  - {id: from-file, principal: agent-1, tool: tf.apply, expires: 2030-01-02T16:00:00Z}
  - {id: second, principal: agent-2, tool: tf.plan, expires: 2030-01-02T16:00:00Z}
`

func grantIDs(gs []policy.Grant) []string {
	var ids []string
	for _, g := range gs {
		ids = append(ids, g.ID)
	}
	return ids
}

func TestReload(t *testing.T) {
	g := loadGate(t, reloadV1)
	eng := g.l.Engine
	manual, err := eng.Grant(policy.Grant{ID: "manual", Principal: "agent-9", Tool: "*", Expires: testNow.Add(time.Hour)})
	require.NoError(t, err)
	assert.Equal(t, []string{"from-file", manual}, grantIDs(eng.Grants()))

	assert.Nil(t, g.run(t, "agent-3", "git.log", ""))
	assert.Nil(t, g.run(t, "agent-1", "tf.plan", ""), "granted by v1")
	pending, err := g.x.Propose(as("agent-3"), "git.log", nil, "before the freeze")
	require.NoError(t, err)

	next, err := g.l.ReloadBytes("v2.yaml", []byte(reloadV2))
	require.NoError(t, err)
	g.x.SetAllowlist(next.Allowlist)
	assert.Same(t, eng, next.Engine, "the rules are swapped into the running Engine")
	assert.Same(t, eng, next.Policy)
	assert.Len(t, next.Policies, 1)
	assert.Equal(t, []string{"from-file", "second"}, grantIDs(next.Grants))
	assert.Equal(t, testNow, next.Grants[0].Created)
	assert.ElementsMatch(t, []string{manual, "from-file", "second"}, grantIDs(eng.Grants()),
		"v1's grant is replaced, the one made through the API stays")

	pe := g.run(t, "agent-3", "git.log", "")
	require.NotNil(t, pe, "allowed before, denied after")
	assert.Equal(t, execgate.PolicyError{Name: "git.log", Action: deny, Rule: "agents/freeze"}, *pe)
	assert.Nil(t, g.run(t, "agent-3", "git.status", ""))
	_, err = g.x.Execute(as("agent-3"), pending)
	require.ErrorAs(t, err, &pe, "an approval given before the reload meets the new rules")
	assert.Equal(t, "agents/freeze", pe.Rule)

	assert.NotNil(t, g.run(t, "agent-1", "tf.plan", ""), "v1's grant is gone")
	assert.Nil(t, g.run(t, "agent-1", "tf.apply", ""), "v2's grant")
	assert.Nil(t, g.run(t, "agent-2", "tf.plan", ""))
	assert.Nil(t, g.run(t, "agent-9", "tf.plan", ""), "the API grant")

	// A file that does not load changes nothing.
	broken := strings.Replace(reloadV1, `["git.*"], action: allow`, `["git.*"], action: alow`, 1)
	_, err = next.ReloadBytes("broken.yaml", []byte(broken))
	var list config.ErrorList
	require.ErrorAs(t, err, &list)
	assert.Equal(t, "broken.yaml", list[0].File)
	assert.Equal(t, "policies[0].rules[0].action", list[0].Path)
	assert.NotNil(t, g.run(t, "agent-3", "git.log", ""), "v2's rules stay")
	assert.ElementsMatch(t, []string{manual, "from-file", "second"}, grantIDs(eng.Grants()))

	// Nor does a grant id that the API already uses.
	clash := strings.Replace(reloadV1, "id: from-file", "id: manual", 1)
	_, err = next.ReloadBytes("clash.yaml", []byte(clash))
	require.ErrorAs(t, err, &list)
	require.Len(t, list, 1, describe(list))
	assert.Equal(t, "grants[0].id", list[0].Path)
	assert.Contains(t, list[0].Message, "was made through the Engine")
	assert.NotNil(t, g.run(t, "agent-3", "git.log", ""))

	// Back to v1, from the older Loaded: the grants of the file last
	// applied are the ones revoked.
	back, err := g.l.ReloadBytes("v1.yaml", []byte(reloadV1))
	require.NoError(t, err)
	g.x.SetAllowlist(back.Allowlist)
	assert.ElementsMatch(t, []string{manual, "from-file"}, grantIDs(eng.Grants()))
	assert.Nil(t, g.run(t, "agent-3", "git.log", ""))
	assert.NotNil(t, g.run(t, "agent-2", "tf.plan", ""), "v2's second grant is revoked")
}

func TestReloadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "execgate.yaml")
	require.NoError(t, os.WriteFile(path, []byte(reloadV1), 0o600))
	clk := newTestClock()
	l, err := config.LoadOptions{Now: clk.Now}.LoadFile(path)
	require.NoError(t, err)
	g := newGate(t, l, clk)

	require.NoError(t, os.WriteFile(path, []byte(reloadV2), 0o600))
	clk.Advance(10 * time.Minute)
	next, err := l.Reload(path)
	require.NoError(t, err)
	assert.Equal(t, testNow.Add(10*time.Minute), next.Grants[0].Created, "the Engine's clock")
	assert.NotNil(t, g.run(t, "agent-3", "git.log", ""))

	_, err = l.Reload(filepath.Join(dir, "missing.yaml"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestReloadCannotAddOrRemovePolicies(t *testing.T) {
	without := loadGate(t, reloadTools).l
	with := loadGate(t, reloadV1).l

	next, err := without.ReloadBytes("same.yaml", []byte(reloadTools))
	require.NoError(t, err, "no policies before or after")
	assert.Nil(t, next.Policy)

	_, err = without.ReloadBytes("add.yaml", []byte(reloadV1))
	var list config.ErrorList
	require.ErrorAs(t, err, &list)
	assert.Equal(t, 6, list[0].Line)
	assert.Equal(t, "policies", list[0].Path)
	assert.Contains(t, list[0].Message, "cannot add policies")

	_, err = with.ReloadBytes("remove.yaml", []byte(reloadTools))
	require.ErrorAs(t, err, &list)
	assert.Equal(t, "policies", list[0].Path)
	assert.Contains(t, list[0].Message, "cannot remove the policies section")
	assert.Equal(t, []string{"from-file"}, grantIDs(with.Engine.Grants()), "nothing changed")

	_, err = (&config.Loaded{Engine: with.Engine}).ReloadBytes("x.yaml", []byte(reloadV1))
	assert.ErrorContains(t, err, "needs a *Loaded returned by")
}

// TestReloadConcurrent runs calls while reloads swap the rules back and
// forth, from several goroutines; -race checks the rest.
func TestReloadConcurrent(t *testing.T) {
	g := loadGate(t, reloadV1)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := g.x.Run(as("agent-1"), "git.log", nil)
				var pe *execgate.PolicyError
				if err != nil && (!errors.As(err, &pe) || pe.Rule != "agents/freeze") {
					t.Errorf("goroutine %d: %v", i, err)
					return
				}
				_, _ = g.x.Run(as("agent-1"), "tf.plan", nil)
			}
		})
	}
	for i := range 2 {
		wg.Go(func() {
			for j := range 50 {
				text := reloadV1
				if (i+j)%2 == 0 {
					text = reloadV2
				}
				next, err := g.l.ReloadBytes("r.yaml", []byte(text))
				if err != nil {
					t.Errorf("reload: %v", err)
					return
				}
				g.x.SetAllowlist(next.Allowlist)
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()
	// Whatever the interleaving, the Engine holds the grants of one file.
	ids := grantIDs(g.l.Engine.Grants())
	assert.Contains(t, [][]string{{"from-file"}, {"from-file", "second"}}, ids)
}
