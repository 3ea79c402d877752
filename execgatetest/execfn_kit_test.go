package execgatetest

import (
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/execgate/execgate"
)

// broken returns DefaultExecFn with its Invocation changed by in and its
// Outcome by out, either of which may be nil.
func broken(in func(*execgate.Invocation), out func(*execgate.Outcome)) execgate.ExecFn {
	return func(ctx context.Context, inv execgate.Invocation) execgate.Outcome {
		if in != nil {
			in(&inv)
		}
		o := execgate.DefaultExecFn(ctx, inv)
		if out != nil {
			out(&o)
		}
		return o
	}
}

// brokenExecFns are the broken ExecFns the kit must catch.
var brokenExecFns = []brokenCase[execgate.ExecFn]{
	{"the arguments are joined into one", "an argument with a space in it stays one argument, as no shell ever splits it",
		broken(func(inv *execgate.Invocation) { inv.Args = []string{strings.Join(inv.Args, " ")} }, nil),
		[]string{"ArgvIsExact"}},
	{"empty arguments are dropped", "the command sees every argument the schema built, empty ones too",
		broken(func(inv *execgate.Invocation) {
			inv.Args = slices.DeleteFunc(slices.Clone(inv.Args), func(a string) bool { return a == "" })
		}, nil),
		[]string{"ArgvIsExact"}},
	{"the environment is inherited", "the child gets the spec's environment and nothing of the gate's, such as its credentials",
		broken(func(inv *execgate.Invocation) { inv.Env = append(os.Environ(), inv.Env...) }, nil),
		[]string{"EnvIsExact"}},
	{"a nil Env inherits, as os/exec's does", "a spec without Env runs with an empty environment, not the gate's",
		broken(func(inv *execgate.Invocation) {
			if inv.Env == nil {
				inv.Env = os.Environ()
			}
		}, nil),
		[]string{"EnvIsExact"}},
	{"Dir is ignored", "the command runs in the directory its spec fixes, not wherever the gate happens to be",
		broken(func(inv *execgate.Invocation) { inv.Dir = "" }, nil),
		[]string{"DirIsHonored"}},
	{"stdin is dropped", "the command reads the stdin that was validated and approved",
		broken(func(inv *execgate.Invocation) { inv.Stdin = nil }, nil),
		[]string{"StdinIsTheInvocations"}},
	{"the exit status is lost", "a failing command is reported as failing",
		broken(nil, func(o *execgate.Outcome) { o.ExitCode = 0 }),
		[]string{"ExitStatus"}},
	{"Timeout is ignored", "a call ends when its time is up",
		broken(func(inv *execgate.Invocation) { inv.Timeout = time.Minute }, nil),
		[]string{"Timeout"}},
	{"a timeout is reported as a signal", "the Result says why the process ended",
		broken(nil, func(o *execgate.Outcome) {
			if o.Termination == execgate.TerminationTimeout {
				o.Termination = execgate.TerminationSignal
			}
		}),
		[]string{"Timeout"}},
	{"NoOutputTimeout is ignored", "a command that has gone silent is ended",
		broken(func(inv *execgate.Invocation) { inv.NoOutputTimeout = 0 }, nil),
		[]string{"NoOutputTimeout"}},
	{"the context is ignored", "a canceled call ends its process, so a client that goes away takes its command with it",
		func(_ context.Context, inv execgate.Invocation) execgate.Outcome {
			return execgate.DefaultExecFn(context.Background(), inv)
		},
		[]string{"Canceled"}},
	{"MaxOutput is ignored", "memory stays bounded however much a command writes",
		broken(func(inv *execgate.Invocation) { inv.MaxOutput = 1 << 30 }, nil),
		[]string{"OutputIsBounded"}},
	{"dropped output is not counted", "a Result never says it kept everything when it did not",
		broken(nil, func(o *execgate.Outcome) { o.StdoutDropped = 0 }),
		[]string{"OutputIsBounded"}},
	{"a failure to start looks like an exit", "a command that never ran is not reported as one that ran and failed, as a shell's 127 would be",
		broken(nil, func(o *execgate.Outcome) {
			if o.Err != nil {
				*o = execgate.Outcome{Termination: execgate.TerminationExit, ExitCode: 127}
			}
		}),
		[]string{"SpawnError", "SHA256PinIsChecked"}},
	{"the SHA256 pin is ignored", "a pinned executable that was replaced does not run",
		broken(func(inv *execgate.Invocation) { inv.SHA256 = "" }, nil),
		[]string{"SHA256PinIsChecked"}},
	{"the call's Watch is ignored", "a caller that watches a long command sees its output as it comes",
		func(ctx context.Context, inv execgate.Invocation) execgate.Outcome {
			return execgate.DefaultExecFn(execgate.WithWatch(ctx, execgate.Watch{}), inv)
		},
		[]string{"OutputIsWatched"}},
	{"the watcher is called in line, and waited for", "a slow or stuck watcher never holds up the command or the call",
		func(ctx context.Context, inv execgate.Invocation) execgate.Outcome {
			w, _ := execgate.WatchFrom(ctx)
			o := execgate.DefaultExecFn(execgate.WithWatch(ctx, execgate.Watch{}), inv)
			if w.Output != nil {
				w.Output(execgate.OutputChunk{Stream: execgate.StreamStdout, Data: o.Stdout})
			}
			return o
		},
		[]string{"OutputIsWatched", "WatcherNeverBlocksTheCall"}},
}

func execFnCheckNames() []string {
	var names []string
	for _, c := range execFnChecks {
		names = append(names, c.name)
	}
	return names
}

// runExecFnKit runs every check of the ExecFn kit on fn and returns the
// failures of each check that failed.
func runExecFnKit(t *testing.T, fn execgate.ExecFn) map[string][]string {
	failed := map[string][]string{}
	for _, c := range execFnChecks {
		if f := runCheck(t, func(r reporter) { c.run(&execKit{t: r, fn: fn}) }); len(f) > 0 {
			failed[c.name] = f
		}
	}
	return failed
}

// kitCanary is the variable the EnvIsExact check sets in this process,
// set here because the checks run in parallel subtests.
func setKitCanary(t *testing.T) { t.Setenv("EXECGATE_KIT_CANARY", "inherited") }

func TestExecFnKit_PassesDefaultExecFn(t *testing.T) {
	setKitCanary(t)
	for check, failures := range runExecFnKit(t, execgate.DefaultExecFn) {
		t.Errorf("%s failed on DefaultExecFn: %q", check, failures)
	}
}

func TestExecFnKit_ReportsEachBrokenProperty(t *testing.T) {
	setKitCanary(t)
	// The cases run at once, whatever -parallel says: most of their time
	// is spent waiting for the commands that a timeout must end.
	results := make([]map[string][]string, len(brokenExecFns))
	var wg sync.WaitGroup
	for i, c := range brokenExecFns {
		wg.Go(func() { results[i] = runExecFnKit(t, c.impl) })
	}
	wg.Wait()
	for i, c := range brokenExecFns {
		t.Run(c.name, func(t *testing.T) {
			failed := results[i]
			for _, want := range c.want {
				if failed[want] == nil {
					t.Errorf("%s passed an ExecFn in which %s; it protects that %s", want, c.name, c.protects)
				}
			}
			t.Logf("failed: %s", strings.Join(slices.Sorted(maps.Keys(failed)), ", "))
		})
	}
}

func TestExecFnKit_EveryCheckCanFail(t *testing.T) {
	requireEveryCheckCanFail(t, execFnCheckNames(), brokenExecFns)
}
