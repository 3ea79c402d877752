//go:build linux

package execgate

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Invariant 11 of DESIGN.md: the record is true. Unconfined calls read
// their output through read buffers shared between calls (see chunkPool);
// a call's output is exactly what its command wrote, never bytes a call
// before it or beside it left in a buffer.
func TestRecordIsTrue_ReadBuffersCarryNothingOver(t *testing.T) {
	flood := procSpec(t, "flood", "flood", strconv.Itoa(200<<10), strconv.Itoa(100<<10))
	flood.MaxOutput = 150 << 10
	specs := []CommandSpec{flood}
	for i := range 8 {
		specs = append(specs, procSpec(t, "echo-"+strconv.Itoa(i), "echo", "call", strconv.Itoa(i)))
	}
	x := procExecutor(t, specs...)

	for _, tc := range []struct {
		name       string
		concurrent bool
	}{
		{"a short output after a flood is the short output alone", false},
		{"short outputs beside floods are each their own", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(i int) {
				res, err := x.Run(t.Context(), "flood", nil)
				if !assert.NoError(t, err) {
					return
				}
				assert.Equal(t, strings.Repeat("x", 150<<10), string(res.Stdout))
				assert.Equal(t, int64(50<<10), res.StdoutDropped)
				assert.Equal(t, strings.Repeat("x", 100<<10), withoutCoverageWarning(res.Stderr))

				res, err = x.Run(t.Context(), "echo-"+strconv.Itoa(i), nil)
				if !assert.NoError(t, err) {
					return
				}
				assert.Equal(t, fmt.Sprintf("call\n%d\n", i), string(res.Stdout), "the echo's stdout is its own")
				assert.Zero(t, res.StdoutDropped)
				assert.Empty(t, withoutCoverageWarning(res.Stderr), "the echo wrote nothing to stderr")
				assert.False(t, res.OutputIncomplete)
			}
			if !tc.concurrent {
				for i := range 8 {
					check(i)
				}
				return
			}
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() { check(i) })
			}
			wg.Wait()
		})
	}
}

// Invariant 6 of DESIGN.md, on both ways DefaultExecFn supervises a call
// on Linux: the poll loop of an unconfined call, and the reader
// goroutines and timers that a confined call, or a kernel without pidfds,
// takes. Each case is run on each.
func TestBoundedEverything_BothSupervisions(t *testing.T) {
	cases := []struct {
		name  string
		spec  func(t *testing.T) CommandSpec
		ctx   func(t *testing.T) context.Context
		check func(t *testing.T, res Result)
	}{
		{
			name: "an exit status and the output are the command's",
			spec: func(t *testing.T) CommandSpec { return procSpec(t, "exit", "exit", "3") },
			check: func(t *testing.T, res Result) {
				assert.Equal(t, TerminationExit, res.Termination, res.Stderr)
				assert.Equal(t, 3, res.ExitCode)
				assert.False(t, res.OutputIncomplete)
			},
		},
		{
			name: "the timeout kills the group, a grandchild holding stdout included",
			spec: func(t *testing.T) CommandSpec {
				s := procSpec(t, "group", "grandchild", "group", "sleep")
				s.Timeout = 300 * time.Millisecond
				return s
			},
			check: func(t *testing.T, res Result) {
				assert.Equal(t, TerminationTimeout, res.Termination, res.Stderr)
				assert.Equal(t, "SIGKILL", res.Signal)
				assert.Equal(t, -1, res.ExitCode)
				if res.Stdout != "" { // the grandchild may not have started in time
					requireGone(t, procPID(t, res.Stdout))
				}
			},
		},
		{
			name: "silence kills the group and keeps what was written",
			spec: func(t *testing.T) CommandSpec {
				s := procSpec(t, "silent", "silent", "hello", "1m")
				s.NoOutputTimeout = 300 * time.Millisecond
				return s
			},
			check: func(t *testing.T, res Result) {
				assert.Equal(t, TerminationNoOutputTimeout, res.Termination, res.Stderr)
				assert.Equal(t, "SIGKILL", res.Signal)
				assert.Equal(t, "hello\n", res.Stdout)
			},
		},
		{
			name: "a context done while the command runs kills the group",
			spec: func(t *testing.T) CommandSpec { return procSpec(t, "group", "grandchild", "group", "sleep") },
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
				t.Cleanup(cancel)
				return ctx
			},
			check: func(t *testing.T, res Result) {
				assert.Equal(t, TerminationCanceled, res.Termination, res.Stderr)
				assert.Equal(t, "SIGKILL", res.Signal)
				if res.Stdout != "" {
					requireGone(t, procPID(t, res.Stdout))
				}
			},
		},
		{
			name: "the leader's exit ends the call though an escaped grandchild holds stdout, which is said",
			spec: func(t *testing.T) CommandSpec { return procSpec(t, "escape", "grandchild", "setsid", "exit") },
			check: func(t *testing.T, res Result) {
				pid := procPID(t, res.Stdout)
				t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
				assert.Equal(t, TerminationExit, res.Termination, res.Stderr)
				assert.True(t, res.OK)
				assert.True(t, res.OutputIncomplete, "the grandchild could still write after the call returned")
			},
		},
	}
	for _, path := range []struct {
		name   string
		polled bool
	}{{"polled", true}, {"general", false}} {
		t.Run(path.name, func(t *testing.T) {
			if !path.polled {
				saved := polledSupervision
				polledSupervision = func() bool { return false }
				t.Cleanup(func() { polledSupervision = saved })
			} else {
				require.True(t, polledSupervision(), "this kernel has pidfds (Linux 5.3 and later)")
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					ctx := t.Context()
					if tc.ctx != nil {
						ctx = tc.ctx(t)
					}
					res, _ := procRun(t, ctx, tc.spec(t))
					tc.check(t, res)
				})
			}
		})
	}
}

