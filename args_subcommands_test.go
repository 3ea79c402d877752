package execgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/internal/inputrules"
)

func gitDispatcher(floor string) execgate.CommandSpec {
	return execgate.CommandSpec{
		Name: "git", Command: "/bin/echo", Dispatch: true, Floor: floor,
		Args: execgate.Subcommands(execgate.SubcommandSpec{Leading: []string{"--no-pager", "-c", "core.hooksPath=/dev/null"}}),
	}
}

func gitLog() execgate.CommandSpec {
	return execgate.CommandSpec{Name: "git.log", Command: "/bin/echo", Args: execgate.Flags(execgate.FlagSpec{
		Leading: []string{"--no-pager", "log"},
		Flags:   []execgate.Flag{{Name: "oneline"}},
	})}
}

func TestDispatcher_SubcommandComesFromTheNameOnly(t *testing.T) {
	x, rec := newGate(t, execgate.Config{}, gitDispatcher(execgate.ActionAllow), gitLog())

	for _, tc := range []struct {
		name, input string
		want        []string
	}{
		{"git.stash", `{"args":["pop","--index"]}`, []string{"--no-pager", "-c", "core.hooksPath=/dev/null", "stash", "pop", "--index"}},
		{"git.status", ``, []string{"--no-pager", "-c", "core.hooksPath=/dev/null", "status"}},
		{"git.for-each-ref", `{"args":["--count=3"]}`, []string{"--no-pager", "-c", "core.hooksPath=/dev/null", "for-each-ref", "--count=3"}},
		// A declared spec wins over the dispatcher.
		{"git.log", `{"flags":{"oneline":true}}`, []string{"--no-pager", "log", "--oneline"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec.Reset()
			res, err := x.Run(context.Background(), tc.name, json.RawMessage(tc.input))
			require.NoError(t, err)
			assert.Equal(t, tc.name, res.Name, "the Result names the requested command")
			calls := rec.Calls()
			require.Len(t, calls, 1)
			assert.Equal(t, tc.want, calls[0].Args)
			assert.Equal(t, tc.name, calls[0].Name)
		})
	}

	// Whatever the arguments say, the token after the global arguments is
	// the subcommand of the requested name.
	for _, input := range []string{
		`{"args":["push","--force"]}`,
		`{"args":["-c","core.sshCommand=x","push"]}`,
	} {
		rec.Reset()
		_, err := x.Run(context.Background(), "git.stash", json.RawMessage(input))
		require.NoError(t, err)
		args := rec.Calls()[0].Args
		assert.Equal(t, []string{"--no-pager", "-c", "core.hooksPath=/dev/null", "stash"}, args[:4])
	}
}

func TestDispatcher_RefusesBadSubcommandsAndTokens(t *testing.T) {
	x, rec := newGate(t, execgate.Config{}, gitDispatcher(execgate.ActionAllow))

	for _, name := range []string{"git.", "git.Stash", "git.-x", "git.1st", "git.st_ash", "git.stash;rm", "git.stash x", "git.st\u00e4sh", "git." + string(make([]byte, 65))} {
		_, err := x.Run(context.Background(), name, nil)
		var ve *execgate.ValidationError
		var nf *execgate.NotFoundError
		assert.True(t, errors.As(err, &ve) || errors.As(err, &nf), "name %q: %v", name, err)
	}
	var nf *execgate.NotFoundError
	_, err := x.Run(context.Background(), "git.stash.pop", nil)
	assert.ErrorAs(t, err, &nf, "only one level of subcommand")
	_, err = x.Run(context.Background(), "git", nil)
	assert.ErrorAs(t, err, &nf, "the dispatcher's own name is not a command")
	_, err = x.Run(context.Background(), "gitx.stash", nil)
	assert.ErrorAs(t, err, &nf)

	for _, tc := range []struct{ input, field string }{
		{`{"args":["--"]}`, "args[0]"},
		{`{"args":["pop","@/etc/passwd"]}`, "args[1]"},
		{`{"args":["a;b"]}`, "args[0]"},
		{`{"args":["$(id)"]}`, "args[0]"},
		{`{"args":["a|b"]}`, "args[0]"},
		{`{"args":["x\ny"]}`, "args[0]"},
		{`{"args":["x\u001by"]}`, "args[0]"},
		{`{"args":["x\u202ey"]}`, "args[0]"},
		{`{"args":[""]}`, "args[0]"},
		{`{"flags":{"force":true}}`, "flags"},
		{`{"stdin":"data"}`, "stdin"},
		{`{"args":"pop"}`, "args"},
		{`{"argv":["pop"]}`, ""},
	} {
		_, err := x.Run(context.Background(), "git.stash", json.RawMessage(tc.input))
		var ve *execgate.ValidationError
		require.ErrorAs(t, err, &ve, "input %s", tc.input)
		if tc.field != "" {
			assert.Equal(t, tc.field, ve.Issues[0].Field, "input %s", tc.input)
		}
	}
	assert.Zero(t, rec.Count())
}

