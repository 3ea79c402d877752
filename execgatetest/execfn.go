package execgatetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/execgate/execgate"
)

// TestExecFn checks an ExecFn that starts real processes against the
// contract documented on [execgate.ExecFn] and [execgate.Termination]: the
// argv, environment, working directory and stdin are exactly the
// Invocation's; an exit status is reported as it is; a Timeout, a
// NoOutputTimeout and a done context end the process with the matching
// termination; output is bounded to MaxOutput with the rest counted; a
// file that cannot be started, or that does not match the Invocation's
// SHA256 pin, is an Outcome error and starts nothing.
//
// Each property is a subtest named after it. It runs common Unix tools
// found on PATH (printf, env, pwd, cat, false, sleep, head, touch); a
// subtest whose tool is missing fails. An ExecFn that ignores a timeout
// or the context makes its subtest last a few seconds, not forever. Use
// it from a test of your own package:
//
//	func TestMyExecFn(t *testing.T) { execgatetest.TestExecFn(t, myExecFn) }
func TestExecFn(t *testing.T, fn execgate.ExecFn) {
	for _, c := range execFnChecks {
		t.Run(c.name, func(t *testing.T) { c.run(&execKit{t: t, fn: fn}) })
	}
}

// execFnCheck is one property of the ExecFn contract.
type execFnCheck struct {
	name string
	run  func(k *execKit)
}

// execFnChecks are the properties [TestExecFn] checks, in order.
var execFnChecks = []execFnCheck{
	{"ArgvIsExact", testArgv},
	{"EnvIsExact", testEnv},
	{"DirIsHonored", testDir},
	{"StdinIsTheInvocations", testStdin},
	{"ExitStatus", testExitStatus},
	{"Timeout", testTimeout},
	{"NoOutputTimeout", testNoOutputTimeout},
	{"Canceled", testCanceled},
	{"OutputIsBounded", testOutputBounded},
	{"SpawnError", testSpawnError},
	{"SHA256PinIsChecked", testSHA256Pin},
	{"OutputIsWatched", testOutputIsWatched},
	{"WatcherNeverBlocksTheCall", testWatcherNeverBlocks},
}

// kitSleep is how long the commands that a timeout or the context must
// end would run by themselves: long enough that ending on their own
// cannot pass for being ended, short enough that an ExecFn ignoring the
// limit costs its subtest seconds, not minutes.
const kitSleep = "3"

// kitDeadline is the Timeout, NoOutputTimeout and context deadline the
// kit sets for commands that must be ended.
const kitDeadline = 200 * time.Millisecond

// execKit is what the ExecFn checks share: where they report, the ExecFn
// under test, and helpers.
type execKit struct {
	t  reporter
	fn execgate.ExecFn
}

// tool returns the absolute path of a tool on PATH.
func (k *execKit) tool(name string) string {
	k.t.Helper()
	p, err := exec.LookPath(name)
	if err != nil || !filepath.IsAbs(p) {
		k.t.Fatalf("TestExecFn needs %s on PATH: %v", name, err)
	}
	return p
}

// inv returns an Invocation of path with args, an empty environment, "/"
// as its directory, and generous limits.
func (k *execKit) inv(path string, args ...string) execgate.Invocation {
	return execgate.Invocation{Name: "kit", Path: path, Args: args, Env: []string{}, Dir: "/",
		Timeout: 10 * time.Second, MaxOutput: 1 << 16}
}

func (k *execKit) run(in execgate.Invocation) execgate.Outcome {
	return k.fn(context.Background(), in)
}

// exited fails unless o is an exit with status code.
func (k *execKit) exited(o execgate.Outcome, code int) {
	k.t.Helper()
	if o.Err != nil || (o.Termination != "" && o.Termination != execgate.TerminationExit) || o.ExitCode != code {
		k.t.Fatalf("want an exit with status %d, got termination %q, exit code %d, error %v, stderr %q", code, o.Termination, o.ExitCode, o.Err, o.Stderr)
	}
}

func testArgv(k *execKit) {
	args := []string{"a b", "$(id)", "*", ";", "", "--x=y", "%s", `back\slash`}
	o := k.run(k.inv(k.tool("printf"), append([]string{`[%s]\n`}, args...)...))
	k.exited(o, 0)
	var want strings.Builder
	for _, a := range args {
		want.WriteString("[" + a + "]\n")
	}
	if got := string(o.Stdout); got != want.String() {
		k.t.Errorf("printf printed %q, want %q: each argument exactly as given, one each", got, want.String())
	}
}

