package main

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestE2E_MCPHTTPReloadAndStop: serve --mcp-http, the built binary,
// reloads its file on SIGHUP: clients of both protocol versions are told
// the tool list changed (on a GET stream, on a subscriptions/listen
// stream), the new tools are listed, the new token is taken and the
// removed one refused. On SIGTERM it stops at once, 0, although clients
// still hold their streams open.
func TestE2E_MCPHTTPReloadAndStop(t *testing.T) {
	const oldToken, newToken = "old-caller-token", "new-caller-token"
	path := writeFile(t, "tools.yaml", reloadFile(sleepTool, oldToken))
	p := startServe(t, "--config", path, "--mcp-http", "127.0.0.1:0")
	f := &mcpHTTPFixture{base: p.stderr.waitFor(t, mcpHTTPAddrRe)}
	f.url = f.base + mcpPath

	type client struct {
		cs      *mcp.ClientSession
		changed chan struct{}
	}
	connect := func(token, version string) client {
		c := client{changed: make(chan struct{}, 10)}
		c.cs = f.mustConnect(t, token, version, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { c.changed <- struct{}{} },
		})
		return c
	}
	names := func(cs *mcp.ClientSession) []string {
		t.Helper()
		lt, err := cs.ListTools(context.Background(), nil)
		require.NoError(t, err)
		var out []string
		for _, tool := range lt.Tools {
			out = append(out, tool.Name)
		}
		return out
	}
	session := connect(oldToken, "2025-11-25")
	stateless := connect(oldToken, "")
	assert.Equal(t, []string{"echo_run", "sleep_run"}, names(session.cs))
	assert.Equal(t, []string{"echo_run", "sleep_run"}, names(stateless.cs))

	require.NoError(t, os.WriteFile(path, []byte(reloadFile(trueTool, newToken)), 0o600))
	p.hangup(t, 1)
	for _, c := range []client{session, stateless} {
		select {
		case <-c.changed:
		case <-time.After(20 * time.Second):
			t.Fatalf("no notifications/tools/list_changed; stderr: %s", p.stderr)
		}
	}
	fresh := connect(newToken, "2025-11-25")
	assert.Equal(t, []string{"echo_run", "true_run"}, names(fresh.cs))
	_, err := f.connect(t, oldToken, "", nil)
	assert.Error(t, err, "the token the file no longer lists is refused")
	resp, _ := f.raw(t, "POST", "", initializeBody, mcpHeaders(oldToken))
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	ranResult(t, callHTTP(t, fresh.cs, "true_run", `{}`))

	start := time.Now()
	p.stop(t)
	assert.Less(t, time.Since(start), shutdownGrace/2, "the open streams do not hold the shutdown")
	assert.True(t, strings.Contains(p.stderr.String(), "stopped"), "stderr: %s", p.stderr)
}
