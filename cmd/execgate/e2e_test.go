package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/mcpserver"
)

// syncBuffer is a bytes.Buffer that a process's stderr copier and a test
// can use at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until re matches what the buffer holds and returns the
// first submatch.
func (b *syncBuffer) waitFor(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(b.String()); m != nil {
			return m[1]
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.FailNow(t, "timed out", "waiting for %s in:\n%s", re, b.String())
	return ""
}

var approvalsAddrRe = regexp.MustCompile(`serving the approval routes on (http://127\.0\.0\.1:\d+)`)

// startMCP starts the binary as an MCP server over stdio and connects the
// SDK's client to it.
func startMCP(t *testing.T, env []string, args ...string) (*mcp.ClientSession, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"serve"}, args...)...)
	cmd.Env = env
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, "stderr: %s", stderr)
	t.Cleanup(func() {
		// Closing stdin stops the server, which exits 0.
		assert.NoError(t, cs.Close(), "the server exits cleanly; stderr: %s", stderr)
	})
	return cs, stderr
}

func callTool(t *testing.T, cs *mcp.ClientSession, name, args string) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	require.NoError(t, err)
	return res
}

func structured(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v), "%s", b)
}

func TestE2E_ServeStdio(t *testing.T) {
	path := writeFile(t, "tools.yaml", testConfig)
	cs, stderr := startMCP(t, os.Environ(), "--config", path)
	ctx := context.Background()

	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	names := []string{}
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		schema, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		assert.Contains(t, string(schema), `"type":"object"`, tool.Name)
	}
	// forbidden.run, which every policy denies, is not listed: a client
	// sees only the tools its principal could run.
	assert.ElementsMatch(t, []string{"echo_run", "deploy"}, names, "client-safe names, and only the tools the policy could allow or hold")

	// An allowed call runs /bin/echo for real, as the command echo.run.
	res := callTool(t, cs, "echo_run", `{"args":["hello","from","execgate"]}`)
	require.False(t, res.IsError, "%+v", res.Content)
	var r execgate.Result
	structured(t, res, &r)
	assert.Equal(t, "echo.run", r.Name, "the gate sees the command's own name")
	assert.Equal(t, "hello from execgate\n", r.Stdout)
	assert.Equal(t, "/bin/echo", r.Command)
	assert.True(t, r.OK)
	assert.Greater(t, r.PID, 0)

	// Refusals come back as error results a model can read.
	for _, tc := range []struct{ tool, args, kind string }{
		{"forbidden_run", `{}`, mcpserver.KindNotFound}, // hidden: refused as a name no tool has
		{"echo_run", `{"args":["$(reboot)"]}`, mcpserver.KindInvalidInput},
		{"rm_run", `{}`, mcpserver.KindNotFound},
		{"echo.run", `{}`, mcpserver.KindNotFound}, // the command's name, not the tool's
	} {
		res := callTool(t, cs, tc.tool, tc.args)
		require.True(t, res.IsError, tc.tool)
		var st mcpserver.CallStatus
		structured(t, res, &st)
		assert.Equal(t, mcpserver.StatusRefused, st.Status, tc.tool)
		assert.Equal(t, tc.kind, st.Kind, tc.tool)
	}

	// This client cannot elicit, and without --approver-http nothing
	// here can approve a held call: it is refused, saying so, not left
	// pending for no one.
	res = callTool(t, cs, "deploy", `{"subcommand":"prod"}`)
	require.True(t, res.IsError)
	var st mcpserver.CallStatus
	structured(t, res, &st)
	assert.Equal(t, mcpserver.StatusRefused, st.Status)
	assert.Equal(t, mcpserver.KindPolicy, st.Kind)
	assert.Contains(t, st.Message, "nothing here can give one")
	assert.Contains(t, st.Message, "--approver-http")

	assert.Contains(t, stderr.String(), "serving 3 tools over MCP on stdio")
	assert.Contains(t, stderr.String(), `"principal":"local-agent"`, "the principal is a field of the JSON record")
}

