//go:build linux

package execgate

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/internal/proc"
)

// The tests in this file run a gate in a child process (the test binary in
// a helper mode), so that the test can pause it or kill it the way a
// loaded machine or an operator would.

func init() {
	// "echoloop": a gate. 16 goroutines run /bin/echo WORD-N through
	// DefaultExecFn until standard input closes, then print one JSON
	// line: how many calls ran, and each that reported exit 0 with
	// output other than what echo wrote and nothing counted as dropped.
	moreHelpers["echoloop"] = func(args []string) int {
		a, err := NewAllowlist(CommandSpec{
			Name: "echo", Command: "/bin/echo",
			Args: Flags(FlagSpec{Positionals: Positionals{Max: 1, Pattern: `^word-[0-9]+$`}}),
			Dir:  "/", Timeout: time.Minute,
		})
		if err != nil {
			return helperFail(err)
		}
		x, err := NewExecutor(Config{Allowlist: a})
		if err != nil {
			return helperFail(err)
		}
		var stop atomic.Bool
		go func() {
			bufio.NewReader(os.Stdin).ReadString('\n')
			stop.Store(true)
		}()
		var calls, lost, incomplete atomic.Int64
		var wg sync.WaitGroup
		fmt.Println("running")
		for g := range 16 {
			wg.Go(func() {
				for i := 0; !stop.Load(); i++ {
					word := fmt.Sprintf("word-%d", g*1_000_000+i)
					res, err := x.Run(context.Background(), "echo", json.RawMessage(`{"args":["`+word+`"]}`))
					if err != nil {
						fmt.Fprintln(os.Stderr, err)
						continue
					}
					calls.Add(1)
					if res.OutputIncomplete {
						incomplete.Add(1)
					}
					if res.OK && res.Stdout != word+"\n" && res.StdoutDropped == 0 && !res.OutputIncomplete {
						lost.Add(1)
					}
				}
			})
		}
		wg.Wait()
		b, _ := json.Marshal(map[string]int64{"calls": calls.Load(), "lost": lost.Load(), "incomplete": incomplete.Load()})
		fmt.Println(string(b))
		return 0
	}

	// "holdgroup": a command that starts a grandchild in its own process
	// group, writes both process IDs to the file args[0], and sleeps for
	// a minute, as does the grandchild.
	moreHelpers["holdgroup"] = func(args []string) int {
		exe, err := os.Executable()
		if err != nil {
			return helperFail(err)
		}
		cmd := &exec.Cmd{Path: exe, Args: []string{exe, "1m"}, Env: []string{helperEnv + "=sleep"}}
		if err := cmd.Start(); err != nil {
			return helperFail(err)
		}
		pids := fmt.Sprintf("%d %d\n", os.Getpid(), cmd.Process.Pid)
		if err := os.WriteFile(args[0]+".tmp", []byte(pids), 0o600); err != nil {
			return helperFail(err)
		}
		if err := os.Rename(args[0]+".tmp", args[0]); err != nil {
			return helperFail(err)
		}
		time.Sleep(time.Minute)
		return 0
	}

	// "gate": a gate that runs "holdgroup" through DefaultExecFn, with the
	// pid file args[0], and waits for it.
	moreHelpers["gate"] = func(args []string) int {
		exe, err := os.Executable()
		if err != nil {
			return helperFail(err)
		}
		a, err := NewAllowlist(CommandSpec{
			Name: "hold", Command: exe, Args: Fixed(args[0]),
			Env: map[string]string{helperEnv: "holdgroup", procRaceEnv: procRaceEnvValue},
			Dir: "/", Timeout: 2 * time.Minute,
		})
		if err != nil {
			return helperFail(err)
		}
		x, err := NewExecutor(Config{Allowlist: a})
		if err != nil {
			return helperFail(err)
		}
		_, err = x.Run(context.Background(), "hold", nil)
		if err != nil {
			return helperFail(err)
		}
		return 0
	}
}

// TestRecordIsTrue_OutputSurvivesPauses pauses a busy gate for
// longer than DefaultExecFn's drain grace, again and again, as a loaded
// machine would, and checks that no call reported a successful exit with
// output missing and uncounted.
//
// Invariant 11 of DESIGN.md.
func TestRecordIsTrue_OutputSurvivesPauses(t *testing.T) {
	if testing.Short() {
		t.Skip("pauses a process for several seconds")
	}
	cmd := exec.Command(procTestBinary(t))
	cmd.Env = []string{helperEnv + "=echoloop", procRaceEnv + "=" + procRaceEnvValue}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "running\n", line)

	const pauses = 8
	for range pauses {
		time.Sleep(150 * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGSTOP))
		time.Sleep(drainGrace + 300*time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGCONT))
	}
	time.Sleep(150 * time.Millisecond)
	stdin.Close()
	line, err = out.ReadString('\n')
	require.NoError(t, err)
	var got struct{ Calls, Lost, Incomplete int64 }
	require.NoError(t, json.Unmarshal([]byte(line), &got))
	t.Logf("%d calls across %d pauses: %d lost, %d reported incomplete", got.Calls, pauses, got.Lost, got.Incomplete)
	assert.Positive(t, got.Calls)
	assert.Zero(t, got.Lost, "calls reported exit 0 with echo's output missing and not counted")
	assert.Zero(t, got.Incomplete, "echo leaves no process behind, so its output is always complete")
}

// TestRecordIsTrue_NoCommandOutlivesTheGate kills a gate with SIGKILL while
// it runs a command whose process group holds a second process, and checks
// that both are gone soon after, and so is the gate's watchdog.
//
// Invariant 11 of DESIGN.md.
func TestRecordIsTrue_NoCommandOutlivesTheGate(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pids")
	cmd := exec.Command(procTestBinary(t))
	cmd.Env = []string{helperEnv + "=gate", procRaceEnv + "=" + procRaceEnvValue}
	cmd.Args = append(cmd.Args, pidFile)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	gateExited := false
	defer func() {
		if !gateExited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()

	var pids []int
	deadline := time.Now().Add(20 * time.Second)
	for len(pids) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		b, err := os.ReadFile(pidFile)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			require.NoError(t, err)
			pids = append(pids, pid)
		}
	}
	require.Len(t, pids, 2, "the command and its grandchild started")
	for _, pid := range pids {
		defer syscall.Kill(pid, syscall.SIGKILL) // should the test fail
	}
	watchdogs := watchdogsOf(t, cmd.Process.Pid)
	assert.Len(t, watchdogs, 1, "the gate started one watchdog")

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	gateExited = true
	killed := time.Now()

	for _, pid := range append(pids, watchdogs...) {
		for !procGone(pid) && time.Since(killed) < 5*time.Second {
			time.Sleep(10 * time.Millisecond)
		}
		assert.True(t, procGone(pid), "process %d still runs after its gate was killed", pid)
	}
	t.Logf("the command's processes and the watchdog were gone %v after the gate was killed", time.Since(killed).Round(time.Millisecond))
}

// watchdogsOf returns the watchdog processes whose parent is pid.
func watchdogsOf(t *testing.T, pid int) []int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	require.NoError(t, err)
	var out []int
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !strings.Contains(string(b), proc.WatchdogMarker) {
			continue
		}
		st, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		var state string
		var ppid int
		rest := string(st[strings.LastIndexByte(string(st), ')')+1:])
		if _, err := fmt.Sscanf(rest, " %s %d", &state, &ppid); err != nil {
			continue
		}
		if ppid == pid {
			p, _ := strconv.Atoi(filepath.Base(d))
			out = append(out, p)
		}
	}
	return out
}