// stormPoll is a pollFunc whose every wait for a limit while the leader
// runs is interrupted, as under signals that keep coming: it returns
// unix.EINTR after a millisecond. After stormGiveUp interruptions in a row
// it fails with ENOMEM instead, so that a loop that only polls again on
// EINTR ends (killed for the poll's failure) rather than hangs. Every other
// wait is ppoll's.
type stormPoll struct{ inARow int }

// stormGiveUp is far more interruptions than a 200 ms limit takes at one
// millisecond each.
const stormGiveUp = 3000

func (s *stormPoll) poll(fds []unix.PollFd, timeout *unix.Timespec) error {
	const pidIdx = 2
	if timeout == nil || fds[pidIdx].Fd < 0 {
		s.inARow = 0
		return ppoll(fds, timeout)
	}
	if s.inARow++; s.inARow > stormGiveUp {
		return unix.ENOMEM
	}
	time.Sleep(time.Millisecond)
	return unix.EINTR
}

// Invariant 6 of DESIGN.md: every limit holds. A poll interrupted by
// signals on every wait still ends the call at its limit, with that
// limit's termination, because an interrupted wait is followed by the
// limits' checks as a timeout is.
func TestBoundedEverything_LimitsHoldUnderInterruptedPolls(t *testing.T) {
	require.True(t, polledSupervision(), "this kernel has pidfds (Linux 5.3 and later)")
	for _, tc := range []struct {
		name string
		set  func(inv *Invocation)
		want Termination
	}{
		{"the timeout kills a command that waits, though every wait is interrupted",
			func(inv *Invocation) { inv.Timeout = 200 * time.Millisecond }, TerminationTimeout},
		{"the no-output timeout kills a silent command, though every wait is interrupted",
			func(inv *Invocation) { inv.NoOutputTimeout = 200 * time.Millisecond }, TerminationNoOutputTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := procInvocation(t, "silent", "hello", "1m")
			tc.set(&inv)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			k := linuxKernel
			k.poll = (&stormPoll{}).poll
			out := startPolled(t.Context(), inv, inv.Path, inv.Env, nil, inv.Timeout, inv.MaxOutput, k)
			require.NoError(t, out.Err)
			assert.Equal(t, tc.want, out.Termination)
			assert.Equal(t, "SIGKILL", out.Signal)
		})
	}
}

// Invariants 7 and 11 of DESIGN.md: always a record, and a true one. When the
// start of an unconfined call gives no pidfd of its leader, and none can
// be opened after it, the command that runs is supervised the general way
// and reported as it ran: never a spawn error with no PID for a process
// that started.
func TestRecordIsTrue_ALeaderWithoutAPidfdIsReportedAsItRan(t *testing.T) {
	require.True(t, polledSupervision(), "this kernel has pidfds (Linux 5.3 and later)")
	k := linuxKernel
	var pid int
	k.start = func(cmd *exec.Cmd) error {
		err := cmd.Start()
		if err == nil {
			pid = cmd.Process.Pid
			// As a kernel that took the clone without a pidfd.
			unix.Close(*cmd.SysProcAttr.PidFD)
			*cmd.SysProcAttr.PidFD = -1
		}
		return err
	}
	k.pidfdOpen = func(int) (int, error) { return -1, unix.EMFILE }
	for _, tc := range []struct {
		name  string
		inv   func(t *testing.T) Invocation
		check func(t *testing.T, out Outcome)
	}{
		{"a command that exits is reported with its status and output",
			func(t *testing.T) Invocation { return procInvocation(t, "exit", "3") },
			func(t *testing.T, out Outcome) {
				assert.Equal(t, TerminationExit, out.Termination)
				assert.Equal(t, 3, out.ExitCode)
			}},
		{"a command reading stdin gets it, and its output is kept",
			func(t *testing.T) Invocation {
				inv := procInvocation(t, "stdin")
				inv.Stdin = []byte("given\n")
				return inv
			},
			func(t *testing.T, out Outcome) {
				assert.Equal(t, TerminationExit, out.Termination)
				assert.Equal(t, "given\n", string(out.Stdout))
			}},
		{"a command that outlives its timeout is killed at it",
			func(t *testing.T) Invocation {
				inv := procInvocation(t, "silent", "hello", "1m")
				inv.Timeout = 200 * time.Millisecond
				return inv
			},
			func(t *testing.T, out Outcome) {
				assert.Equal(t, TerminationTimeout, out.Termination)
				assert.Equal(t, "SIGKILL", out.Signal)
				assert.Equal(t, "hello\n", string(out.Stdout))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := tc.inv(t)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			pid = 0
			out := startPolled(t.Context(), inv, inv.Path, inv.Env, nil, inv.Timeout, inv.MaxOutput, k)
			require.NoError(t, out.Err, "the command ran: it is no spawn error")
			require.NotZero(t, pid)
			assert.Equal(t, pid, out.PID, "the record names the process that ran")
			assert.False(t, out.OutputIncomplete)
			tc.check(t, out)
		})
	}
}