// TestE2E_StdioPendingApprovedOverHTTP: a client without elicitation gets
// a pending approval, which an approver executes once through the
// approval routes.
func TestE2E_StdioPendingApprovedOverHTTP(t *testing.T) {
	path := writeFile(t, "tools.yaml", testConfig)
	cs, stderr := startMCP(t, os.Environ(), "--config", path, "--approvals", "pending", "--approver-http", "127.0.0.1:0", "--principal", "mcp-agent")
	base := stderr.waitFor(t, approvalsAddrRe)

	res := callTool(t, cs, "deploy", `{"subcommand":"staging"}`)
	var st mcpserver.CallStatus
	structured(t, res, &st)
	require.Equal(t, mcpserver.StatusPending, st.Status, st.Message)
	require.NotNil(t, st.Approval)
	assert.Equal(t, "mcp-agent", st.Approval.Principal)

	get := func(method, path, token, body string) (int, response) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var r response
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
		return resp.StatusCode, r
	}
	code, r := get("GET", "/v1/approvals", approverToken, "")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, r.Approvals, 1)
	assert.Equal(t, st.Approval.ID, r.Approvals[0].ID)

	code, _ = get("POST", "/v1/tools/echo.run", callerToken, `{"args":["x"]}`)
	assert.Equal(t, http.StatusNotFound, code, "the approval routes serve no tools")

	code, r = get("POST", "/v1/approvals/"+st.Approval.ID, approverToken, `{"action":"approve"}`)
	require.Equal(t, http.StatusOK, code, "%+v", r.Error)
	require.NotNil(t, r.Result)
	assert.Equal(t, "staging\n", r.Result.Stdout, "the dispatcher ran /bin/echo staging")
	assert.Equal(t, st.Approval.ID, r.Result.ApprovalID)

	code, _ = get("POST", "/v1/approvals/"+st.Approval.ID, approverToken, `{"action":"approve"}`)
	assert.Equal(t, http.StatusNotFound, code, "an approval executes once")
	http.DefaultClient.CloseIdleConnections()
}

func TestE2E_ServeHTTPAndStopOnSIGTERM(t *testing.T) {
	path := writeFile(t, "tools.yaml", testConfig)
	trail := writeFile(t, "audit.jsonl", "")
	cmd := exec.Command(binary(t), "serve", "--config", path, "--http", ":0", "--audit", trail)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	base := stderr.waitFor(t, regexp.MustCompile(`serving the HTTP API on (http://127\.0\.0\.1:\d+)`))
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()

	req, err := http.NewRequest("POST", base+"/v1/tools/echo.run", strings.NewReader(`{"args":["over","http"]}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+callerToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var r response
	require.NoError(t, json.Unmarshal(body, &r))
	assert.Equal(t, "over http\n", r.Result.Stdout)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-exited:
		assert.NoError(t, waitErr, "exit 0 on SIGTERM; stderr: %s", stderr)
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not stop on SIGTERM; stderr: %s", stderr)
	}
	assert.Contains(t, stderr.String(), "the HTTP API stopped")

	// The call is in the audit file, which verifies.
	code, out, errOut := runCLI(t, "", "audit", "verify", trail)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "ok: 2 entries", "the call's intent and its outcome")
	f, err := os.Open(trail)
	require.NoError(t, err)
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	require.NoError(t, err)
	assert.Contains(t, line, `"principal":"ci-bot"`)
	assert.Contains(t, line, r.Result.ID)
}

func TestE2E_ExitCodes(t *testing.T) {
	bin := binary(t)
	path := writeFile(t, "tools.yaml", testConfig)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"check", "--config", path}, exitOK},
		{[]string{"run", "--config", path, "echo.run", `{"args":["x"]}`}, exitOK},
		{[]string{"run", "--config", path, "forbidden.run"}, exitFailed},
		{[]string{"check", "--config", writeFile(t, "bad.yaml", "version: 2\ntools: []\n")}, exitUsage},
		{[]string{"serve", "--config", path, "--http", "0.0.0.0:0"}, exitUsage},
		{[]string{"nope"}, exitUsage},
		{[]string{"help"}, exitOK},
	} {
		err := exec.Command(bin, tc.args...).Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		assert.Equal(t, tc.code, code, "%q", tc.args)
	}
}
