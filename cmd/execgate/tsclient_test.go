package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit"
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
	assert.Equal(t, []string{"deploy", "echo_run"}, got.Tools, "forbidden.run, denied by every policy, is not listed")
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

var mcpHTTPAddrRe = regexp.MustCompile(`serving MCP over Streamable HTTP \(path /mcp\) and the approval routes on (http://127\.0\.0\.1:\d+)`)

// tsHTTPCall is a tool result as the TypeScript SDK returns it.
type tsHTTPCall struct {
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
}

// tsHTTPFailure is how a TypeScript SDK call failed: the HTTP status.
type tsHTTPFailure struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// runTSHTTPClient runs testdata/tsclient/httpclient.mjs with args and
// decodes what it prints.
func runTSHTTPClient(t *testing.T, node string, v any, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"httpclient.mjs"}, args...)...)
	cmd.Dir = tsClientDir
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.Output()
	require.NoError(t, err, "stderr: %s", stderr)
	require.NoError(t, json.Unmarshal(out, v), "%s", out)
}

// TestTSClient_StreamableHTTP drives "execgate serve --mcp-http", the
// built binary, with the official TypeScript MCP SDK's Streamable HTTP
// client (testdata/tsclient/httpclient.mjs): with a token it lists the
// tools and calls one, in a session; bad input is refused with its kind;
// the other token's policy denies what the first one's allows, so that
// token is not shown the tool and its call is refused; no token
// and a wrong one are refused with 401 and recorded; the other token
// cannot use the first one's session; a held call stays pending although
// the client accepts its own elicitation, and with
// server.mcp_http_elicitation that accept runs it.
func TestTSClient_StreamableHTTP(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat(filepath.Join(tsClientDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("the TypeScript MCP SDK is not installed: run npm ci --prefix cmd/execgate/%s (%v)", tsClientDir, err)
	}
	binary(t)
	path := writeFile(t, "tools.yaml", mcpHTTPText(false))
	trail := writeFile(t, "audit.jsonl", "")
	p := startServe(t, "--config", path, "--mcp-http", "127.0.0.1:0", "--audit", trail)
	base := p.stderr.waitFor(t, mcpHTTPAddrRe)

	var got struct {
		ProtocolVersion string     `json:"protocolVersion"`
		Session         bool       `json:"session"`
		Tools           []string   `json:"tools"`
		OtherTools      []string   `json:"otherTools"`
		RawCall         tsHTTPCall `json:"call"`
		RawBad          tsHTTPCall `json:"bad"`
		RawHeld         tsHTTPCall `json:"held"`
		Denied          tsHTTPCall `json:"denied"`
		After           tsHTTPCall `json:"after"`
		NoToken         tsHTTPFailure
		WrongToken      tsHTTPFailure
		Hijack          tsHTTPFailure
		Asked           int `json:"asked"`
	}
	runTSHTTPClient(t, node, &got, base+mcpPath, callerToken, otherToken)

	assert.Equal(t, "2025-11-25", got.ProtocolVersion, "the client's newest version")
	assert.True(t, got.Session, "served in a session")
	assert.Equal(t, []string{"deploy", "echo_run"}, got.Tools)
	var r execgate.Result
	require.False(t, got.RawCall.IsError, "%s", got.RawCall.StructuredContent)
	require.NoError(t, json.Unmarshal(got.RawCall.StructuredContent, &r))
	assert.Equal(t, "over http\n", r.Stdout)
	assert.Equal(t, "echo.run", r.Name)

	status := func(c tsHTTPCall) mcpserver.CallStatus {
		t.Helper()
		require.True(t, c.IsError, "%s", c.StructuredContent)
		var st mcpserver.CallStatus
		require.NoError(t, json.Unmarshal(c.StructuredContent, &st))
		return st
	}
	assert.Equal(t, mcpserver.KindValidation, status(got.RawBad).Kind, "bad input keeps its typed refusal")
	held := status(got.RawHeld)
	assert.Equal(t, mcpserver.StatusPending, held.Status, "the client's own accept does not approve it")
	assert.Zero(t, got.Asked, "the client was never asked")
	assert.Equal(t, []string{"deploy"}, got.OtherTools, "the other token's principal reached the policy, which denies it echo.run")
	denied := status(got.Denied)
	assert.Equal(t, mcpserver.KindNotFound, denied.Kind, denied.Message)
	assert.Equal(t, 401, got.NoToken.Code, got.NoToken.Message)
	assert.Equal(t, 401, got.WrongToken.Code, got.WrongToken.Message)
	assert.Equal(t, 403, got.Hijack.Code, got.Hijack.Message)
	require.False(t, got.After.IsError, "the session goes on: %s", got.After.StructuredContent)

	p.stop(t)
	data, err := os.ReadFile(trail)
	require.NoError(t, err)
	var unauthenticated, hijacks, hidden int
	principals := map[string]string{} // outcome of echo.run calls, by principal
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e audit.Entry
		require.NoError(t, json.Unmarshal([]byte(line), &e), line)
		assert.NotEqual(t, "local-agent", e.Principal)
		switch {
		case e.Op == execgate.OpRequest && e.Error == execgate.ErrorKindUnauthenticated:
			assert.Equal(t, "POST /mcp", e.Route)
			assert.Empty(t, e.Principal)
			unauthenticated++
		case e.Op == execgate.OpRequest && e.Reason == "session of another token":
			assert.Equal(t, "other-bot", e.Principal)
			hijacks++
		case e.Op == execgate.OpRequest && e.Name == "echo_run":
			assert.Equal(t, "other-bot", e.Principal)
			assert.Equal(t, execgate.ErrorKindNotFound, e.Error)
			hidden++
		case e.Name == "echo.run" && e.Phase == execgate.PhaseOutcome && e.Principal != "":
			principals[e.Principal] += e.Error + ";"
		}
		assert.NotContains(t, line, callerToken)
		assert.NotContains(t, line, otherToken)
	}
	assert.Equal(t, 2, unauthenticated, "no token and the wrong one, each recorded")
	assert.Equal(t, 1, hijacks)
	assert.Equal(t, 1, hidden, "the other token's call, refused and recorded under it")
	assert.Equal(t, map[string]string{"ci-bot": ";validation;;"}, principals, "each call decided as its token's principal")
	code, out, errOut := runCLI(t, "", "audit", "verify", trail)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "ok:")

	// With server.mcp_http_elicitation, the client's accept runs the call.
	path = writeFile(t, "tools.yaml", mcpHTTPText(true))
	p = startServe(t, "--config", path, "--mcp-http", "127.0.0.1:0")
	base = p.stderr.waitFor(t, mcpHTTPAddrRe)
	var elicited struct {
		Held  tsHTTPCall `json:"held"`
		Asked int        `json:"asked"`
	}
	runTSHTTPClient(t, node, &elicited, base+mcpPath, callerToken, "--held")
	assert.Equal(t, 1, elicited.Asked)
	require.False(t, elicited.Held.IsError, "%s", elicited.Held.StructuredContent)
	r = execgate.Result{}
	require.NoError(t, json.Unmarshal(elicited.Held.StructuredContent, &r))
	assert.Equal(t, "deploy.prod", r.Name)
	p.stop(t)
}
