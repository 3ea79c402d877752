//go:build linux

package proc

import (
	"bytes"
	"encoding/binary"
	"io"
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
	assert.Equal(t, 0, runWatchdog(&in, nil))
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
	assert.Equal(t, 0, runWatchdog(&in, nil))
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

// countingReader hands out what it holds at most max bytes per Read, and
// counts the Reads that returned something.
type countingReader struct {
	data  []byte
	max   int
	reads int
}

func (r *countingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.max, len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	r.reads++
	return n, nil
}

func TestRunWatchdog_ReadsWhatWaitsInThePipeAtOnce(t *testing.T) {
	guarded, released := sleeper(t), sleeper(t)
	// A gate that runs calls back to back writes a guard and a release per
	// call; many of them wait in the pipe while the watchdog pauses.
	var in bytes.Buffer
	for i := range 1000 {
		in.Write(msg(opGuard, uint32(100000+i)))
		in.Write(msg(opRelease, uint32(100000+i)))
	}
	in.Write(msg(opGuard, uint32(guarded.Process.Pid)))
	in.Write(msg(opGuard, uint32(released.Process.Pid)))
	in.Write(msg(opRelease, uint32(released.Process.Pid)))
	r := &countingReader{data: in.Bytes(), max: 1 << 20}
	clock := &fakeClock{}
	assert.Equal(t, 0, runWatchdog(r, clock.pacer()))
	assert.LessOrEqual(t, r.reads, 4, "2,003 messages waiting are read in a few reads, not one read each")
	assert.Equal(t, r.reads-1, clock.pauses, "the watchdog pauses after each read of a busy pipe but the first")
	assert.True(t, exited(guarded), "a group still guarded when the pipe ends is killed")
	assert.False(t, exited(released), "a released group is left alone")
}

func TestRunWatchdog_MessagesSplitAcrossReads(t *testing.T) {
	// Each case hands the same messages out a few bytes at a time, so that
	// reads end inside a message.
	for _, tc := range []struct {
		name string
		max  int
	}{
		{"one byte per read: every message arrives in five pieces", 1},
		{"three bytes per read: messages straddle reads", 3},
		{"seven bytes per read: a message and a piece of the next", 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			guarded, released := sleeper(t), sleeper(t)
			var in bytes.Buffer
			in.Write(msg(opGuard, uint32(guarded.Process.Pid)))
			in.Write(msg(opGuard, uint32(released.Process.Pid)))
			in.Write(msg(opRelease, uint32(released.Process.Pid)))
			assert.Equal(t, 0, runWatchdog(&countingReader{data: in.Bytes(), max: tc.max}, nil))
			assert.True(t, exited(guarded), "the group still guarded is killed")
			assert.False(t, exited(released), "the released group is left alone")
		})
	}
}

// fakeClock is the time of a pacer under test: it moves only when the
// reader or the pacer's sleep moves it.
type fakeClock struct {
	t      time.Time
	pauses int
}

func (c *fakeClock) pacer() *pacer {
	c.t = time.Unix(1, 0)
	return &pacer{
		batch: watchdogBatch,
		now:   func() time.Time { return c.t },
		sleep: func(d time.Duration) { c.pauses++; c.t = c.t.Add(d) },
	}
}

// spacedReader returns one message per read, each after the gap given for
// it has passed on clock.
type spacedReader struct {
	clock *fakeClock
	gaps  []time.Duration
}

func (r *spacedReader) Read(p []byte) (int, error) {
	if len(r.gaps) == 0 {
		return 0, io.EOF
	}
	r.clock.t = r.clock.t.Add(r.gaps[0])
	r.gaps = r.gaps[1:]
	return copy(p, msg(opRelease, 100000)), nil
}

func TestRunWatchdog_OnlyABusyPipePaysAPause(t *testing.T) {
	const batch = watchdogBatch
	for _, tc := range []struct {
		name   string
		gaps   []time.Duration // before each read returns, since the one before (or its pause) ended
		pauses int
	}{
		{"calls spaced wider than the batch interval: every read waits, none pauses",
			[]time.Duration{50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond, batch}, 0},
		{"the first read never pauses, whatever follows",
			[]time.Duration{0}, 0},
		{"back-to-back messages: each read after the first pauses",
			[]time.Duration{0, time.Millisecond, 0, 0}, 3},
		{"a guard and its release 1 ms apart after an idle spell: one pause, for the release",
			[]time.Duration{time.Second, time.Millisecond, time.Second, time.Millisecond}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{}
			pace := clock.pacer()
			assert.Equal(t, 0, runWatchdog(&spacedReader{clock: clock, gaps: tc.gaps}, pace))
			assert.Equal(t, tc.pauses, clock.pauses)
		})
	}
}
