//go:build linux

package proc

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func msg(op byte, pgid uint32) []byte {
	b := []byte{op, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(b[1:], pgid)
	return b
}

// sleeper starts a process in a group of its own and returns it.
func sleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// exited waits a little for cmd to end and reports whether it did.
func exited(cmd *exec.Cmd) bool {
	done := make(chan struct{})
	go func() { cmd.Process.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(2 * time.Second):
		return false
	}
}

func TestRunWatchdog_KillsWhatIsStillGuardedAtTheEnd(t *testing.T) {
	guarded, released := sleeper(t), sleeper(t)
	var in bytes.Buffer
	in.Write(msg(opGuard, uint32(guarded.Process.Pid)))
	in.Write(msg(opGuard, uint32(released.Process.Pid)))
	in.Write(msg(opRelease, uint32(released.Process.Pid)))
	assert.Equal(t, 0, runWatchdog(&in))
	assert.True(t, exited(guarded), "a group still guarded when the pipe ends is killed")
	assert.False(t, exited(released), "a released group is left alone")
}

func TestRunWatchdog_IgnoresImpossibleGroups(t *testing.T) {
	victim := sleeper(t)
	var in bytes.Buffer
	// 2^32 - pid would wrap around in kill(2) to the victim itself; 1 and
	// 0 are init and the watchdog's own group.
	in.Write(msg(opGuard, uint32(1<<32-victim.Process.Pid)))
	in.Write(msg(opGuard, 0xFFFFFFFF))
	in.Write(msg(opGuard, 1))
	in.Write(msg(opGuard, 0))
	assert.Equal(t, 0, runWatchdog(&in))
	assert.False(t, exited(victim), "no message can make the watchdog kill a process by wrapping its number")
}

func TestKillGroup_RefusesWhatKillCannotMean(t *testing.T) {
	for _, pgid := range []int{-1, 0, 1, 1 << 31, 1<<32 - 5} {
		assert.Error(t, KillGroup(pgid), "pgid %d", pgid)
	}
}

func TestGuard_NeverWaitsForAStalledWatchdog(t *testing.T) {
	// Start the watchdog with a first Guard, then stop it so that its
	// pipe fills: Guard and Release must replace it, never block.
	first := sleeper(t)
	require.NoError(t, Guard(first.Process.Pid))
	watchdog.mu.Lock()
	stalled := watchdog.proc
	watchdog.mu.Unlock()
	require.NotNil(t, stalled)
	require.NoError(t, stalled.Signal(syscall.SIGSTOP))

	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 20000 { // more messages than a pipe holds
			pgid := 100000 + i
			Guard(pgid)
			Release(pgid)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Guard or Release waited for a stalled watchdog")
	}
	watchdog.mu.Lock()
	replaced := watchdog.proc
	_, still := watchdog.guarded[first.Process.Pid]
	watchdog.mu.Unlock()
	assert.NotEqual(t, stalled.Pid, replaced.Pid, "the stalled watchdog was replaced")
	assert.True(t, still, "the group guarded before is guarded by the new watchdog")
	// The stalled one was killed and reaped: no zombie stays.
	_, err := os.Stat("/proc/" + strconv.Itoa(stalled.Pid))
	assert.True(t, os.IsNotExist(err), "the replaced watchdog is reaped")
	Release(first.Process.Pid)
}
