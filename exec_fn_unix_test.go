//go:build unix

package execgate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The tests in this file start real processes: the test binary itself,
// switched into one of the helper programs of helper_test.go by the
// EXECGATE_TEST_HELPER variable in the spec's Env.

// procTestBinary returns the absolute path of the running test binary.
func procTestBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	require.True(t, filepath.IsAbs(exe))
	return exe
}

// procRaceEnv keeps a helper built with the race detector from sleeping
// for a second before it exits with status 0 (the race runtime's
// atexit_sleep_ms), which would look like a slow process to every test.
// It is harmless without the race detector.
const procRaceEnv = "GORACE"

// procRaceEnvValue is the value of procRaceEnv in every helper's Env.
const procRaceEnvValue = "atexit_sleep_ms=0"

// procEnv is the Env of a spec that runs the test binary as helper mode.
func procEnv(mode string) map[string]string {
	return map[string]string{helperEnv: mode, procRaceEnv: procRaceEnvValue}
}

// procSpec is a spec that runs the test binary as helper mode with args.
func procSpec(t *testing.T, name, mode string, args ...string) CommandSpec {
	return CommandSpec{
		Name:    name,
		Command: procTestBinary(t),
		Args:    Fixed(args...),
		Env:     procEnv(mode),
		Timeout: 20 * time.Second,
	}
}

// procExecutor builds an Allowlist of specs and an Executor using
// DefaultExecFn.
func procExecutor(t *testing.T, specs ...CommandSpec) *Executor {
	t.Helper()
	a, err := NewAllowlist(specs...)
	require.NoError(t, err)
	x, err := NewExecutor(Config{Allowlist: a})
	require.NoError(t, err)
	return x
}

// procRun runs the single spec through an Executor and reports the Result
// and how long Run took.
func procRun(t *testing.T, ctx context.Context, spec CommandSpec) (Result, time.Duration) {
	t.Helper()
	x := procExecutor(t, spec)
	begin := time.Now()
	res, err := x.Run(ctx, spec.Name, nil)
	elapsed := time.Since(begin)
	require.NoError(t, err, "a validated call must return a Result, not an error")
	return res, elapsed
}

// procInvocation is an Invocation of the test binary as helper mode, for
// calling DefaultExecFn directly.
func procInvocation(t *testing.T, mode string, args ...string) Invocation {
	return Invocation{
		Name:      "helper." + mode,
		Path:      procTestBinary(t),
		Args:      args,
		Env:       []string{procRaceEnv + "=" + procRaceEnvValue, helperEnv + "=" + mode},
		Dir:       t.TempDir(),
		Timeout:   20 * time.Second,
		MaxOutput: DefaultMaxOutput,
	}
}

