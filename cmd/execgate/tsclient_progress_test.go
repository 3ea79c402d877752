//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit"
)

// tsTicks is how many lines ticks.run prints, one every 100 ms.
const tsTicks = 40

// tsProgressConfig serves, to local-agent on stdio and to ci-bot (TOKEN)
// over HTTP: ticks.run, which prints tsTicks numbered lines; hang.run,
// which starts a sleeping child in its process group, writes its own pid
// and the child's to PIDFILE and prints a line every 100 ms until it is
// stopped; and echo.run.
const tsProgressConfig = `version: 1
defaults: {timeout: 60s, env: {PATH: /usr/bin:/bin}}
tools:
  - name: ticks
    bin: /bin/sh
    description: Print numbered lines, one every 100 ms.
    global_args: [-c, 'i=0; while [ $i -lt TICKS ]; do i=$((i+1)); echo line $i; sleep 0.1; done']
    bare: {}
  - name: hang
    bin: /bin/sh
    description: Start a sleeping child, then print a line every 100 ms until stopped.
    global_args: [-c, 'sleep 60 >/dev/null 2>&1 & echo $$ $! >PIDFILE; while :; do echo tick; sleep 0.1; done']
    bare: {}
  - name: echo
    bin: /bin/echo
    description: Print the arguments.
    bare:
      positionals: {max: 4, pattern: '^[A-Za-z0-9 ._-]{1,100}$'}
server:
  principal: local-agent
  tokens:
    - {principal: ci-bot, sha256: "TOKEN"}
`

// tsProgressNote is a notifications/progress as the SDK's onprogress
// callback is given it.
type tsProgressNote struct {
	Progress float64  `json:"progress"`
	Total    *float64 `json:"total"`
	Message  string   `json:"message"`
}

// tsProgressRun is what testdata/tsclient/progress.mjs saw before its
// stdin ended.
type tsProgressRun struct {
	Tasks         json.RawMessage  `json:"tasks"`
	Ticks         tsHTTPCall       `json:"ticks"`
	TicksProgress []tsProgressNote `json:"ticksProgress"`
	Hang          struct {
		Result  json.RawMessage `json:"result"`
		Code    int             `json:"code"`
		Message string          `json:"message"`
	} `json:"hang"`
	HangProgress int  `json:"hangProgress"`
	Aborted      bool `json:"aborted"`
}

var (
	bytesSoFarRe = regexp.MustCompile(`(\d+) bytes of output so far`)
	latestLineRe = regexp.MustCompile(`latest line: (.*)$`)
	tickLineRe   = regexp.MustCompile(`^line (\d+)$`)
)

// TestTSClient_ProgressAndAbortOverStdio: the official TypeScript MCP
// SDK's client, with its own stdio transport starting "execgate serve",
// gets progress while a command runs and aborts a call with an
// AbortSignal (see checkTSProgress).
func TestTSClient_ProgressAndAbortOverStdio(t *testing.T) {
	node := tsNode(t)
	bin := binary(t)
	config, pidFile := tsProgressFiles(t)
	trail := writeFile(t, "audit.jsonl", "")
	checkTSProgress(t, node, pidFile, trail, func() {}, "stdio", bin, config, trail)
}

// TestTSClient_ProgressAndAbortOverStreamableHTTP: the same over "serve
// --mcp-http" with the SDK's Streamable HTTP client and a bearer token.
func TestTSClient_ProgressAndAbortOverStreamableHTTP(t *testing.T) {
	node := tsNode(t)
	binary(t)
	config, pidFile := tsProgressFiles(t)
	trail := writeFile(t, "audit.jsonl", "")
	p := startServe(t, "--config", config, "--mcp-http", "127.0.0.1:0", "--audit", trail)
	base := p.stderr.waitFor(t, mcpHTTPAddrRe)
	checkTSProgress(t, node, pidFile, trail, func() { p.stop(t) }, "http", base+mcpPath, callerToken)
}

// tsNode returns the path of node, skipping the test where it is not
// installed and failing it where the SDK is not.
func tsNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat(filepath.Join(tsClientDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("the TypeScript MCP SDK is not installed: run npm ci --prefix cmd/execgate/%s (%v)", tsClientDir, err)
	}
	return node
}

// tsProgressFiles writes tsProgressConfig and returns its path and the
// path hang.run writes its pids to.
func tsProgressFiles(t *testing.T) (config, pidFile string) {
	t.Helper()
	pidFile = filepath.Join(t.TempDir(), "hang.pids")
	text := strings.NewReplacer("TICKS", strconv.Itoa(tsTicks), "PIDFILE", pidFile, "TOKEN", tokenHash(callerToken)).Replace(tsProgressConfig)
	return writeFile(t, "tools.yaml", text), pidFile
}

