package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/mcpserver"
)

// otherToken is the token of other-bot, a caller whose policy denies
// what ci-bot's allows.
const otherToken = "other-caller-token-for-tests"

// mcpHTTPConfig serves echo.run and deploy.<anything> to two callers:
// ci-bot may run echo.run, and its deploys need an approval; other-bot's
// policy denies echo.run, so it is not shown the tool, and holds its
// deploys too. alice approves. ELICIT is more of the server section.
const mcpHTTPConfig = `version: 1
defaults: {timeout: 10s, env: {PATH: /usr/bin:/bin}}
tools:
  - name: echo
    bin: /bin/echo
    description: Print the arguments.
    bare:
      positionals: {max: 4, pattern: '^[A-Za-z0-9 ._-]{1,100}$'}
  - name: deploy
    bin: /bin/echo
    description: Deploy a service; every call needs an approval.
    default_action: human_approval
policies:
  - name: ci
    principal: ci-bot
    rules:
      - {name: echo, tools: [echo.run], action: allow}
      - {name: deploys, tools: ["deploy.*"], action: require_approval}
  - name: others
    principal: other-bot
    rules:
      - {name: no-echo, tools: [echo.run], action: deny}
      - {name: deploys, tools: ["deploy.*"], action: require_approval}
server:
  principal: local-agent
  tokens:
    - {principal: ci-bot, sha256: "CALLER"}
    - {principal: other-bot, sha256: "OTHER"}
  approvers:
    - {principal: alice, sha256: "APPROVER"}
ELICIT`

// mcpHTTPText is mcpHTTPConfig with server.mcp_http_elicitation set when
// elicit is.
func mcpHTTPText(elicit bool) string {
	more := ""
	if elicit {
		more = "  mcp_http_elicitation: true\n"
	}
	return strings.NewReplacer("CALLER", tokenHash(callerToken), "OTHER", tokenHash(otherToken),
		"APPROVER", tokenHash(approverToken), "ELICIT", more).Replace(mcpHTTPConfig)
}

// mcpHTTPFixture is serve --mcp-http of a configuration in this process,
// on a loopback address, writing its audit chain to a file, with a
// Recorder in place of processes.
type mcpHTTPFixture struct {
	base  string // http://127.0.0.1:PORT
	url   string // base + mcpPath
	trail string
	gate  *gate
	rec   *execgatetest.Recorder
	h     *mcpHTTP
}

func newMCPHTTPFixture(t *testing.T, text string) *mcpHTTPFixture {
	t.Helper()
	loaded, err := config.LoadBytes("test.yaml", []byte(text))
	require.NoError(t, err)
	f := &mcpHTTPFixture{trail: filepath.Join(t.TempDir(), "audit.jsonl"), rec: execgatetest.NewRecorder()}
	f.rec.Otherwise(execgate.Outcome{Stdout: []byte("ran\n")})
	f.gate, err = newGate(loaded, f.trail, f.rec.Exec)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.gate.Close()) })
	stop, cancel := context.WithCancel(context.Background())
	discard := slog.New(slog.DiscardHandler)
	f.h, err = newMCPHTTPServer(stop, f.gate, f.gate.server(), false, discard, discard)
	require.NoError(t, err)
	srv := httptest.NewServer(f.h)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { cancel(); f.h.closeSessions() })
	f.base, f.url = srv.URL, srv.URL+mcpPath
	return f
}

// withToken is an http.RoundTripper that sends a bearer token.
type withToken struct{ token string }

func (b withToken) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(req)
}

// connect connects the SDK's Streamable HTTP client with token, asking
// for the protocol version ("" is the SDK's newest).
func (f *mcpHTTPFixture) connect(t *testing.T, token, version string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "streamable-test", Version: "v0"}, opts)
	tr := &mcp.StreamableClientTransport{Endpoint: f.url, HTTPClient: &http.Client{Transport: withToken{token}}, MaxRetries: -1}
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func (f *mcpHTTPFixture) mustConnect(t *testing.T, token, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := f.connect(t, token, version, opts)
	require.NoError(t, err)
	return cs
}

// entries returns the entries of the audit file.
func (f *mcpHTTPFixture) entries(t *testing.T) []audit.Entry {
	t.Helper()
	data, err := os.ReadFile(f.trail)
	require.NoError(t, err)
	var out []audit.Entry
	for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var e audit.Entry
		require.NoError(t, json.Unmarshal(line, &e), "%s", line)
		out = append(out, e)
	}
	return out
}

