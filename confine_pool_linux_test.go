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
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/internal/confine"
)

func init() {
	// probe prints what a confined command runs under and may do: its
	// working directory, capabilities, no_new_privs, system call filter
	// and descriptors, and whether it can write args[0] (outside its
	// write paths), change the mode of args[1] (outside too) and write
	// args[2] (inside).
	moreHelpers["probe"] = func(args []string) int {
		wd, _ := os.Getwd()
		fmt.Println("wd", wd)
		f, err := os.Open("/proc/self/status")
		if err != nil {
			return helperFail(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), ":")
			if strings.HasPrefix(k, "Cap") || k == "NoNewPrivs" || k == "Seccomp" || k == "Seccomp_filters" {
				fmt.Println(k, strings.TrimSpace(v))
			}
		}
		f.Close()
		fds, _ := os.ReadDir("/proc/self/fd")
		var names []string
		for _, e := range fds {
			names = append(names, e.Name())
		}
		fmt.Println("fds", len(names)) // the directory's own descriptor included
		dev, _ := os.ReadFile("/proc/net/dev")
		var ifaces []string
		for _, line := range strings.Split(string(dev), "\n")[2:] {
			if name, _, ok := strings.Cut(line, ":"); ok {
				ifaces = append(ifaces, strings.TrimSpace(name))
			}
		}
		slices.Sort(ifaces)
		fmt.Println("interfaces", strings.Join(ifaces, " "))
		fmt.Println("write outside:", os.WriteFile(helperArg(args, 0), []byte("x"), 0o644) == nil)
		fmt.Println("chmod outside:", os.Chmod(helperArg(args, 1), 0o777) == nil)
		fmt.Println("write inside:", os.WriteFile(helperArg(args, 2), []byte("x"), 0o644) == nil)
		return 0
	}
}

// warmUp runs spec once, so that the pool starts helpers of its kind, and
// waits until they are ready.
func warmUp(t *testing.T, spec CommandSpec) {
	t.Helper()
	res := runSpec(t, spec)
	require.True(t, res.OK, "%+v", res)
	key := warmKey{namespacesFor(spec.Confine), os.Geteuid(), os.Getegid()}
	require.Eventually(t, func() bool {
		warmHelpers.mu.Lock()
		defer warmHelpers.mu.Unlock()
		k := warmHelpers.kinds[key]
		return k != nil && len(k.idle) == warmPerKind
	}, 20*time.Second, 5*time.Millisecond, "no warm helper was made ready")
}

// runWarmSpec runs spec on a warm helper, and fails if it did not.
func runWarmSpec(t *testing.T, spec CommandSpec) Result {
	t.Helper()
	warmUp(t, spec)
	before := warmHelpers.handed.Load()
	res := runSpec(t, spec)
	require.Equal(t, before+1, warmHelpers.handed.Load(), "the call was not handed to a warm helper")
	return res
}

// runColdSpec runs spec with no warm helpers.
func runColdSpec(t *testing.T, spec CommandSpec) Result {
	t.Helper()
	warmHelpers.setOff(true)
	defer warmHelpers.setOff(false)
	before := warmHelpers.handed.Load()
	res := runSpec(t, spec)
	require.Equal(t, before, warmHelpers.handed.Load())
	return res
}

// TestConfinement_WarmAndColdStartsConfineAlike runs the same confined
// probe on a helper started for it and on a warm one: what it runs under
// and what it may do are the same, word for word.
//
// Invariant 13 of DESIGN.md.
func TestConfinement_WarmAndColdStartsConfineAlike(t *testing.T) {
	for _, c := range []struct {
		name    string
		network bool
	}{
		{"with the network", true},
		{"without the network", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !requireSupport(t, true, !c.network) {
				return
			}
			dir, out := t.TempDir(), t.TempDir()
			canary := filepath.Join(out, "canary")
			require.NoError(t, os.WriteFile(canary, []byte("canary"), 0o600))
			spec := selfSpec(t, "probe", filepath.Join(out, "new"), canary, filepath.Join(dir, "inside"))
			spec.Name, spec.Dir = "probe", dir
			spec.Confine = &Confinement{Read: []string{"/"}, Write: []string{dir}, Network: c.network}
			cold := runColdSpec(t, spec)
			require.True(t, cold.OK, "%+v", cold)
			require.NoError(t, os.Remove(filepath.Join(dir, "inside")))
			warm := runWarmSpec(t, spec)
			require.True(t, warm.OK, "%+v", warm)
			assert.Equal(t, cold.Stdout, warm.Stdout)
			assert.Equal(t, cold.Unconfined, warm.Unconfined)
			if !c.network {
				assert.Contains(t, warm.Stdout, "interfaces lo\n", "without the network, only a loopback interface")
			}
			for _, want := range []string{"wd " + dir + "\n", "CapEff\t0000000000000000", "NoNewPrivs 1", "Seccomp 2",
				"write outside: false", "chmod outside: false", "write inside: true"} {
				assert.Contains(t, strings.ReplaceAll(warm.Stdout, "CapEff ", "CapEff\t"), want)
			}
			fi, err := os.Stat(canary)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the canary's mode did not change")
		})
	}
}