func TestDispatcher_FloorOnlyMakesDecisionsStricter(t *testing.T) {
	allowAll := &countingPolicy{action: execgate.ActionAllow}
	denyAll := &countingPolicy{action: execgate.ActionDeny, rule: "no"}
	for _, tc := range []struct {
		name     string
		floor    string
		policy   execgate.Policy
		want     string // "" runs
		wantRule string
	}{
		{"unset floor denies", "", nil, execgate.ActionDeny, execgate.FloorRule},
		{"unset floor denies even when the policy allows", "", allowAll, execgate.ActionDeny, execgate.FloorRule},
		{"allow floor runs", execgate.ActionAllow, nil, "", ""},
		{"approval floor holds an allowed call", execgate.ActionRequireApproval, allowAll, execgate.ActionRequireApproval, execgate.FloorRule},
		{"approval floor without a policy", execgate.ActionRequireApproval, nil, execgate.ActionRequireApproval, execgate.FloorRule},
		{"allow floor cannot overturn a deny", execgate.ActionAllow, denyAll, execgate.ActionDeny, "no"},
		{"approval floor cannot overturn a deny", execgate.ActionRequireApproval, denyAll, execgate.ActionDeny, "no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, rec := newGate(t, execgate.Config{Policy: tc.policy}, gitDispatcher(tc.floor))
			_, err := x.Run(context.Background(), "git.stash", nil)
			if tc.want == "" {
				require.NoError(t, err)
				assert.Equal(t, 1, rec.Count())
				return
			}
			var pe *execgate.PolicyError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tc.want, pe.Action)
			assert.Equal(t, tc.wantRule, pe.Rule)
			assert.Zero(t, rec.Count())
		})
	}
}

func TestFloor_OnAnOrdinarySpec(t *testing.T) {
	spec := echoSpec()
	spec.Floor = execgate.ActionRequireApproval
	x, rec := newGate(t, execgate.Config{}, spec)
	_, err := x.Run(context.Background(), "echo.say", nil)
	var pe *execgate.PolicyError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, execgate.ActionRequireApproval, pe.Action)

	ap := propose(t, x, `{"args":["ok"]}`)
	_, err = x.Execute(context.Background(), ap)
	require.NoError(t, err, "the approval satisfies the floor")
	assert.Equal(t, 1, rec.Count())

	spec.Floor = execgate.ActionDeny
	x, _ = newGate(t, execgate.Config{}, spec)
	_, err = x.Propose(context.Background(), "echo.say", nil, "")
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, execgate.ActionDeny, pe.Action)
}

func TestDispatcher_PolicyDecidesOnTheRequestedName(t *testing.T) {
	var seen []string
	pol := execgate.PolicyFunc(func(_ context.Context, req execgate.Request) (execgate.Decision, error) {
		seen = append(seen, req.Name+" "+req.Spec.Name)
		if req.Name == "git.push" {
			return execgate.Decision{Action: execgate.ActionDeny, Rule: "no-push"}, nil
		}
		return execgate.Decision{Action: execgate.ActionAllow}, nil
	})
	x, rec := newGate(t, execgate.Config{Policy: pol}, gitDispatcher(execgate.ActionAllow))
	_, err := x.Run(context.Background(), "git.stash", nil)
	require.NoError(t, err)
	_, err = x.Run(context.Background(), "git.push", nil)
	var pe *execgate.PolicyError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "no-push", pe.Rule)
	assert.Equal(t, []string{"git.stash git", "git.push git"}, seen)
	assert.Equal(t, 1, rec.Count())
}