// raw sends one request to the MCP endpoint (or to base+path when path
// starts with "/"), with the headers given, and returns the response and
// its body.
func (f *mcpHTTPFixture) raw(t *testing.T, method, path, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	target := f.url + path
	if strings.HasPrefix(path, "/") {
		target = f.base + path
	}
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, data
}

// mcpHeaders are the headers of a Streamable HTTP POST with token.
func mcpHeaders(token string) map[string]string {
	h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	return h
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

// The protocol versions served: the newest without sessions, and one
// before it, in a session.
var mcpHTTPVersions = []struct{ name, version string }{
	{"2026-07-28, without sessions", ""},
	{"2025-11-25, in a session", "2025-11-25"},
}

func callHTTP(t *testing.T, cs *mcp.ClientSession, name, args string) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	require.NoError(t, err)
	return res
}

// callStatus decodes the CallStatus of a call that did not run.
func callStatus(t *testing.T, res *mcp.CallToolResult) mcpserver.CallStatus {
	t.Helper()
	require.True(t, res.IsError)
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var st mcpserver.CallStatus
	require.NoError(t, json.Unmarshal(b, &st), "%s", b)
	return st
}

// ranResult decodes the Result of a call that ran.
func ranResult(t *testing.T, res *mcp.CallToolResult) execgate.Result {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.False(t, res.IsError, "%s", b)
	var r execgate.Result
	require.NoError(t, json.Unmarshal(b, &r), "%s", b)
	return r
}

// TestMCPHTTP_CallsRunAsTheirToken: over either protocol version, a
// client lists the tools and calls one with its token, and each request
// is decided and recorded as its own token's principal: ci-bot's policy
// allows echo.run, other-bot's denies it, so other-bot is not shown it
// and its call is refused as a name no tool has; both are shown deploy,
// and the approval each proposes is its own. server.principal is never
// used.
func TestMCPHTTP_CallsRunAsTheirToken(t *testing.T) {
	for _, v := range mcpHTTPVersions {
		t.Run(v.name, func(t *testing.T) {
			f := newMCPHTTPFixture(t, mcpHTTPText(false))
			ci := f.mustConnect(t, callerToken, v.version, nil)
			other := f.mustConnect(t, otherToken, v.version, nil)
			assert.Equal(t, []string{"deploy", "echo_run"}, toolNames(t, ci))
			assert.Equal(t, []string{"deploy"}, toolNames(t, other), "the tool its policy denies is not shown")

			r := ranResult(t, callHTTP(t, ci, "echo_run", `{"args":["hello"]}`))
			assert.Equal(t, "echo.run", r.Name)
			st := callStatus(t, callHTTP(t, other, "echo_run", `{"args":["hello"]}`))
			assert.Equal(t, mcpserver.KindNotFound, st.Kind, st.Message)
			assert.Equal(t, 1, f.rec.Count())
			for token, cs := range map[string]*mcp.ClientSession{"ci-bot": ci, "other-bot": other} {
				st = callStatus(t, callHTTP(t, cs, "deploy", `{"subcommand":"prod"}`))
				require.Equal(t, mcpserver.StatusPending, st.Status)
				assert.Equal(t, token, st.Approval.Principal)
				assert.Equal(t, `requested by "`+token+`" via MCP`, st.Approval.Reason)
			}

			var seen []string
			for _, e := range f.entries(t) {
				assert.NotEqual(t, "local-agent", e.Principal, "server.principal is not the caller over HTTP")
				if strings.HasPrefix(e.Name, "echo") && e.Phase == execgate.PhaseOutcome {
					seen = append(seen, e.Principal+" "+e.Op+" "+e.Error)
				}
			}
			assert.Equal(t, []string{"ci-bot run ", "other-bot request not_found"}, seen)
		})
	}
}

// toolNames lists the tools cs is shown, sorted.
func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	lt, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range lt.Tools {
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	return names
}

