//go:build unix

package proc

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// helperEnv makes the test binary sleep for a minute instead of running
// the tests, so the tests have a process to work on.
const helperEnv = "PROC_TEST_HELPER"

func TestMain(m *testing.M) {
	// The watchdog that Guard starts is this test binary again.
	RunWatchdogIfRequested()
	if os.Getenv(helperEnv) == "sleep" {
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// startSleeper starts the test binary as a sleeping helper, leading its
// own process group. The process is killed and reaped at the end of the
// test if the test did not do it.
func startSleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := &exec.Cmd{
		Path:        exe,
		Args:        []string{exe},
		Env:         []string{helperEnv + "=sleep", "GORACE=atexit_sleep_ms=0"},
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd
}

func TestKillGroupKillsTheGroup(t *testing.T) {
	cmd := startSleeper(t)
	require.NoError(t, KillGroup(cmd.Process.Pid))
	err := cmd.Wait()
	require.Error(t, err)
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	assert.True(t, ws.Signaled())
	assert.Equal(t, syscall.SIGKILL, ws.Signal())

	// The group is gone now; killing it again is not an error.
	assert.NoError(t, KillGroup(cmd.Process.Pid))
}

func TestKillGroupRefusesSpecialIDs(t *testing.T) {
	// -1 and 0 would signal every process or this process's own group.
	for _, pgid := range []int{-1, 0, 1} {
		assert.Error(t, KillGroup(pgid), "pgid %d", pgid)
	}
}

func TestSignalName(t *testing.T) {
	assert.Equal(t, "SIGKILL", SignalName(syscall.SIGKILL))
	assert.Equal(t, "SIGTERM", SignalName(syscall.SIGTERM))
	assert.Equal(t, "signal 200", SignalName(syscall.Signal(200)))
}
