package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/mcpserver"
	"github.com/execgate/execgate/policy"
)

// A subcommand of a dispatcher that the caller's policy never allows is
// refused, through the dispatcher tool and under either spelling of its
// name, in the words a subcommand that no rule names gets: whether a
// rule denies it (git.push) or its own tool is hidden (git.log), nothing
// tells the caller it exists, and the Policy, whose deny would name its
// rule, is not asked. Each refusal is recorded as a not_found of the
// command asked for.
//
// Invariant 14 of DESIGN.md.
func TestSameTruth_AHiddenSubcommandIsRefusedAsOneThatDoesNotExist(t *testing.T) {
	a, err := execgate.NewAllowlist(testSpecs()...)
	require.NoError(t, err)
	eng, err := policy.New([]policy.Policy{{Name: "dev", Principal: "dev", Rules: []policy.Rule{
		{Name: "no-push", Tools: []string{"git.push"}, Action: execgate.ActionDeny},
		{Tools: []string{"git.status", "git.diff"}, Action: execgate.ActionAllow},
	}}}, policy.Options{})
	require.NoError(t, err)
	rec, tr := execgatetest.NewRecorder(), &trail{}
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: a, ExecFn: rec.Exec, Policy: eng, Auditor: tr})
	require.NoError(t, err)
	var (
		mu    sync.Mutex
		asked []string
	)
	srv, err := mcpserver.New(x, mcpserver.Options{Allowlist: a, Principal: "dev",
		Visible: func(_ context.Context, principal string, spec execgate.CommandSpec) bool {
			mu.Lock()
			asked = append(asked, spec.Name)
			mu.Unlock()
			return eng.MayServe(principal, spec, a)
		}})
	require.NoError(t, err)
	cs := connect(t, srv, nil, "")
	assert.Equal(t, []string{"git"}, toolNames(t, cs), "the dispatcher is shown; git.log, which no rule allows, is not")

	blank := func(st mcpserver.CallStatus, sub string) mcpserver.CallStatus {
		r := strings.NewReplacer(`"`+sub+`"`, `"SUB"`, "."+sub, ".SUB", "_"+sub, "_SUB")
		st.Message, st.Name = r.Replace(st.Message), r.Replace(st.Name)
		return st
	}
	for _, form := range []struct{ tool, args string }{
		{"git", `{"subcommand":"SUB"}`},
		{"git.SUB", `{}`},
		{"git_SUB", `{}`},
	} {
		call := func(sub string) mcpserver.CallStatus {
			before := len(tr.all())
			name := strings.ReplaceAll(form.tool, "SUB", sub)
			st := status(t, callTool(t, cs, name, strings.ReplaceAll(form.args, "SUB", sub)))
			evs := tr.all()[before:]
			require.Len(t, evs, 1, name)
			assert.Equal(t, execgate.OpRequest, evs[0].Op, name)
			assert.Equal(t, execgate.ErrorKindNotFound, evs[0].Error, name)
			assert.Empty(t, evs[0].Decision, "%s: the Policy was not asked", name)
			return blank(st, sub)
		}
		want := call("nonesuch")
		for _, sub := range []string{"push", "log"} {
			got := call(sub)
			assert.Equal(t, want, got, "%s, called as %s", sub, form.tool)
			assert.Contains(t, got.Message, `the tool "git" has no subcommand "SUB" that you can call`, form.tool)
			assert.Empty(t, got.Rule)
		}
	}
	mu.Lock()
	assert.Contains(t, asked, "git.push", "Visible is asked about the command a dispatcher call asks for")
	mu.Unlock()
	assert.Zero(t, rec.Count())
	r := ran(t, callTool(t, cs, "git", `{"subcommand":"status"}`))
	assert.Equal(t, "git.status", r.Name)
}

// DispatchCall takes a dispatcher call apart as the server does: the
// command name with the subcommand, and the rest of the arguments as
// sent; it refuses what the server refuses, naming the dispatcher.
func TestDispatchCall(t *testing.T) {
	name, rest, err := mcpserver.DispatchCall("cloud.tf", json.RawMessage(`{"args":["-x"], "subcommand":"apply"}`))
	require.NoError(t, err)
	assert.Equal(t, "cloud.tf.apply", name)
	assert.Equal(t, `{"args":["-x"]}`, string(rest))
	for _, in := range []string{``, `{}`, `{"subcommand":"a.b"}`, `{"subcommand":"x","subcommand":"y"}`} {
		_, _, err := mcpserver.DispatchCall("cloud.tf", json.RawMessage(in))
		var ve *execgate.ValidationError
		require.ErrorAs(t, err, &ve, in)
		assert.Equal(t, "cloud.tf", ve.Name, in)
	}
}

// SpecOf names the spec Visible is asked about for a command: its own,
// or its dispatcher's under the command's name, as no dispatcher.
func TestSpecOf(t *testing.T) {
	a, err := execgate.NewAllowlist(testSpecs()...)
	require.NoError(t, err)
	own, ok := mcpserver.SpecOf(a, "git.log")
	require.True(t, ok)
	assert.Equal(t, "git.log", own.Name)
	sub, ok := mcpserver.SpecOf(a, "git.stash")
	require.True(t, ok)
	assert.Equal(t, "git.stash", sub.Name)
	assert.False(t, sub.Dispatch)
	assert.Equal(t, execgate.ActionAllow, sub.Floor, "the dispatcher's floor")
	_, ok = mcpserver.SpecOf(a, "git")
	assert.False(t, ok, "a dispatcher alone serves no command")
	_, ok = mcpserver.SpecOf(a, "nope")
	assert.False(t, ok)
}
