package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/mcpserver"
)

func TestListTools_EverySpecWithSchemaAndAnnotations(t *testing.T) {
	f := start(t, setup{})
	res, err := f.cs.ListTools(context.Background(), nil)
	require.NoError(t, err)

	specs := map[string]execgate.CommandSpec{}
	for _, s := range testSpecs() {
		specs[s.Name] = s
	}
	tools := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		tools[tl.Name] = tl
	}
	require.Len(t, tools, len(specs))
	for name, spec := range specs {
		tl := tools[mcpserver.ToolName(name)]
		require.NotNil(t, tl, "%s is listed as %s", name, mcpserver.ToolName(name))
		assert.True(t, strings.HasPrefix(tl.Description, spec.Description), name)
		schema, err := json.Marshal(tl.InputSchema)
		require.NoError(t, err)
		if spec.Dispatch {
			continue // below
		}
		assert.JSONEq(t, string(spec.Args.JSONSchema()), string(schema), name)
	}

	hello := tools["echo_hello"].Annotations
	require.NotNil(t, hello)
	assert.True(t, hello.ReadOnlyHint)
	assert.True(t, hello.IdempotentHint)
	require.NotNil(t, hello.OpenWorldHint)
	assert.False(t, *hello.OpenWorldHint)
	assert.Nil(t, hello.DestructiveHint, "a nil hint is omitted")
	assert.Nil(t, tools["git_log"].Annotations, "no hints, no annotations")

	// The dispatcher: its own schema plus a required "subcommand".
	git := tools["git"]
	require.NotNil(t, git.Annotations)
	require.NotNil(t, git.Annotations.DestructiveHint)
	assert.True(t, *git.Annotations.DestructiveHint)
	assert.Nil(t, git.Annotations.OpenWorldHint)
	assert.Contains(t, git.Description, `"git.<subcommand>"`)
	var got, own map[string]any
	b, _ := json.Marshal(git.InputSchema)
	require.NoError(t, json.Unmarshal(b, &got))
	require.NoError(t, json.Unmarshal(specs["git"].Args.JSONSchema(), &own))
	props := got["properties"].(map[string]any)
	sub := props[mcpserver.SubcommandProperty].(map[string]any)
	assert.Equal(t, "string", sub["type"])
	assert.Equal(t, "^[a-z][a-z0-9-]*$", sub["pattern"])
	assert.EqualValues(t, 64, sub["maxLength"])
	assert.Equal(t, []any{"subcommand"}, got["required"])
	delete(props, mcpserver.SubcommandProperty)
	delete(got, "required")
	assert.Equal(t, own, got, "everything else is the dispatcher's own schema")
}

func TestCall_AllowedReturnsOutput(t *testing.T) {
	f := start(t, setup{})
	f.rec.On("git.log", execgate.Outcome{Stdout: []byte("abc123 first commit\n"), Stderr: []byte("warning: x\n")})

	res := f.call(t, "git_log", `{"flags":{"max-count":3},"args":["main"]}`)
	assert.False(t, res.IsError, text(t, res))
	msg := text(t, res)
	assert.Contains(t, msg, "git.log exited with status 0.")
	assert.Contains(t, msg, "stdout:\nabc123 first commit\n")
	assert.Contains(t, msg, "stderr:\nwarning: x\n")

	r := ran(t, res)
	assert.Equal(t, "git.log", r.Name)
	assert.Equal(t, 0, r.ExitCode)
	assert.True(t, r.OK)
	assert.Equal(t, "abc123 first commit\n", r.Stdout)
	assert.Equal(t, []string{"log", "--max-count=3", "main"}, r.Args)

	calls := f.rec.Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, []string{"log", "--max-count=3", "main"}, calls[0].Args)
}

func TestCall_RealProcess(t *testing.T) {
	if _, err := os.Stat("/bin/echo"); err != nil {
		t.Skip("no /bin/echo")
	}
	f := start(t, setup{execFn: execgate.DefaultExecFn})
	res := f.call(t, "echo_hello", `{}`)
	require.False(t, res.IsError, text(t, res))
	r := ran(t, res)
	assert.Equal(t, "hello\n", r.Stdout)
	assert.Equal(t, execgate.TerminationExit, r.Termination)
	assert.NotZero(t, r.PID)
	assert.Contains(t, text(t, res), "stdout:\nhello\n")
}

