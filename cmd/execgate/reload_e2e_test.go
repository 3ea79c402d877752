package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// reloadConfig is a configuration with echo.run and, in place of TOOLS,
// more tools; the caller's token is TOKEN.
const reloadConfig = `version: 1
defaults: {timeout: 20s, env: {PATH: /usr/bin:/bin}}
tools:
  - name: echo
    bin: /bin/echo
    bare:
      positionals: {max: 4, pattern: '^[A-Za-z0-9 ._-]{1,100}$'}
TOOLS
server:
  principal: local-agent
  tokens:
    - {principal: ci-bot, sha256: "TOKEN"}
`

// reloadFile returns reloadConfig with tools and the hash of token.
func reloadFile(tools, token string) string {
	return strings.NewReplacer("TOOLS", tools, "TOKEN", tokenHash(token)).Replace(reloadConfig)
}

const (
	sleepTool = `  - name: sleep
    bin: /bin/sleep
    bare:
      positionals: {max: 1, pattern: '^[0-9]{1,2}$'}`
	trueTool = `  - name: "true"
    bin: /bin/true
    bare: {}`
	// brokenTool is a tool whose bin, on line 9 of the file, is wrong:
	// a bin must be an absolute path or a bare name.
	brokenTool = `  - name: broken
    bin: ./relative/true
    bare: {}`
)

// serveProcess is the binary running serve.
type serveProcess struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

func startServe(t *testing.T, args ...string) *serveProcess {
	t.Helper()
	return startServeEnv(t, nil, args...)
}

// startServeEnv starts serve with the environment env (nil: this
// process's).
func startServeEnv(t *testing.T, env []string, args ...string) *serveProcess {
	t.Helper()
	p := &serveProcess{stderr: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(binary(t), append([]string{"serve"}, args...)...)
	p.cmd.Env = env
	p.cmd.Stderr = p.stderr
	require.NoError(t, p.cmd.Start())
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// hangup sends SIGHUP and waits until n reloads in all have been
// logged, done or refused.
func (p *serveProcess) hangup(t *testing.T, n int) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		s := p.stderr.String()
		if strings.Count(s, "reloaded the configuration")+strings.Count(s, "reload refused") >= n {
			return
		}
		select {
		case <-p.exited:
			t.Fatalf("serve exited on SIGHUP: %v; stderr: %s", p.err, s)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("no reload was logged; stderr: %s", p.stderr)
}

// stop sends SIGTERM and checks that serve exits 0.
func (p *serveProcess) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.exited:
		assert.NoError(t, p.err, "exit 0 on SIGTERM; stderr: %s", p.stderr)
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not stop on SIGTERM; stderr: %s", p.stderr)
	}
}

// TestE2E_ReloadOnSIGHUP: serve --http reloads its file on SIGHUP: new
// tools and tokens are served, removed ones are not, and a call under
// way finishes with the spec it was validated against; a file that does
// not load changes nothing, and its problems are logged with their lines.
func TestE2E_ReloadOnSIGHUP(t *testing.T) {
	const oldToken, newToken = "old-caller-token", "new-caller-token"
	path := writeFile(t, "tools.yaml", reloadFile(sleepTool, oldToken))
	trail := writeFile(t, "audit.jsonl", "")
	p := startServe(t, "--config", path, "--http", "127.0.0.1:0", "--audit", trail)
	base := p.stderr.waitFor(t, regexp.MustCompile(`serving the HTTP API on (http://127\.0\.0\.1:\d+)`))
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	do := func(method, route, token, body string) (int, response) {
		req, err := http.NewRequest(method, base+route, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var r response
		require.NoError(t, json.Unmarshal(data, &r), "%s", data)
		return resp.StatusCode, r
	}
	tools := func(token string) []string {
		code, r := do("GET", "/v1/tools", token, "")
		require.Equal(t, http.StatusOK, code, "%+v", r.Error)
		var names []string
		for _, tool := range r.Tools {
			names = append(names, tool.Name)
		}
		return names
	}
	assert.Equal(t, []string{"echo.run", "sleep.run"}, tools(oldToken))

	// A slow call, under way across the reload that removes its tool.
	type outcome struct {
		code int
		r    response
	}
	slow := make(chan outcome, 1)
	go func() {
		code, r := do("POST", "/v1/tools/sleep.run", oldToken, `{"args":["3"]}`)
		slow <- outcome{code, r}
	}()
	waitForIntent(t, trail, "sleep.run")

	require.NoError(t, os.WriteFile(path, []byte(reloadFile(trueTool, newToken)), 0o600))
	p.hangup(t, 1)
	select {
	case o := <-slow:
		t.Fatalf("the slow call ended before it should: %d %+v", o.code, o.r)
	default:
	}
	assert.Equal(t, []string{"echo.run", "true.run"}, tools(newToken), "the new tool is served, the removed one is not")
	code, _ := do("GET", "/v1/tools", oldToken, "")
	assert.Equal(t, http.StatusUnauthorized, code, "the token the file no longer lists is refused")
	code, r := do("POST", "/v1/tools/true.run", newToken, "")
	require.Equal(t, http.StatusOK, code, "%+v", r.Error)
	assert.True(t, r.Result.OK)
	code, r = do("POST", "/v1/tools/sleep.run", newToken, `{"args":["0"]}`)
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, execgate.ErrorKindNotFound, r.Error.Kind)

	o := <-slow
	require.Equal(t, http.StatusOK, o.code, "the call under way finished: %+v", o.r.Error)
	require.NotNil(t, o.r.Result)
	assert.True(t, o.r.Result.OK)
	assert.Equal(t, execgate.TerminationExit, o.r.Result.Termination)
	assert.Equal(t, "/bin/sleep", o.r.Result.Command)
	assert.GreaterOrEqual(t, o.r.Result.Duration, 3*time.Second)

	// A file that does not load keeps the configuration in force.
	require.NoError(t, os.WriteFile(path, []byte(reloadFile(brokenTool, oldToken)), 0o600))
	p.hangup(t, 2)
	stderr := p.stderr.String()
	assert.Contains(t, stderr, "tools.yaml:9:", "the problem is logged with its line")
	assert.Contains(t, stderr, "tools[1].bin")
	assert.Contains(t, stderr, "still serving the configuration loaded before")
	assert.Equal(t, []string{"echo.run", "true.run"}, tools(newToken))
	code, r = do("POST", "/v1/tools/echo.run", newToken, `{"args":["still","here"]}`)
	require.Equal(t, http.StatusOK, code, "%+v", r.Error)
	assert.Equal(t, "still here\n", r.Result.Stdout)

	// A file without tokens for --http is refused too, as at a start.
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(reloadFile("", oldToken), "  tokens:\n    - {principal: ci-bot, sha256: \""+tokenHash(oldToken)+"\"}\n", "", 1)), 0o600))
	p.hangup(t, 3)
	assert.Contains(t, p.stderr.String(), "lists no tokens")
	assert.Equal(t, []string{"echo.run", "true.run"}, tools(newToken))

	p.stop(t)
	code, out, errOut := runCLI(t, "", "audit", "verify", trail)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "ok:")
}

