//go:build linux

package execgate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/execgate/execgate"
)

// stressCalls is how many real processes TestConcurrentRunsLeakNothing
// starts, all at once unless the descriptor limit is too low for that.
const stressCalls = 500

// stressFDsPerCall bounds the descriptors one call holds while it runs
// (pipe ends, the pidfd or wait machinery, the child's copies during
// fork), with room to spare.
const stressFDsPerCall = 8

// stressInFlight returns how many calls may run at once: all of them, or
// as many as the soft descriptor limit leaves room for.
func stressInFlight(t *testing.T) int {
	t.Helper()
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	room := (int64(lim.Cur) - 64) / stressFDsPerCall
	return int(max(1, min(int64(stressCalls), room)))
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

// childPIDs returns the processes whose parent is this process, zombies
// included.
func childPIDs(t *testing.T) map[int]string {
	t.Helper()
	me := os.Getpid()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	require.NoError(t, err)
	kids := map[int]string{}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue // the process ended while we looked
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		var state string
		var ppid int
		if _, err := fmt.Sscanf(string(b[i+1:]), " %s %d", &state, &ppid); err != nil || ppid != me {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		kids[pid] = string(b[:i+1]) + " " + state
	}
	return kids
}

// TestConcurrentRunsLeakNothing runs 500 real processes through Run
// concurrently and checks every Result, then that no file descriptor, no
// child process (running or zombie) and no goroutine is left behind.
func TestConcurrentRunsLeakNothing(t *testing.T) {
	a, err := execgate.NewAllowlist(execgate.CommandSpec{
		Name:    "echo.call",
		Command: "/bin/echo",
		Args: execgate.Flags(execgate.FlagSpec{
			Positionals: execgate.Positionals{Max: 1, Pattern: `^call-[0-9]{1,4}$`},
		}),
		Dir:     "/",
		Timeout: 20 * time.Second,
	})
	require.NoError(t, err)
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: a})
	require.NoError(t, err)
	ctx := context.Background()
	input := func(i int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"args":["call-%d"]}`, i))
	}

	// One call first, so that what the runtime opens once (the poller)
	// is open before counting.
	res, err := x.Run(ctx, "echo.call", input(0))
	require.NoError(t, err)
	require.True(t, res.OK, "%+v", res)
	ignore := goleak.IgnoreCurrent()
	fdsBefore := openFDs(t)
	kidsBefore := childPIDs(t)

	results := make([]execgate.Result, stressCalls)
	errs := make([]error, stressCalls)
	inFlight := stressInFlight(t)
	sem := make(chan struct{}, inFlight)
	var wg sync.WaitGroup
	for i := range stressCalls {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i], errs[i] = x.Run(ctx, "echo.call", input(i))
		})
	}
	wg.Wait()

	pids := map[int]bool{}
	for i, res := range results {
		require.NoError(t, errs[i], "call %d", i)
		assert.Equal(t, execgate.TerminationExit, res.Termination, "call %d", i)
		assert.Zero(t, res.ExitCode, "call %d", i)
		assert.True(t, res.OK, "call %d", i)
		assert.Empty(t, res.SpawnError, "call %d", i)
		assert.Equal(t, fmt.Sprintf("call-%d\n", i), res.Stdout, "call %d got another call's output", i)
		assert.Empty(t, res.Stderr, "call %d", i)
		assert.Zero(t, res.StdoutDropped+res.StderrDropped, "call %d", i)
		assert.Equal(t, []string{fmt.Sprintf("call-%d", i)}, res.Args)
		assert.Positive(t, res.PID, "call %d", i)
		pids[res.PID] = true
	}
	assert.Greater(t, len(pids), 1, "every call reported the same PID")

	// Descriptors are closed and children reaped before Run returns; give
	// the runtime a moment for anything it closes asynchronously.
	const fdSlack = 2
	deadline := time.Now().Add(2 * time.Second)
	fdsAfter, kidsAfter := openFDs(t), childPIDs(t)
	for time.Now().Before(deadline) && (fdsAfter > fdsBefore+fdSlack || len(kidsAfter) > len(kidsBefore)) {
		time.Sleep(20 * time.Millisecond)
		fdsAfter, kidsAfter = openFDs(t), childPIDs(t)
	}
	assert.LessOrEqual(t, fdsAfter, fdsBefore+fdSlack, "file descriptors leaked: %d before, %d after %d calls", fdsBefore, fdsAfter, stressCalls)
	for pid, stat := range kidsAfter {
		if _, ok := kidsBefore[pid]; !ok {
			t.Errorf("child process left behind: %s", stat)
		}
	}
	goleak.VerifyNone(t, ignore)
	t.Logf("%d calls, %d in flight: fds %d -> %d, children %d -> %d", stressCalls, inFlight, fdsBefore, fdsAfter, len(kidsBefore), len(kidsAfter))
}
