//go:build linux

package execgate

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// fdPressureEnv, set to 1, makes the test binary run the descriptor
// pressure tests themselves, in a process of their own whose limit of open
// descriptors they lower, so that the limit of the process running the
// other tests stays untouched.
const fdPressureEnv = "EXECGATE_TEST_FD_PRESSURE"

// fdSpare is how many descriptors the pressure tests leave above what the
// process has open when they start.
const fdSpare = 64

// runInFDPressureProcess runs the calling test again in a new process of
// the test binary with fdPressureEnv set, and reports whether this is that
// process (the caller then does its work); otherwise it checks that the
// test passed there.
func runInFDPressureProcess(t *testing.T) bool {
	t.Helper()
	if os.Getenv(fdPressureEnv) == "1" {
		openFDs, err := os.ReadDir("/proc/self/fd")
		require.NoError(t, err)
		limit := uint64(len(openFDs) + fdSpare)
		var old unix.Rlimit
		require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &old))
		require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: min(limit, old.Cur), Max: old.Max}))
		return true
	}
	cmd := exec.Command(procTestBinary(t), "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), fdPressureEnv+"=1", procRaceEnv+"="+procRaceEnvValue)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "--- PASS: "+t.Name(), "%s", out)
	return false
}

// exhaustFDs opens the null device until this process has no descriptor
// left, and returns the descriptors it opened.
func exhaustFDs() []int {
	var held []int
	for {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return held
		}
		held = append(held, fd)
	}
}

func closeHeld(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// exhaustingContext is a context that can be done but never is, and that
// takes every free descriptor of the process the first time it is asked
// for its Done channel, which a call does when it begins to watch it.
type exhaustingContext struct {
	context.Context
	once sync.Once
	held []int
}

func (c *exhaustingContext) Done() <-chan struct{} {
	c.once.Do(func() { c.held = exhaustFDs() })
	return c.Context.Done()
}

// checkRecordIsTrue fails t when out says more than happened under
// descriptor pressure: a call whose context was not done is never
// recorded canceled, and a call that could not start says so and names no
// process.
func checkRecordIsTrue(t *testing.T, call string, ctx context.Context, out Outcome) {
	t.Helper()
	if ctx.Err() == nil {
		assert.NotEqual(t, TerminationCanceled, out.Termination, "%s: its context was not done, but the record says canceled (PID %d, %s)", call, out.PID, out.Signal)
	}
	if out.Err != nil {
		assert.Zero(t, out.PID, "%s: a spawn error names no process", call)
		return
	}
	if out.Termination == TerminationExit {
		assert.Equal(t, "ran\n", string(out.Stdout), "%s: a call that ran to its end kept its output", call)
	}
}

// Invariant 11 of DESIGN.md: the record is true, also when this process
// runs out of descriptors. A call whose context was never done is never
// recorded as canceled: if it cannot get what it needs to watch its
// context, it is refused before anything runs, with a spawn error.
func TestRecordIsTrue_CanceledOnlyWhenTheContextWasDone(t *testing.T) {
	if !runInFDPressureProcess(t) {
		return
	}
	inv := procInvocation(t, "echo", "ran")
	// The first call starts the watchdog while descriptors are free.
	require.NoError(t, defaultExecFn(t.Context(), inv).Err)

	t.Run("descriptors run out as the call begins to watch its context: it does not start", func(t *testing.T) {
		base, cancel := context.WithCancel(t.Context())
		defer cancel()
		ctx := &exhaustingContext{Context: base}
		out := defaultExecFn(ctx, inv)
		closeHeld(ctx.held)
		require.NotEmpty(t, ctx.held, "the call asked for its context's Done channel")
		checkRecordIsTrue(t, "the call", ctx, out)
	})

	for _, path := range []struct {
		name   string
		polled bool
	}{{"polled", true}, {"general", false}} {
		t.Run("another goroutine takes and frees descriptors around each call: "+path.name, func(t *testing.T) {
			if !path.polled {
				saved := polledSupervision
				polledSupervision = func() bool { return false }
				t.Cleanup(func() { polledSupervision = saved })
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			outcomes := map[string]int{}
			defer func() { t.Logf("outcomes: %v", outcomes) }()
			for i := range 100 {
				var mu sync.Mutex
				held := exhaustFDs()
				stop := make(chan struct{})
				var wg sync.WaitGroup
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						if fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
							mu.Lock()
							held = append(held, fd)
							mu.Unlock()
						}
						runtime.Gosched()
					}
				})
				// A few descriptors are freed, fewer or more than a
				// start needs, for the call and the goroutine to race
				// for.
				mu.Lock()
				for k := 0; k < 4+i%8 && len(held) > 0; k++ {
					unix.Close(held[len(held)-1])
					held = held[:len(held)-1]
				}
				mu.Unlock()
				time.Sleep(time.Duration(i%5) * 100 * time.Microsecond)
				out := defaultExecFn(ctx, inv)
				close(stop)
				wg.Wait()
				closeHeld(held)
				checkRecordIsTrue(t, "call "+strconv.Itoa(i), ctx, out)
				if out.Err != nil {
					outcomes["not started"]++
				} else {
					outcomes[string(out.Termination)]++
				}
			}
		})
	}

	t.Run("a context that is done is recorded canceled, under pressure too", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		held := exhaustFDs()
		out := defaultExecFn(ctx, inv)
		closeHeld(held)
		assert.Equal(t, TerminationCanceled, out.Termination, fmt.Sprint(out.Err))
	})
}