// TestConfinement_AWarmHelpersCommandReadsItsStdin: stdin, when a call
// has one, is handed to the warm helper with stdout and stderr.
func TestConfinement_AWarmHelpersCommandReadsItsStdin(t *testing.T) {
	if !requireSupport(t, true, true) {
		return
	}
	spec := CommandSpec{Name: "cat", Command: lookTool(t, "cat"), Dir: "/", Timeout: 30 * time.Second,
		Args:    Flags(FlagSpec{Stdin: &StdinSpec{}}),
		Confine: &Confinement{Read: []string{"/"}}}
	a, err := NewAllowlist(spec)
	require.NoError(t, err)
	x, err := NewExecutor(Config{Allowlist: a})
	require.NoError(t, err)
	run := func(in string) Result {
		res, err := x.Run(context.Background(), "cat", json.RawMessage(`{"stdin":`+strconv.Quote(in)+`}`))
		require.NoError(t, err)
		require.True(t, res.OK, "%+v", res)
		return res
	}
	run("first")
	require.Eventually(t, func() bool { return len(warmHelperPIDs()) >= warmPerKind }, 20*time.Second, 5*time.Millisecond)
	before := warmHelpers.handed.Load()
	assert.Equal(t, "handed over", run("handed over").Stdout)
	assert.Equal(t, before+1, warmHelpers.handed.Load(), "the call was handed to a warm helper")
}

// TestConfinement_WarmHelpersSeeTheMountsOfNow: a warm helper's mount
// namespace is a copy made when it started. A filesystem mounted after
// that retires it, so the next call sees what is mounted now, not the
// directory underneath.
//
// Invariant 13 of DESIGN.md.
func TestConfinement_WarmHelpersSeeTheMountsOfNow(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a filesystem takes root; the CI runs these tests as root")
	}
	cat := lookTool(t, "cat")
	dir := t.TempDir()
	spec := CommandSpec{Name: "cat", Command: cat, Args: Fixed(filepath.Join(dir, "inside")), Dir: "/",
		Confine: &Confinement{Read: []string{"/"}, Network: true}}
	if !requireSupport(t, true, false) {
		return
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "inside"), []byte("underneath"), 0o644))
	warmUp(t, spec)
	require.NoError(t, syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"))
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	require.NoError(t, os.WriteFile(filepath.Join(dir, "inside"), []byte("mounted"), 0o644))
	res := runSpec(t, spec)
	require.True(t, res.OK, "%+v", res)
	assert.Equal(t, "mounted", res.Stdout, "the call sees the filesystem mounted now")

	// Unmounted again: the directory underneath, again.
	require.NoError(t, syscall.Unmount(dir, 0))
	warmUp(t, spec)
	res = runSpec(t, spec)
	require.True(t, res.OK, "%+v", res)
	assert.Equal(t, "underneath", res.Stdout)
}