// waitForIntent waits until the audit file holds the intent of a call to
// name: its process is being started.
func waitForIntent(t *testing.T, trail, name string) {
	t.Helper()
	re := regexp.MustCompile(`"op":"run","phase":"intent".*"name":"` + regexp.QuoteMeta(name) + `"`)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		data, err := os.ReadFile(trail)
		require.NoError(t, err)
		if re.Match(data) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no intent of %s in the audit file", name)
}

// TestE2E_ReloadOverStdio: over MCP on stdio, a reload on SIGHUP changes
// the tools listed and tells the client, whichever protocol version it
// speaks.
func TestE2E_ReloadOverStdio(t *testing.T) {
	for _, tc := range []struct {
		name, version string
	}{
		{"a client of the latest protocol, which subscribes to the notification", ""},
		{"a client of the 2025-06-18 protocol, which gets it unasked", "2025-06-18"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "tools.yaml", reloadFile(sleepTool, callerToken))
			cmd := exec.Command(binary(t), "serve", "--config", path)
			stderr := &syncBuffer{}
			cmd.Stderr = stderr
			changed := make(chan struct{}, 10)
			client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			require.NoError(t, err, "stderr: %s", stderr)
			defer func() { assert.NoError(t, cs.Close(), "stderr: %s", stderr) }()
			listed := func() []string {
				list, err := cs.ListTools(ctx, nil)
				require.NoError(t, err)
				var names []string
				for _, tool := range list.Tools {
					names = append(names, tool.Name)
				}
				return names
			}
			assert.ElementsMatch(t, []string{"echo_run", "sleep_run"}, listed())

			require.NoError(t, os.WriteFile(path, []byte(reloadFile(trueTool, callerToken)), 0o600))
			require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
			select {
			case <-changed:
			case <-ctx.Done():
				t.Fatalf("no notifications/tools/list_changed; stderr: %s", stderr)
			}
			assert.ElementsMatch(t, []string{"echo_run", "true_run"}, listed())
			res := callTool(t, cs, "true_run", `{}`)
			assert.False(t, res.IsError, "%+v", res.Content)

			// A file that does not load changes nothing.
			require.NoError(t, os.WriteFile(path, []byte(reloadFile(brokenTool, callerToken)), 0o600))
			require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
			stderr.waitFor(t, regexp.MustCompile(`(reload refused)`))
			assert.Contains(t, stderr.String(), "tools.yaml:9:")
			assert.ElementsMatch(t, []string{"echo_run", "true_run"}, listed())
		})
	}
}

// TestE2E_ReloadLogsWhatAStartWould: a reload that puts a file in force
// logs its warnings and the tools that can never run, as a start logs
// them: an operator who adds a tool no call can run learns it from the
// reload's log, not from the agent. Nothing of the kind is logged for a
// tool the file does not serve.
func TestE2E_ReloadLogsWhatAStartWould(t *testing.T) {
	const token = "reload-warn-token"
	const locked = `  - name: locked
    bin: /bin/true
    default_action: deny`
	path := writeFile(t, "tools.yaml", reloadFile(trueTool, token))
	p := startServe(t, "--config", path, "--http", "127.0.0.1:0")
	p.stderr.waitFor(t, regexp.MustCompile(`serving the HTTP API on (http://127\.0\.0\.1:\d+)`))
	started := p.stderr.String()
	assert.NotContains(t, started, `"locked"`)

	require.NoError(t, os.WriteFile(path, []byte(reloadFile(trueTool+"\n"+locked, token)), 0o600))
	p.hangup(t, 1)
	deadline := time.Now().Add(10 * time.Second)
	var after string
	for time.Now().Before(deadline) {
		after = strings.TrimPrefix(p.stderr.String(), started)
		if strings.Contains(after, "can never run") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	assert.Contains(t, after, `the tool \"locked\" can never run here: its default_action denies every call of it`)
	assert.Contains(t, after, `the dispatcher \"locked\" is served without a description`)
	assert.Equal(t, 1, strings.Count(after, `can never run`), "once, for the one tool: %s", after)
	p.stop(t)
}
