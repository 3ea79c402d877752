package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/mcpserver"
)

// dispatchConfig serves the dispatcher terraform, whose subcommand plan
// has a spec of its own, to two callers:
//
//   - ci-bot may run plan and show, apply once approved; a rule denies it
//     destroy, and no rule names any other subcommand;
//   - other-bot may run show only, so plan, with its own tool, is hidden
//     from it.
var dispatchConfig = `version: 1
defaults: {timeout: 10s, env: {PATH: /usr/bin:/bin}}
tools:
  - name: terraform
    bin: /bin/echo
    description: Run terraform.
    default_action: allow
    commands:
      plan: {description: Plan the changes.}
policies:
  - name: ci
    principal: ci-bot
    rules:
      - {name: no-destroy, tools: [terraform.destroy], action: deny}
      - {tools: [terraform.plan, terraform.show], action: allow}
      - {tools: [terraform.apply], action: require_approval}
  - name: other
    principal: other-bot
    rules:
      - {tools: [terraform.show], action: allow}
server:
  tokens:
    - {principal: ci-bot, sha256: "` + tokenHash(callerToken) + `"}
    - {principal: other-bot, sha256: "` + tokenHash(otherToken) + `"}
  approvers:
    - {principal: alice, sha256: "` + tokenHash(approverToken) + `"}
`

// dispatchAPI is the HTTP API of dispatchConfig, with a Recorder in place
// of processes and the gate's Events kept.
func dispatchAPI(t *testing.T) (*apiFixture, *trailOf) {
	t.Helper()
	loaded, err := config.LoadBytes("test.yaml", []byte(dispatchConfig))
	require.NoError(t, err)
	tr := &trailOf{}
	f := &apiFixture{rec: execgatetest.NewRecorder(), pending: newPendingSet(nil)}
	f.gate, err = newGate(loaded, "", f.rec.Exec, tr)
	require.NoError(t, err)
	h, err := newAPI(apiOptions{Executor: f.gate.x, Server: f.gate.server(), Pending: f.pending, Visible: f.gate.visible})
	require.NoError(t, err)
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close)
	return f, tr
}

// TestSameTruth_ADispatcherIsCalledOneWayOnEverySurface: a dispatcher is
// called by its name with the subcommand in the input's "subcommand",
// over MCP (the tool terraform), over the HTTP API (POST
// /v1/tools/terraform) and with execgate run; each call runs the same
// argv and is decided as the command terraform.show. The HTTP API still
// takes the command's name, terraform.show or terraform_show, with the
// rest of the input.
//
// Invariant 14 of DESIGN.md.
func TestSameTruth_ADispatcherIsCalledOneWayOnEverySurface(t *testing.T) {
	want := []string{"show", "-json"}
	api, _ := dispatchAPI(t)
	for _, tc := range []struct{ name, body string }{
		{"terraform", `{"subcommand":"show","args":["-json"]}`},
		{"terraform", `{"args":["-json"],"subcommand":"show"}`},
		{"terraform.show", `{"args":["-json"]}`},
		{"terraform_show", `{"args":["-json"]}`},
	} {
		resp, r := api.call(t, tc.name, tc.body)
		require.Equal(t, http.StatusOK, resp.StatusCode, "POST /v1/tools/%s %s: %+v", tc.name, tc.body, r.Error)
		assert.Equal(t, "terraform.show", r.Result.Name, tc.name)
		assert.Equal(t, want, r.Result.Args, tc.name)
		assert.Equal(t, "ci/2", r.Policy.Rule, "%s: decided as terraform.show", tc.name)
	}

	m := newMCPHTTPFixture(t, dispatchConfig)
	res := ranResult(t, callHTTP(t, m.mustConnect(t, callerToken, "", nil), "terraform", `{"subcommand":"show","args":["-json"]}`))
	assert.Equal(t, "terraform.show", res.Name)
	assert.Equal(t, want, res.Args)

	path := writeFile(t, "tools.yaml", dispatchConfig)
	code, out, errOut := runCLI(t, "", "run", "--config", path, "--principal", "ci-bot", "terraform", `{"subcommand":"show","args":["-json"]}`)
	require.Equal(t, exitOK, code, errOut)
	var ran execgate.Result
	require.NoError(t, json.Unmarshal([]byte(out), &ran))
	assert.Equal(t, "terraform.show", ran.Name)
	assert.Equal(t, want, ran.Args)
	assert.Equal(t, "show -json\n", ran.Stdout, "/bin/echo ran")
}

