//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holdConfig serves hold.run: find(1) starting /bin/sleep 30 as its own
// child, so that each call is a process group of two processes, the
// leader and a grandchild of the server.
var holdConfig = `version: 1
defaults: {timeout: 60s, env: {PATH: /usr/bin:/bin}}
tools:
  - name: hold
    bin: /usr/bin/find
    global_args: ["/", "-maxdepth", "0", "-exec", "/bin/sleep", "30", ";"]
    bare: {}
server:
  tokens:
    - {principal: ci-bot, sha256: "` + tokenHash(callerToken) + `"}
`

// procTree returns, for every process, its parent and command name.
func procTree(t *testing.T) map[int]struct {
	ppid int
	comm string
} {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	require.NoError(t, err)
	out := map[int]struct {
		ppid int
		comm string
	}{}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || close < open {
			continue
		}
		var state string
		var ppid int
		if _, err := fmt.Sscanf(string(b[close+1:]), " %s %d", &state, &ppid); err != nil || state == "Z" {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		out[pid] = struct {
			ppid int
			comm string
		}{ppid, string(b[open+1 : close])}
	}
	return out
}

// TestRecordIsTrue_NoCommandOutlivesAKilledServer kills a loaded HTTP
// server with SIGKILL and checks that no command it started, leader or
// grandchild, runs more than about a second longer, and that the audit
// trail holds an intent for every command that started.
//
// Invariant 11 of DESIGN.md.
func TestRecordIsTrue_NoCommandOutlivesAKilledServer(t *testing.T) {
	if _, err := os.Stat("/usr/bin/find"); err != nil {
		t.Fatalf("this test runs /usr/bin/find: %v", err)
	}
	path := writeFile(t, "tools.yaml", holdConfig)
	trail := filepath.Join(t.TempDir(), "audit.jsonl")
	cmd := exec.Command(binary(t), "serve", "--config", path, "--http", "127.0.0.1:0", "--audit", trail)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	base := stderr.waitFor(t, regexp.MustCompile(`serving the HTTP API on (http://127\.0\.0\.1:\d+)`))
	server := cmd.Process.Pid

	const calls = 6
	client := &http.Client{Timeout: time.Minute}
	defer client.CloseIdleConnections()
	for range calls {
		go func() {
			req, err := http.NewRequest("POST", base+"/v1/tools/hold.run", strings.NewReader(`{}`))
			if err != nil {
				return
			}
			req.Header.Set("Authorization", "Bearer "+callerToken)
			req.Header.Set("Content-Type", "application/json")
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}

	// Wait until every call runs: a find of the server's, with its sleep.
	var started []int
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		started = started[:0]
		tree := procTree(t)
		for pid, p := range tree {
			if p.comm == "sleep" && tree[p.ppid].comm == "find" && tree[p.ppid].ppid == server {
				started = append(started, pid, p.ppid)
			}
		}
		if len(started) == 2*calls {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Len(t, started, 2*calls, "every call started find and its sleep; stderr: %s", stderr)
	for _, pid := range started {
		defer syscall.Kill(pid, syscall.SIGKILL) // should the test fail
	}

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	<-exited
	killed := time.Now()
	for _, pid := range started {
		for time.Since(killed) < 3*time.Second && alive(pid) {
			time.Sleep(10 * time.Millisecond)
		}
		assert.False(t, alive(pid), "process %d still runs after the server was killed", pid)
	}
	t.Logf("the %d commands' processes were gone %v after SIGKILL", calls, time.Since(killed).Round(time.Millisecond))

	// Every command that started has its intent in the trail.
	f, err := os.Open(trail)
	require.NoError(t, err)
	defer f.Close()
	intents := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"phase":"intent"`) {
			intents++
		}
	}
	assert.Equal(t, calls, intents, "one intent per started command")
}

// alive reports whether pid still runs (a zombie does not count).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || len(b) < i+3 || b[i+2] != 'Z'
}
