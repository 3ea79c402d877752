package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/mcpserver"
)

// legacyVersion is a protocol version in which the server elicits with a
// request sent while it handles the call; the SDK's default, newer
// version uses input-required results and client retries instead.
const legacyVersion = "2025-11-25"

const testPrincipal = "alice@example.com"

func ptr[T any](v T) *T { return &v }

// testSpecs is the allowlist most tests serve. Nothing is started: the
// Recorder stands in for processes, so /bin/echo only has to exist.
func testSpecs() []execgate.CommandSpec {
	return []execgate.CommandSpec{
		{
			Name:        "echo.hello",
			Command:     "/bin/echo",
			Args:        execgate.Fixed("hello"),
			Description: "Say hello.",
			Hints:       execgate.Hints{ReadOnly: ptr(true), Idempotent: ptr(true), OpenWorld: ptr(false)},
		},
		{
			Name:        "git.log",
			Command:     "/bin/echo",
			Description: "Show commit logs.",
			Args: execgate.Flags(execgate.FlagSpec{
				Leading:     []string{"log"},
				Flags:       []execgate.Flag{{Name: "max-count", Short: "n", Value: execgate.ValueInt}},
				Positionals: execgate.Positionals{Max: 1},
			}),
		},
		{
			Name:        "git",
			Command:     "/bin/echo",
			Description: "Run a git subcommand.",
			Dispatch:    true,
			Floor:       execgate.ActionAllow,
			Args:        execgate.Subcommands(execgate.SubcommandSpec{Leading: []string{"--no-pager"}}),
			Hints:       execgate.Hints{Destructive: ptr(true)},
		},
		{Name: "deploy", Command: "/bin/echo", Args: execgate.Fixed("deploy", "now"), Description: "Deploy (needs approval)."},
		{Name: "forbidden", Command: "/bin/echo", Args: execgate.Fixed()},
		{Name: "dump", Command: "/bin/echo", Args: execgate.Fixed(), MaxOutput: 16},
	}
}

// decisions is a Policy that holds "deploy" for approval, denies
// "forbidden" and allows the rest, recording every request.
type decisions struct {
	mu   sync.Mutex
	reqs []execgate.Request
}

func (d *decisions) Decide(_ context.Context, req execgate.Request) (execgate.Decision, error) {
	d.mu.Lock()
	d.reqs = append(d.reqs, req)
	d.mu.Unlock()
	switch req.Name {
	case "deploy":
		return execgate.Decision{Action: execgate.ActionRequireApproval, Rule: "deploys-need-approval"}, nil
	case "forbidden":
		return execgate.Decision{Action: execgate.ActionDeny, Rule: "never"}, nil
	}
	return execgate.Decision{Action: execgate.ActionAllow}, nil
}

func (d *decisions) requests() []execgate.Request {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]execgate.Request(nil), d.reqs...)
}

// fixture is a served Executor and a connected client.
type fixture struct {
	x      *execgate.Executor
	rec    *execgatetest.Recorder
	policy *decisions
	srv    *mcpserver.Server
	cs     *mcp.ClientSession
}

type setup struct {
	specs   []execgate.CommandSpec
	execFn  execgate.ExecFn // nil: the fixture's Recorder
	auditor execgate.Auditor
	opts    mcpserver.Options
	client  *mcp.ClientOptions
	version string // protocol version the client asks for; "" is the SDK's default
}

func start(t *testing.T, s setup) *fixture {
	t.Helper()
	if s.specs == nil {
		s.specs = testSpecs()
	}
	a, err := execgate.NewAllowlist(s.specs...)
	require.NoError(t, err)
	f := &fixture{rec: execgatetest.NewRecorder(), policy: &decisions{}}
	execFn := s.execFn
	if execFn == nil {
		execFn = f.rec.Exec
	}
	f.x, err = execgate.NewExecutor(execgate.Config{Allowlist: a, ExecFn: execFn, Policy: f.policy, Auditor: s.auditor})
	require.NoError(t, err)
	if s.opts.Allowlist == nil {
		s.opts.Allowlist = a
	}
	if s.opts.Principal == "" {
		s.opts.Principal = testPrincipal
	}
	f.srv, err = mcpserver.New(f.x, s.opts)
	require.NoError(t, err)
	f.cs = connect(t, f.srv, s.client, s.version)
	return f
}

func connect(t *testing.T, srv *mcpserver.Server, copts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCPServer().Connect(ctx, st, nil)
	require.NoError(t, err)
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, copts)
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return cs
}

// call calls a tool with arguments sent exactly as given.
func (f *fixture) call(t *testing.T, name, args string) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := f.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	require.NoError(t, err, "a tool call must never fail at the protocol level")
	return res
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.Len(t, res.Content, 1)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "content is %T", res.Content[0])
	return tc.Text
}

// decode re-encodes a result's structured content into v.
func decode(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	require.NotNil(t, res.StructuredContent)
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v), "structured content: %s", b)
}

func ran(t *testing.T, res *mcp.CallToolResult) execgate.Result {
	t.Helper()
	var r execgate.Result
	decode(t, res, &r)
	require.NotEmpty(t, r.ID, "not a Result: %s", text(t, res))
	return r
}

func status(t *testing.T, res *mcp.CallToolResult) mcpserver.CallStatus {
	t.Helper()
	require.True(t, res.IsError, "a call that did not run is an error result")
	var st mcpserver.CallStatus
	decode(t, res, &st)
	require.NotEmpty(t, st.Status)
	require.Equal(t, text(t, res), st.Message)
	return st
}

// questionOf returns the approval ID shown in an approval question.
func questionOf(t *testing.T, msg string) string {
	t.Helper()
	i := strings.Index(msg, "Approval ")
	require.GreaterOrEqual(t, i, 0, msg)
	return msg[i+len("Approval ") : i+len("Approval ")+36]
}