// TestMCPHTTP_RefusedWithoutAValidToken: a request without a token, with
// one that matches no entry, or with an approver's, is refused before the
// SDK reads it, with 401 and WWW-Authenticate (403 for the approver), and
// recorded as the HTTP API records its refusals; the SDK's client cannot
// connect without a token.
func TestMCPHTTP_RefusedWithoutAValidToken(t *testing.T) {
	f := newMCPHTTPFixture(t, mcpHTTPText(false))
	for _, tc := range []struct {
		name, token, challenge string
		status                 int
		principal, kind        string
		reason                 string
	}{
		{"no token", "", `Bearer realm="execgate"`, 401, "", execgate.ErrorKindUnauthenticated, "no bearer token"},
		{"a wrong token", "wrong-token", `Bearer realm="execgate", error="invalid_token"`, 401, "", execgate.ErrorKindUnauthenticated, "unknown bearer token"},
		{"a token's hash", tokenHash(callerToken), `Bearer realm="execgate", error="invalid_token"`, 401, "", execgate.ErrorKindUnauthenticated, "unknown bearer token"},
		{"an approver's token", approverToken, "", 403, "alice", execgate.ErrorKindRequest, "approver token on a caller route"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.entries(t))
			resp, body := f.raw(t, "POST", "", initializeBody, mcpHeaders(tc.token))
			assert.Equal(t, tc.status, resp.StatusCode, "%s", body)
			assert.Equal(t, tc.challenge, resp.Header.Get("WWW-Authenticate"))
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			var r response
			require.NoError(t, json.Unmarshal(body, &r), "%s", body)
			require.NotNil(t, r.Error)
			assert.Equal(t, tc.kind, r.Error.Kind)
			assert.Equal(t, tc.reason, r.Error.Reason)

			entries := f.entries(t)
			require.Len(t, entries, before+1, "one record per refusal")
			e := entries[before]
			assert.Equal(t, execgate.OpRequest, e.Op)
			assert.Equal(t, "POST /mcp", e.Route)
			assert.Equal(t, tc.principal, e.Principal)
			assert.Equal(t, tc.kind, e.Error)
			assert.Equal(t, tc.reason, e.Reason)
		})
	}
	_, err := f.connect(t, "", "", nil)
	assert.Error(t, err, "no client connects without a token")
	_, err = f.connect(t, "", "2025-11-25", nil)
	assert.Error(t, err)
	assert.Zero(t, f.rec.Count())
	require.NoError(t, audit.VerifyFile(f.trail))
}

// TestMCPHTTP_SessionIsTheTokens: a session opened with ci-bot's token
// cannot be used, nor closed, with other-bot's, and the refusal is
// recorded under other-bot; its own token still uses it.
func TestMCPHTTP_SessionIsTheTokens(t *testing.T) {
	f := newMCPHTTPFixture(t, mcpHTTPText(false))
	cs := f.mustConnect(t, callerToken, "2025-11-25", nil)
	require.NotEmpty(t, cs.ID(), "a session")
	h := mcpHeaders(otherToken)
	h["Mcp-Session-Id"] = cs.ID()
	h["Mcp-Protocol-Version"] = "2025-11-25"
	before := len(f.entries(t))
	resp, body := f.raw(t, "POST", "", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo_run","arguments":{"args":["stolen"]}}}`, h)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "%s", body)
	resp, body = f.raw(t, "DELETE", "", "", h)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "%s", body)
	entries := f.entries(t)
	require.Len(t, entries, before+2)
	for _, e := range entries[before:] {
		assert.Equal(t, execgate.OpRequest, e.Op)
		assert.Equal(t, "other-bot", e.Principal)
		assert.Equal(t, execgate.ErrorKindRequest, e.Error)
		assert.Equal(t, "session of another token", e.Reason)
	}
	assert.Zero(t, f.rec.Count(), "nothing ran")
	ranResult(t, callHTTP(t, cs, "echo_run", `{"args":["ok"]}`))
	assert.Equal(t, 1, f.rec.Count(), "the session's own token still uses it")
}

