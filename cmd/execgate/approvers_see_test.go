package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// crbYAML is what a tee-like tool is asked to write: a binding of the
// agent's service account to cluster-admin, which no approver may
// approve without reading.
const crbYAML = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: agent-admin
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
  - kind: ServiceAccount
    name: agent
    namespace: default
`

// envCanary is an environment value of the tee-like tool; no approver
// is ever shown it.
const envCanary = "env-canary-7391"

// teeConfig serves manifest.run, the real tee writing its stdin to a file
// in dir, confined to dir and held for every call, and fetch.run, held
// too, which may reach one host through the egress proxy.
func teeConfig(dir string) string {
	return `version: 1
defaults: {timeout: 10s, env: {PATH: /usr/bin:/bin}}
tools:
  - name: manifest
    bin: tee
    working_dir: ` + dir + `
    env: {KUBE_TOKEN: ` + envCanary + `}
    bare:
      positionals: {max: 1, path: {}}
      stdin: {max: 64KiB}
      human_approval: true
    confine:
      read: [` + dir + `]
      write: [` + dir + `]
      limits: {cpu: 10s, files: 64}
      require: false
  - name: fetch
    bin: /bin/echo
    bare:
      positionals: {max: 1, pattern: '^https://[a-z.]+/$'}
      human_approval: true
    confine:
      network: {allow: [api.example.com:443], deny: [evil.example.com:*]}
policies:
  - name: everyone
    principal: "*"
    rules:
      - {name: held, tools: [manifest.run, fetch.run], action: require_approval}
server:
  principal: local-agent
  tokens:
    - {principal: ci-bot, sha256: "` + tokenHash(callerToken) + `"}
  approvers:
    - {principal: alice, sha256: "` + tokenHash(approverToken) + `"}
`
}

// teeInput is the call's input: write crbYAML to crb.yaml.
func teeInput(t *testing.T) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"args": []string{"crb.yaml"}, "stdin": crbYAML})
	require.NoError(t, err)
	return string(b)
}

// wantShown checks an approval of manifest.run as an approver gets it:
// stdin's size, SHA-256 and escaped preview, and the confinement.
func wantShown(t *testing.T, ap execgate.Approval, dir string) {
	t.Helper()
	sum := sha256.Sum256([]byte(crbYAML))
	require.NotNil(t, ap.Stdin, "the approval shows stdin")
	assert.Equal(t, len(crbYAML), ap.Stdin.Bytes)
	assert.Equal(t, hex.EncodeToString(sum[:]), ap.Stdin.SHA256)
	assert.Contains(t, ap.Stdin.Preview, `kind: ClusterRoleBinding\nmetadata:\n  name: agent-admin\n`)
	assert.Contains(t, ap.Stdin.Preview, `name: cluster-admin\n`)
	assert.False(t, ap.Stdin.PreviewCut)
	require.NotNil(t, ap.Confine, "the approval shows the confinement")
	assert.Equal(t, []string{dir}, ap.Confine.Read)
	assert.Equal(t, []string{dir}, ap.Confine.Write)
	assert.Equal(t, []string{}, ap.Confine.Exec)
	assert.False(t, ap.Confine.Network)
	assert.Equal(t, execgate.LimitsInfo{CPUSeconds: 10, Files: 64}, ap.Confine.Limits)
	assert.True(t, ap.Confine.BestEffort)
	assert.Nil(t, ap.Egress)
}

// A tee-like tool asked over the HTTP API to write a ClusterRoleBinding
// from stdin: the caller's 202 and every approver's GET /v1/approvals
// show stdin's size, SHA-256 and preview and the confinement (the egress
// allowlist too, for a tool that has one), never an environment value;
// what the approver approves is what is written.
func TestApproversSeeWhatRuns_TeeOverHTTP(t *testing.T) {
	dir := t.TempDir()
	p := startServe(t, "--config", writeFile(t, "tools.yaml", teeConfig(dir)), "--http", "127.0.0.1:0")
	base := p.stderr.waitFor(t, regexp.MustCompile(`serving the HTTP API on (http://127\.0\.0\.1:\d+)`))
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	do := func(method, path, token, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.NotContains(t, string(b), envCanary, "no answer shows an environment value")
		return resp.StatusCode, b
	}

	code, body := do("POST", "/v1/tools/manifest.run", callerToken, teeInput(t))
	require.Equal(t, http.StatusAccepted, code, "%s", body)
	var held response
	require.NoError(t, json.Unmarshal(body, &held))
	require.NotNil(t, held.Approval)
	wantShown(t, *held.Approval, dir)

	code, body = do("POST", "/v1/tools/fetch.run", callerToken, `{"args":["https://api.example.com/"]}`)
	require.Equal(t, http.StatusAccepted, code, "%s", body)

	code, body = do("GET", "/v1/approvals", approverToken, "")
	require.Equal(t, http.StatusOK, code, "%s", body)
	var list response
	require.NoError(t, json.Unmarshal(body, &list))
	require.Len(t, list.Approvals, 2)
	byName := map[string]execgate.Approval{}
	for _, ap := range list.Approvals {
		byName[ap.Name] = ap
	}
	wantShown(t, byName["manifest.run"], dir)
	fetch := byName["fetch.run"]
	require.NotNil(t, fetch.Egress, "the approver sees the hosts the call may reach")
	assert.Equal(t, []string{"api.example.com:443"}, fetch.Egress.Allow)
	assert.Equal(t, []string{"evil.example.com:*"}, fetch.Egress.Deny)
	require.NotNil(t, fetch.Confine)
	assert.False(t, fetch.Confine.Network)
	assert.Nil(t, fetch.Stdin, "a call without stdin shows none")

	code, body = do("POST", "/v1/approvals/"+held.Approval.ID, approverToken, `{"action":"approve"}`)
	require.Equal(t, http.StatusOK, code, "%s", body)
	var ran response
	require.NoError(t, json.Unmarshal(body, &ran))
	require.NotNil(t, ran.Result)
	require.True(t, ran.Result.OK, "%+v", ran.Result)
	written, err := os.ReadFile(filepath.Join(dir, "crb.yaml"))
	require.NoError(t, err)
	assert.Equal(t, crbYAML, string(written), "what the approver read is what was written")
}