// TestConfinement_AWarmHelperThatDiedIsNotUsed kills the warm helpers
// while they wait: the next call starts its own and runs.
func TestConfinement_AWarmHelperThatDiedIsNotUsed(t *testing.T) {
	spec := CommandSpec{Name: "true", Command: lookTool(t, "true"), Args: Fixed(), Dir: "/",
		Confine: &Confinement{Read: []string{"/"}, Network: true}}
	if !requireSupport(t, true, false) {
		return
	}
	warmUp(t, spec)
	for _, pid := range warmHelperPIDs() {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	// Dead, not yet reaped: zombies until their keepers see them go.
	time.Sleep(50 * time.Millisecond)
	res := runSpec(t, spec)
	assert.True(t, res.OK, "%+v", res)
}

// TestConfinement_CloseIdleConfinementHelpersLeavesNoProcess: the helpers
// kept for the next call are this process's children until
// CloseIdleConfinementHelpers ends them; then none is left.
func TestConfinement_CloseIdleConfinementHelpersLeavesNoProcess(t *testing.T) {
	spec := CommandSpec{Name: "true", Command: lookTool(t, "true"), Args: Fixed(), Dir: "/",
		Confine: &Confinement{Read: []string{"/"}, Network: true}}
	if !requireSupport(t, true, false) {
		return
	}
	warmUp(t, spec)
	require.GreaterOrEqual(t, len(warmHelperPIDs()), warmPerKind)
	CloseIdleConfinementHelpers()
	assert.Empty(t, warmHelperPIDs())
	for _, pid := range childPIDsWithMarker(t, confine.WarmMarker) {
		t.Errorf("a warm helper is still running: %d", pid)
	}
}

// warmHelperPIDs lists the idle warm helpers of the pool.
func warmHelperPIDs() []int {
	warmHelpers.mu.Lock()
	defer warmHelpers.mu.Unlock()
	var pids []int
	for _, k := range warmHelpers.kinds {
		for _, h := range k.idle {
			pids = append(pids, h.cmd.Process.Pid)
		}
	}
	return pids
}

// childPIDsWithMarker lists the living children of this process whose
// argv holds marker (other test binaries may be running theirs).
func childPIDsWithMarker(t *testing.T, marker string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		argv, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !slices.Contains(strings.Split(string(argv), "\x00"), marker) {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, not ')'.
		var ppid int
		if _, err := fmt.Sscanf(string(stat[strings.LastIndexByte(string(stat), ')')+1:]), " %c %d", new(byte), &ppid); err != nil || ppid != os.Getpid() {
			continue
		}
		if processRunning(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestWarmPool_PickTakesTheNewestOfTheGenerationOnce: of the idle
// helpers of a kind, a call gets the newest one of the mount table's
// current generation, each other current one stays idle exactly once, and
// the older ones are retired, however many there are.
func TestWarmPool_PickTakesTheNewestOfTheGenerationOnce(t *testing.T) {
	mk := func(gens ...uint64) []*warmHelper {
		var hs []*warmHelper
		for _, g := range gens {
			hs = append(hs, &warmHelper{gen: g})
		}
		return hs
	}
	for _, c := range []struct {
		name          string
		idle          []*warmHelper
		got           int // index in idle, -1 for none
		keep, retired []int
	}{
		{"none idle: nothing to take", mk(), -1, nil, nil},
		{"one current: taken", mk(5), 0, nil, nil},
		{"three current: the newest taken, the others kept in order", mk(5, 5, 5), 2, []int{0, 1}, nil},
		{"an older one is retired, not taken", mk(5, 4), 0, nil, []int{1}},
		{"only older ones: all retired, none taken", mk(3, 4, 4), -1, nil, []int{2, 1, 0}},
		{"mixed", mk(5, 4, 5, 3, 5), 4, []int{0, 2}, []int{3, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := slices.Clone(c.idle)
			got, keep, retired := pick(c.idle, 5)
			assert.Equal(t, before, c.idle, "idle is left as it was")
			if c.got < 0 {
				assert.Nil(t, got)
			} else {
				assert.Same(t, c.idle[c.got], got)
			}
			var wantKeep, wantRetired []*warmHelper
			for _, i := range c.keep {
				wantKeep = append(wantKeep, c.idle[i])
			}
			for _, i := range c.retired {
				wantRetired = append(wantRetired, c.idle[i])
			}
			assert.Equal(t, wantKeep, keep)
			assert.Equal(t, wantRetired, retired)
			seen := map[*warmHelper]int{}
			for _, h := range append(append(slices.Clone(keep), retired...), got) {
				if h != nil {
					seen[h]++
				}
			}
			for h, n := range seen {
				assert.Equal(t, 1, n, "helper %p has one fate", h)
			}
			assert.Len(t, seen, len(c.idle), "no helper is lost")
		})
	}
}

// TestWarmPool_ConcurrentClosesLeaveThePoolOn: however the ends of idle
// helpers interleave, the pool makes helpers again afterwards.
func TestWarmPool_ConcurrentClosesLeaveThePoolOn(t *testing.T) {
	spec := CommandSpec{Name: "true", Command: lookTool(t, "true"), Args: Fixed(), Dir: "/",
		Confine: &Confinement{Read: []string{"/"}, Network: true}}
	if !requireSupport(t, true, false) {
		return
	}
	for range 10 {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(CloseIdleConfinementHelpers)
		}
		wg.Wait()
		warmUp(t, spec)
	}
}

func init() {
	// "warmgate": a gate that keeps warm helpers, hands a confined
	// "sleep" of a minute to one of them, and writes to args[0] the
	// process IDs of every helper it holds, the running call's among them.
	moreHelpers["warmgate"] = func(args []string) int {
		sleep, err := systemProgram("sleep")
		if err != nil {
			return helperFail(err)
		}
		a, err := NewAllowlist(CommandSpec{Name: "hold", Command: sleep, Args: Fixed("60"), Dir: "/",
			Timeout: 2 * time.Minute, Confine: &Confinement{Read: []string{"/"}, Network: true}})
		if err != nil {
			return helperFail(err)
		}
		x, err := NewExecutor(Config{Allowlist: a})
		if err != nil {
			return helperFail(err)
		}
		key := warmKey{namespacesFor(&Confinement{Network: true}), os.Geteuid(), os.Getegid()}
		idle := func() []int {
			warmHelpers.mu.Lock()
			defer warmHelpers.mu.Unlock()
			var pids []int
			if k := warmHelpers.kinds[key]; k != nil {
				for _, h := range k.idle {
					pids = append(pids, h.cmd.Process.Pid)
				}
			}
			return pids
		}
		// The first call starts helpers of its kind; it is ended at once.
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		x.Run(ctx, "hold", nil)
		cancel()
		for len(idle()) < warmPerKind {
			time.Sleep(5 * time.Millisecond)
		}
		before := idle()
		go x.Run(context.Background(), "hold", nil)
		for warmHelpers.handed.Load() == 0 || len(idle()) < warmPerKind {
			time.Sleep(5 * time.Millisecond)
		}
		var out []string
		for _, pid := range append(before, idle()...) {
			out = append(out, strconv.Itoa(pid))
		}
		if err := os.WriteFile(args[0]+".tmp", []byte(strings.Join(out, " ")), 0o600); err != nil {
			return helperFail(err)
		}
		if err := os.Rename(args[0]+".tmp", args[0]); err != nil {
			return helperFail(err)
		}
		time.Sleep(time.Minute)
		return 0
	}
}

// TestRecordIsTrue_NoWarmHelperOutlivesTheGate kills, with SIGKILL, a
// gate that holds idle warm helpers and runs a call handed to one: the
// call's command and every helper are gone at once.
//
// Invariants 11 and 13 of DESIGN.md.
func TestRecordIsTrue_NoWarmHelperOutlivesTheGate(t *testing.T) {
	if !requireSupport(t, true, false) {
		return
	}
	pidFile := filepath.Join(t.TempDir(), "pids")
	cmd := exec.Command(procTestBinary(t), pidFile)
	cmd.Env = []string{helperEnv + "=warmgate", procRaceEnv + "=" + procRaceEnvValue}
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	exited := false
	defer func() {
		if !exited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	var pids []int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			require.NoError(t, err)
			pids = append(pids, pid)
		}
		return true
	}, 30*time.Second, 20*time.Millisecond)
	require.Len(t, pids, 2*warmPerKind, "two helpers before the call, and two after it took one")
	for _, pid := range pids {
		defer syscall.Kill(pid, syscall.SIGKILL) // should the test fail
		require.True(t, processRunning(pid), "process %d runs before the gate is killed", pid)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	exited = true
	for _, pid := range pids {
		assert.Eventually(t, func() bool { return !processRunning(pid) }, 10*time.Second, 10*time.Millisecond,
			"process %d still runs after its gate was killed", pid)
	}
}

// TestConfinement_AWarmCallIsSupervisedByOnePoll: a call handed to a warm
// helper is supervised as an unconfined one is, by the calling goroutine
// alone (one poll over the pipes, the helper's pidfd and the context),
// without reader goroutines; and a cancellation still ends it, canceled.
func TestConfinement_AWarmCallIsSupervisedByOnePoll(t *testing.T) {
	if !requireSupport(t, true, true) {
		return
	}
	confinement := &Confinement{Read: []string{"/"}}
	warmUp(t, CommandSpec{Command: lookTool(t, "true"), Dir: "/", Confine: confinement})
	spec := CommandSpec{Name: "sleep", Command: lookTool(t, "sleep"), Dir: "/", Timeout: time.Minute,
		Args: Fixed("60"), Confine: confinement}
	a, err := NewAllowlist(spec)
	require.NoError(t, err)
	x, err := NewExecutor(Config{Allowlist: a})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := warmHelpers.handed.Load()
	done := make(chan Result, 1)
	go func() {
		res, _ := x.Run(ctx, "sleep", nil)
		done <- res
	}()
	stacks := func() string {
		b := make([]byte, 1<<20)
		return string(b[:runtime.Stack(b, true)])
	}
	require.Eventually(t, func() bool { return strings.Contains(stacks(), "execgate.superviseLoop(") },
		20*time.Second, 5*time.Millisecond, "the handed call is not supervised by the poll loop")
	assert.Equal(t, before+1, warmHelpers.handed.Load(), "the call was handed to a warm helper")
	assert.NotContains(t, stacks(), "execgate.drain(", "the call has reader goroutines")
	cancel()
	res := <-done
	assert.Equal(t, TerminationCanceled, res.Termination, "%+v", res)
	assert.False(t, res.OK)
}

// TestBoundedEverything_AWarmCallKeepsEveryLimit runs confined calls
// handed to a warm helper, which the calling goroutine's one poll
// supervises with the helper as the leader, against each of their
// limits: the exit status and output are the command's, the timeout and
// silence kill it with their own termination and keep what it wrote,
// and output beyond MaxOutput is counted as dropped. A wiring mistake of
// that supervision (the wrong pidfd, the wrong descriptors, a limit left
// out) would show in one of them.
//
// Invariant 6 of DESIGN.md, and 13.
func TestBoundedEverything_AWarmCallKeepsEveryLimit(t *testing.T) {
	if !requireSupport(t, true, true) {
		return
	}
	confinement := &Confinement{Read: []string{"/"}}
	spec := func(name, mode string, args ...string) CommandSpec {
		s := procSpec(t, name, mode, args...)
		s.Dir, s.Confine = "/", confinement
		return s
	}
	for _, tc := range []struct {
		name  string
		spec  CommandSpec
		check func(t *testing.T, res Result)
	}{
		{"the exit status and the output are the command's", spec("exit", "exit", "3"), func(t *testing.T, res Result) {
			assert.Equal(t, TerminationExit, res.Termination, res.Stderr)
			assert.Equal(t, 3, res.ExitCode)
			assert.False(t, res.OutputIncomplete)
		}},
		{"the timeout kills it and keeps what it wrote", func() CommandSpec {
			s := spec("silent", "silent", "hello", "1m")
			s.Timeout = 300 * time.Millisecond
			return s
		}(), func(t *testing.T, res Result) {
			assert.Equal(t, TerminationTimeout, res.Termination, res.Stderr)
			assert.Equal(t, "SIGKILL", res.Signal)
			assert.Equal(t, "hello\n", res.Stdout)
		}},
		{"silence kills it and keeps what it wrote", func() CommandSpec {
			s := spec("silent", "silent", "hello", "1m")
			s.NoOutputTimeout = 300 * time.Millisecond
			return s
		}(), func(t *testing.T, res Result) {
			assert.Equal(t, TerminationNoOutputTimeout, res.Termination, res.Stderr)
			assert.Equal(t, "SIGKILL", res.Signal)
			assert.Equal(t, "hello\n", res.Stdout)
		}},
		{"output beyond MaxOutput is counted, not kept", func() CommandSpec {
			s := CommandSpec{Name: "head", Command: lookTool(t, "head"), Dir: "/", Confine: confinement,
				Args: Fixed("-c", "100000", "/dev/zero"), MaxOutput: 1000, Timeout: 20 * time.Second}
			return s
		}(), func(t *testing.T, res Result) {
			assert.Equal(t, TerminationExit, res.Termination, res.Stderr)
			assert.Len(t, res.Stdout, 1000)
			assert.Equal(t, int64(99000), res.StdoutDropped)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			warmUp(t, CommandSpec{Command: lookTool(t, "true"), Dir: "/", Confine: confinement})
			before := warmHelpers.handed.Load()
			res := runSpec(t, tc.spec)
			require.Equal(t, before+1, warmHelpers.handed.Load(), "the call was not handed to a warm helper")
			tc.check(t, res)
		})
	}
}
