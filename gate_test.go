package execgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
)

// countingSchema is an ArgsSchema that counts how often it is asked to
// parse, so tests can tell whether validation ran.
type countingSchema struct {
	parses atomic.Int64
	argv   execgate.Argv
	err    error
}

func (c *countingSchema) Parse(json.RawMessage) (execgate.Argv, error) {
	c.parses.Add(1)
	return c.argv, c.err
}

func (c *countingSchema) JSONSchema() json.RawMessage { return json.RawMessage(`{}`) }

// countingPolicy counts decisions and answers with a fixed action.
type countingPolicy struct {
	calls  atomic.Int64
	action string
	rule   string
}

func (p *countingPolicy) Decide(context.Context, execgate.Request) (execgate.Decision, error) {
	p.calls.Add(1)
	return execgate.Decision{Action: p.action, Rule: p.rule}, nil
}

// newGate builds an Executor over specs with a Recorder as its ExecFn.
func newGate(t *testing.T, cfg execgate.Config, specs ...execgate.CommandSpec) (*execgate.Executor, *execgatetest.Recorder) {
	t.Helper()
	a, err := execgate.NewAllowlist(specs...)
	require.NoError(t, err)
	rec := execgatetest.NewRecorder()
	cfg.Allowlist = a
	cfg.ExecFn = rec.Exec
	x, err := execgate.NewExecutor(cfg)
	require.NoError(t, err)
	return x, rec
}

// Invariant 1 of DESIGN.md.
func TestDefaultDeny(t *testing.T) {
	schema := &countingSchema{}
	pol := &countingPolicy{action: execgate.ActionAllow}
	x, rec := newGate(t, execgate.Config{Policy: pol},
		execgate.CommandSpec{Name: "echo.say", Command: "/bin/echo", Args: schema})

	for _, name := range []string{"", "echo", "echo.say.x", "ECHO.SAY", "echo.say ", "*", "echo.*", "../echo.say", "/bin/echo", "echo.say\x00"} {
		t.Run(name, func(t *testing.T) {
			_, err := x.Run(context.Background(), name, json.RawMessage(`{}`))
			var nf *execgate.NotFoundError
			require.ErrorAs(t, err, &nf)
			assert.Equal(t, name, nf.Name)

			_, err = x.Propose(context.Background(), name, json.RawMessage(`{}`), "")
			require.ErrorAs(t, err, &nf)

			_, err = x.Proposer().Check(name, json.RawMessage(`{}`))
			require.ErrorAs(t, err, &nf)
		})
	}
	assert.Zero(t, schema.parses.Load(), "validation ran for an unknown name")
	assert.Zero(t, pol.calls.Load(), "policy was asked about an unknown name")
	assert.Zero(t, rec.Count(), "an unknown name reached the ExecFn")
}

// Invariant 1 of DESIGN.md.
func TestDefaultDeny_EmptyAllowlistRefusesEverything(t *testing.T) {
	empty, err := execgate.NewAllowlist()
	require.NoError(t, err)
	lists := map[string]*execgate.Allowlist{"empty": empty, "nil": nil, "zero": {}}
	for label, a := range lists {
		t.Run(label, func(t *testing.T) {
			_, ok := a.Lookup("echo.say")
			assert.False(t, ok)
			assert.Empty(t, a.Specs())
			_, err := execgate.NewProposer(a).Check("echo.say", nil)
			var nf *execgate.NotFoundError
			assert.ErrorAs(t, err, &nf)
		})
	}
	var zero execgate.Proposer
	_, err = zero.Check("echo.say", nil)
	var nf *execgate.NotFoundError
	assert.ErrorAs(t, err, &nf)

	// An Executor whose allowlist is swapped to nil refuses everything too.
	x, rec := newGate(t, execgate.Config{}, execgate.CommandSpec{Name: "true", Command: "/bin/true", Args: execgate.Fixed()})
	x.SetAllowlist(nil)
	_, err = x.Run(context.Background(), "true", nil)
	assert.ErrorAs(t, err, &nf)
	assert.Zero(t, rec.Count())
}

