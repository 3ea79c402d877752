package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/mcpserver"
	"github.com/execgate/execgate/policy"
)

// visiblePolicies give each principal its own view of testSpecs plus a
// dispatcher "kubectl" whose Floor denies every call:
//
//   - ops may run everything, so sees everything kubectl aside;
//   - dev may run git (git.push excepted) and deploy, once approved;
//   - reader may run echo.hello only;
//   - guest is denied everything, and stranger has no policy at all.
var visiblePolicies = []policy.Policy{
	{Name: "ops", Principal: "ops", Rules: []policy.Rule{{Tools: []string{"*"}, Action: execgate.ActionAllow}}},
	{Name: "dev", Principal: "dev", Rules: []policy.Rule{
		{Tools: []string{"git.push"}, Action: execgate.ActionDeny},
		{Tools: []string{"git.*"}, Action: execgate.ActionAllow},
		{Tools: []string{"deploy"}, Action: execgate.ActionRequireApproval},
	}},
	{Name: "reader", Principal: "reader", Rules: []policy.Rule{{Tools: []string{"echo.hello"}, Action: execgate.ActionAllow}}},
	{Name: "guest", Principal: "guest", Rules: []policy.Rule{{Tools: []string{"*"}, Action: execgate.ActionDeny}}},
}

// shownTo is what tools/list shows each principal under visiblePolicies.
var shownTo = map[string][]string{
	"ops":      {"deploy", "dump", "echo_hello", "forbidden", "git", "git_log"},
	"dev":      {"deploy", "git", "git_log"},
	"reader":   {"echo_hello"},
	"guest":    {},
	"stranger": {},
}

// gated is an Executor deciding with a policy.Engine, and an MCP server
// for it whose Visible asks the same Engine.
type gated struct {
	x     *execgate.Executor
	eng   *policy.Engine
	a     *execgate.Allowlist
	rec   *execgatetest.Recorder
	trail *trail
}

func newGated(t *testing.T) *gated {
	t.Helper()
	specs := append(testSpecs(), execgate.CommandSpec{Name: "kubectl", Command: "/bin/echo", Dispatch: true,
		Args: execgate.Subcommands(execgate.SubcommandSpec{})})
	g := &gated{rec: execgatetest.NewRecorder(), trail: &trail{}}
	var err error
	g.a, err = execgate.NewAllowlist(specs...)
	require.NoError(t, err)
	g.eng, err = policy.New(visiblePolicies, policy.Options{})
	require.NoError(t, err)
	g.x, err = execgate.NewExecutor(execgate.Config{Allowlist: g.a, ExecFn: g.rec.Exec, Policy: g.eng, Auditor: g.trail})
	require.NoError(t, err)
	return g
}

// visible is the servers' Options.Visible.
func (g *gated) visible(_ context.Context, principal string, spec execgate.CommandSpec) bool {
	return g.eng.MayServe(principal, spec, g.x.Allowlist())
}

func (g *gated) server(t *testing.T, opts mcpserver.Options) *mcpserver.Server {
	t.Helper()
	opts.Allowlist, opts.Visible = g.a, g.visible
	srv, err := mcpserver.New(g.x, opts)
	require.NoError(t, err)
	return srv
}

// toolNames lists the tools the client is shown.
func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	names := []string{}
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func callTool(t *testing.T, cs *mcp.ClientSession, name, args string) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	require.NoError(t, err)
	return res
}

// TestVisible_EachPrincipalSeesItsTools: over stdio, one principal per
// server, tools/list shows each principal the tools its policy could
// allow or hold, and nothing else.
func TestVisible_EachPrincipalSeesItsTools(t *testing.T) {
	g := newGated(t)
	for _, tc := range []struct{ about, principal string }{
		{"a principal allowed everything sees every tool but a dispatcher whose floor denies all", "ops"},
		{"a principal sees a dispatcher one of whose subcommands it may run, and a tool held for approval", "dev"},
		{"a principal allowed one tool sees that one", "reader"},
		{"a principal denied everything sees no tools", "guest"},
		{"a principal no policy governs sees no tools", "stranger"},
	} {
		cs := connect(t, g.server(t, mcpserver.Options{Principal: tc.principal}), nil, "")
		assert.Equal(t, shownTo[tc.principal], toolNames(t, cs), tc.about)
	}
}

// TestVisible_NilShowsEveryTool: without Visible every tool is listed,
// as before.
func TestVisible_NilShowsEveryTool(t *testing.T) {
	g := newGated(t)
	srv, err := mcpserver.New(g.x, mcpserver.Options{Allowlist: g.a, Principal: "guest"})
	require.NoError(t, err)
	assert.Len(t, toolNames(t, connect(t, srv, nil, "")), len(g.a.Specs()))
}

// TestVisible_PrincipalOfEachRequest: over Streamable HTTP, one server
// shows each request the tools of the principal that request names, and
// a request that names none is shown nothing.
func TestVisible_PrincipalOfEachRequest(t *testing.T) {
	g := newGated(t)
	srv := g.server(t, mcpserver.Options{PrincipalFrom: func(req mcp.Request) (string, bool) {
		extra := req.GetExtra()
		if extra == nil || extra.Header.Get("X-Principal") == "" {
			return "", false
		}
		return extra.Header.Get("X-Principal"), true
	}})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.MCPServer() }, nil))
	t.Cleanup(hs.Close)
	for _, v := range []struct{ about, version string }{{"in a session", legacyVersion}, {"statelessly", ""}} {
		for _, tc := range []struct{ about, principal string }{
			{"one principal sees its tools", "dev"},
			{"another, on the same server, sees its own", "reader"},
			{"a request that names no principal sees none", ""},
		} {
			client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil)
			tr := &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: header{"X-Principal", tc.principal}}, MaxRetries: -1, DisableStandaloneSSE: true}
			cs, err := client.Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: v.version})
			require.NoError(t, err)
			want := shownTo[tc.principal]
			if want == nil {
				want = []string{}
			}
			assert.Equal(t, want, toolNames(t, cs), "%s: %s", v.about, tc.about)
			require.NoError(t, cs.Close())
		}
	}
}