func testEnv(k *execKit) {
	k.t.Setenv("EXECGATE_KIT_CANARY", "inherited")
	in := k.inv(k.tool("env"))
	in.Env = []string{"A=1", "B=two words"}
	o := k.run(in)
	k.exited(o, 0)
	got := strings.Split(strings.TrimSpace(string(o.Stdout)), "\n")
	slices.Sort(got)
	if !slices.Equal(got, in.Env) {
		k.t.Errorf("the child's environment has the variables %s, want exactly %s", envKeys(got), envKeys(in.Env))
	}
	in.Env = nil
	if o := k.run(in); strings.TrimSpace(string(o.Stdout)) != "" {
		k.t.Errorf("a nil Env gave the child the variables %s, want an empty environment", envKeys(strings.Split(strings.TrimSpace(string(o.Stdout)), "\n")))
	}
}

// envKeys lists the names of "KEY=value" entries: what the kit reports of
// an environment, whose values may be secrets.
func envKeys(env []string) string {
	keys := make([]string, len(env))
	for i, kv := range env {
		keys[i], _, _ = strings.Cut(kv, "=")
	}
	return strings.Join(keys, " ")
}

func testDir(k *execKit) {
	in := k.inv(k.tool("pwd"))
	in.Dir = k.t.TempDir()
	o := k.run(in)
	k.exited(o, 0)
	want, _ := filepath.EvalSymlinks(in.Dir)
	if got, _ := filepath.EvalSymlinks(strings.TrimSpace(string(o.Stdout))); got != want {
		k.t.Errorf("the child ran in %q, want %q", got, want)
	}
}

func testStdin(k *execKit) {
	in := k.inv(k.tool("cat"))
	in.Stdin = []byte("line one\nline two\n")
	o := k.run(in)
	k.exited(o, 0)
	if string(o.Stdout) != string(in.Stdin) {
		k.t.Errorf("cat printed %q, want %q", o.Stdout, in.Stdin)
	}
	in.Stdin = nil
	if o := k.run(in); len(o.Stdout) != 0 {
		k.t.Errorf("with no Stdin, cat printed %q, want nothing", o.Stdout)
	}
}

func testExitStatus(k *execKit) {
	k.exited(k.run(k.inv(k.tool("false"))), 1)
}

func testTimeout(k *execKit) {
	in := k.inv(k.tool("sleep"), kitSleep)
	in.Timeout = kitDeadline
	if o := k.run(in); o.Termination != execgate.TerminationTimeout {
		k.t.Errorf("sleep %s with a Timeout of %v: got termination %q, want %q", kitSleep, kitDeadline, o.Termination, execgate.TerminationTimeout)
	}
}

func testNoOutputTimeout(k *execKit) {
	in := k.inv(k.tool("sleep"), kitSleep)
	in.NoOutputTimeout = kitDeadline
	if o := k.run(in); o.Termination != execgate.TerminationNoOutputTimeout {
		k.t.Errorf("sleep %s with a NoOutputTimeout of %v: got termination %q, want %q", kitSleep, kitDeadline, o.Termination, execgate.TerminationNoOutputTimeout)
	}
}

func testCanceled(k *execKit) {
	ctx, cancel := context.WithTimeout(context.Background(), kitDeadline)
	defer cancel()
	if o := k.fn(ctx, k.inv(k.tool("sleep"), kitSleep)); o.Termination != execgate.TerminationCanceled {
		k.t.Errorf("sleep %s with a context done after %v: got termination %q, want %q", kitSleep, kitDeadline, o.Termination, execgate.TerminationCanceled)
	}
}

func testOutputBounded(k *execKit) {
	in := k.inv(k.tool("head"), "-c", "1000000", "/dev/zero")
	in.MaxOutput = 1000
	o := k.run(in)
	k.exited(o, 0)
	if len(o.Stdout) > in.MaxOutput || int64(len(o.Stdout))+o.StdoutDropped != 1000000 {
		k.t.Errorf("kept %d bytes and dropped %d of 1000000, want at most %d kept and the rest counted", len(o.Stdout), o.StdoutDropped, in.MaxOutput)
	}
}

func testSpawnError(k *execKit) {
	o := k.run(k.inv(filepath.Join(k.t.TempDir(), "missing")))
	if !spawnFailed(o) {
		k.t.Errorf("starting a missing file gave termination %q, exit code %d and no error", o.Termination, o.ExitCode)
	}
}