func TestCall_UnknownTool(t *testing.T) {
	f := start(t, setup{})
	// "git.status" is served by the dispatcher in the Executor, but it is
	// not a listed tool: it must go through the tool "git". A name that is
	// not listed but names a listed tool is refused with the name to call;
	// one that looks like a tool's is refused with the tools to call.
	for _, tc := range []struct{ name, says string }{
		{"nope", `no such tool "nope": tools/list shows the tools you can call`},
		{"git.log.x", `no such tool "git.log.x"`},
		{"git_Status", `the tool "git" has no subcommand "Status" (a subcommand matches ^[a-z][a-z0-9-]*$): call the tool "git" with "subcommand" set to the subcommand`},
		{"echo_nope", `the tool "echo" has no subcommand "nope": call it as "echo_hello"`},
		{"echo", `there is no tool "echo", and its tools are called by their own names: call it as "echo_hello"`},
		{"git.status", `call the tool "git" with "subcommand" set to "status"`},
		{"git_status", `call the tool "git" with "subcommand" set to "status"`},
		{"git.log", `the command "git.log" is listed as the tool "git_log": call that`},
		{"echo.hello", `the command "echo.hello" is listed as the tool "echo_hello": call that`},
	} {
		res := f.call(t, tc.name, `{}`)
		st := status(t, res)
		assert.Equal(t, mcpserver.StatusRefused, st.Status, tc.name)
		assert.Equal(t, mcpserver.KindNotFound, st.Kind, tc.name)
		assert.Equal(t, tc.name, st.Name)
		assert.Contains(t, st.Message, tc.says)
		assert.True(t, strings.HasSuffix(st.Message, "; nothing ran."), st.Message)
	}
	assert.Zero(t, f.rec.Count())
	assert.Empty(t, f.policy.requests())
}

func TestCall_BadArguments(t *testing.T) {
	f := start(t, setup{})
	for _, tc := range []struct{ name, args, field string }{
		{"git_log", `{"flags":{"max-count":"three"}}`, "max-count"},
		{"git_log", `{"flags":{"unknown":true}}`, "unknown"},
		// Sent verbatim: the gate, not the SDK, sees the duplicate key.
		{"git_log", `{"args":["a"],"args":["b"]}`, "args"},
		{"git_log", `[1,2]`, ""},
		{"echo_hello", `{"x":1}`, ""},
	} {
		res := f.call(t, tc.name, tc.args)
		st := status(t, res)
		assert.Equal(t, mcpserver.KindInvalidInput, st.Kind, tc.args)
		assert.Contains(t, st.Message, "invalid input for", tc.args)
		assert.True(t, strings.HasSuffix(st.Message, "nothing ran."), st.Message)
		require.NotEmpty(t, st.Issues, tc.args)
		if tc.field != "" {
			assert.Contains(t, st.Message, tc.field, tc.args)
		}
	}
	assert.Zero(t, f.rec.Count())
}

func TestCall_StdinIsNotEchoedInRefusals(t *testing.T) {
	f := start(t, setup{})
	res := f.call(t, "git_log", `{"stdin":"s3cret-token"}`)
	st := status(t, res)
	assert.Equal(t, mcpserver.KindInvalidInput, st.Kind)
	assert.NotContains(t, st.Message, "s3cret-token")
}

func TestCall_PolicyDeny(t *testing.T) {
	f := start(t, setup{})
	res := f.call(t, "forbidden", `{}`)
	st := status(t, res)
	assert.Equal(t, mcpserver.StatusRefused, st.Status)
	assert.Equal(t, mcpserver.KindPolicy, st.Kind)
	assert.Equal(t, execgate.ActionDeny, st.Action)
	assert.Equal(t, "never", st.Rule)
	assert.Equal(t, "forbidden", st.Name)
	assert.Zero(t, f.rec.Count())
}