// procGone reports whether pid no longer runs: kill(pid, 0) finds no such
// process, or, on Linux, the process is a zombie. A killed grandchild is
// reparented to a process that may be slow to reap it, or never does.
func procGone(pid int) bool {
	if errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
		return true
	}
	if runtime.GOOS != "linux" {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// The state follows the command name, which is in parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}

// requireGone waits briefly for pid to be gone and fails the test if it
// is not.
func requireGone(t *testing.T, pid int) {
	t.Helper()
	require.Eventually(t, func() bool { return procGone(pid) }, 2*time.Second, 10*time.Millisecond,
		"process %d is still running", pid)
}

// procPID parses the PID a "grandchild" helper printed on its first line.
func procPID(t *testing.T, stdout string) int {
	t.Helper()
	line, _, _ := strings.Cut(stdout, "\n")
	pid, err := strconv.Atoi(line)
	require.NoError(t, err, "stdout: %q", stdout)
	require.Greater(t, pid, 1)
	return pid
}

// procCopy copies the file src to dst, executable, followed by extra
// bytes (which change its hash but not how it runs).
func procCopy(t *testing.T, src, dst string, extra []byte) {
	t.Helper()
	in, err := os.Open(src)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	_, err = out.Write(extra)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}

// procReplace atomically replaces path with a copy of src followed by
// extra, and returns the replacement's SHA-256.
func procReplace(t *testing.T, path, src string, extra []byte) string {
	t.Helper()
	tmp := path + ".new"
	procCopy(t, src, tmp, extra)
	require.NoError(t, os.Rename(tmp, path))
	return procSum(t, path)
}

// procSum returns the hex SHA-256 of the file at path.
func procSum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Invariant 5 of DESIGN.md.
func TestFixedEnvironment_EnvIsolation(t *testing.T) {
	const canary = "EXECGATE_TEST_CANARY"
	t.Setenv(canary, "inherited-by-mistake")

	t.Run("the child sees exactly the spec's Env", func(t *testing.T) {
		spec := procSpec(t, "env.exact", "env")
		spec.Env["GREETING"] = "hello world"
		spec.Env["EMPTY"] = ""
		res, _ := procRun(t, t.Context(), spec)
		require.Equal(t, TerminationExit, res.Termination, res.Stderr)
		got := strings.Split(strings.TrimSuffix(res.Stdout, "\n"), "\n")
		slices.Sort(got)
		assert.Equal(t, []string{"EMPTY=", helperEnv + "=env", procRaceEnv + "=" + procRaceEnvValue, "GREETING=hello world"}, got)
		assert.NotContains(t, res.Stdout, canary)
	})

	t.Run("a nil Env is an empty environment", func(t *testing.T) {
		spec := CommandSpec{
			Name:    "env.none",
			Command: procTestBinary(t),
			Args:    Fixed(emptyEnvHelperArg),
			Timeout: 20 * time.Second,
		}
		res, _ := procRun(t, t.Context(), spec)
		require.Equal(t, TerminationExit, res.Termination, res.Stderr)
		require.True(t, res.OK, "stdout: %s\nstderr: %s", res.Stdout, res.Stderr)
		require.Contains(t, res.Stdout, "BEGIN ENV\n", "the helper did not run")
		require.Contains(t, res.Stdout, "END ENV\n", "the helper did not run")
		assert.NotContains(t, res.Stdout, "ENV "+canary)
		for line := range strings.SplitSeq(res.Stdout, "\n") {
			assert.False(t, strings.HasPrefix(line, "ENV "), "unexpected variable: %s", line)
		}
	})

	t.Run("DefaultExecFn treats a nil Invocation.Env as empty", func(t *testing.T) {
		inv := procInvocation(t, "env")
		inv.Env = nil
		inv.Args = []string{emptyEnvHelperArg}
		out := DefaultExecFn(t.Context(), inv)
		require.NoError(t, out.Err)
		require.Contains(t, string(out.Stdout), "BEGIN ENV\n", "the helper did not run")
		assert.NotContains(t, string(out.Stdout), "ENV "+canary)
		for line := range strings.SplitSeq(string(out.Stdout), "\n") {
			assert.False(t, strings.HasPrefix(line, "ENV "), "unexpected variable: %s", line)
		}
	})
}

// Invariant 5 of DESIGN.md.
func TestFixedEnvironment_FixedDir(t *testing.T) {
	realpath := func(t *testing.T, p string) string {
		t.Helper()
		r, err := filepath.EvalSymlinks(p)
		require.NoError(t, err)
		return r
	}

	t.Run("the spec's Dir", func(t *testing.T) {
		dir := t.TempDir()
		spec := procSpec(t, "dir.fixed", "cwd")
		spec.Dir = dir
		res, _ := procRun(t, t.Context(), spec)
		require.Equal(t, TerminationExit, res.Termination, res.Stderr)
		assert.Equal(t, realpath(t, dir), realpath(t, strings.TrimSpace(res.Stdout)))
	})

	t.Run("an empty Dir is the working directory at allowlist build time", func(t *testing.T) {
		wd, err := os.Getwd()
		require.NoError(t, err)
		x := procExecutor(t, procSpec(t, "dir.default", "cwd"))
		elsewhere := t.TempDir()
		t.Chdir(elsewhere) // after the allowlist was built

		res, err := x.Run(t.Context(), "dir.default", nil)
		require.NoError(t, err)
		require.Equal(t, TerminationExit, res.Termination, res.Stderr)
		got := realpath(t, strings.TrimSpace(res.Stdout))
		assert.Equal(t, realpath(t, wd), got)
		assert.NotEqual(t, realpath(t, elsewhere), got)
	})
}

// Invariant 2 of DESIGN.md.
func TestNoShell_ArgvIsExact(t *testing.T) {
	args := []string{"two words", "$(touch pwned)", "*", "", "a;b|c&&d", "'quoted'", "tab\there", "ünï€ode"}
	spec := procSpec(t, "argv.exact", "echo", args...)
	res, _ := procRun(t, t.Context(), spec)
	require.Equal(t, TerminationExit, res.Termination, res.Stderr)
	assert.Equal(t, strings.Join(args, "\n")+"\n", res.Stdout)
}

// Invariant 6 of DESIGN.md.
func TestBoundedEverything_OutputIsBoundedWhileRead(t *testing.T) {
	const (
		total     = 200 << 20
		maxOutput = 64<<10 + 1
		errBytes  = 1000
	)
	spec := procSpec(t, "flood", "flood", strconv.Itoa(total), strconv.Itoa(errBytes))
	spec.MaxOutput = maxOutput
	x := procExecutor(t, spec)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	begin := time.Now()
	res, err := x.Run(t.Context(), "flood", nil)
	elapsed := time.Since(begin)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)

	require.Equal(t, TerminationExit, res.Termination, res.Stderr)
	assert.True(t, res.OK)
	assert.Len(t, res.Stdout, maxOutput)
	assert.Equal(t, int64(total-maxOutput), res.StdoutDropped)
	assert.Equal(t, strings.Repeat("x", errBytes), withoutCoverageWarning(res.Stderr))
	assert.Zero(t, res.StderrDropped)

	allocated := after.TotalAlloc - before.TotalAlloc
	assert.Less(t, allocated, uint64(32<<20), "allocated %d bytes while reading %d", allocated, total)
	t.Logf("read %d MiB in %v, allocating %d KiB", total>>20, elapsed, allocated>>10)
}