func TestNewExecutor_RefusesBadConfig(t *testing.T) {
	a, err := execgate.NewAllowlist()
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		cfg   execgate.Config
		field string
	}{
		{"no allowlist", execgate.Config{}, "Allowlist"},
		{"negative ttl", execgate.Config{Allowlist: a, ApprovalTTL: -time.Second}, "ApprovalTTL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := execgate.NewExecutor(tc.cfg)
			var ce *execgate.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.field, ce.Field)
		})
	}
}

func TestRun_ValidationRefusalNeverSpawns(t *testing.T) {
	schema := &countingSchema{err: &execgate.ValidationError{Issues: []execgate.Issue{{Field: "n", Message: "must be at most 5"}}}}
	pol := &countingPolicy{action: execgate.ActionAllow}
	x, rec := newGate(t, execgate.Config{Policy: pol}, execgate.CommandSpec{Name: "echo.say", Command: "/bin/echo", Args: schema})

	_, err := x.Run(context.Background(), "echo.say", json.RawMessage(`{"n":9}`))
	var ve *execgate.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "echo.say", ve.Name, "the gate names the command")
	assert.Equal(t, []execgate.Issue{{Field: "n", Message: "must be at most 5"}}, ve.Issues)
	assert.Zero(t, pol.calls.Load())
	assert.Zero(t, rec.Count())

	// A schema that fails with some other error still refuses, without
	// repeating that error's text (it may hold the input).
	schema.err = errors.New("secret-canary")
	_, err = x.Run(context.Background(), "echo.say", json.RawMessage(`{}`))
	require.ErrorAs(t, err, &ve)
	assert.NotContains(t, err.Error(), "secret-canary")
	assert.Zero(t, rec.Count())
}

// Invariant 4 of DESIGN.md.
func TestStrictInput_InputSizeCapAppliesToEverySchema(t *testing.T) {
	schema := &countingSchema{}
	x, rec := newGate(t, execgate.Config{}, execgate.CommandSpec{Name: "echo.say", Command: "/bin/echo", Args: schema})
	big := make([]byte, execgate.MaxInputSize+1)
	for i := range big {
		big[i] = ' '
	}
	_, err := x.Run(context.Background(), "echo.say", big)
	var ve *execgate.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Zero(t, schema.parses.Load())
	assert.Zero(t, rec.Count())
}

// Invariant 4 of DESIGN.md.
func TestStrictInput_NULInArgvRefusedWhateverTheSchema(t *testing.T) {
	schema := &countingSchema{argv: execgate.Argv{Args: []string{"ok", "bad\x00arg"}}}
	x, rec := newGate(t, execgate.Config{}, execgate.CommandSpec{Name: "echo.say", Command: "/bin/echo", Args: schema})
	_, err := x.Run(context.Background(), "echo.say", nil)
	var ve *execgate.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Zero(t, rec.Count())
}

func TestRun_SchemaCannotChangeArgvAfterValidation(t *testing.T) {
	args := []string{"a", "b"}
	stdin := []byte("in")
	schema := &countingSchema{argv: execgate.Argv{Args: args, Stdin: stdin}}
	x, rec := newGate(t, execgate.Config{}, execgate.CommandSpec{Name: "cat", Command: "/bin/cat", Args: schema})
	res, err := x.Run(context.Background(), "cat", nil)
	require.NoError(t, err)
	args[0], stdin[0] = "X", 'X'
	calls := rec.Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, []string{"a", "b"}, calls[0].Args)
	assert.Equal(t, []byte("in"), calls[0].Stdin)
	assert.Equal(t, []string{"a", "b"}, res.Args)
}

