package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/mcpserver"
)

// apiFixture is the HTTP API of testConfig in this process, with a
// Recorder in place of processes, showing each caller its tools as serve
// does (gate.visible).
type apiFixture struct {
	srv     *httptest.Server
	rec     *execgatetest.Recorder
	gate    *gate
	pending *pendingSet
}

func newAPIFixture(t *testing.T, text string) *apiFixture {
	t.Helper()
	loaded, err := config.LoadBytes("test.yaml", []byte(text))
	require.NoError(t, err)
	f := &apiFixture{rec: execgatetest.NewRecorder(), pending: newPendingSet(nil)}
	f.rec.Otherwise(execgate.Outcome{Stdout: []byte("ran\n")})
	f.gate, err = newGate(loaded, "", f.rec.Exec)
	require.NoError(t, err)
	h, err := newAPI(apiOptions{Executor: f.gate.x, Server: f.gate.server(), Pending: f.pending, Visible: f.gate.visible})
	require.NoError(t, err)
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close)
	return f
}

// response is any response body of the API.
type response struct {
	Result    *execgate.Result    `json:"result"`
	Status    string              `json:"status"`
	Approval  *execgate.Approval  `json:"approval"`
	Approvals []execgate.Approval `json:"approvals"`
	Tools     []toolInfo          `json:"tools"`
	Error     *errorInfo          `json:"error"`
	TraceID   string              `json:"trace_id"`
	Policy    *policyInfo         `json:"policy"`
	LatencyMS *int64              `json:"latency_ms"`
}

// do sends a request with a JSON body (none when body is nil) and the
// bearer token (none when empty), and decodes the response.
func (f *apiFixture) do(t *testing.T, method, path, token string, body io.Reader) (*http.Response, response) {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, body)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := f.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"), "%s", data)
	var r response
	require.NoError(t, json.Unmarshal(data, &r), "%s", data)
	if resp.StatusCode >= 400 {
		require.NotNil(t, r.Error, "an error status carries an error: %s", data)
		assert.NotEmpty(t, r.Error.Kind)
		assert.NotEmpty(t, r.Error.Message)
	}
	return resp, r
}

func (f *apiFixture) call(t *testing.T, name, input string) (*http.Response, response) {
	t.Helper()
	return f.do(t, "POST", "/v1/tools/"+name, callerToken, strings.NewReader(input))
}

func (f *apiFixture) decide(t *testing.T, id, token, action string) (*http.Response, response) {
	t.Helper()
	return f.do(t, "POST", "/v1/approvals/"+id, token, strings.NewReader(`{"action":"`+action+`"}`))
}

func TestHTTP_AuthRequired(t *testing.T) {
	f := newAPIFixture(t, testConfig)
	for _, route := range []struct{ method, path string }{
		{"GET", "/v1/tools"},
		{"POST", "/v1/tools/echo.run"},
		{"POST", "/v1/tools/no.such.tool"},
		{"GET", "/v1/approvals"},
		{"POST", "/v1/approvals/01a22b06-dead-7e7e-beb5-2a3ecc4dc043"},
	} {
		resp, r := f.do(t, route.method, route.path, "", strings.NewReader(`{}`))
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%v", route)
		assert.Equal(t, execgate.ErrorKindUnauthenticated, r.Error.Kind)
		assert.Equal(t, `Bearer realm="execgate"`, resp.Header.Get("WWW-Authenticate"))
	}
	assert.Zero(t, f.rec.Count())
}

