package mcpserver_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/mcpserver"
)

// principalKey is where the tests' bearer-token middleware puts a
// token's principal in its TokenInfo.
const principalKey = "principal"

// tokenPrincipal is the tests' Options.PrincipalFrom: the principal the
// bearer-token middleware found for the HTTP request that carried req.
func tokenPrincipal(req mcp.Request) (string, bool) {
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return "", false
	}
	p, ok := extra.TokenInfo.Extra[principalKey].(string)
	return p, ok
}

// tokens maps bearer tokens to principals; it may change while served.
type tokens struct {
	mu sync.Mutex
	m  map[string]string
}

func (ts *tokens) set(token, principal string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.m[token] = principal
}

// verify is an auth.TokenVerifier: a session is bound to the token that
// opened it (UserID), and each request names its token's principal now.
func (ts *tokens) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	p, ok := ts.m[token]
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	sum := sha256.Sum256([]byte(token))
	return &auth.TokenInfo{UserID: hex.EncodeToString(sum[:]), Extra: map[string]any{principalKey: p}}, nil
}

// httpFixture serves an Executor over the SDK's Streamable HTTP handler,
// behind the SDK's bearer-token middleware: statelessly for the newest
// protocol version, with sessions for the versions before it.
type httpFixture struct {
	x      *execgate.Executor
	rec    *execgatetest.Recorder
	policy *decisions
	trail  *trail
	srv    *mcpserver.Server
	tokens *tokens
	url    string
}

func startHTTP(t *testing.T, opts mcpserver.Options, stateless, authenticate bool) *httpFixture {
	t.Helper()
	a, err := execgate.NewAllowlist(testSpecs()...)
	require.NoError(t, err)
	f := &httpFixture{rec: execgatetest.NewRecorder(), policy: &decisions{}, trail: &trail{}, tokens: &tokens{m: map[string]string{}}}
	f.x, err = execgate.NewExecutor(execgate.Config{Allowlist: a, ExecFn: f.rec.Exec, Policy: f.policy, Auditor: f.trail})
	require.NoError(t, err)
	opts.Allowlist = a
	opts.PrincipalFrom = tokenPrincipal
	f.srv, err = mcpserver.New(f.x, opts)
	require.NoError(t, err)
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.srv.MCPServer() },
		&mcp.StreamableHTTPOptions{Stateless: stateless})
	if authenticate {
		h = auth.RequireBearerToken(f.tokens.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	f.url = hs.URL
	return f
}

// bearer is an http.RoundTripper that sends a bearer token.
type bearer struct{ token string }

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(req)
}

// connectHTTP connects a client that presents token.
func (f *httpFixture) connect(t *testing.T, token, version string, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "http-client", Version: "v0"}, copts)
	tr := &mcp.StreamableClientTransport{Endpoint: f.url, HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1, DisableStandaloneSSE: true}
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func callOver(t *testing.T, cs *mcp.ClientSession, name, args string) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	require.NoError(t, err)
	return res
}

// The protocol versions served over HTTP: the newest statelessly, with a
// retry per request; the one before it in a session.
var httpVersions = []struct {
	name, version string
	stateless     bool
}{
	{"stateless, the SDK's newest version", "", true},
	{"in a session, " + legacyVersion, legacyVersion, false},
}

// TestHTTP_EachCallRunsAsItsToken: two clients with two tokens; the
// Policy, the approval's proposer, the audit trail and the refusal of an
// unlisted tool see each call's own token's principal, never
// Options.Principal.
func TestHTTP_EachCallRunsAsItsToken(t *testing.T) {
	for _, v := range httpVersions {
		t.Run(v.name, func(t *testing.T) {
			f := startHTTP(t, mcpserver.Options{Principal: "never-used", Approvals: mcpserver.ApprovalsPending}, v.stateless, true)
			f.tokens.set("token-a", "agent-a")
			f.tokens.set("token-b", "agent-b")
			a := f.connect(t, "token-a", v.version, nil)
			b := f.connect(t, "token-b", v.version, nil)

			ran(t, callOver(t, a, "echo_hello", `{}`))
			ran(t, callOver(t, b, "echo_hello", `{}`))
			st := status(t, callOver(t, b, "deploy", `{}`))
			require.Equal(t, mcpserver.StatusPending, st.Status)
			assert.Equal(t, "agent-b", st.Approval.Principal)
			assert.Equal(t, `requested by "agent-b" via MCP`, st.Approval.Reason)
			st = status(t, callOver(t, a, "nope", `{}`))
			assert.Equal(t, mcpserver.KindNotFound, st.Kind)

			var principals []string
			for _, r := range f.policy.requests() {
				principals = append(principals, r.Principal)
			}
			assert.Equal(t, []string{"agent-a", "agent-b", "agent-b"}, principals)
			events := f.trail.all()
			last := events[len(events)-1]
			assert.Equal(t, execgate.OpRequest, last.Op)
			assert.Equal(t, "agent-a", last.Principal, "the unlisted tool's refusal is recorded under its caller")
			for _, ev := range events {
				assert.NotEqual(t, "never-used", ev.Principal)
			}
		})
	}
}

