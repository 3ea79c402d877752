package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/mcpserver"
)

// tsClientDir holds the TypeScript SDK client script and its pinned
// dependencies; "npm ci --prefix cmd/execgate/testdata/tsclient" installs
// them.
const tsClientDir = "testdata/tsclient"

// TestTSClient_Stdio drives "execgate serve" on stdio with the official
// TypeScript MCP SDK's client (testdata/tsclient/client.mjs), writing
// lines that are not messages between the client's: the client's calls
// work before and after them, each bad line gets its error, a call over
// the line bound fails at once with the error under its own id instead of
// hanging, the tools are listed under client-safe names ("echo_run" for
// the command echo.run), an unlisted tool is refused as not found, a
// command's own name too with the tool to call instead, and the server
// exits 0 when the client closes. It is skipped only where node is not
// installed.
func TestTSClient_Stdio(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat(filepath.Join(tsClientDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("the TypeScript MCP SDK is not installed: run npm ci --prefix cmd/execgate/%s (%v)", tsClientDir, err)
	}
	bin := binary(t)
	config := writeFile(t, "tools.yaml", testConfig)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs", bin, config)
	cmd.Dir = tsClientDir
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.Output()
	require.NoError(t, err, "stderr: %s", stderr)

	type callResult struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	var got struct {
		Answers   []int    `json:"answers"`
		SDKErrors []string `json:"sdkErrors"`
		Before    callResult
		After     callResult
		Unknown   callResult
		Logical   callResult
		TooLong   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"tooLong"`
		Tools    []string `json:"tools"`
		ExitCode int      `json:"exitCode"`
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)

	ran := func(c callResult) execgate.Result {
		t.Helper()
		require.False(t, c.IsError, "%s", c.StructuredContent)
		var r execgate.Result
		require.NoError(t, json.Unmarshal(c.StructuredContent, &r))
		return r
	}
	assert.Equal(t, "before\n", ran(got.Before).Stdout)
	assert.Equal(t, "echo.run", ran(got.Before).Name, "the gate sees the command's own name")
	assert.Equal(t, "after bad lines\n", ran(got.After).Stdout, "the session goes on after the bad lines")
	assert.Equal(t, []int{-32700, -32600, -32700, -32700}, got.Answers, "hello, [], { and NUL bytes, each answered in order")
	assert.Equal(t, -32600, got.TooLong.Code, "the oversized call failed under its own id: %s", got.TooLong.Message)
	assert.Contains(t, got.TooLong.Message, "longer than")
	assert.Equal(t, []string{"deploy", "echo_run", "forbidden_run"}, got.Tools)
	for _, name := range got.Tools {
		assert.Regexp(t, `^[a-zA-Z0-9_-]{1,64}$`, name, "a name every mainstream client accepts")
	}
	require.True(t, got.Unknown.IsError)
	var st mcpserver.CallStatus
	require.NoError(t, json.Unmarshal(got.Unknown.StructuredContent, &st))
	assert.Equal(t, mcpserver.KindNotFound, st.Kind)
	require.True(t, got.Logical.IsError)
	st = mcpserver.CallStatus{}
	require.NoError(t, json.Unmarshal(got.Logical.StructuredContent, &st))
	assert.Equal(t, mcpserver.KindNotFound, st.Kind)
	assert.Contains(t, st.Message, `listed as the tool "echo_run"`)
	assert.Equal(t, 0, got.ExitCode, "stderr: %s", stderr)
	// The SDK's message schema has no room for an error whose id is null:
	// it reports each such answer to its error handler and carries on.
	assert.Len(t, got.SDKErrors, len(got.Answers))
}