// TestMCPHTTP_RequestsRefusedBeforeTheSDK: what an attacker can put in a
// request beyond the token is refused before the SDK reads it, recorded,
// and never written to the trail: a token in the query, a browser's
// cross-origin request, a Host that is not loopback on a loopback
// address (DNS rebinding), a method Streamable HTTP does not use, a body
// over the bound.
func TestMCPHTTP_RequestsRefusedBeforeTheSDK(t *testing.T) {
	f := newMCPHTTPFixture(t, mcpHTTPText(false))
	with := func(extra map[string]string) map[string]string {
		h := mcpHeaders(callerToken)
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	for _, tc := range []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
		principal, reason        string
	}{
		{"a token in the query string", "POST", "?access_token=" + callerToken, initializeBody, mcpHeaders(""),
			400, "", "query string"},
		{"a query string, even with a token in the header", "POST", "?x=1", initializeBody, with(nil),
			400, "ci-bot", "query string"},
		{"a browser's cross-origin request", "POST", "", initializeBody, with(map[string]string{"Origin": "https://evil.example"}),
			403, "ci-bot", "request from a web page"},
		{"a page of the server's own origin, which serves none", "POST", "", initializeBody, with(map[string]string{"Origin": "http://127.0.0.1"}),
			403, "ci-bot", "request from a web page"},
		{"a browser's GET stream from another site", "GET", "", "", with(map[string]string{"Sec-Fetch-Site": "cross-site"}),
			403, "ci-bot", "request from a web page"},
		{"a Host that is not loopback, as DNS rebinding sends", "POST", "", initializeBody, with(map[string]string{"Host": "evil.example"}),
			403, "ci-bot", "host is not loopback"},
		{"a method Streamable HTTP does not use", "PUT", "", initializeBody, with(nil),
			405, "ci-bot", "method not allowed"},
		{"a body over the bound", "POST", "", initializeBody + strings.Repeat(" ", maxMCPBody), with(nil),
			413, "ci-bot", "body too large"},
		{"another path", "POST", "/mcp/", initializeBody, with(nil),
			404, "ci-bot", "no such route"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.entries(t))
			resp, body := f.raw(t, tc.method, tc.path, tc.body, tc.header)
			assert.Equal(t, tc.status, resp.StatusCode, "%s", body)
			var r response
			require.NoError(t, json.Unmarshal(body, &r), "%s", body)
			require.NotNil(t, r.Error, "%s", body)
			assert.Equal(t, tc.reason, r.Error.Reason)
			entries := f.entries(t)
			require.Len(t, entries, before+1)
			e := entries[before]
			assert.Equal(t, tc.principal, e.Principal)
			assert.Equal(t, tc.reason, e.Reason)
			assert.NotContains(t, e.Route, callerToken)
			assert.NotContains(t, e.Route, "?")
		})
	}
	resp, _ := f.raw(t, "PUT", "", "", with(nil))
	assert.Equal(t, "GET, POST, DELETE", resp.Header.Get("Allow"))
	assert.Zero(t, f.rec.Count())
	all, _ := f.h.openSessions("")
	assert.Zero(t, all, "no session was opened")
}

// TestMCPHTTP_TransportRefusalsAreRecorded: a request the SDK refuses (an
// unknown session, a malformed message) is recorded under its caller.
func TestMCPHTTP_TransportRefusalsAreRecorded(t *testing.T) {
	f := newMCPHTTPFixture(t, mcpHTTPText(false))
	h := mcpHeaders(callerToken)
	h["Mcp-Session-Id"] = "no-such-session"
	before := len(f.entries(t))
	resp, _ := f.raw(t, "POST", "", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, h)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = f.raw(t, "POST", "", `{not json`, mcpHeaders(callerToken))
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	entries := f.entries(t)
	require.Len(t, entries, before+2)
	assert.Equal(t, "refused by the MCP transport (HTTP 404)", entries[before].Reason)
	assert.Equal(t, "refused by the MCP transport (HTTP 400)", entries[before+1].Reason)
	for _, e := range entries[before:] {
		assert.Equal(t, "ci-bot", e.Principal)
		assert.Equal(t, execgate.ErrorKindRequest, e.Error)
		assert.Equal(t, "POST /mcp", e.Route)
	}
}

// person answers every elicitation with accept, and counts the questions.
type person struct{ asked atomic.Int32 }

func (p *person) accept(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	p.asked.Add(1)
	return &mcp.ElicitResult{Action: "accept"}, nil
}

