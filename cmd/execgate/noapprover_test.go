package main

import (
	"context"
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

// withoutApprovers is text without its server section's approvers.
func withoutApprovers(t *testing.T, text string) string {
	t.Helper()
	out := strings.Replace(text, "  approvers:\n    - {principal: alice, sha256: \"APPROVER\"}\n", "", 1)
	out = strings.Replace(out, "  approvers:\n    - {principal: alice, sha256: \""+tokenHash(approverToken)+"\"}\n", "", 1)
	require.NotEqual(t, text, out, "the configuration had approvers")
	return out
}

// approversOf is the server section of text, which lists approvers.
func approversOf(t *testing.T, text string) *config.Server {
	t.Helper()
	l, err := config.LoadBytes("test.yaml", []byte(text))
	require.NoError(t, err)
	require.NotEmpty(t, l.Server.Approvers)
	return l.Server
}

// TestMCPHTTP_HeldCallWithNoApproverIsRefused: over --mcp-http, while the
// server section lists no approvers, a held call that no client's user
// is asked about is refused, saying that nothing can approve it and what
// would, as over stdio, and leaves nothing pending; once a reload lists
// approvers, the same call waits for them. With mcp_http_elicitation, a
// client that can elicit is still asked.
func TestMCPHTTP_HeldCallWithNoApproverIsRefused(t *testing.T) {
	f := newMCPHTTPFixture(t, withoutApprovers(t, mcpHTTPText(false)))
	cs := f.mustConnect(t, callerToken, "", nil)
	st := callStatus(t, callHTTP(t, cs, "deploy", `{"subcommand":"prod"}`))
	assert.Equal(t, mcpserver.StatusRefused, st.Status)
	assert.Equal(t, mcpserver.KindPolicy, st.Kind)
	assert.Equal(t, execgate.ActionRequireApproval, st.Action)
	assert.Equal(t, mcpserver.NoApproverMessage("deploy.prod", false, f.h.api.noApprover()), st.Message)
	assert.Contains(t, st.Message, "nothing here can give one")
	assert.Contains(t, st.Message, "server.approvers")
	assert.Nil(t, st.Approval)
	assert.Empty(t, f.h.api.pending.(*pendingSet).list(), "nothing is left pending")

	// A reload that lists approvers.
	require.NoError(t, f.h.api.setServer(approversOf(t, mcpHTTPText(false))))
	st = callStatus(t, callHTTP(t, cs, "deploy", `{"subcommand":"prod"}`))
	assert.Equal(t, mcpserver.StatusPending, st.Status, st.Message)
	assert.Len(t, f.h.api.pending.(*pendingSet).list(), 1)
	assert.Zero(t, f.rec.Count())

	e := newMCPHTTPFixture(t, withoutApprovers(t, mcpHTTPText(true)))
	st = callStatus(t, callHTTP(t, e.mustConnect(t, callerToken, "", nil), "deploy", `{"subcommand":"prod"}`))
	assert.Equal(t, mcpserver.StatusRefused, st.Status)
	assert.Contains(t, st.Message, "this client cannot ask its user")
	asked := e.mustConnect(t, callerToken, "2025-11-25", &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	assert.Equal(t, "deploy.prod", ranResult(t, callHTTP(t, asked, "deploy", `{"subcommand":"prod"}`)).Name,
		"a client that can elicit is asked, as mcp_http_elicitation says")
}

// TestHTTP_HeldCallWithNoApproverIsRefused: the HTTP API, while the
// server section lists no approvers, refuses a held call (403, policy,
// require_approval) saying that nothing can approve it, and stores no
// approval; once a reload lists approvers, the call is pending (202).
func TestHTTP_HeldCallWithNoApproverIsRefused(t *testing.T) {
	loaded, err := config.LoadBytes("test.yaml", []byte(withoutApprovers(t, testConfig)))
	require.NoError(t, err)
	f := &apiFixture{rec: execgatetest.NewRecorder(), pending: newPendingSet(nil)}
	f.gate, err = newGate(loaded, "", f.rec.Exec)
	require.NoError(t, err)
	h, err := newAPI(apiOptions{Executor: f.gate.x, Server: f.gate.server(), Pending: f.pending, Visible: f.gate.visible})
	require.NoError(t, err)
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close)

	resp, r := f.call(t, "deploy", `{"subcommand":"prod"}`)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "%+v", r.Error)
	assert.Equal(t, execgate.ErrorKindPolicy, r.Error.Kind)
	assert.Equal(t, execgate.ActionRequireApproval, r.Error.Action)
	assert.Equal(t, mcpserver.NoApproverMessage("deploy.prod", false, h.noApprover()), r.Error.Message)
	assert.Nil(t, r.Approval)
	assert.Empty(t, f.pending.list())
	require.NotNil(t, r.Policy)
	assert.Equal(t, execgate.ActionRequireApproval, r.Policy.Decision)

	require.NoError(t, h.setServer(approversOf(t, testConfig)))
	resp, r = f.call(t, "deploy", `{"subcommand":"prod"}`)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%+v", r.Error)
	assert.Zero(t, f.rec.Count())
}
