package config_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
)

// Invariant 12 of DESIGN.md: a command's leading tokens are fixed, emitted
// in place of its name, and nothing a caller sends comes before them.
func TestTypedGrammars_CommandLeadingReplacesItsName(t *testing.T) {
	l := mustLoad(t, `version: 1
tools:
  - name: gh
    bin: /bin/echo
    global_args: [--no-pager]
    commands:
      pr-list:
        leading: [pr, list]
        flags: [{name: limit, value: int, min: 1, max: 50, separate: true}]
      diff:
        leading: [diff, --no-ext-diff, --no-textconv]
      log: {}
`)
	p := execgate.NewProposer(l.Allowlist)
	for _, c := range []struct {
		why, name, input string
		argv             []string
	}{
		{"a two-word subcommand is emitted as its two words", "gh.pr-list", `{"args":["--limit","5"]}`, []string{"--no-pager", "pr", "list", "--limit", "5"}},
		{"fixed options after the name come before the caller's", "gh.diff", `{}`, []string{"--no-pager", "diff", "--no-ext-diff", "--no-textconv"}},
		{"a command without leading is emitted under its name", "gh.log", `{}`, []string{"--no-pager", "log"}},
	} {
		prop, err := p.Check(c.name, json.RawMessage(c.input))
		require.NoError(t, err, c.why)
		assert.Equal(t, c.argv, prop.Args, c.why)
	}
}

func TestCommandLeading_RefusesWhatItCannotEmit(t *testing.T) {
	for _, c := range []struct{ why, cmd, want string }{
		{"an empty list would emit nothing for the name", "log: {leading: []}", "must list at least one token"},
		{"a token with a NUL", `log: {leading: ["lo\0g"]}`, "tools[0].commands.log.leading[0]"},
		{"a list of something else", "log: {leading: [{a: b}]}", "tools[0].commands.log.leading"},
	} {
		list := loadErrors(t, "version: 1\ntools:\n  - name: g\n    bin: /bin/echo\n    commands:\n      "+c.cmd+"\n")
		assert.Contains(t, describe(list), c.want, c.why)
	}
	list := loadErrors(t, "version: 1\ntools:\n  - name: g\n    bin: /bin/echo\n    bare: {leading: [x]}\n")
	assert.Contains(t, describe(list), "a bare entry has no name to replace")
}

// Invariant 1 of DESIGN.md: a command marked human_approval needs a
// person's approval whatever the policies say; Run refuses it, Propose
// holds it, and its siblings are untouched.
func TestDefaultDeny_HumanApprovalOnACommandIsAFloor(t *testing.T) {
	l := mustLoad(t, `version: 1
tools:
  - name: tf
    bin: /bin/echo
    commands:
      plan: {}
      apply:
        human_approval: true
        examples: {allow: [{}]}
policies:
  - name: everyone
    principal: "*"
    rules: [{tools: ["tf.*"], action: allow}]
`)
	rec := execgatetest.NewRecorder()
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: l.Allowlist, Policy: l.Policy, ExecFn: rec.Exec})
	require.NoError(t, err)
	_, err = x.Run(context.Background(), "tf.apply", json.RawMessage(`{}`))
	var pe *execgate.PolicyError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Equal(t, execgate.ActionRequireApproval, pe.Action)
	_, err = x.Run(context.Background(), "tf.plan", json.RawMessage(`{}`))
	assert.NoError(t, err, "a command without the mark is as the policy says")
	assert.Len(t, rec.Calls(), 1, "only tf.plan ran")
}