// TestSameTruth_DispatcherRefusalsAreAlikeOnEverySurface: what is
// refused when a dispatcher is called is refused alike over MCP and the
// HTTP API, with its own words: no "subcommand" or one that is no
// subcommand (invalid input on that field), a subcommand with a tool of
// its own (invalid input, naming that tool), a name no tool has (no such
// tool), and a subcommand the caller may not call (the tool has no such
// subcommand).
//
// Invariant 14 of DESIGN.md.
func TestSameTruth_DispatcherRefusalsAreAlikeOnEverySurface(t *testing.T) {
	api, _ := dispatchAPI(t)
	cs := newMCPHTTPFixture(t, dispatchConfig).mustConnect(t, callerToken, "", nil)
	for _, tc := range []struct {
		about, tool, body, kind, field string
		mcpSays, httpSays              string
	}{
		{"no subcommand", "terraform", `{"args":[]}`, execgate.ErrorKindValidation, "subcommand", "required", "required"},
		{"what is no subcommand", "terraform", `{"subcommand":"Show"}`, execgate.ErrorKindValidation, "subcommand", "matching ^[a-z][a-z0-9-]*$", "matching ^[a-z][a-z0-9-]*$"},
		{"a subcommand that is not a string", "terraform", `{"subcommand":1}`, execgate.ErrorKindValidation, "subcommand", "must be a string", "must be a string"},
		{"a subcommand with its own tool", "terraform", `{"subcommand":"plan"}`, execgate.ErrorKindValidation, "subcommand",
			`"terraform.plan" has its own tool; call the tool "terraform_plan" instead`, `"terraform.plan" has its own tool; call POST /v1/tools/terraform.plan instead`},
		{"a subcommand the caller may not call", "terraform", `{"subcommand":"nonesuch"}`, execgate.ErrorKindNotFound, "",
			`the tool "terraform" has no subcommand "nonesuch" that you can call: call it with another "subcommand", or call another tool that tools/list shows; nothing ran.`,
			`the tool "terraform" has no subcommand "nonesuch" that you can call; nothing ran: call it with another "subcommand", or call another tool that GET /v1/tools lists`},
		{"a name no tool has", "terraformx", `{"subcommand":"show"}`, execgate.ErrorKindNotFound, "",
			`no such tool "terraformx": tools/list shows the tools you can call`, `no such tool "terraformx"; nothing ran: GET /v1/tools lists the tools you can call`},
	} {
		st := callStatus(t, callHTTP(t, cs, tc.tool, tc.body))
		assert.Equal(t, tc.kind, st.Kind, "MCP: %s", tc.about)
		assert.Contains(t, st.Message, tc.mcpSays, "MCP: %s", tc.about)

		resp, r := api.call(t, tc.tool, tc.body)
		require.NotNil(t, r.Error, "HTTP: %s", tc.about)
		assert.Equal(t, tc.kind, r.Error.Kind, "HTTP: %s", tc.about)
		want := http.StatusNotFound
		if tc.kind == execgate.ErrorKindValidation {
			want = http.StatusUnprocessableEntity
		}
		assert.Equal(t, want, resp.StatusCode, "HTTP: %s", tc.about)
		assert.Contains(t, r.Error.Message, tc.httpSays, "HTTP: %s", tc.about)
		assert.NotEmpty(t, r.TraceID, "HTTP: %s: the refusal is recorded", tc.about)
		if tc.field != "" {
			require.Len(t, st.Issues, 1, "MCP: %s", tc.about)
			require.Len(t, r.Error.Issues, 1, "HTTP: %s", tc.about)
			assert.Equal(t, tc.field, st.Issues[0].Field, "MCP: %s", tc.about)
			assert.Equal(t, tc.field, r.Error.Issues[0].Field, "HTTP: %s", tc.about)
		}
	}
	assert.Zero(t, api.rec.Count())
}