// Invariant 6 of DESIGN.md.
func TestBoundedEverything_CutNeverSplitsACharacter(t *testing.T) {
	const lines = 1000
	stream := strings.Repeat(helperUTF8Line, lines)
	for _, maxOutput := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 1001, 4097, 10999} {
		t.Run(strconv.Itoa(maxOutput), func(t *testing.T) {
			t.Parallel()
			inv := procInvocation(t, "utf8", strconv.Itoa(lines))
			inv.MaxOutput = maxOutput
			out := DefaultExecFn(t.Context(), inv)
			require.NoError(t, out.Err)
			require.Equal(t, TerminationExit, out.Termination, string(out.Stderr))

			got := string(out.Stdout)
			assert.True(t, utf8.ValidString(got), "cut inside a character: %q", got[max(0, len(got)-8):])
			assert.LessOrEqual(t, len(got), maxOutput)
			assert.Greater(t, len(got), maxOutput-utf8.UTFMax)
			assert.True(t, strings.HasPrefix(stream, got))
			assert.Equal(t, int64(len(stream)), int64(len(got))+out.StdoutDropped)
		})
	}
}

// Invariant 6 of DESIGN.md.
func TestBoundedEverything_ProcessGroupIsKilled(t *testing.T) {
	const timeout = 500 * time.Millisecond
	// bound is how long after the leader's end DefaultExecFn may take to
	// return: drainGrace plus slack for a loaded machine.
	const bound = 1500 * time.Millisecond
	cases := []struct {
		name    string
		args    []string // the "grandchild" helper's
		timeout time.Duration
		want    Termination
		escaped bool // the grandchild left the process group
	}{
		{"timeout kills a grandchild holding stdout", []string{"group", "sleep"}, timeout, TerminationTimeout, false},
		{"timeout returns though an escaped grandchild holds stdout", []string{"setsid", "sleep"}, timeout, TerminationTimeout, true},
		{"the leader's exit kills the rest of its group", []string{"group", "exit"}, 20 * time.Second, TerminationExit, false},
		{"the leader's exit returns though an escaped grandchild holds stdout", []string{"setsid", "exit"}, 20 * time.Second, TerminationExit, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := procSpec(t, "group", "grandchild", tc.args...)
			spec.Timeout = tc.timeout
			res, elapsed := procRun(t, t.Context(), spec)
			require.Equal(t, tc.want, res.Termination, "stderr: %s", res.Stderr)
			pid := procPID(t, res.Stdout)
			t.Logf("returned after %v", elapsed)

			if tc.want == TerminationTimeout {
				assert.Equal(t, "SIGKILL", res.Signal)
				assert.Equal(t, -1, res.ExitCode)
				assert.Less(t, elapsed, tc.timeout+bound)
			} else {
				assert.Equal(t, 0, res.ExitCode)
				// The leader exits as soon as it has started the
				// grandchild, well under a second after the start.
				assert.Less(t, elapsed, time.Second+bound)
			}
			if tc.escaped {
				t.Cleanup(func() { unix.Kill(pid, unix.SIGKILL) })
				assert.False(t, procGone(pid), "the escaped grandchild should outlive the call, or this test shows nothing")
				return
			}
			requireGone(t, pid)
		})
	}
}