// questions remembers the approval questions an MCP client's user is
// asked, and accepts each.
type questions struct {
	mu    sync.Mutex
	asked []string
}

func (q *questions) accept(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	q.mu.Lock()
	q.asked = append(q.asked, req.Params.Message)
	q.mu.Unlock()
	return &mcp.ElicitResult{Action: "accept"}, nil
}

// The same call over MCP on stdio, to a client that asks its user: the
// question shows stdin's size, SHA-256 and preview, the confinement and
// the network, and no environment value; the user's accept writes what
// the question showed.
func TestApproversSeeWhatRuns_TeeOverMCP(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(binary(t), "serve", "--config", writeFile(t, "tools.yaml", teeConfig(dir)))
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	q := &questions{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, &mcp.ClientOptions{ElicitationHandler: q.accept}).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, "stderr: %s", stderr)
	defer func() { assert.NoError(t, cs.Close(), "stderr: %s", stderr) }()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "manifest_run", Arguments: json.RawMessage(teeInput(t))})
	require.NoError(t, err)
	var r execgate.Result
	structured(t, res, &r)
	require.True(t, r.OK, "%+v; stderr: %s", r, stderr)
	q.mu.Lock()
	asked := append([]string(nil), q.asked...)
	q.mu.Unlock()
	require.Len(t, asked, 1)
	sum := sha256.Sum256([]byte(crbYAML))
	for _, want := range []string{
		"Tool call: manifest.run\n",
		fmt.Sprintf("Standard input: %d bytes, SHA-256 %s; it is (control characters escaped): ", len(crbYAML), hex.EncodeToString(sum[:])),
		`kind: ClusterRoleBinding\nmetadata:\n  name: agent-admin\nroleRef:\n`,
		`Confinement: reads "` + dir + `"; writes "` + dir + `"; executes nothing but its own executable; no Unix sockets; limits: CPU 10 s, files 64; best effort`,
		"Network: none.\n",
	} {
		assert.Contains(t, asked[0], want)
	}
	assert.NotContains(t, asked[0], envCanary)
	written, err := os.ReadFile(filepath.Join(dir, "crb.yaml"))
	require.NoError(t, err)
	assert.Equal(t, crbYAML, string(written))
}