// TestSameTruth_AHiddenSubcommandIsRefusedAsOneThatDoesNotExist: a
// subcommand hidden from its caller, whether a rule denies it (ci-bot's
// destroy) or its own tool is hidden (other-bot's plan), gets, under
// every spelling and on every transport, the refusal of a subcommand
// that no rule names, word for word: nothing tells the caller that it
// exists, and no policy rule is named. Nothing runs, and each refusal is
// recorded as a not_found of the command asked for.
//
// Invariant 14 of DESIGN.md.
func TestSameTruth_AHiddenSubcommandIsRefusedAsOneThatDoesNotExist(t *testing.T) {
	api, tr := dispatchAPI(t)
	m := newMCPHTTPFixture(t, dispatchConfig)
	sessions := map[string]*mcp.ClientSession{
		callerToken: m.mustConnect(t, callerToken, "", nil),
		otherToken:  m.mustConnect(t, otherToken, "", nil),
	}
	const like = "nonesuch"
	// blank puts SUB in place of the subcommand sub, wherever it is named.
	blank := func(s, sub string) string {
		return strings.NewReplacer(`"`+sub+`"`, `"SUB"`, "."+sub, ".SUB", "_"+sub, "_SUB").Replace(s)
	}
	type answer struct {
		Code   int
		Error  errorInfo
		Traced bool
		Policy bool
	}
	httpCall := func(token, name, body, sub string) answer {
		resp, r := api.do(t, "POST", "/v1/tools/"+name, token, strings.NewReader(body))
		require.NotNil(t, r.Error, "POST /v1/tools/%s %s", name, body)
		e := *r.Error
		e.Message, e.Name = blank(e.Message, sub), blank(e.Name, sub)
		return answer{resp.StatusCode, e, r.TraceID != "", r.Policy != nil}
	}
	mcpCall := func(token, name, args, sub string) mcpserver.CallStatus {
		st := callStatus(t, callHTTP(t, sessions[token], name, args))
		st.Message, st.Name = blank(st.Message, sub), blank(st.Name, sub)
		return st
	}
	for _, tc := range []struct{ about, token, sub string }{
		{"a subcommand a rule denies", callerToken, "destroy"},
		{"a subcommand whose own tool is hidden", otherToken, "plan"},
	} {
		for _, form := range []struct{ name, body string }{
			{"terraform", `{"subcommand":"SUB","args":["x"]}`},
			{"terraform.SUB", `{"args":["x"]}`},
			{"terraform_SUB", `{"args":["x"]}`},
		} {
			call := func(sub string) (answer, mcpserver.CallStatus) {
				name, body := strings.ReplaceAll(form.name, "SUB", sub), strings.ReplaceAll(form.body, "SUB", sub)
				before := len(tr.all())
				h := httpCall(tc.token, name, body, sub)
				evs := tr.all()[before:]
				require.Len(t, evs, 1, "%s, %s: one record", tc.about, name)
				assert.Equal(t, execgate.OpRequest, evs[0].Op, "%s, %s", tc.about, name)
				assert.Equal(t, execgate.ErrorKindNotFound, evs[0].Error, "%s, %s", tc.about, name)
				assert.Contains(t, []string{"terraform." + sub, name}, evs[0].Name, "%s, %s", tc.about, name)
				return h, mcpCall(tc.token, name, body, sub)
			}
			wantHTTP, wantMCP := call(like)
			gotHTTP, gotMCP := call(tc.sub)
			about := tc.about + ", called as " + form.name
			assert.Equal(t, wantHTTP, gotHTTP, "HTTP: %s", about)
			assert.Equal(t, wantMCP, gotMCP, "MCP: %s", about)
			assert.Equal(t, http.StatusNotFound, gotHTTP.Code, "HTTP: %s", about)
			assert.Equal(t, execgate.ErrorKindNotFound, gotMCP.Kind, "MCP: %s", about)
			assert.Contains(t, gotHTTP.Error.Message, `the tool "terraform" has no subcommand "SUB" that you can call`, "HTTP: %s", about)
			assert.Contains(t, gotMCP.Message, `the tool "terraform" has no subcommand "SUB" that you can call`, "MCP: %s", about)
			assert.False(t, gotHTTP.Policy, "HTTP: %s: the policy was not asked", about)
			assert.Empty(t, gotMCP.Rule, "MCP: %s: no rule is named", about)
		}
	}
	assert.Zero(t, api.rec.Count())
	assert.Zero(t, m.rec.Count())
	for _, e := range m.entries(t) {
		if e.Event.Name == "terraform.destroy" || e.Event.Name == "terraform.plan" {
			assert.Equal(t, execgate.ErrorKindNotFound, e.Event.Error, "MCP: %+v", e.Event)
		}
	}
}

// TestSameTruth_ADispatcherIsListedAlike: GET /v1/tools and tools/list
// describe the dispatcher alike: the name, the description and the input
// schema, with its required "subcommand".
//
// Invariant 14 of DESIGN.md.
func TestSameTruth_ADispatcherIsListedAlike(t *testing.T) {
	api, _ := dispatchAPI(t)
	_, r := api.do(t, "GET", "/v1/tools", callerToken, nil)
	var listed *toolInfo
	for i := range r.Tools {
		if r.Tools[i].Name == "terraform" {
			listed = &r.Tools[i]
		}
	}
	require.NotNil(t, listed, "%+v", r.Tools)
	assert.True(t, listed.Dispatch)
	assert.Equal(t, "terraform.<subcommand>", listed.CallAs)

	cs := newMCPHTTPFixture(t, dispatchConfig).mustConnect(t, callerToken, "", nil)
	lt, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	var tool *mcp.Tool
	for _, tl := range lt.Tools {
		if tl.Name == listed.MCPName {
			tool = tl
		}
	}
	require.NotNil(t, tool, "tools/list lists the tool under its mcp_name")
	assert.Equal(t, tool.Description, listed.Description)
	schema, err := json.Marshal(tool.InputSchema)
	require.NoError(t, err)
	assert.JSONEq(t, string(schema), string(listed.InputSchema))
	assert.Contains(t, listed.Description, `Set "subcommand" to the subcommand to run`)
	var s struct {
		Required []string `json:"required"`
	}
	require.NoError(t, json.Unmarshal(listed.InputSchema, &s))
	assert.Equal(t, []string{"subcommand"}, s.Required)
}