func TestRun_PolicyIsAskedAndObeyed(t *testing.T) {
	for _, tc := range []struct {
		action string
		want   string // "" means it runs
	}{
		{execgate.ActionAllow, ""},
		{execgate.ActionDeny, execgate.ActionDeny},
		{execgate.ActionRequireApproval, execgate.ActionRequireApproval},
		{"typo", execgate.ActionDeny},
		{"", execgate.ActionDeny},
	} {
		t.Run(tc.action, func(t *testing.T) {
			pol := &countingPolicy{action: tc.action, rule: "r1"}
			x, rec := newGate(t, execgate.Config{Policy: pol}, execgate.CommandSpec{Name: "true", Command: "/bin/true", Args: execgate.Fixed()})
			_, err := x.Run(execgate.WithPrincipal(context.Background(), "alice"), "true", nil)
			assert.EqualValues(t, 1, pol.calls.Load())
			if tc.want == "" {
				require.NoError(t, err)
				assert.Equal(t, 1, rec.Count())
				return
			}
			var pe *execgate.PolicyError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tc.want, pe.Action)
			assert.Equal(t, "r1", pe.Rule)
			assert.Zero(t, rec.Count())
		})
	}
}

func TestRun_PolicySeesPrincipalAndCall(t *testing.T) {
	var got execgate.Request
	pol := execgate.PolicyFunc(func(_ context.Context, req execgate.Request) (execgate.Decision, error) {
		got = req
		return execgate.Decision{Action: execgate.ActionAllow}, nil
	})
	x, _ := newGate(t, execgate.Config{Policy: pol}, execgate.CommandSpec{Name: "echo.hi", Command: "/bin/echo", Args: execgate.Fixed("hi")})
	_, err := x.Run(execgate.WithPrincipal(context.Background(), "alice"), "echo.hi", nil)
	require.NoError(t, err)
	assert.Equal(t, execgate.OpRun, got.Op)
	assert.Equal(t, "alice", got.Principal)
	assert.Equal(t, "echo.hi", got.Name)
	assert.Equal(t, "/bin/echo", got.Spec.Command)
	assert.Equal(t, []string{"hi"}, got.Argv.Args)

	// A policy error refuses the call.
	boom := errors.New("policy backend down")
	x, rec := newGate(t, execgate.Config{Policy: execgate.PolicyFunc(func(context.Context, execgate.Request) (execgate.Decision, error) {
		return execgate.Decision{}, boom
	})}, execgate.CommandSpec{Name: "echo.hi", Command: "/bin/echo", Args: execgate.Fixed("hi")})
	_, err = x.Run(context.Background(), "echo.hi", nil)
	assert.ErrorIs(t, err, boom)
	assert.Zero(t, rec.Count())
}

func TestRun_InvocationComesFromTheSpec(t *testing.T) {
	dir := t.TempDir()
	x, rec := newGate(t, execgate.Config{}, execgate.CommandSpec{
		Name: "echo.hi", Command: "/bin/echo", Args: execgate.Fixed("hi"),
		Env: map[string]string{"B": "2", "A": "1"}, Dir: dir,
		Timeout: 3 * time.Second, NoOutputTimeout: time.Second, MaxOutput: 10,
	})
	_, err := x.Run(context.Background(), "echo.hi", nil)
	require.NoError(t, err)
	calls := rec.Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, execgate.Invocation{
		Name: "echo.hi", Path: "/bin/echo", Args: []string{"hi"},
		Env: []string{"A=1", "B=2"}, Dir: dir,
		Timeout: 3 * time.Second, NoOutputTimeout: time.Second, MaxOutput: 10,
	}, calls[0])
}

func TestFixed_AcceptsOnlyEmptyInput(t *testing.T) {
	x, rec := newGate(t, execgate.Config{}, execgate.CommandSpec{Name: "date.utc", Command: "/bin/echo", Args: execgate.Fixed("-u")})
	for _, in := range []string{"", " ", "null", "{}", "{ }", " {\n} "} {
		_, err := x.Run(context.Background(), "date.utc", json.RawMessage(in))
		assert.NoError(t, err, "input %q", in)
	}
	for _, in := range []string{`{"a":1}`, `[]`, `""`, `0`, `{}{}`, `{} x`, "\f{}", `nul`, `{"":null}`} {
		_, err := x.Run(context.Background(), "date.utc", json.RawMessage(in))
		var ve *execgate.ValidationError
		assert.ErrorAs(t, err, &ve, "input %q", in)
	}
	calls := rec.Calls()
	require.Len(t, calls, 6)
	for _, c := range calls {
		assert.Equal(t, []string{"-u"}, c.Args)
	}
	assert.JSONEq(t, `{"type":"object","properties":{},"additionalProperties":false}`, string(execgate.Fixed().JSONSchema()))
}