// TestBoundedEverything_LeaderThatLeavesItsGroupIsStillKilled: a leader that
// moves itself into another process group of its session is out of reach
// of a group kill, so each limit must also kill the leader itself.
//
// Invariant 6 of DESIGN.md.
func TestBoundedEverything_LeaderThatLeavesItsGroupIsStillKilled(t *testing.T) {
	cases := []struct {
		name   string
		set    func(*CommandSpec)
		ctx    func(t *testing.T) context.Context
		reason Termination
	}{
		{"timeout", func(s *CommandSpec) { s.Timeout = 300 * time.Millisecond }, nil, TerminationTimeout},
		{"no-output timeout", func(s *CommandSpec) { s.NoOutputTimeout = 300 * time.Millisecond }, nil, TerminationNoOutputTimeout},
		{"cancellation", nil, func(t *testing.T) context.Context {
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			t.Cleanup(cancel)
			return ctx
		}, TerminationCanceled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := procSpec(t, "leaver", "leavegroup", "20s")
			if tc.set != nil {
				tc.set(&spec)
			}
			ctx := t.Context()
			if tc.ctx != nil {
				ctx = tc.ctx(t)
			}
			res, elapsed := procRun(t, ctx, spec)
			t.Cleanup(func() {
				if res.PID > 0 && !procGone(res.PID) {
					unix.Kill(res.PID, unix.SIGKILL)
				}
			})
			require.Equal(t, "left\n", res.Stdout, "the helper must have left its group, or this test shows nothing: %s", res.Stderr)
			assert.Equal(t, tc.reason, res.Termination)
			assert.Equal(t, "SIGKILL", res.Signal)
			assert.Less(t, elapsed, 10*time.Second, "the 20 s sleep was not cut short")
		})
	}
}

// Invariant 6 of DESIGN.md.
func TestBoundedEverything_NoOutputTimeout(t *testing.T) {
	t.Run("silence kills the group", func(t *testing.T) {
		t.Parallel()
		spec := procSpec(t, "silent", "silent", "hello", "1m")
		spec.NoOutputTimeout = 300 * time.Millisecond
		res, elapsed := procRun(t, t.Context(), spec)
		assert.Equal(t, TerminationNoOutputTimeout, res.Termination, res.Stderr)
		assert.Equal(t, "SIGKILL", res.Signal)
		assert.Equal(t, -1, res.ExitCode)
		assert.Equal(t, "hello\n", res.Stdout)
		assert.Less(t, elapsed, 3*time.Second)
	})
	t.Run("steady output keeps the process alive", func(t *testing.T) {
		t.Parallel()
		// 15 lines 100 ms apart: 1.5 s in all, never silent for 700 ms.
		spec := procSpec(t, "tick", "tick", "100ms", "15")
		spec.NoOutputTimeout = 700 * time.Millisecond
		res, _ := procRun(t, t.Context(), spec)
		assert.Equal(t, TerminationExit, res.Termination, res.Stderr)
		assert.True(t, res.OK)
		assert.Equal(t, 15, strings.Count(res.Stdout, "tick"))
	})
}

// Invariant 6 of DESIGN.md.
func TestBoundedEverything_Cancellation(t *testing.T) {
	t.Run("a done context kills the group", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		spec := procSpec(t, "group", "grandchild", "group", "sleep")
		res, elapsed := procRun(t, ctx, spec)
		require.Equal(t, TerminationCanceled, res.Termination, res.Stderr)
		assert.Equal(t, "SIGKILL", res.Signal)
		assert.Less(t, elapsed, 3*time.Second)
		if res.Stdout != "" { // the grandchild may not have started in time
			requireGone(t, procPID(t, res.Stdout))
		}
	})
	t.Run("a context done before the start starts nothing", func(t *testing.T) {
		t.Parallel()
		marker := filepath.Join(t.TempDir(), "ran")
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		res, _ := procRun(t, ctx, procSpec(t, "touch", "touch", marker))
		assert.Equal(t, TerminationCanceled, res.Termination)
		assert.Equal(t, -1, res.ExitCode)
		assert.Zero(t, res.PID)
		assert.NoFileExists(t, marker)
	})
}