// TestMCPHTTP_HeldCallsGoToTheApprovers: a call held for approval is
// pending for the approvers, whom GET /v1/approvals at the same address
// shows it and who approve it there; a client's accept of its own
// elicitation does not approve it (it is never asked), unless the server
// section sets mcp_http_elicitation.
func TestMCPHTTP_HeldCallsGoToTheApprovers(t *testing.T) {
	for _, v := range mcpHTTPVersions {
		t.Run(v.name, func(t *testing.T) {
			f := newMCPHTTPFixture(t, mcpHTTPText(false))
			p := &person{}
			cs := f.mustConnect(t, callerToken, v.version, &mcp.ClientOptions{ElicitationHandler: p.accept})
			st := callStatus(t, callHTTP(t, cs, "deploy", `{"subcommand":"prod"}`))
			assert.Equal(t, mcpserver.StatusPending, st.Status)
			require.NotNil(t, st.Approval)
			assert.Equal(t, "ci-bot", st.Approval.Principal)
			assert.Zero(t, p.asked.Load(), "the client is not asked")
			assert.Zero(t, f.rec.Count())

			resp, body := f.raw(t, "GET", "/v1/approvals", "", map[string]string{"Authorization": "Bearer " + approverToken})
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			var list response
			require.NoError(t, json.Unmarshal(body, &list))
			require.Len(t, list.Approvals, 1)
			assert.Equal(t, st.Approval.ID, list.Approvals[0].ID)
			resp, body = f.raw(t, "GET", "/v1/approvals", "", map[string]string{"Authorization": "Bearer " + callerToken})
			assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a caller cannot see the approvals: %s", body)

			resp, body = f.raw(t, "POST", "/v1/approvals/"+st.Approval.ID, `{"action":"approve"}`,
				map[string]string{"Authorization": "Bearer " + approverToken, "Content-Type": "application/json"})
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			assert.Equal(t, 1, f.rec.Count(), "the approver's approval ran it")
		})
		t.Run(v.name+", with mcp_http_elicitation", func(t *testing.T) {
			f := newMCPHTTPFixture(t, mcpHTTPText(true))
			p := &person{}
			cs := f.mustConnect(t, callerToken, v.version, &mcp.ClientOptions{ElicitationHandler: p.accept})
			r := ranResult(t, callHTTP(t, cs, "deploy", `{"subcommand":"prod"}`))
			assert.Equal(t, "deploy.prod", r.Name)
			assert.Equal(t, int32(1), p.asked.Load())
			assert.Equal(t, 1, f.rec.Count())
		})
	}
}

// TestMCPHTTP_BadInputKeepsItsTypedRefusal: arguments the gate refuses
// are refused as over stdio, with the kind and the field, also over the
// gate's input cap.
func TestMCPHTTP_BadInputKeepsItsTypedRefusal(t *testing.T) {
	for _, v := range mcpHTTPVersions {
		t.Run(v.name, func(t *testing.T) {
			f := newMCPHTTPFixture(t, mcpHTTPText(false))
			cs := f.mustConnect(t, callerToken, v.version, nil)
			st := callStatus(t, callHTTP(t, cs, "echo_run", `{"args":["no;shell"]}`))
			assert.Equal(t, mcpserver.KindValidation, st.Kind)
			require.NotEmpty(t, st.Issues)
			st = callStatus(t, callHTTP(t, cs, "echo_run", `{"args":["x"],"extra":1}`))
			assert.Equal(t, mcpserver.KindValidation, st.Kind)
			st = callStatus(t, callHTTP(t, cs, "echo_run", `{"args":["`+strings.Repeat("a", execgate.MaxInputSize)+`"]}`))
			assert.Equal(t, mcpserver.KindValidation, st.Kind, st.Message)
			st = callStatus(t, callHTTP(t, cs, "rm_run", `{}`))
			assert.Equal(t, mcpserver.KindNotFound, st.Kind)
			assert.Zero(t, f.rec.Count())
		})
	}
}

