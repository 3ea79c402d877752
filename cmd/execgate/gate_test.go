package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/mcpserver"
)

// TestGate_Visible: which tools a principal is shown, with and without
// a policies section.
func TestGate_Visible(t *testing.T) {
	withoutPolicies := visibleConfig[:strings.Index(visibleConfig, "policies:")]
	for _, tc := range []struct {
		about, config, principal string
		want                     []string
	}{
		{"without policies every tool is shown but a dispatcher whose default_action denies every call",
			withoutPolicies, "anyone", []string{"deploy", "echo.run", "forbidden.run", "git.log", "git.status"}},
		{"with policies a principal is shown what its policy could allow or hold",
			visibleConfig, "ci-bot", []string{"deploy", "echo.run", "git.log"}},
		{"a principal no policy governs is shown nothing",
			visibleConfig, "stranger", nil},
	} {
		loaded, err := config.LoadBytes("test.yaml", []byte(tc.config))
		require.NoError(t, err)
		g, err := newGate(loaded, "", execgatetest.NewRecorder().Exec)
		require.NoError(t, err)
		var got []string
		for _, s := range loaded.Allowlist.Specs() {
			if g.visible(context.Background(), tc.principal, s) {
				got = append(got, s.Name)
			}
		}
		assert.Equal(t, tc.want, got, tc.about)
	}
}

// TestReload_ToolListFollowsPolicy: a reload that changes what a
// principal's policy allows sends notifications/tools/list_changed to a
// connected MCP client, whose next tools/list shows the new policy's
// tools, and GET /v1/tools follows the new policy too.
func TestReload_ToolListFollowsPolicy(t *testing.T) {
	path := writeFile(t, "test.yaml", reloadText("allow", ""))
	loaded, err := config.LoadFile(path)
	require.NoError(t, err)
	g, err := newGate(loaded, "", execgatetest.NewRecorder().Exec)
	require.NoError(t, err)
	ms, err := mcpserver.New(g.x, mcpserver.Options{Allowlist: loaded.Allowlist, Principal: "local-agent", Visible: g.visible})
	require.NoError(t, err)
	h, err := newAPI(apiOptions{Executor: g.x, Server: g.server(), Visible: g.visible})
	require.NoError(t, err)
	r := &reloader{path: path, log: slog.New(slog.DiscardHandler), x: g.x, cur: loaded, mcp: ms, apis: []*api{h}}

	changed := make(chan struct{}, 10)
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := ms.MCPServer().Connect(ctx, st, nil)
	require.NoError(t, err)
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := client.Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	listed := func() []string {
		res, err := cs.ListTools(ctx, nil)
		require.NoError(t, err)
		names := []string{}
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		return names
	}
	require.Equal(t, []string{"echo_run"}, listed())
	require.Equal(t, []string{"echo.run"}, getTools(t, h, callerToken))

	for _, step := range []struct {
		about, action string
		want          []string
	}{
		{"a rule that now denies hides the tool", "deny", []string{}},
		{"a rule that now holds it for approval shows it again", "require_approval", []string{"echo_run"}},
	} {
		require.NoError(t, os.WriteFile(path, []byte(reloadText(step.action, "")), 0o600))
		_, err = r.reload()
		require.NoError(t, err, step.about)
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no notifications/tools/list_changed after the reload", step.about)
		}
		assert.Equal(t, step.want, listed(), step.about)
		want := []string{}
		for _, n := range step.want {
			want = append(want, strings.ReplaceAll(n, "_", "."))
		}
		assert.Equal(t, want, getTools(t, h, callerToken), "%s, over HTTP", step.about)
	}
}

// getTools asks h for GET /v1/tools with token and returns the names
// listed.
func getTools(t *testing.T, h http.Handler, token string) []string {
	t.Helper()
	req := httptest.NewRequest("GET", "/v1/tools", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	require.Equal(t, http.StatusOK, w.Code)
	var r response
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &r))
	names := []string{}
	for _, tool := range r.Tools {
		names = append(names, tool.Name)
	}
	return names
}