// checkTSProgress runs testdata/tsclient/progress.mjs with args and checks
// what it saw: ticks.run's progress came while it ran, rate limited, with
// the bytes so far and the latest line; the aborted hang.run call rejected
// in the client, its process group is gone and the trail records it as
// canceled while the server still runs; and the session goes on. stop
// stops the server, if the script does not; the trail is verified after.
func checkTSProgress(t *testing.T, node, pidFile, trail string, stop func(), args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"progress.mjs"}, args...)...)
	cmd.Dir = tsClientDir
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 4<<20)
	require.True(t, lines.Scan(), "the client printed nothing: %v; stderr: %s", lines.Err(), stderr)
	var got tsProgressRun
	require.NoError(t, json.Unmarshal(lines.Bytes(), &got), "%s", lines.Bytes())

	assert.JSONEq(t, "null", string(got.Tasks), "no tasks capability: calls are not run as tasks")
	checkTicksProgress(t, got)

	// The aborted call.
	assert.True(t, got.Aborted)
	assert.Equal(t, 1, got.HangProgress, "aborted at its first progress, and no progress after")
	assert.Empty(t, got.Hang.Result, "the aborted call's promise rejected")
	assert.Contains(t, got.Hang.Message, "AbortError", "rejected as aborted (code %d)", got.Hang.Code)
	pids := readPIDs(t, pidFile)
	for _, pid := range pids {
		assert.Eventually(t, func() bool { return !alive(pid) }, 20*time.Second, 20*time.Millisecond,
			"process %d of the aborted call's group still runs", pid)
	}
	var canceled []audit.Entry
	assert.Eventually(t, func() bool {
		canceled = canceled[:0]
		for _, e := range trailEntries(t, trail) {
			if e.Name == "hang.run" && e.Phase == execgate.PhaseOutcome && e.Termination == execgate.TerminationCanceled {
				canceled = append(canceled, e)
			}
		}
		return len(canceled) == 1
	}, 20*time.Second, 20*time.Millisecond, "the trail records the aborted call as canceled while the server runs")
	if len(canceled) == 1 {
		assert.Equal(t, pids[0], canceled[0].PID, "the call of the process that was stopped")
	}

	// The session goes on after the abort.
	require.NoError(t, stdin.Close())
	require.True(t, lines.Scan(), "the client stopped: %v; stderr: %s", lines.Err(), stderr)
	var end struct {
		After tsHTTPCall `json:"after"`
	}
	require.NoError(t, json.Unmarshal(lines.Bytes(), &end), "%s", lines.Bytes())
	require.False(t, end.After.IsError, "%s", end.After.StructuredContent)
	var r execgate.Result
	require.NoError(t, json.Unmarshal(end.After.StructuredContent, &r))
	assert.Equal(t, "still here\n", r.Stdout)
	require.NoError(t, cmd.Wait(), "stderr: %s", stderr)

	stop()
	code, out, errOut := runCLI(t, "", "audit", "verify", trail)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "ok:")
}

// checkTicksProgress checks the progress ticks.run gave: at least two
// notifications, fewer than the lines it printed, each while it ran, with
// progress that increases, the bytes of output so far (never fewer than
// the lines up to the latest one hold) and the latest line.
func checkTicksProgress(t *testing.T, got tsProgressRun) {
	t.Helper()
	require.False(t, got.Ticks.IsError, "%s", got.Ticks.StructuredContent)
	var r execgate.Result
	require.NoError(t, json.Unmarshal(got.Ticks.StructuredContent, &r))
	require.Equal(t, tsTicks, strings.Count(r.Stdout, "\n"), "%s", r.Stdout)

	notes := got.TicksProgress
	require.GreaterOrEqual(t, len(notes), 2, "progress while the command ran: %+v", notes)
	assert.Less(t, len(notes), tsTicks, "rate limited: fewer notifications than lines")
	last, lastBytes, lastLine := -1.0, 0, 0
	for i, n := range notes {
		assert.Greater(t, n.Progress, last, "progress increases: %+v", notes)
		last = n.Progress
		assert.Nil(t, n.Total)
		m := bytesSoFarRe.FindStringSubmatch(n.Message)
		require.NotNil(t, m, "the bytes so far in %q", n.Message)
		bytes, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		l := latestLineRe.FindStringSubmatch(n.Message)
		require.NotNil(t, l, "the latest line in %q", n.Message)
		tick := tickLineRe.FindStringSubmatch(l[1])
		require.NotNil(t, tick, "a line the command printed: %q", l[1])
		line, err := strconv.Atoi(tick[1])
		require.NoError(t, err)
		assert.GreaterOrEqual(t, bytes, lastBytes, "bytes so far never decrease")
		assert.GreaterOrEqual(t, line, lastLine, "the latest line moves on")
		assert.GreaterOrEqual(t, bytes, tickBytes(line), "%q: the bytes so far hold the latest line", n.Message)
		if i == 0 {
			assert.Less(t, line, tsTicks, "the first progress came while the command ran: %q", n.Message)
		}
		lastBytes, lastLine = bytes, line
	}
}

// tickBytes is how many bytes ticks.run has printed by the end of line n.
func tickBytes(n int) int {
	total := 0
	for i := 1; i <= n; i++ {
		total += len(fmt.Sprintf("line %d\n", i))
	}
	return total
}

// readPIDs reads the pids hang.run wrote: its own and its child's.
func readPIDs(t *testing.T, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err, "hang.run ran")
	fields := strings.Fields(string(data))
	require.Len(t, fields, 2, "%q", data)
	pids := make([]int, len(fields))
	for i, f := range fields {
		pids[i], err = strconv.Atoi(f)
		require.NoError(t, err)
	}
	return pids
}

// trailEntries reads the audit trail at path; a last line still being
// written is left out.
func trailEntries(t *testing.T, path string) []audit.Entry {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var entries []audit.Entry
	for _, line := range strings.Split(string(data), "\n") {
		var e audit.Entry
		if json.Unmarshal([]byte(line), &e) == nil {
			entries = append(entries, e)
		}
	}
	return entries
}