// Invariant 6 of DESIGN.md.
func TestBoundedEverything_StdinNeverBlocks(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB, more than a pipe holds
	t.Run("stdin reaches the child whole", func(t *testing.T) {
		t.Parallel()
		inv := procInvocation(t, "stdin")
		inv.Stdin = big
		inv.MaxOutput = 2 << 20
		out := DefaultExecFn(t.Context(), inv)
		require.NoError(t, out.Err)
		require.Equal(t, TerminationExit, out.Termination, string(out.Stderr))
		assert.True(t, bytes.Equal(big, out.Stdout), "stdout differs from stdin")
	})
	t.Run("empty stdin is end-of-file", func(t *testing.T) {
		t.Parallel()
		out := DefaultExecFn(t.Context(), procInvocation(t, "stdin"))
		require.NoError(t, out.Err)
		assert.Equal(t, TerminationExit, out.Termination, string(out.Stderr))
		assert.Empty(t, out.Stdout)
	})
	t.Run("a child that does not read stdin", func(t *testing.T) {
		t.Parallel()
		inv := procInvocation(t, "exit", "0")
		inv.Stdin = big
		begin := time.Now()
		out := DefaultExecFn(t.Context(), inv)
		require.NoError(t, out.Err)
		assert.Equal(t, TerminationExit, out.Termination, string(out.Stderr))
		assert.Less(t, time.Since(begin), 3*time.Second)
	})
}

// Invariant 7 of DESIGN.md.
func TestAlwaysARecord_EveryEndIsARecord(t *testing.T) {
	cases := []struct {
		name        string
		mode        string
		args        []string
		timeout     time.Duration
		noOutput    time.Duration
		cancelAfter time.Duration
		want        Termination
		exitCode    int
		signal      string
	}{
		{name: "exit 0", mode: "exit", args: []string{"0"}, want: TerminationExit, exitCode: 0},
		{name: "non-zero exit", mode: "exit", args: []string{"3"}, want: TerminationExit, exitCode: 3},
		{name: "signal", mode: "sigterm", want: TerminationSignal, exitCode: -1, signal: "SIGTERM"},
		{name: "timeout", mode: "sleep", args: []string{"1m"}, timeout: 300 * time.Millisecond,
			want: TerminationTimeout, exitCode: -1, signal: "SIGKILL"},
		{name: "no-output timeout", mode: "silent", args: []string{"hi", "1m"}, noOutput: 300 * time.Millisecond,
			want: TerminationNoOutputTimeout, exitCode: -1, signal: "SIGKILL"},
		{name: "canceled", mode: "sleep", args: []string{"1m"}, cancelAfter: 300 * time.Millisecond,
			want: TerminationCanceled, exitCode: -1, signal: "SIGKILL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := procSpec(t, "end", tc.mode, tc.args...)
			if tc.timeout > 0 {
				spec.Timeout = tc.timeout
			}
			spec.NoOutputTimeout = tc.noOutput
			ctx := t.Context()
			if tc.cancelAfter > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.cancelAfter)
				defer cancel()
			}
			res, _ := procRun(t, ctx, spec)
			assert.Equal(t, tc.want, res.Termination, res.Stderr)
			assert.Equal(t, tc.exitCode, res.ExitCode)
			assert.Equal(t, tc.want == TerminationExit && tc.exitCode == 0, res.OK)
			assert.Equal(t, tc.signal, res.Signal)
			assert.Positive(t, res.PID)
			assert.Empty(t, res.SpawnError)
		})
	}
}

// Invariant 7 of DESIGN.md.
func TestAlwaysARecord_SpawnFailureIsARecord(t *testing.T) {
	const secret = "s3cr3t-env-value"
	exe := procTestBinary(t)
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	procCopy(t, exe, prog, nil)
	sum := procSum(t, prog)

	base := CommandSpec{
		Command: prog,
		Args:    Fixed(),
		Env:     map[string]string{helperEnv: "exit", procRaceEnv: procRaceEnvValue, "SECRET": secret},
	}
	vanished := base
	vanished.Name = "vanished"
	pinned := base
	pinned.Name = "vanished.pinned"
	pinned.SHA256 = sum
	badDir := base
	badDir.Name = "bad.dir"
	badDir.Command = exe
	badDir.Dir = filepath.Join(dir, "no-such-dir")
	x := procExecutor(t, vanished, pinned, badDir)
	require.NoError(t, os.Remove(prog))

	cases := []struct {
		name     string
		contains string
	}{
		{"vanished", prog},
		{"vanished.pinned", prog},
		{"bad.dir", "working directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := x.Run(t.Context(), tc.name, nil)
			require.NoError(t, err, "a spawn failure is a Result, not an error")
			assert.Equal(t, TerminationSpawnError, res.Termination)
			assert.Equal(t, -1, res.ExitCode)
			assert.False(t, res.OK)
			assert.Zero(t, res.PID)
			assert.Contains(t, res.SpawnError, tc.contains)
			assert.NotContains(t, res.SpawnError, secret)
			t.Logf("spawn error: %s", res.SpawnError)
		})
	}
}