// TestHTTP_PrincipalIsReadPerRequest: in a session, a call runs as the
// principal its own request names now, not as the one of the request
// that opened the session.
func TestHTTP_PrincipalIsReadPerRequest(t *testing.T) {
	f := startHTTP(t, mcpserver.Options{}, false, true)
	f.tokens.set("token-a", "before")
	cs := f.connect(t, "token-a", legacyVersion, nil)
	ran(t, callOver(t, cs, "echo_hello", `{}`))
	f.tokens.set("token-a", "after")
	ran(t, callOver(t, cs, "echo_hello", `{}`))
	reqs := f.policy.requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "before", reqs[0].Principal)
	assert.Equal(t, "after", reqs[1].Principal)
}

// TestHTTP_NoPrincipalRefuses: a request PrincipalFrom names no principal
// for (here, no bearer-token middleware at all) runs nothing, is never
// put to the Policy, and its refusal is recorded, whether the tool is
// listed or not.
func TestHTTP_NoPrincipalRefuses(t *testing.T) {
	f := startHTTP(t, mcpserver.Options{Principal: "never-used"}, true, false)
	cs := f.connect(t, "", "", nil)
	for _, name := range []string{"echo_hello", "nope"} {
		st := status(t, callOver(t, cs, name, `{}`))
		assert.Equal(t, mcpserver.StatusRefused, st.Status)
		assert.Equal(t, string(execgate.ErrorKindUnauthenticated), st.Kind)
		assert.Contains(t, st.Message, "nothing ran")
	}
	assert.Zero(t, f.rec.Count())
	assert.Empty(t, f.policy.requests())
	events := f.trail.all()
	require.Len(t, events, 2)
	for _, ev := range events {
		assert.Equal(t, execgate.OpRequest, ev.Op)
		assert.Equal(t, execgate.ErrorKindUnauthenticated, ev.Error)
		assert.Empty(t, ev.Principal)
	}
	assert.Equal(t, "echo.hello", events[0].Name, "the gate's name of the listed tool")
	assert.Equal(t, "nope", events[1].Name)
}

// TestHTTP_RequestStateIsTheCallersOwn: statelessly, an approval question
// is answered by a retry carrying its request state; a retry by another
// token's principal with that state approves nothing, is told what any
// unknown state is told, and leaves the question to its own caller.
func TestHTTP_RequestStateIsTheCallersOwn(t *testing.T) {
	f := startHTTP(t, mcpserver.Options{}, true, true)
	f.tokens.set("token-a", "agent-a")
	f.tokens.set("token-b", "agent-b")
	a := f.connect(t, "token-a", "", manual(&person{}))
	b := f.connect(t, "token-b", "", manual(&person{}))
	ctx := context.Background()
	q, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "deploy", Arguments: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.True(t, q.NeedsInput(), "an input-required result")

	retry := func(cs *mcp.ClientSession, state string) mcpserver.CallStatus {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{
			Name: "deploy", Arguments: json.RawMessage(`{}`), RequestState: state,
			InputResponses: mcp.InputResponseMap{"approval": &mcp.ElicitResult{Action: "accept"}},
		})
		require.NoError(t, err)
		if !res.IsError {
			return mcpserver.CallStatus{}
		}
		return status(t, res)
	}
	stolen := retry(b, q.RequestState)
	assert.Equal(t, mcpserver.StatusNotApproved, stolen.Status)
	assert.Nil(t, stolen.Approval, "nothing about the other caller's approval is shown")
	forged := retry(b, "forged-state")
	assert.Equal(t, forged.Message, stolen.Message, "another caller's state reads as an unknown one")
	assert.Zero(t, f.rec.Count())

	assert.Empty(t, retry(a, q.RequestState).Status, "the caller's own retry runs the call")
	assert.Equal(t, 1, f.rec.Count())
	for _, r := range f.policy.requests() {
		assert.Equal(t, "agent-a", r.Principal)
	}
	for _, ev := range f.trail.all() {
		if ev.Op == execgate.OpExecute {
			assert.Equal(t, "agent-a", ev.Principal)
		}
	}
}

// TestHTTP_SessionIsTheTokens: with the SDK's bearer-token middleware
// setting TokenInfo.UserID per token, a session opened with one token
// cannot be used with another.
func TestHTTP_SessionIsTheTokens(t *testing.T) {
	f := startHTTP(t, mcpserver.Options{}, false, true)
	f.tokens.set("token-a", "agent-a")
	f.tokens.set("token-b", "agent-b")
	cs := f.connect(t, "token-a", legacyVersion, nil)
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo_hello","arguments":{}}}`
	req, err := http.NewRequest("POST", f.url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Mcp-Protocol-Version", legacyVersion)
	req.Header.Set("Authorization", "Bearer token-b")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Zero(t, f.rec.Count())
}