// spawnFailed reports whether o says that nothing could be started.
func spawnFailed(o execgate.Outcome) bool {
	return o.Err != nil || o.Termination == execgate.TerminationSpawnError
}

func testSHA256Pin(k *execKit) {
	touch := k.tool("touch")
	marker := filepath.Join(k.t.TempDir(), "ran")
	in := k.inv(touch, marker)
	in.SHA256 = strings.Repeat("0", 64)
	if o := k.run(in); !spawnFailed(o) {
		k.t.Errorf("a file that does not match its SHA256 pin gave termination %q and no error", o.Termination)
	}
	if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
		k.t.Errorf("a file that does not match its SHA256 pin was started: %s exists (%v)", marker, err)
	}

	b, err := os.ReadFile(touch)
	if err != nil {
		k.t.Fatalf("reading %s: %v", touch, err)
	}
	sum := sha256.Sum256(b)
	in.SHA256 = hex.EncodeToString(sum[:])
	if o := k.run(in); spawnFailed(o) {
		// A pin can only be checked on a file run as it is; a tool that
		// is a script cannot be pinned this way.
		if strings.HasPrefix(string(b), "#!") {
			return
		}
		k.t.Errorf("a file that matches its SHA256 pin did not start: %v", o.Err)
	}
	if _, err := os.Stat(marker); err != nil {
		k.t.Errorf("a file that matches its SHA256 pin did not run: %v", err)
	}
}

// testOutputIsWatched checks that a Watch on the call's context gets the
// output while it is read, in order and whole when it keeps up, and a
// heartbeat while the command runs.
func testOutputIsWatched(k *execKit) {
	var mu sync.Mutex
	var got []byte
	var next int64
	gaps, beats := 0, 0
	w := execgate.Watch{
		Output: func(c execgate.OutputChunk) {
			mu.Lock()
			defer mu.Unlock()
			if c.Stream != execgate.StreamStdout || c.Offset != next {
				gaps++
			}
			next = c.Offset + int64(len(c.Data))
			got = append(got, c.Data...)
		},
		Progress: func(execgate.Progress) { mu.Lock(); beats++; mu.Unlock() },
		Interval: 20 * time.Millisecond,
	}
	in := k.inv(k.tool("head"), "-c", "100000", "/dev/zero")
	in.MaxOutput = 1000
	o := k.fn(execgate.WithWatch(context.Background(), w), in)
	k.exited(o, 0)
	mu.Lock()
	n, g := len(got), gaps
	mu.Unlock()
	if n != 100000 || g != 0 || strings.Trim(string(got), "\x00") != "" {
		k.t.Errorf("the watcher got %d bytes of 100000 (%d out of order), want every byte in order: a watcher that keeps up loses nothing", n, g)
	}
	if int64(len(o.Stdout))+o.StdoutDropped != 100000 {
		k.t.Errorf("watched, the Outcome accounts for %d bytes of 100000, want all: watching changes nothing", int64(len(o.Stdout))+o.StdoutDropped)
	}

	o = k.fn(execgate.WithWatch(context.Background(), w), k.inv(k.tool("sleep"), "0.3"))
	k.exited(o, 0)
	mu.Lock()
	b := beats
	mu.Unlock()
	if b == 0 {
		k.t.Errorf("a command that ran 0.3s gave no heartbeat at an interval of 20ms")
	}
}

// testWatcherNeverBlocksTheCall checks that a watcher that never returns
// neither stalls the command nor keeps the call from returning, and that
// the Outcome still accounts for every byte.
func testWatcherNeverBlocks(k *execKit) {
	release := make(chan struct{})
	defer close(release)
	w := execgate.Watch{Output: func(execgate.OutputChunk) { <-release }}
	in := k.inv(k.tool("head"), "-c", "4000000", "/dev/zero")
	done := make(chan execgate.Outcome, 1)
	go func() { done <- k.fn(execgate.WithWatch(context.Background(), w), in) }()
	select {
	case o := <-done:
		k.exited(o, 0)
		if int64(len(o.Stdout))+o.StdoutDropped != 4000000 {
			k.t.Errorf("with a stuck watcher the Outcome accounts for %d bytes of 4000000, want all", int64(len(o.Stdout))+o.StdoutDropped)
		}
	case <-time.After(execgate.WatchGrace + 10*time.Second):
		k.t.Errorf("a watcher whose Output never returns kept the call from returning")
	}
}