// Invariant 3 of DESIGN.md.
func TestResolvedOnce_PinnedHash(t *testing.T) {
	exe := procTestBinary(t)

	t.Run("a matching pin runs", func(t *testing.T) {
		spec := procSpec(t, "pinned", "echo", "pinned")
		spec.SHA256 = procSum(t, exe)
		res, _ := procRun(t, t.Context(), spec)
		assert.Equal(t, TerminationExit, res.Termination, res.SpawnError+res.Stderr)
		assert.Equal(t, "pinned\n", res.Stdout)
	})

	t.Run("content replaced after NewAllowlist does not run", func(t *testing.T) {
		dir := t.TempDir()
		prog := filepath.Join(dir, "prog")
		marker := filepath.Join(dir, "ran")
		procCopy(t, exe, prog, nil)
		pinned := CommandSpec{
			Name:    "pinned",
			Command: prog,
			SHA256:  procSum(t, prog),
			Args:    Fixed(marker),
			Env:     procEnv("touch"),
		}
		unpinned := pinned
		unpinned.Name = "unpinned"
		unpinned.SHA256 = ""
		x := procExecutor(t, pinned, unpinned)
		procReplace(t, prog, exe, []byte("changed"))

		res, err := x.Run(t.Context(), "pinned", nil)
		require.NoError(t, err)
		assert.Equal(t, TerminationSpawnError, res.Termination)
		assert.Contains(t, res.SpawnError, "does not match")
		assert.Zero(t, res.PID)
		assert.NoFileExists(t, marker, "the replaced executable ran")

		// The replacement does create the marker when it runs, so its
		// absence above means something.
		res, err = x.Run(t.Context(), "unpinned", nil)
		require.NoError(t, err)
		require.Equal(t, TerminationExit, res.Termination, res.SpawnError+res.Stderr)
		assert.FileExists(t, marker)
	})
}

// Invariant 3 of DESIGN.md.
func TestResolvedOnce_PinnedHashExecutesTheHashedDescriptor(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux executes the hashed descriptor")
	}
	exe := procTestBinary(t)
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	procCopy(t, exe, prog, nil)
	sum := procSum(t, prog)

	f, err := openPinned(prog, sum)
	require.NoError(t, err)
	// Between the check and the exec, the path now names another file.
	replaced := procReplace(t, prog, exe, []byte("swapped"))
	require.NotEqual(t, sum, replaced)

	inv := procInvocation(t, "selfhash")
	inv.Path = prog
	out := runProcess(t.Context(), inv, f)
	require.NoError(t, out.Err)
	require.Equal(t, TerminationExit, out.Termination, string(out.Stderr))
	lines := strings.Split(strings.TrimSpace(string(out.Stdout)), "\n")
	require.Len(t, lines, 2)
	assert.Equal(t, sum, lines[0], "the running program is not the file that was hashed")
	assert.Equal(t, prog, lines[1], "argv[0] is the allowlisted path, not /proc/self/fd/N")
}

// Invariant 3 of DESIGN.md.
func TestResolvedOnce_PinnedDescriptorDoesNotLeak(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("lists descriptors through /proc")
	}
	exe := procTestBinary(t)
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	procCopy(t, exe, prog, nil)
	pinned := CommandSpec{
		Name:    "pinned",
		Command: prog,
		SHA256:  procSum(t, prog),
		Args:    Fixed(),
		Env:     procEnv("fds"),
	}
	plain := procSpec(t, "plain", "fds")
	x := procExecutor(t, pinned, plain)

	const each = 8
	var wg sync.WaitGroup
	results := make([]Result, 2*each)
	for i := range results {
		name := "plain"
		if i%2 == 0 {
			name = "pinned"
		}
		wg.Go(func() {
			res, err := x.Run(t.Context(), name, nil)
			assert.NoError(t, err)
			results[i] = res
		})
	}
	wg.Wait()
	for i, res := range results {
		require.Equal(t, TerminationExit, res.Termination, "call %d: %s%s", i, res.SpawnError, res.Stderr)
		require.Contains(t, res.Stdout, "0 ", "call %d listed no descriptors (exit %d, stderr %q)", i, res.ExitCode, res.Stderr)
		assert.NotContains(t, res.Stdout, prog, "call %d: a child kept the pinned executable open", i)
	}
}