// TestMCPHTTP_Reload: a reload applies to MCP over HTTP: the new tools
// are listed, the new token is taken and the removed one refused.
func TestMCPHTTP_Reload(t *testing.T) {
	path := writeFile(t, "test.yaml", mcpHTTPText(false))
	loaded, err := config.LoadFile(path)
	require.NoError(t, err)
	g, err := newGate(loaded, "", execgatetest.NewRecorder().Exec)
	require.NoError(t, err)
	discard := slog.New(slog.DiscardHandler)
	h, err := newMCPHTTPServer(context.Background(), g, g.server(), false, discard, discard)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(h.closeSessions)
	f := &mcpHTTPFixture{base: srv.URL, url: srv.URL + mcpPath}
	logs := &syncBuffer{}
	r := &reloader{path: path, log: slog.New(slog.NewTextHandler(logs, nil)), x: g.x, cur: loaded, mcp: h.ms, apis: []*api{h.api}, needTokens: true, mcpHTTP: true}

	cs := f.mustConnect(t, callerToken, "2025-11-25", nil)
	next := strings.Replace(mcpHTTPText(true), tokenHash(otherToken), tokenHash("new-token"), 1)
	next = strings.Replace(next, "policies:", `  - name: "true"
    bin: /bin/true
    bare: {}
policies:`, 1)
	next = strings.Replace(next, "      - {name: echo, tools: [echo.run], action: allow}\n", "      - {name: echo, tools: [echo.run, true.run], action: allow}\n", 1)
	next = strings.Replace(next, "server:\n  principal: local-agent", "server:\n  principal: someone-else", 1)
	require.NoError(t, os.WriteFile(path, []byte(next), 0o600))
	_, err = r.reload()
	require.NoError(t, err)

	lt, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range lt.Tools {
		names = append(names, tool.Name)
	}
	assert.Contains(t, names, "true_run", "the session lists the new tool")
	_, err = f.connect(t, "new-token", "", nil)
	assert.NoError(t, err, "the new token is taken")
	resp, _ := f.raw(t, "POST", "", initializeBody, mcpHeaders(otherToken))
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the removed token is refused")
	out := logs.String()
	assert.Contains(t, out, "key=server.mcp_http_elicitation", "the elicitation setting waits for a restart")
	assert.NotContains(t, out, "key=server.principal", "server.principal is not used over HTTP")
}

// TestServe_MCPHTTPFlags: what serve --mcp-http refuses before it
// serves, with exit code 2.
func TestServe_MCPHTTPFlags(t *testing.T) {
	noTokens := writeFile(t, "tools.yaml", "version: 1\ntools: [{name: echo, bin: /bin/echo}]\nserver: {principal: p}\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"stdio's principal", []string{"--config", "x.yaml", "--mcp-http", "127.0.0.1:0", "--principal", "p"}, "each token names its principal"},
		{"stdio's approvals", []string{"--config", "x.yaml", "--mcp-http", "127.0.0.1:0", "--approvals", "elicit"}, "mcp_http_elicitation"},
		{"stdio's approver routes", []string{"--config", "x.yaml", "--mcp-http", "127.0.0.1:0", "--approver-http", "127.0.0.1:0"}, "approvers at the same address"},
		{"two servers", []string{"--config", "x.yaml", "--mcp-http", "127.0.0.1:0", "--http", "127.0.0.1:0"}, "run serve once for each"},
		{"plain HTTP off loopback", []string{"--config", "x.yaml", "--mcp-http", "192.0.2.1:0"}, "not a loopback address"},
		{"no tokens", []string{"--config", noTokens, "--mcp-http", "127.0.0.1:0"}, "no MCP client could connect over HTTP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append([]string{"serve"}, tc.args...)...)
			assert.Equal(t, exitUsage, code, errOut)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tc.want)
		})
	}
}

// TestMCPHTTP_OneTokenCannotFillTheSessions: a token that opens as many
// sessions as one token may is refused another (503, recorded), and
// another token still opens one.
func TestMCPHTTP_OneTokenCannotFillTheSessions(t *testing.T) {
	f := newMCPHTTPFixture(t, mcpHTTPText(false))
	for i := range maxMCPSessionsPerToken {
		resp, body := f.raw(t, "POST", "", initializeBody, mcpHeaders(callerToken))
		require.Equal(t, http.StatusOK, resp.StatusCode, "session %d: %s", i, body)
		require.NotEmpty(t, resp.Header.Get("Mcp-Session-Id"))
	}
	resp, body := f.raw(t, "POST", "", initializeBody, mcpHeaders(callerToken))
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), "this token holds")
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))

	resp, body = f.raw(t, "POST", "", initializeBody, mcpHeaders(otherToken))
	assert.Equal(t, http.StatusOK, resp.StatusCode, "another token still opens a session: %s", body)
	all, mine := f.h.openSessions(tokenHash(callerToken))
	assert.Equal(t, maxMCPSessionsPerToken+1, all)
	assert.Equal(t, maxMCPSessionsPerToken, mine)
}
