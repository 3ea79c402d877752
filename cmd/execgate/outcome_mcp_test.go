package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/mcpserver"
)

// approve approves id as alice at the approval routes of f.
func (f *mcpHTTPFixture) approve(t *testing.T, id string) {
	t.Helper()
	resp, body := f.raw(t, "POST", "/v1/approvals/"+id, `{"action":"approve"}`,
		map[string]string{"Authorization": "Bearer " + approverToken, "Content-Type": "application/json"})
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
}

// pendingOf returns the pending approval's ID that res reports.
func pendingOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	st := callStatus(t, res)
	require.Equal(t, mcpserver.StatusPending, st.Status, st.Message)
	require.NotNil(t, st.Approval)
	return st.Approval.ID
}

// TestMCPHTTP_RetryClaimsTheApprovedResultOnce: over MCP on Streamable
// HTTP, a held call's answer says to call again with the same arguments;
// the retry is told the same pending approval (nothing is proposed
// again), and once the approvers approved it, the Result, once. Another
// principal's identical call, and the proposer's call with other
// arguments, are calls of their own and get no Result; after the claim,
// the identical call is a new one, and the proposer's poll over HTTP
// reads the approval as claimed.
func TestMCPHTTP_RetryClaimsTheApprovedResultOnce(t *testing.T) {
	for _, v := range mcpHTTPVersions {
		t.Run(v.name, func(t *testing.T) {
			f := newMCPHTTPFixture(t, mcpHTTPText(false))
			ci := f.mustConnect(t, callerToken, v.version, nil)
			other := f.mustConnect(t, otherToken, v.version, nil)
			const prod = `{"subcommand":"prod"}`

			res := callHTTP(t, ci, "deploy", prod)
			id := pendingOf(t, res)
			assert.Contains(t, callStatus(t, res).Message, "call this tool again with exactly the same arguments")
			assert.Equal(t, id, pendingOf(t, callHTTP(t, ci, "deploy", prod)), "the retry is told the same approval")
			assert.Equal(t, []string{id}, f.listedApprovals(t), "nothing was proposed again")

			f.approve(t, id)
			require.Equal(t, 1, f.rec.Count())

			theirs := pendingOf(t, callHTTP(t, other, "deploy", prod))
			assert.NotEqual(t, id, theirs, "another principal's identical call is its own")
			mine := pendingOf(t, callHTTP(t, ci, "deploy", `{"subcommand":"staging"}`))
			assert.NotEqual(t, id, mine, "other arguments are another call")

			r := ranResult(t, callHTTP(t, ci, "deploy", prod))
			assert.Equal(t, id, r.ApprovalID)
			assert.Equal(t, "deploy.prod", r.Name)

			fresh := pendingOf(t, callHTTP(t, ci, "deploy", prod))
			assert.NotEqual(t, id, fresh, "after the claim, the identical call asks anew")
			assert.Equal(t, 1, f.rec.Count(), "nothing ran again")

			resp, body := f.raw(t, "GET", "/v1/approvals/"+id, "", map[string]string{"Authorization": "Bearer " + callerToken})
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			var b outcomeBody
			require.NoError(t, json.Unmarshal(body, &b))
			assert.Equal(t, "claimed", b.Status)
			assert.Nil(t, b.Result)
			resp, body = f.raw(t, "GET", "/v1/approvals/"+id, "", map[string]string{"Authorization": "Bearer " + otherToken})
			assert.Equal(t, http.StatusNotFound, resp.StatusCode, "%s", body)
		})
	}
}

// listedApprovals returns the IDs GET /v1/approvals lists to alice.
func (f *mcpHTTPFixture) listedApprovals(t *testing.T) []string {
	t.Helper()
	resp, body := f.raw(t, "GET", "/v1/approvals", "", map[string]string{"Authorization": "Bearer " + approverToken})
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var list response
	require.NoError(t, json.Unmarshal(body, &list))
	ids := []string{}
	for _, ap := range list.Approvals {
		ids = append(ids, ap.ID)
	}
	return ids
}

// TestMCPHTTP_ApprovalWait: with server.approval_wait, a held call waits
// for the approvers and is answered with the Result once they approve,
// while notifications/progress keep a client that sent a progress token
// informed; the Result is then claimed, and the proposer's retry asks
// anew.
func TestMCPHTTP_ApprovalWait(t *testing.T) {
	for _, v := range mcpHTTPVersions {
		t.Run(v.name, func(t *testing.T) {
			f := newMCPHTTPFixture(t, mcpHTTPText(false)+"  approval_wait: 20s\n")
			require.Equal(t, 20*time.Second, f.gate.server().ApprovalWait)
			var mu sync.Mutex
			var notes []string
			ci := f.mustConnect(t, callerToken, v.version, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				mu.Lock()
				notes = append(notes, req.Params.Message)
				mu.Unlock()
			}})
			go func() {
				// Approve as soon as the approvers see it, after a heartbeat.
				for range 200 {
					if ids := f.listedApprovals(t); len(ids) == 1 {
						time.Sleep(1100 * time.Millisecond)
						f.approve(t, ids[0])
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
			}()
			params := &mcp.CallToolParams{Name: "deploy", Arguments: json.RawMessage(`{"subcommand":"prod"}`)}
			params.SetProgressToken("held-1")
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			res, err := ci.CallTool(ctx, params)
			require.NoError(t, err)
			r := ranResult(t, res)
			assert.Equal(t, "deploy.prod", r.Name)
			assert.Equal(t, 1, f.rec.Count())
			mu.Lock()
			got := append([]string(nil), notes...)
			mu.Unlock()
			require.NotEmpty(t, got, "no progress while the call waited")
			assert.True(t, strings.HasPrefix(got[0], "waiting for a person to decide approval "+r.ApprovalID), got[0])

			resp, body := f.raw(t, "GET", "/v1/approvals/"+r.ApprovalID, "", map[string]string{"Authorization": "Bearer " + callerToken})
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			assert.Contains(t, string(body), `"status":"claimed"`, "the waiting call got the Result")
		})
	}
}

// TestE2E_StdioRetryGetsTheApprovedResult: the binary over stdio with
// --approver-http: the agent's retry of a held call, once the approvers
// approved it over HTTP, gets its Result once; the next identical call
// asks anew.
func TestE2E_StdioRetryGetsTheApprovedResult(t *testing.T) {
	path := writeFile(t, "tools.yaml", testConfig)
	cs, stderr := startMCP(t, os.Environ(), "--config", path, "--approver-http", "127.0.0.1:0", "--principal", "mcp-agent")
	base := stderr.waitFor(t, approvalsAddrRe)
	const staging = `{"subcommand":"staging"}`

	res := callTool(t, cs, "deploy", staging)
	id := pendingOf(t, res)
	assert.Equal(t, id, pendingOf(t, callTool(t, cs, "deploy", staging)), "the retry is told the same approval")

	req, err := http.NewRequest("POST", base+"/v1/approvals/"+id, strings.NewReader(`{"action":"approve"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+approverToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	r := ranResult(t, callTool(t, cs, "deploy", staging))
	assert.Equal(t, id, r.ApprovalID)
	assert.Equal(t, "staging\n", r.Stdout, "the dispatcher ran /bin/echo staging")
	assert.NotEqual(t, id, pendingOf(t, callTool(t, cs, "deploy", staging)), "the Result is handed out once")
	http.DefaultClient.CloseIdleConnections()
}