func TestInheritEnv(t *testing.T) {
	t.Setenv("EXECGATE_INHERIT_A", "a-value")
	os.Unsetenv("EXECGATE_INHERIT_MISSING")
	env := execgate.InheritEnv("EXECGATE_INHERIT_A", "EXECGATE_INHERIT_MISSING")
	assert.Equal(t, map[string]string{"EXECGATE_INHERIT_A": "a-value"}, env)
}

func TestAllowlist_LookupAndSpecs(t *testing.T) {
	env := map[string]string{"K": "v"}
	a, err := execgate.NewAllowlist(
		execgate.CommandSpec{Name: "z.last", Command: "/bin/true", Args: execgate.Fixed()},
		execgate.CommandSpec{Name: "a.first", Command: "/bin/echo", Args: execgate.Fixed(), Env: env},
	)
	require.NoError(t, err)
	env["K"] = "changed after build"

	s, ok := a.Lookup("a.first")
	require.True(t, ok)
	assert.Equal(t, "/bin/echo", s.Command)
	assert.Equal(t, execgate.DefaultTimeout, s.Timeout)
	assert.Equal(t, execgate.DefaultMaxOutput, s.MaxOutput)
	assert.Equal(t, execgate.DefaultPolicyVersion, s.PolicyVersion)
	assert.Equal(t, map[string]string{"K": "v"}, s.Env, "the allowlist keeps its own copy of Env")
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, wd, s.Dir)

	s.Env["K"] = "mutated by a caller"
	s2, _ := a.Lookup("a.first")
	assert.Equal(t, "v", s2.Env["K"], "Lookup returns a copy")

	specs := a.Specs()
	require.Len(t, specs, 2)
	assert.Equal(t, "a.first", specs[0].Name)
	assert.Equal(t, "z.last", specs[1].Name)
}

func TestNewAllowlist_RefusesBadSpecs(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "notexec")
	require.NoError(t, os.WriteFile(notExec, []byte("x"), 0o644))
	ok := execgate.CommandSpec{Name: "ok", Command: "/bin/true", Args: execgate.Fixed()}
	with := func(f func(*execgate.CommandSpec)) execgate.CommandSpec {
		s := ok
		f(&s)
		return s
	}
	for _, tc := range []struct {
		name  string
		specs []execgate.CommandSpec
		field string
	}{
		{"empty name", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Name = "" })}, "Name"},
		{"space in name", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Name = "git log" })}, "Name"},
		{"leading dot", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Name = ".git" })}, "Name"},
		{"trailing dot", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Name = "git." })}, "Name"},
		{"double dot", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Name = "git..log" })}, "Name"},
		{"leading dash", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Name = "-git" })}, "Name"},
		{"slash", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Name = "git/log" })}, "Name"},
		{"wildcard", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Name = "*" })}, "Name"},
		{"non-ascii", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Name = "gït" })}, "Name"},
		{"too long", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Name = string(make([]byte, 129)) })}, "Name"},
		{"duplicate", []execgate.CommandSpec{ok, ok}, "Name"},
		{"nil args", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Args = nil })}, "Args"},
		{"empty command", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Command = "" })}, "Command"},
		{"relative command", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Command = "./true" })}, "Command"},
		{"relative command with dir", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Command = "bin/true" })}, "Command"},
		{"missing absolute", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Command = filepath.Join(dir, "nope") })}, "Command"},
		{"missing on PATH", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Command = "execgate-no-such-tool" })}, "Command"},
		{"directory", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Command = dir })}, "Command"},
		{"not executable", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Command = notExec })}, "Command"},
		{"NUL in command", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Command = "/bin/true\x00" })}, "Command"},
		{"short pin", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.SHA256 = "abc" })}, "SHA256"},
		{"non-hex pin", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.SHA256 = "zz" + string(make([]byte, 62)) })}, "SHA256"},
		{"mismatched pin", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) {
			s.SHA256 = "0000000000000000000000000000000000000000000000000000000000000000"
		})}, "SHA256"},
		{"negative timeout", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Timeout = -1 })}, "Timeout"},
		{"negative no-output timeout", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.NoOutputTimeout = -1 })}, "NoOutputTimeout"},
		{"negative max output", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.MaxOutput = -1 })}, "MaxOutput"},
		{"relative dir", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Dir = "tmp" })}, "Dir"},
		{"env key with =", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Env = map[string]string{"A=B": "x"} })}, "Env"},
		{"empty env key", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Env = map[string]string{"": "x"} })}, "Env"},
		{"NUL in env value", []execgate.CommandSpec{with(func(s *execgate.CommandSpec) { s.Env = map[string]string{"A": "x\x00y"} })}, "Env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := execgate.NewAllowlist(tc.specs...)
			assert.Nil(t, a)
			var ce *execgate.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.field, ce.Field, "error: %v", err)
		})
	}
}