func TestCall_OversizedOutputShowsTruncation(t *testing.T) {
	f := start(t, setup{})
	f.rec.On("dump", execgate.Outcome{
		Stdout: []byte(strings.Repeat("a", 100)),
		Stderr: []byte(strings.Repeat("b", 40)),
	})
	res := f.call(t, "dump", `{}`)
	assert.False(t, res.IsError)
	r := ran(t, res)
	assert.Equal(t, strings.Repeat("a", 16), r.Stdout)
	assert.Equal(t, int64(84), r.StdoutDropped)
	assert.Equal(t, strings.Repeat("b", 16), r.Stderr)
	assert.Equal(t, int64(24), r.StderrDropped)
	msg := text(t, res)
	assert.Contains(t, msg, "[stdout truncated: 84 more bytes were not kept]")
	assert.Contains(t, msg, "[stderr truncated: 24 more bytes were not kept]")
}

func TestCall_FailedProcessIsAnError(t *testing.T) {
	f := start(t, setup{})
	f.rec.On("echo.hello", execgate.Outcome{ExitCode: 2, Stderr: []byte("boom\n")})
	f.rec.On("dump", execgate.Outcome{Termination: execgate.TerminationTimeout, Signal: "SIGKILL"})

	res := f.call(t, "echo_hello", `{}`)
	assert.True(t, res.IsError)
	r := ran(t, res)
	assert.Equal(t, 2, r.ExitCode)
	assert.False(t, r.OK)
	assert.Contains(t, text(t, res), "echo.hello exited with status 2.")
	assert.Contains(t, text(t, res), "stdout: (empty)")

	res = f.call(t, "dump", `{}`)
	assert.True(t, res.IsError)
	r = ran(t, res)
	assert.Equal(t, execgate.TerminationTimeout, r.Termination)
	assert.Equal(t, -1, r.ExitCode)
	assert.Contains(t, text(t, res), "dump ran out of time and was killed.")
}

func TestDispatcher_ReachesGateWithSubcommandInName(t *testing.T) {
	f := start(t, setup{})
	f.rec.On("git.status", execgate.Outcome{Stdout: []byte(" M a.go\n")})

	res := f.call(t, "git", `{"args":["--short"], "subcommand":"status"}`)
	require.False(t, res.IsError, text(t, res))
	r := ran(t, res)
	assert.Equal(t, "git.status", r.Name)
	assert.Equal(t, []string{"--no-pager", "status", "--short"}, r.Args)

	calls := f.rec.Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, "git.status", calls[0].Name)
	reqs := f.policy.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "git.status", reqs[0].Name, "the policy decides on the full name")
}

func TestDispatcher_BadSubcommandIsRefused(t *testing.T) {
	f := start(t, setup{})
	for _, args := range []string{
		`{}`,
		`{"args":[]}`,
		`{"subcommand":""}`,
		`{"subcommand":"Status"}`,
		`{"subcommand":"log.x"}`, // a '.' would reach another spec
		`{"subcommand":"-x"}`,
		`{"subcommand":"st atus"}`,
		`{"subcommand":"` + strings.Repeat("a", 65) + `"}`,
		`{"subcommand":5}`,
		`{"subcommand":null}`,
		`{"subcommand":["status"]}`,
		`{"subcommand":"status","subcommand":"push"}`,
		`{"subcommand":"status","sub\u0063ommand":"push"}`,
		`[{"subcommand":"status"}]`,
		`"status"`,
		`null`,
		`{"subcommand":"log"}`, // has its own tool
	} {
		res := f.call(t, "git", args)
		st := status(t, res)
		assert.Equal(t, mcpserver.KindInvalidInput, st.Kind, args)
		assert.Equal(t, "git", st.Name, args)
	}
	res := f.call(t, "git", `{"subcommand":"log"}`)
	assert.Contains(t, text(t, res), `"git.log" has its own tool; call the tool "git_log" instead`)
	assert.Zero(t, f.rec.Count())
	assert.Empty(t, f.policy.requests(), "refused before the gate decides anything")
}