func TestDispatcher_ThroughApprovals(t *testing.T) {
	x, rec := newGate(t, execgate.Config{}, gitDispatcher(execgate.ActionRequireApproval))
	ap, err := x.Propose(context.Background(), "git.gc", json.RawMessage(`{"args":["--aggressive"]}`), "tidy")
	require.NoError(t, err)
	assert.Equal(t, "git.gc", ap.Name)
	res, err := x.Execute(context.Background(), roundTrip(t, ap))
	require.NoError(t, err)
	assert.Equal(t, "git.gc", res.Name)
	require.Equal(t, 1, rec.Count())
	assert.Equal(t, []string{"--no-pager", "-c", "core.hooksPath=/dev/null", "gc", "--aggressive"}, rec.Calls()[0].Args)

	// Declaring the subcommand after the proposal changes what would serve
	// it: the pending approval is refused.
	ap, err = x.Propose(context.Background(), "git.gc", nil, "tidy")
	require.NoError(t, err)
	gc := execgate.CommandSpec{Name: "git.gc", Command: "/bin/echo", Args: execgate.Fixed("--no-pager", "-c", "core.hooksPath=/dev/null", "gc")}
	x.SetAllowlist(mustAllowlist(t, gitDispatcher(execgate.ActionRequireApproval), gc))
	_, err = x.Execute(context.Background(), ap)
	requireApprovalError(t, err, execgate.ReasonPolicyChanged)
	assert.Equal(t, 1, rec.Count())
}

func TestDispatcher_AllowlistViews(t *testing.T) {
	a := mustAllowlist(t, gitDispatcher(""), gitLog())
	s, ok := a.Lookup("git.stash")
	require.True(t, ok)
	assert.Equal(t, "git", s.Name)
	assert.True(t, s.Dispatch)
	assert.Equal(t, execgate.ActionDeny, s.Floor, "an unset dispatcher floor is deny")
	s, ok = a.Lookup("git.log")
	require.True(t, ok)
	assert.Equal(t, "git.log", s.Name)
	assert.Equal(t, execgate.ActionAllow, s.Floor)
	_, ok = a.Lookup("git")
	assert.False(t, ok)
	specs := a.Specs()
	require.Len(t, specs, 2)
	assert.Equal(t, "git", specs[0].Name)
	assert.Equal(t, "git.log", specs[1].Name)

	p, err := execgate.NewProposer(a).Check("git.stash", json.RawMessage(`{"args":["list"]}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"--no-pager", "-c", "core.hooksPath=/dev/null", "stash", "list"}, p.Args)
}

func TestDispatcher_ConfigErrors(t *testing.T) {
	sub := execgate.Subcommands(execgate.SubcommandSpec{})
	for _, tc := range []struct {
		name  string
		specs []execgate.CommandSpec
		field string
	}{
		{"dispatcher without Subcommands", []execgate.CommandSpec{{Name: "git", Command: "/bin/echo", Dispatch: true, Args: execgate.Fixed()}}, "Args"},
		{"Subcommands without Dispatch", []execgate.CommandSpec{{Name: "git", Command: "/bin/echo", Args: sub}}, "Args"},
		{"unknown floor", []execgate.CommandSpec{{Name: "git", Command: "/bin/echo", Dispatch: true, Args: sub, Floor: "human_approval"}}, "Floor"},
		{"name taken twice", []execgate.CommandSpec{{Name: "git", Command: "/bin/echo", Dispatch: true, Args: sub}, {Name: "git", Command: "/bin/echo", Args: execgate.Fixed()}}, "Name"},
		{"negative stdin cap", []execgate.CommandSpec{{Name: "git", Command: "/bin/echo", Dispatch: true, Args: execgate.Subcommands(execgate.SubcommandSpec{Stdin: &execgate.StdinSpec{Max: -1}})}}, "Args"},
		{"control character in leading", []execgate.CommandSpec{{Name: "git", Command: "/bin/echo", Dispatch: true, Args: execgate.Subcommands(execgate.SubcommandSpec{Leading: []string{"a\x01"}})}}, "Args"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := execgate.NewAllowlist(tc.specs...)
			var ce *execgate.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.field, ce.Field, "%v", err)
		})
	}
}

func TestSubcommands_JSONSchema(t *testing.T) {
	forbidden := ";&\\|\\$`<>\\(\\)\\{\\}" + inputrules.SchemaClass()
	tokenPattern, err := json.Marshal("^[^@" + forbidden + "][^" + forbidden + "]*$")
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object","properties":{"args":{"type":"array","description":"Arguments after the subcommand, one token per element: flags and operands as the subcommand expects them. No shell metacharacters, no \"--\", nothing starting with '@'.","items":{"type":"string","pattern":`+string(tokenPattern)+`,"minLength":1,"maxLength":32768},"maxItems":256}},"additionalProperties":false}`,
		string(execgate.Subcommands(execgate.SubcommandSpec{}).JSONSchema()))
	withStdin := execgate.Subcommands(execgate.SubcommandSpec{Stdin: &execgate.StdinSpec{Max: 10}}).JSONSchema()
	var v struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(withStdin, &v))
	assert.EqualValues(t, 10, v.Properties["stdin"]["maxLength"])
}