func TestNewAllowlist_EnvValueNeverInError(t *testing.T) {
	_, err := execgate.NewAllowlist(execgate.CommandSpec{Name: "ok", Command: "/bin/true", Args: execgate.Fixed(),
		Env: map[string]string{"TOKEN": "secret-canary\x00"}})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "secret-canary")
}

func TestExecutor_ZeroValueRefusesEverything(t *testing.T) {
	var x execgate.Executor
	ctx := context.Background()
	_, err := x.Run(ctx, "echo.say", nil)
	var nf *execgate.NotFoundError
	assert.ErrorAs(t, err, &nf)
	_, err = x.Propose(ctx, "echo.say", nil, "")
	assert.ErrorAs(t, err, &nf)
	now := time.Now().UTC()
	_, err = x.Execute(ctx, execgate.Approval{
		ID: "019ad4f2-6c1e-7a3b-9c4d-2e5f6a7b8c9d", Name: "echo.say", Command: "/bin/echo",
		Digest: strings.Repeat("0", 64), PolicyVersion: "1", CreatedAt: now, ExpiresAt: now.Add(time.Hour),
	})
	var ae *execgate.ApprovalError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, execgate.ReasonUnknown, ae.Reason)
	ok, err := x.Reject(ctx, "019ad4f2-6c1e-7a3b-9c4d-2e5f6a7b8c9d")
	assert.NoError(t, err)
	assert.False(t, ok)
	_, err = x.Proposer().Check("echo.say", nil)
	assert.ErrorAs(t, err, &nf)

	// Given an allowlist, it runs with the defaults and still stores nothing.
	x.SetAllowlist(mustAllowlist(t, execgate.CommandSpec{Name: "true", Command: "/bin/true", Args: execgate.Fixed()}))
	res, err := x.Run(ctx, "true", nil)
	require.NoError(t, err)
	assert.True(t, res.OK)
	_, err = x.Propose(ctx, "true", nil, "")
	assert.ErrorIs(t, err, execgate.ErrStoreFull)
}

func TestRun_PanickingSchemaRefuses(t *testing.T) {
	x, rec := newGate(t, execgate.Config{}, execgate.CommandSpec{Name: "p", Command: "/bin/true", Args: panicSchema{}})
	_, err := x.Run(context.Background(), "p", json.RawMessage(`{"secret":"panic-canary"}`))
	var ve *execgate.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.NotContains(t, err.Error(), "panic-canary")
	assert.Zero(t, rec.Count())
}

type panicSchema struct{}

func (panicSchema) Parse(in json.RawMessage) (execgate.Argv, error) { panic(string(in)) }
func (panicSchema) JSONSchema() json.RawMessage                     { return json.RawMessage(`{}`) }

func TestExecutor_AllowlistFollowsSetAllowlist(t *testing.T) {
	a := mustAllowlist(t, echoSpec())
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: a})
	require.NoError(t, err)
	assert.Same(t, a, x.Allowlist())
	b := mustAllowlist(t)
	x.SetAllowlist(b)
	assert.Same(t, b, x.Allowlist())
}
