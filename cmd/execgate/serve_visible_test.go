package main

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServe_EachCallerIsShownItsTools: serve --http and serve --mcp-http,
// the built binary, show each caller the same tools: those its policy
// could allow or hold for approval. other-bot's policy denies echo.run.
func TestServe_EachCallerIsShownItsTools(t *testing.T) {
	path := writeFile(t, "tools.yaml", mcpHTTPText(false))
	want := map[string][]string{callerToken: {"deploy", "echo.run"}, otherToken: {"deploy"}}

	p := startServe(t, "--config", path, "--http", "127.0.0.1:0")
	base := p.stderr.waitFor(t, regexp.MustCompile(`serving the HTTP API on (http://127\.0\.0\.1:\d+)`))
	for token, names := range want {
		req, err := http.NewRequest("GET", base+"/v1/tools", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", data)
		var r response
		require.NoError(t, json.Unmarshal(data, &r))
		var got []string
		for _, tool := range r.Tools {
			got = append(got, tool.Name)
		}
		sort.Strings(got)
		assert.Equal(t, names, got, "over the HTTP API")
	}
	p.stop(t)

	p = startServe(t, "--config", path, "--mcp-http", "127.0.0.1:0")
	f := &mcpHTTPFixture{base: p.stderr.waitFor(t, mcpHTTPAddrRe)}
	f.url = f.base + mcpPath
	mcpNames := map[string]string{"deploy": "deploy", "echo.run": "echo_run"}
	for token, names := range want {
		var listed []string
		for _, n := range names {
			listed = append(listed, mcpNames[n])
		}
		assert.Equal(t, listed, toolNames(t, f.mustConnect(t, token, "2025-11-25", nil)), "over MCP")
	}
	p.stop(t)
}