// header is an http.RoundTripper that sets one header.
type header struct{ key, value string }

func (h header) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if h.value != "" {
		req.Header.Set(h.key, h.value)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestVisible_HiddenToolIsRefusedAsUnknown: a call of a tool hidden from
// its caller, under any spelling, gets the refusal a name no tool has
// gets, word for word, names no hidden tool, runs nothing and is in the
// audit trail.
func TestVisible_HiddenToolIsRefusedAsUnknown(t *testing.T) {
	g := newGated(t)
	reader := connect(t, g.server(t, mcpserver.Options{Principal: "reader"}), nil, "")
	dev := connect(t, g.server(t, mcpserver.Options{Principal: "dev"}), nil, "")
	unknown := func(cs *mcp.ClientSession, name string) mcpserver.CallStatus {
		st := status(t, callTool(t, cs, name, `{}`))
		st.Message = strings.ReplaceAll(st.Message, `"`+name+`"`, `"NAME"`)
		st.Name = "NAME"
		return st
	}
	for _, tc := range []struct {
		about string
		cs    *mcp.ClientSession
		name  string
	}{
		{"a hidden tool by its listed name", reader, "forbidden"},
		{"a hidden tool by its command name, which would name the tool to call", reader, "git.log"},
		{"a hidden tool by its listed name, also a dispatcher", reader, "git"},
		{"a hidden dispatcher's subcommand, which would name the dispatcher", reader, "git_status"},
		{"a hidden tool whose family holds a tool the caller sees", dev, "echo_hello"},
		{"a name like a hidden family's, which would name the family's tools", dev, "echo_nope"},
		{"a hidden dispatcher whose floor denies every call", dev, "kubectl"},
	} {
		before := len(g.trail.all())
		got := unknown(tc.cs, tc.name)
		assert.Equal(t, unknown(tc.cs, "no-such-tool"), got, tc.about)
		assert.Contains(t, got.Message, `no such tool "NAME"`, tc.about)
		evs := g.trail.all()[before:]
		require.Len(t, evs, 2, tc.about)
		assert.Equal(t, execgate.OpRequest, evs[0].Op, tc.about)
		assert.Equal(t, tc.name, evs[0].Name, tc.about)
		assert.Equal(t, execgate.ErrorKindNotFound, evs[0].Error, tc.about)
	}
	assert.Zero(t, g.rec.Count())

	// What the caller sees is still named, and only that.
	st := status(t, callTool(t, dev, "git_Nope", `{}`))
	assert.Contains(t, st.Message, `the tool "git" has no subcommand "Nope"`)
	st = status(t, callTool(t, dev, "git.status", `{}`))
	assert.Contains(t, st.Message, `call the tool "git" with "subcommand" set to "status"`)
	st = status(t, callTool(t, dev, "git_nope", `{}`))
	assert.Contains(t, st.Message, `call the tool "git" with "subcommand" set to "nope"`)
}

// TestVisible_ChangeSendsListChanged: after the policy changes, a
// reload's SetAllowlist, or NotifyToolsChanged alone, sends
// notifications/tools/list_changed to a connected client, and the list it
// then gets, and the calls it may make, follow the new policy.
func TestVisible_ChangeSendsListChanged(t *testing.T) {
	for _, v := range []struct{ about, version string }{{"legacy sessions", legacyVersion}, {"the newest version", ""}} {
		t.Run(v.about, func(t *testing.T) {
			g := newGated(t)
			srv := g.server(t, mcpserver.Options{Principal: "dev"})
			changed := make(chan struct{}, 10)
			cs := connect(t, srv, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				changed <- struct{}{}
			}}, v.version)
			require.Equal(t, shownTo["dev"], toolNames(t, cs))
			awaitChange := func(why string) {
				t.Helper()
				select {
				case <-changed:
				case <-time.After(10 * time.Second):
					t.Fatalf("no notifications/tools/list_changed after %s", why)
				}
			}

			// A reload: the rules are swapped, then the allowlist set again.
			next := append([]policy.Policy(nil), visiblePolicies...)
			next[1] = policy.Policy{Name: "dev", Principal: "dev", Rules: []policy.Rule{{Tools: []string{"echo.*"}, Action: execgate.ActionAllow}}}
			require.NoError(t, g.eng.Swap(next))
			require.NoError(t, srv.SetAllowlist(g.a))
			awaitChange("a reload")
			assert.Equal(t, []string{"echo_hello"}, toolNames(t, cs), "the list follows the new policy")
			st := status(t, callTool(t, cs, "git_log", `{}`))
			assert.Contains(t, st.Message, `no such tool "git_log"`, "a tool hidden now is refused as unknown")
			ran(t, callTool(t, cs, "echo_hello", `{}`))

			// The policy alone.
			require.NoError(t, g.eng.Swap(visiblePolicies))
			srv.NotifyToolsChanged()
			awaitChange("NotifyToolsChanged")
			assert.Equal(t, shownTo["dev"], toolNames(t, cs))
		})
	}
}