func TestDispatcher_RestIsCheckedByTheGate(t *testing.T) {
	f := start(t, setup{})
	for _, args := range []string{
		`{"subcommand":"status","args":["a"],"args":["b"]}`, // duplicate key
		`{"subcommand":"status","Args":["a"]}`,              // case variant
		`{"subcommand":"status","flags":{"x":true}}`,        // not for dispatchers
		`{"subcommand":"status","args":["$(id)"]}`,
		`{"subcommand":"status","env":{"A":"B"}}`,
	} {
		res := f.call(t, "git", args)
		st := status(t, res)
		assert.Equal(t, mcpserver.KindInvalidInput, st.Kind, args)
		assert.Equal(t, "git.status", st.Name, "refused by the gate: %s", args)
	}
	assert.Zero(t, f.rec.Count())
}

func TestPrincipal_ReachesThePolicy(t *testing.T) {
	f := start(t, setup{opts: mcpserver.Options{Principal: "ci-bot"}})
	f.call(t, "echo_hello", `{}`)
	f.call(t, "forbidden", `{}`)
	reqs := f.policy.requests()
	require.Len(t, reqs, 2)
	for _, r := range reqs {
		assert.Equal(t, "ci-bot", r.Principal)
	}
}

func TestNew_Refuses(t *testing.T) {
	a, err := execgate.NewAllowlist(testSpecs()...)
	require.NoError(t, err)
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: a})
	require.NoError(t, err)

	_, err = mcpserver.New(nil, mcpserver.Options{Allowlist: a})
	assert.Error(t, err)
	_, err = mcpserver.New(x, mcpserver.Options{})
	assert.ErrorContains(t, err, "Allowlist is required")
	_, err = mcpserver.New(x, mcpserver.Options{Allowlist: a, Principal: "bad\nname"})
	assert.ErrorContains(t, err, "Principal")
	_, err = mcpserver.New(x, mcpserver.Options{Allowlist: a, Principal: strings.Repeat("p", 257)})
	assert.ErrorContains(t, err, "Principal")
	_, err = mcpserver.New(x, mcpserver.Options{Allowlist: a, Approvals: 7})
	assert.ErrorContains(t, err, "Approvals")
	_, err = mcpserver.New(x, mcpserver.Options{Allowlist: a, ElicitationTimeout: -1})
	assert.ErrorContains(t, err, "ElicitationTimeout")

	arr, err := execgate.NewAllowlist(execgate.CommandSpec{Name: "weird", Command: "/bin/echo", Args: schemaOf(`{"type":"array"}`)})
	require.NoError(t, err)
	_, err = mcpserver.New(x, mcpserver.Options{Allowlist: arr})
	assert.ErrorContains(t, err, `"weird"`)
	bad, err := execgate.NewAllowlist(execgate.CommandSpec{Name: "weird", Command: "/bin/echo", Args: schemaOf(`not json`)})
	require.NoError(t, err)
	_, err = mcpserver.New(x, mcpserver.Options{Allowlist: bad})
	assert.ErrorContains(t, err, "not a JSON object")
}

// schemaOf is an ArgsSchema with a given JSON Schema that refuses every
// input.
type schemaOf string

func (s schemaOf) JSONSchema() json.RawMessage { return json.RawMessage(s) }
func (s schemaOf) Parse(json.RawMessage) (execgate.Argv, error) {
	return execgate.Argv{}, &execgate.ValidationError{Issues: []execgate.Issue{{Message: "never"}}}
}

func TestSetAllowlist_UpdatesTools(t *testing.T) {
	f := start(t, setup{})
	smaller, err := execgate.NewAllowlist(testSpecs()[:2]...)
	require.NoError(t, err)
	f.x.SetAllowlist(smaller)
	require.NoError(t, f.srv.SetAllowlist(smaller))

	res, err := f.cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	assert.ElementsMatch(t, []string{"echo_hello", "git_log"}, names)

	st := status(t, f.call(t, "dump", `{}`))
	assert.Equal(t, mcpserver.KindNotFound, st.Kind)
	assert.Error(t, f.srv.SetAllowlist(nil))
}