func TestHTTP_WrongTokenRefused(t *testing.T) {
	f := newAPIFixture(t, testConfig)
	for _, token := range []string{"wrong", callerToken + "x", strings.ToUpper(callerToken), tokenHash(callerToken)} {
		resp, r := f.do(t, "POST", "/v1/tools/echo.run", token, strings.NewReader(`{"args":["x"]}`))
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, token)
		assert.Equal(t, execgate.ErrorKindUnauthenticated, r.Error.Kind)
		assert.Contains(t, resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`)
	}
	// Another scheme carrying the right token is not a bearer token.
	req, err := http.NewRequest("GET", f.srv.URL+"/v1/tools", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Basic "+callerToken)
	resp, err := f.srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Zero(t, f.rec.Count())
}

func TestHTTP_RolesAreSeparate(t *testing.T) {
	f := newAPIFixture(t, testConfig)
	resp, r := f.do(t, "POST", "/v1/tools/echo.run", approverToken, strings.NewReader(`{"args":["x"]}`))
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Equal(t, execgate.ErrorKindRequest, r.Error.Kind)
	resp, r = f.do(t, "GET", "/v1/approvals", callerToken, nil)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Equal(t, execgate.ErrorKindRequest, r.Error.Kind)
	assert.Zero(t, f.rec.Count())
}

func TestHTTP_BodyOver1MiBRefused(t *testing.T) {
	f := newAPIFixture(t, testConfig)
	pad := func(n int) string {
		in := `{"args":["big"]}`
		return in + strings.Repeat(" ", n-len(in))
	}
	// Exactly 1 MiB is accepted.
	resp, r := f.call(t, "echo.run", pad(maxBody))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%+v", r.Error)

	// One byte more is refused, with a Content-Length and without one.
	resp, r = f.call(t, "echo.run", pad(maxBody+1))
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Equal(t, execgate.ErrorKindRequest, r.Error.Kind)
	resp, r = f.do(t, "POST", "/v1/tools/echo.run", callerToken, io.MultiReader(strings.NewReader(pad(maxBody+1))))
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Equal(t, execgate.ErrorKindRequest, r.Error.Kind)
	assert.Equal(t, 1, f.rec.Count(), "only the call of exactly 1 MiB ran")
}

func TestHTTP_NotJSONRefused(t *testing.T) {
	f := newAPIFixture(t, testConfig)
	req, err := http.NewRequest("POST", f.srv.URL+"/v1/tools/echo.run", strings.NewReader(`args=x`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+callerToken)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := f.srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
	assert.Zero(t, f.rec.Count())
}

func TestHTTP_UnknownTool404(t *testing.T) {
	f := newAPIFixture(t, testConfig)
	resp, r := f.call(t, "rm.run", `{}`)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, execgate.ErrorKindNotFound, r.Error.Kind)
	assert.Equal(t, "rm.run", r.Error.Name)
	assert.NotEmpty(t, r.TraceID, "the refusal is in the audit trail")
	assert.Nil(t, r.Policy, "the policy was not asked")
	assert.Zero(t, f.rec.Count())

	resp, r = f.do(t, "GET", "/v2/anything", callerToken, nil)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, execgate.ErrorKindRequest, r.Error.Kind, "a route is not a tool: the request is refused")
	assert.Equal(t, "no such route", r.Error.Reason, "with the words the audit trail records")
}

func TestHTTP_BadInput422(t *testing.T) {
	f := newAPIFixture(t, testConfig)
	for _, in := range []string{`{"args":["a;b"]}`, `{"argz":[]}`, `{"args":1}`, `{not json`, `{"args":[]} trailing`} {
		resp, r := f.call(t, "echo.run", in)
		assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, in)
		assert.Equal(t, execgate.ErrorKindValidation, r.Error.Kind, in)
		assert.NotEmpty(t, r.Error.Issues, in)
	}
	assert.Zero(t, f.rec.Count())
}

// TestHTTP_PolicyDeny403: a call that the policy denies is 403, with
// the rule, where the API shows every tool (apiOptions.Visible nil).
// serve shows a caller only what its policy could allow or hold, so
// there a command or subcommand whose every call the policy denies is
// refused as one that does not exist (TestHTTP_HiddenToolIsRefusedAsUnknown,
// TestHTTP_HiddenSubcommandIsRefusedAsUnknown).
func TestHTTP_PolicyDeny403(t *testing.T) {
	loaded, err := config.LoadBytes("test.yaml", []byte(strings.Replace(testConfig, "tools: [forbidden.run]", "tools: [forbidden.run, deploy.nowhere]", 1)))
	require.NoError(t, err)
	f := &apiFixture{rec: execgatetest.NewRecorder()}
	f.gate, err = newGate(loaded, "", f.rec.Exec)
	require.NoError(t, err)
	h, err := newAPI(apiOptions{Executor: f.gate.x, Server: f.gate.server()})
	require.NoError(t, err)
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close)
	resp, r := f.call(t, "deploy.nowhere", ``)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Equal(t, execgate.ErrorKindPolicy, r.Error.Kind)
	assert.Equal(t, execgate.ActionDeny, r.Error.Action)
	assert.Equal(t, "everyone/never", r.Error.Rule)
	require.NotNil(t, r.Policy)
	assert.Equal(t, policyInfo{Decision: execgate.ActionDeny, Rule: "everyone/never"}, *r.Policy)
	assert.Zero(t, f.rec.Count())
}

func TestHTTP_RateLimited429(t *testing.T) {
	f := newAPIFixture(t, strings.Replace(testConfig, `      - {name: deploys, tools: ["deploy.*"], action: require_approval}`,
		"      - {name: deploys, tools: [\"deploy.*\"], action: require_approval}\n    rate_limit: {per_minute: 1}", 1))
	resp, _ := f.call(t, "echo.run", `{"args":["1"]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, r := f.call(t, "echo.run", `{"args":["2"]}`)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, execgate.ActionRateLimited, r.Error.Action)
	assert.Equal(t, 1, f.rec.Count())
}

func TestHTTP_AllowedCall(t *testing.T) {
	f := newAPIFixture(t, testConfig)
	resp, r := f.call(t, "echo.run", `{"args":["hello","world"]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotNil(t, r.Result)
	assert.Equal(t, "echo.run", r.Result.Name)
	assert.Equal(t, []string{"hello", "world"}, r.Result.Args)
	assert.Equal(t, "ran\n", r.Result.Stdout)
	assert.True(t, r.Result.OK)
	assert.Equal(t, r.Result.ID, r.TraceID)
	assert.Equal(t, &policyInfo{Decision: execgate.ActionAllow, Rule: "everyone/echo"}, r.Policy)
	require.NotNil(t, r.LatencyMS)
	assert.GreaterOrEqual(t, *r.LatencyMS, int64(0))
	calls := f.rec.Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, "/bin/echo", calls[0].Path)
	assert.Equal(t, []string{"hello", "world"}, calls[0].Args)
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
}

// TestHTTP_FailedCommandIs200 pins that a command that ran is a 200 with
// its Result, whatever its exit status.
func TestHTTP_FailedCommandIs200(t *testing.T) {
	f := newAPIFixture(t, testConfig)
	f.rec.On("echo.run", execgate.Outcome{ExitCode: 3, Stderr: []byte("boom")})
	resp, r := f.call(t, "echo.run", `{"args":["x"]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, 3, r.Result.ExitCode)
	assert.False(t, r.Result.OK)
}

func TestHTTP_ListTools(t *testing.T) {
	f := newAPIFixture(t, testConfig)
	specs := map[string]execgate.CommandSpec{}
	for _, s := range f.gate.x.Allowlist().Specs() {
		specs[s.Name] = s
	}
	resp, r := f.do(t, "GET", "/v1/tools", approverToken, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Len(t, r.Tools, 3, "an approver is shown every tool")
	for _, tool := range r.Tools {
		spec, ok := specs[tool.Name]
		require.True(t, ok, tool.Name)
		listed, err := mcpserver.ToolOf(spec, tool.MCPName)
		require.NoError(t, err)
		schema, err := json.Marshal(listed.InputSchema)
		require.NoError(t, err)
		assert.JSONEq(t, string(schema), string(tool.InputSchema), "%s: the input schema tools/list shows", tool.Name)
		assert.Equal(t, listed.Description, tool.Description, "%s: the description tools/list shows", tool.Name)
	}
	assert.Equal(t, "deploy", r.Tools[0].Name)
	assert.True(t, r.Tools[0].Dispatch)
	assert.Contains(t, string(r.Tools[0].InputSchema), `"subcommand"`, "a dispatcher's input names its subcommand, as over MCP")
	mcpNames := map[string]string{}
	for _, tool := range r.Tools {
		mcpNames[tool.Name] = tool.MCPName
	}
	assert.Equal(t, map[string]string{"deploy": "deploy", "echo.run": "echo_run", "forbidden.run": "forbidden_run"}, mcpNames,
		"the names serve lists over MCP, as execgate tools shows them")

	resp, r = f.do(t, "GET", "/v1/tools", callerToken, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var names []string
	for _, tool := range r.Tools {
		names = append(names, tool.Name)
	}
	assert.Equal(t, []string{"deploy", "echo.run"}, names, "a caller is shown what its policy could allow or hold")
}

// TestHTTP_CallsTakeBothSpellings: POST /v1/tools/{name} takes a
// command's own name and its MCP spelling, and the gate, the policy and
// the Result see the command's own name either way.
func TestHTTP_CallsTakeBothSpellings(t *testing.T) {
	for _, tc := range []struct {
		about, name string
		status      int
		command     string // the command the gate saw; "" when refused
		rule        string
	}{
		{"a command's own name", "echo.run", http.StatusOK, "echo.run", "everyone/echo"},
		{"its MCP name", "echo_run", http.StatusOK, "echo.run", "everyone/echo"},
		{"a dispatched call by its full name", "deploy.prod", http.StatusAccepted, "deploy.prod", "everyone/deploys"},
		{"a dispatched call by the dispatcher's MCP name, '_' and the subcommand", "deploy_prod", http.StatusAccepted, "deploy.prod", "everyone/deploys"},
		{"a name that spells no command is not found", "echo_runs", http.StatusNotFound, "", ""},
		{"a dispatcher without a subcommand in the body", "deploy", http.StatusUnprocessableEntity, "", ""},
		{"a subcommand no dispatcher serves is not mapped", "deploy_Prod", http.StatusNotFound, "", ""},
	} {
		t.Run(tc.about, func(t *testing.T) {
			f := newAPIFixture(t, testConfig)
			resp, r := f.call(t, tc.name, `{"args":["x"]}`)
			if tc.status == http.StatusAccepted {
				resp, r = f.call(t, tc.name, ``)
			}
			require.Equal(t, tc.status, resp.StatusCode, "%+v", r.Error)
			switch tc.status {
			case http.StatusOK:
				assert.Equal(t, tc.command, r.Result.Name)
				calls := f.rec.Calls()
				require.Len(t, calls, 1)
				assert.Equal(t, tc.command, calls[0].Name)
			case http.StatusAccepted:
				require.NotNil(t, r.Approval)
				assert.Equal(t, tc.command, r.Approval.Name)
			case http.StatusUnprocessableEntity:
				assert.Equal(t, execgate.ErrorKindValidation, r.Error.Kind)
				assert.Equal(t, []execgate.Issue{{Field: "subcommand", Message: "required"}}, r.Error.Issues)
				assert.Zero(t, f.rec.Count())
				return
			default:
				assert.Equal(t, execgate.ErrorKindNotFound, r.Error.Kind)
				assert.Equal(t, tc.name, r.Error.Name, "the refusal names what was asked for")
				assert.Zero(t, f.rec.Count())
				return
			}
			require.NotNil(t, r.Policy)
			assert.Equal(t, tc.rule, r.Policy.Rule, "the policy decided on the command's own name")
		})
	}
}

func TestCallNames_Resolve(t *testing.T) {
	spec := func(name string, dispatch bool) execgate.CommandSpec {
		s := execgate.CommandSpec{Name: name, Command: "/bin/echo", Args: execgate.Fixed()}
		if dispatch {
			s.Dispatch, s.Args = true, execgate.Subcommands(execgate.SubcommandSpec{})
		}
		return s
	}
	long := strings.Repeat("l", 70) + ".run"
	a, err := execgate.NewAllowlist(
		spec("git.log", false), spec("git", true), spec("cloud.tf", true), spec(long, false),
		spec("a_b", false), spec("a.b", false), // listed alike over MCP, each reachable by its own name
		spec("x.p_s", false), spec("x_p", true), // "x_p_s" spells x.p_s and x_p's subcommand s
		spec("tf", true), spec("tf.apply", false), // "tf_apply" spells tf.apply both ways
	)
	require.NoError(t, err)
	var names callNames
	for _, tc := range []struct {
		about, name, want string
		dispatcher        bool
		ambiguous         []string
	}{
		{"a command's own name is itself", "git.log", "git.log", false, nil},
		{"the MCP name of a command is that command", "git_log", "git.log", false, nil},
		{"a dispatched call by its full name is itself", "git.status", "git.status", false, nil},
		{"a dispatcher's MCP name, '_' and a subcommand is the dispatched call", "git_status", "git.status", false, nil},
		{"a dotted dispatcher's too", "cloud_tf_apply", "cloud.tf.apply", false, nil},
		{"a name cut for length is the command it was cut from", mcpserver.ToolName(long), long, false, nil},
		{"an own name wins over another command's MCP name", "a_b", "a_b", false, nil},
		{"a dotted own name is itself", "a.b", "a.b", false, nil},
		{"a spelling of one command both ways is that command", "tf_apply", "tf.apply", false, nil},
		{"a spelling of two commands is ambiguous", "x_p_s", "", false, []string{"x.p_s", "x_p.s"}},
		{"a name that spells nothing is left for the gate to refuse", "nope_x", "nope_x", false, nil},
		{"a dispatcher's own name is the dispatcher, called with its subcommand in the body", "git", "git", true, nil},
		{"a dispatcher's MCP name is that dispatcher", "cloud_tf", "cloud.tf", true, nil},
		{"and its own name", "cloud.tf", "cloud.tf", true, nil},
		{"a subcommand that no dispatcher serves is not mapped", "git_Status", "git_Status", false, nil},
	} {
		got, disp, amb := names.resolve(a, tc.name)
		assert.Equal(t, tc.want, got, tc.about)
		assert.Equal(t, tc.dispatcher, disp, tc.about)
		assert.Equal(t, tc.ambiguous, amb, tc.about)
	}
}

// TestHTTP_AmbiguousNameIsRefused: a name that spells two commands over
// the HTTP API is refused, naming both, and the refusal is recorded.
func TestHTTP_AmbiguousNameIsRefused(t *testing.T) {
	a, err := execgate.NewAllowlist(
		execgate.CommandSpec{Name: "x.p_s", Command: "/bin/echo", Args: execgate.Fixed()},
		execgate.CommandSpec{Name: "x_p", Command: "/bin/echo", Dispatch: true, Floor: execgate.ActionAllow,
			Args: execgate.Subcommands(execgate.SubcommandSpec{})},
	)
	require.NoError(t, err)
	rec := execgatetest.NewRecorder()
	tr := &trailOf{}
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: a, ExecFn: rec.Exec, Auditor: tr})
	require.NoError(t, err)
	h, err := newAPI(apiOptions{Executor: x, Server: &config.Server{Tokens: []config.Token{{Principal: "ci-bot", SHA256: tokenHash(callerToken)}}}})
	require.NoError(t, err)
	f := &apiFixture{srv: httptest.NewServer(h), rec: rec}
	t.Cleanup(f.srv.Close)

	resp, r := f.call(t, "x_p_s", `{}`)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, execgate.ErrorKindNotFound, r.Error.Kind)
	assert.Equal(t, "x_p_s", r.Error.Name)
	for _, want := range []string{`"x.p_s"`, `"x_p.s"`, "nothing ran", "call it by the command's own name"} {
		assert.Contains(t, r.Error.Message, want)
	}
	evs := tr.all()
	require.Len(t, evs, 1)
	assert.Equal(t, execgate.OpRequest, evs[0].Op)
	assert.Equal(t, "x_p_s", evs[0].Name)
	assert.Equal(t, execgate.ErrorKindNotFound, evs[0].Error)
	assert.Zero(t, rec.Count())

	resp, r = f.call(t, "x.p_s", `{}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%+v", r.Error)
	assert.Equal(t, "x.p_s", r.Result.Name, "the command's own name still works")
}

// trailOf is an Auditor that keeps every Event.
type trailOf struct {
	mu     sync.Mutex
	events []execgate.Event
}

func (tr *trailOf) Audit(_ context.Context, ev execgate.Event) error {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.events = append(tr.events, ev)
	return nil
}

func (tr *trailOf) all() []execgate.Event {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]execgate.Event(nil), tr.events...)
}

func TestHTTP_MethodNotAllowed(t *testing.T) {
	f := newAPIFixture(t, testConfig)
	resp, r := f.do(t, "GET", "/v1/tools/echo.run", callerToken, nil)
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "POST", resp.Header.Get("Allow"))
	assert.Equal(t, execgate.ErrorKindRequest, r.Error.Kind)
	resp, _ = f.do(t, "DELETE", "/v1/approvals", approverToken, nil)
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "GET", resp.Header.Get("Allow"))
}

// propose makes deploy.prod pending and returns its approval.
func (f *apiFixture) propose(t *testing.T) execgate.Approval {
	t.Helper()
	resp, r := f.call(t, "deploy.prod", ``)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%+v", r.Error)
	assert.Equal(t, "pending_approval", r.Status)
	require.NotNil(t, r.Approval)
	assert.Equal(t, "ci-bot", r.Approval.Principal)
	assert.Equal(t, "deploy.prod", r.Approval.Name)
	assert.Equal(t, []string{"prod"}, r.Approval.Args)
	assert.NotEmpty(t, r.TraceID)
	assert.Equal(t, &policyInfo{Decision: execgate.ActionRequireApproval, Rule: "everyone/deploys"}, r.Policy)
	return *r.Approval
}

func (f *apiFixture) listed(t *testing.T) []string {
	t.Helper()
	resp, r := f.do(t, "GET", "/v1/approvals", approverToken, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	ids := []string{}
	for _, ap := range r.Approvals {
		ids = append(ids, ap.ID)
	}
	return ids
}

func TestHTTP_ApprovalFlow(t *testing.T) {
	f := newAPIFixture(t, testConfig)
	ap := f.propose(t)
	assert.Zero(t, f.rec.Count(), "nothing runs before an approval")
	assert.Equal(t, []string{ap.ID}, f.listed(t))

	// The caller's own token cannot approve.
	resp, r := f.decide(t, ap.ID, callerToken, "approve")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Equal(t, execgate.ErrorKindRequest, r.Error.Kind)
	assert.Zero(t, f.rec.Count())
	assert.Equal(t, []string{ap.ID}, f.listed(t), "still pending")

	// The approver approves: it runs, once.
	resp, r = f.decide(t, ap.ID, approverToken, "approve")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%+v", r.Error)
	require.NotNil(t, r.Result)
	assert.Equal(t, ap.ID, r.Result.ApprovalID)
	assert.Equal(t, []string{"prod"}, r.Result.Args)
	assert.Equal(t, ap.ID, r.Approval.ID)
	assert.Equal(t, r.Result.ID, r.TraceID)
	require.NotNil(t, r.Policy)
	require.Equal(t, 1, f.rec.Count())
	assert.Equal(t, []string{"prod"}, f.rec.Calls()[0].Args)

	// A second approve finds nothing.
	resp, r = f.decide(t, ap.ID, approverToken, "approve")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, execgate.ErrorKindApproval, r.Error.Kind)
	assert.Equal(t, execgate.ReasonUnknown, r.Error.Reason)
	assert.Equal(t, 1, f.rec.Count())
	assert.Empty(t, f.listed(t))
}

func TestHTTP_ApproveConcurrentlyRunsOnce(t *testing.T) {
	f := newAPIFixture(t, testConfig)
	ap := f.propose(t)
	const n = 16
	codes := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _ := f.decide(t, ap.ID, approverToken, "approve")
			codes <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	assert.Equal(t, map[int]int{http.StatusOK: 1, http.StatusNotFound: n - 1}, count)
	assert.Equal(t, 1, f.rec.Count())
}

func TestHTTP_Reject(t *testing.T) {
	f := newAPIFixture(t, testConfig)
	ap := f.propose(t)
	resp, r := f.decide(t, ap.ID, approverToken, "reject")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%+v", r.Error)
	assert.Equal(t, "rejected", r.Status)
	assert.Equal(t, ap.ID, r.Approval.ID)
	assert.Nil(t, r.Result)
	resp, _ = f.decide(t, ap.ID, approverToken, "approve")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Zero(t, f.rec.Count())
	// The Executor no longer holds it either.
	_, err := f.gate.x.Execute(execgate.WithPrincipal(context.Background(), "alice"), ap)
	var ae *execgate.ApprovalError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, execgate.ReasonUnknown, ae.Reason)
}

// TestHTTP_NoSelfApproval: a principal that is an approver cannot decide
// an approval of its own call (one proposed over stdio as that principal,
// say), and the approval stays pending for someone else.
func TestHTTP_NoSelfApproval(t *testing.T) {
	f := newAPIFixture(t, testConfig)
	ctx := execgate.WithPrincipal(context.Background(), "alice")
	ap, err := f.gate.x.Propose(ctx, "deploy.prod", nil, "self")
	require.NoError(t, err)
	require.NoError(t, f.pending.add(ctx, ap))
	for _, action := range []string{"approve", "reject"} {
		resp, r := f.decide(t, ap.ID, approverToken, action)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, action)
		assert.Equal(t, execgate.ErrorKindRequest, r.Error.Kind)
		assert.Contains(t, r.Error.Message, "its own call")
	}
	assert.Equal(t, []string{ap.ID}, f.listed(t))
	assert.Zero(t, f.rec.Count())
}

func TestHTTP_BadDecisionBody(t *testing.T) {
	f := newAPIFixture(t, testConfig)
	ap := f.propose(t)
	for body, status := range map[string]int{
		`{"action":"maybe"}`:            http.StatusUnprocessableEntity,
		`{"action":"APPROVE"}`:          http.StatusUnprocessableEntity,
		`{}`:                            http.StatusUnprocessableEntity,
		`{"action":"approve","also":1}`: http.StatusBadRequest,
		`{"action":"approve"} {}`:       http.StatusBadRequest,
		`approve`:                       http.StatusBadRequest,
		``:                              http.StatusBadRequest,
	} {
		resp, _ := f.do(t, "POST", "/v1/approvals/"+ap.ID, approverToken, bytes.NewReader([]byte(body)))
		assert.Equal(t, status, resp.StatusCode, body)
	}
	assert.Equal(t, []string{ap.ID}, f.listed(t), "nothing was decided")
	assert.Zero(t, f.rec.Count())
}

// TestHTTP_ApprovalsOnly: the approval routes served beside MCP on stdio
// do not serve tools.
func TestHTTP_ApprovalsOnly(t *testing.T) {
	loaded, err := config.LoadBytes("test.yaml", []byte(testConfig))
	require.NoError(t, err)
	g, err := newGate(loaded, "", execgatetest.NewRecorder().Exec)
	require.NoError(t, err)
	h, err := newAPI(apiOptions{Executor: g.x, Server: g.server(), ApprovalsOnly: true})
	require.NoError(t, err)
	for _, req := range []*http.Request{
		httptest.NewRequest("GET", "/v1/tools", nil),
		httptest.NewRequest("POST", "/v1/tools/echo.run", strings.NewReader(`{}`)),
	} {
		req.Header.Set("Authorization", "Bearer "+callerToken)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		assert.Equal(t, http.StatusNotFound, w.Code, req.URL.Path)
	}
	req := httptest.NewRequest("GET", "/v1/approvals", nil)
	req.Header.Set("Authorization", "Bearer "+approverToken)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	assert.Equal(t, http.StatusOK, w.Code)
	assert.JSONEq(t, `{"approvals":[]}`, w.Body.String())
}

// Tokens of the callers of visibleConfig.
const (
	readerToken = "reader-token-for-tests"
	guestToken  = "guest-token-for-tests"
)

// visibleConfig gives each caller its own policy over the tools of
// testConfig, a strict tool "git" with git.log and git.status, and a
// dispatcher "kubectl" whose default_action denies every call:
//
//   - ci-bot may run echo.run, git.log and deploy.<sub> once approved;
//   - reader may run echo.run and git.status;
//   - guest is denied everything; alice approves.
var visibleConfig = `version: 1
defaults: {timeout: 10s, env: {PATH: /usr/bin:/bin}}
tools:
  - {name: echo, bin: /bin/echo, bare: {positionals: {max: 4, pattern: '^[a-z]{1,10}$'}}}
  - {name: forbidden, bin: /bin/echo, bare: {}}
  - {name: deploy, bin: /bin/echo, default_action: human_approval}
  - {name: kubectl, bin: /bin/echo}
  - name: git
    bin: /bin/echo
    strict: true
    commands: {log: {}, status: {}}
policies:
  - name: ci
    principal: ci-bot
    rules:
      - {name: never, tools: [forbidden.run, git.status], action: deny}
      - {tools: [echo.run, git.log, kubectl.*], action: allow}
      - {tools: ["deploy.*"], action: require_approval}
  - name: readers
    principal: reader
    rules:
      - {tools: [echo.run, git.status], action: allow}
  - name: nobody
    principal: guest
    rules:
      - {tools: ["*"], action: deny}
server:
  tokens:
    - {principal: ci-bot, sha256: "` + tokenHash(callerToken) + `"}
    - {principal: reader, sha256: "` + tokenHash(readerToken) + `"}
    - {principal: guest, sha256: "` + tokenHash(guestToken) + `"}
  approvers:
    - {principal: alice, sha256: "` + tokenHash(approverToken) + `"}
`

// TestHTTP_ToolsPerPrincipal: GET /v1/tools shows each caller the tools
// its policy could allow or hold, and an approver every tool.
func TestHTTP_ToolsPerPrincipal(t *testing.T) {
	f := newAPIFixture(t, visibleConfig)
	for _, tc := range []struct {
		about, token string
		want         []string
	}{
		{"a caller sees what it may run, what is held for approval, and no tool denied to it", callerToken, []string{"deploy", "echo.run", "git.log"}},
		{"another caller sees its own tools", readerToken, []string{"echo.run", "git.status"}},
		{"a caller denied everything sees no tools", guestToken, []string{}},
		{"an approver, who decides every caller's calls, sees every tool", approverToken, []string{"deploy", "echo.run", "forbidden.run", "git.log", "git.status", "kubectl"}},
	} {
		resp, r := f.do(t, "GET", "/v1/tools", tc.token, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, tc.about)
		require.NotNil(t, r.Tools, "%s: a list, never null", tc.about)
		names := []string{}
		for _, tool := range r.Tools {
			names = append(names, tool.Name)
		}
		assert.Equal(t, tc.want, names, tc.about)
	}
}

// TestHTTP_HiddenToolIsRefusedAsUnknown: a call of a command hidden from
// its caller, by either spelling, gets the response a name no command
// has gets, word for word: 404, not_found, a trace ID and no policy
// decision. Nothing runs, and the refusal is in the audit trail.
func TestHTTP_HiddenToolIsRefusedAsUnknown(t *testing.T) {
	loaded, err := config.LoadBytes("test.yaml", []byte(visibleConfig))
	require.NoError(t, err)
	rec := execgatetest.NewRecorder()
	g, err := newGate(loaded, "", rec.Exec)
	require.NoError(t, err)
	tr := &trailOf{}
	// The gate's Executor, with an Auditor that keeps the Events.
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: loaded.Allowlist, Policy: loaded.Policy, ExecFn: rec.Exec, Auditor: audited{tr}})
	require.NoError(t, err)
	g.x = x
	h, err := newAPI(apiOptions{Executor: x, Server: g.server(), Visible: g.visible})
	require.NoError(t, err)
	f := &apiFixture{srv: httptest.NewServer(h), rec: rec}
	t.Cleanup(f.srv.Close)

	refusal := func(token, name string) (int, errorInfo, bool, bool) {
		resp, r := f.do(t, "POST", "/v1/tools/"+name, token, strings.NewReader(`{}`))
		require.NotNil(t, r.Error, name)
		e := *r.Error
		e.Message = strings.ReplaceAll(e.Message, `"`+name+`"`, `"NAME"`)
		sub := name[strings.LastIndexAny(name, "._")+1:]
		e.Message = strings.ReplaceAll(e.Message, `"`+sub+`"`, `"SUB"`)
		e.Name = strings.ReplaceAll(e.Name, name, "NAME")
		return resp.StatusCode, e, r.TraceID != "", r.Policy != nil
	}
	for _, tc := range []struct{ about, token, name, like string }{
		{"a command the policy denies, by its own name", callerToken, "forbidden.run", "nonesuch.run"},
		{"the same by its MCP name", callerToken, "forbidden_run", "nonesuch_run"},
		{"a command of a strict tool the caller sees another command of", callerToken, "git.status", "git.nonesuch"},
		{"a dispatcher whose floor denies every call, by a subcommand", callerToken, "kubectl.get", "nonesuch.get"},
		{"the same by the MCP spelling", callerToken, "kubectl_get", "nonesuch_get"},
		{"a dispatcher no rule of the caller's reaches", readerToken, "deploy.prod", "nonesuch.prod"},
	} {
		wantCode, want, wantTrace, wantPolicy := refusal(tc.token, tc.like)
		require.Equal(t, http.StatusNotFound, wantCode, tc.about)
		require.True(t, wantTrace, tc.about)
		require.False(t, wantPolicy, tc.about)
		before := len(tr.all())
		code, got, trace, pol := refusal(tc.token, tc.name)
		assert.Equal(t, wantCode, code, tc.about)
		assert.Equal(t, want, got, tc.about)
		assert.Equal(t, wantTrace, trace, tc.about)
		assert.Equal(t, wantPolicy, pol, tc.about)
		evs := tr.all()[before:]
		require.Len(t, evs, 1, tc.about)
		assert.Equal(t, execgate.ErrorKindNotFound, evs[0].Error, tc.about)
		assert.Equal(t, tc.name, evs[0].Name, tc.about)
	}
	assert.Zero(t, rec.Count())
}

// audited hands every Event to a trailOf and to the slot of its call.
type audited struct{ tr *trailOf }

func (a audited) Audit(ctx context.Context, ev execgate.Event) error {
	_ = recorder{}.Audit(ctx, ev)
	return a.tr.Audit(ctx, ev)
}

// TestHTTP_NoSuchToolSaysWhatToCall: a name no command shown to the
// caller has is "no such tool", naming nothing; a name that looks like a
// subcommand of a tool the caller is shown says that tool has no such
// subcommand, and how to call it; a dispatcher alone says how to call it.
func TestHTTP_NoSuchToolSaysWhatToCall(t *testing.T) {
	f := newAPIFixture(t, visibleConfig)
	for _, tc := range []struct {
		about, token, name, says string
	}{
		{"a name no tool has names nothing", callerToken, "rm.run",
			`execgate: no such tool "rm.run"; nothing ran: GET /v1/tools lists the tools you can call`},
		{"a subcommand a strict tool does not have names the commands the caller is shown", callerToken, "git.nope",
			`execgate: the tool "git" has no subcommand "nope"; nothing ran: call POST /v1/tools/git.log`},
		{"by the MCP spelling too", readerToken, "git_nope",
			`execgate: the tool "git" has no subcommand "nope"; nothing ran: call POST /v1/tools/git.status`},
		{"a strict tool's own name is no call", callerToken, "git",
			`execgate: there is no tool "git", and its commands are called by their own names; nothing ran: call POST /v1/tools/git.log`},
		{"a dispatcher with what is no subcommand", callerToken, "deploy_Prod",
			`execgate: the tool "deploy" has no subcommand "Prod" (a subcommand matches ^[a-z][a-z0-9-]*$); nothing ran: call it as POST /v1/tools/deploy with {"subcommand": "<subcommand>", ...}`},
		{"a hidden tool's subcommand names nothing", readerToken, "deploy_Prod",
			`execgate: no such tool "deploy_Prod"; nothing ran: GET /v1/tools lists the tools you can call`},
		{"nor does a strict tool none of whose commands the caller is shown", guestToken, "git.nope",
			`execgate: no such tool "git.nope"; nothing ran: GET /v1/tools lists the tools you can call`},
	} {
		resp, r := f.do(t, "POST", "/v1/tools/"+tc.name, tc.token, strings.NewReader(`{}`))
		require.Equal(t, http.StatusNotFound, resp.StatusCode, tc.about)
		assert.Equal(t, execgate.ErrorKindNotFound, r.Error.Kind, tc.about)
		assert.Equal(t, tc.name, r.Error.Name, tc.about)
		assert.Equal(t, tc.says, r.Error.Message, tc.about)
	}
	assert.Zero(t, f.rec.Count())
}
