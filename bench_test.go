//go:build unix

package execgate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-playground/validator/v10"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// The benchmarks behind BENCHMARKS.md. bench/run.sh runs them and
// regenerates the tables there; see that file for what each one compares.
// They start real processes (/bin/true, head, timeout and sleep from the
// system) and make no timing assertions.

// benchLookPath resolves a system tool for a benchmark.
func benchLookPath(b *testing.B, name string) string {
	b.Helper()
	p, err := exec.LookPath(name)
	require.NoError(b, err)
	return p
}

// benchExecutor builds an Executor over specs with DefaultExecFn, or with
// execFn when it is not nil.
func benchExecutor(b *testing.B, execFn execgate.ExecFn, specs ...execgate.CommandSpec) *execgate.Executor {
	b.Helper()
	a, err := execgate.NewAllowlist(specs...)
	require.NoError(b, err)
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: a, ExecFn: execFn})
	require.NoError(b, err)
	return x
}

// Check: lookup, strict decoding, validation and argv building.

// benchLogArgs is the 5-field Struct schema of BenchmarkCheck. It uses
// only validator's own tags, so that the baseline checks exactly the same
// rules.
type benchLogArgs struct {
	MaxCount int      `json:"max_count" validate:"required,min=1,max=500"`
	Author   string   `json:"author" validate:"omitempty,max=64,printascii"`
	Format   string   `json:"format" validate:"omitempty,oneof=oneline short medium full"`
	Since    string   `json:"since" validate:"omitempty,datetime=2006-01-02"`
	Paths    []string `json:"paths" validate:"max=8,dive,required,max=255"`
}

const benchStructInput = `{"max_count":20,"author":"Ann Lee","format":"oneline","since":"2024-01-02","paths":["src","docs/README.md"]}`

func buildBenchLog(in benchLogArgs) execgate.Argv {
	args := []string{"log", "--max-count", fmt.Sprint(in.MaxCount)}
	if in.Author != "" {
		args = append(args, "--author", in.Author)
	}
	if in.Format != "" {
		args = append(args, "--format", in.Format)
	}
	if in.Since != "" {
		args = append(args, "--since", in.Since)
	}
	args = append(args, "--")
	return execgate.Argv{Args: append(args, in.Paths...)}
}

// benchFlagSpec is the git-log-like Flags schema of BenchmarkCheck.
func benchFlagSpec() execgate.FlagSpec {
	one, fiveHundred := int64(1), int64(500)
	return execgate.FlagSpec{
		Leading: []string{"--no-pager", "log"},
		Flags: []execgate.Flag{
			{Name: "max-count", Short: "n", Value: execgate.ValueInt, Min: &one, Max: &fiveHundred},
			{Name: "oneline"},
			{Name: "format", Value: execgate.ValueEnum, Enum: []string{"oneline", "short", "medium", "full"}},
			{Name: "author", Value: execgate.ValuePattern, Pattern: `^[A-Za-z0-9][A-Za-z0-9 ._@-]{0,63}$`},
			{Name: "since", Value: execgate.ValuePattern, Pattern: `^[0-9]{4}-[0-9]{2}-[0-9]{2}$`},
		},
		Positionals:  execgate.Positionals{Max: 8, Pattern: `^[A-Za-z0-9_][A-Za-z0-9._/-]{0,254}$`},
		EndOfOptions: true,
	}
}

const benchFlagsInput = `{"flags":{"max-count":20,"author":"Ann Lee","format":"oneline"},"args":["--since","2024-01-02","src","docs/README.md"]}`

// benchFlagsPlain is what the Flags input decodes to in the baseline,
// with the same rules as validator tags.
type benchFlagsPlain struct {
	Flags struct {
		MaxCount int    `json:"max-count" validate:"required,min=1,max=500"`
		Author   string `json:"author" validate:"omitempty,max=64,printascii"`
		Format   string `json:"format" validate:"omitempty,oneof=oneline short medium full"`
	} `json:"flags"`
	Args []string `json:"args" validate:"max=256,dive,required,max=255,printascii"`
}

func benchCheckProposer(b *testing.B) *execgate.Proposer {
	b.Helper()
	a, err := execgate.NewAllowlist(
		execgate.CommandSpec{Name: "git.log", Command: "/bin/true", Dir: "/", Args: execgate.Struct(buildBenchLog)},
		execgate.CommandSpec{Name: "git.log-flags", Command: "/bin/true", Dir: "/", Args: execgate.Flags(benchFlagSpec())},
	)
	require.NoError(b, err)
	return execgate.NewProposer(a)
}

// BenchmarkCheckBaseline is what BenchmarkCheck is measured against: plain
// json.Unmarshal and validator.Struct of the same input into a struct with
// the same rules, and nothing else (no lookup, no strictness, no argv, no
// digest).
func BenchmarkCheckBaseline(b *testing.B) {
	v := validator.New(validator.WithRequiredStructEnabled())
	b.Run("schema=struct", func(b *testing.B) {
		in := []byte(benchStructInput)
		b.ReportAllocs()
		for b.Loop() {
			var args benchLogArgs
			if err := json.Unmarshal(in, &args); err != nil {
				b.Fatal(err)
			}
			if err := v.Struct(&args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("schema=flags", func(b *testing.B) {
		in := []byte(benchFlagsInput)
		b.ReportAllocs()
		for b.Loop() {
			var args benchFlagsPlain
			if err := json.Unmarshal(in, &args); err != nil {
				b.Fatal(err)
			}
			if err := v.Struct(&args); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCheck is Proposer.Check: allowlist lookup, size cap, strict
// decoding, validation, argv building, the argv checks and copy, and the
// proposal digest.
func BenchmarkCheck(b *testing.B) {
	p := benchCheckProposer(b)
	for _, bc := range []struct{ schema, name, input string }{
		{"struct", "git.log", benchStructInput},
		{"flags", "git.log-flags", benchFlagsInput},
	} {
		b.Run("schema="+bc.schema, func(b *testing.B) {
			in := json.RawMessage(bc.input)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Check(bc.name, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Run against plain os/exec.

// cpuMeter reports the CPU time (user and system) this process spent
// between its start and Report, per benchmark iteration, as cpu-ns/op. It
// counts the parent's own work only (children are not included), and is
// far less sensitive to other load on the machine than wall time.
type cpuMeter struct{ start time.Duration }

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPUMeter() cpuMeter { return cpuMeter{start: processCPU()} }

// Report adds the cpu-ns/op metric to b.
func (m cpuMeter) Report(b *testing.B) {
	b.ReportMetric(float64(processCPU()-m.start)/float64(b.N), "cpu-ns/op")
}

// runMeter reports what one call of the Run benchmarks costs the machine,
// per iteration:
//
//   - cpu-ns/op: the CPU time (user and system) of this process, of the
//     children it has reaped (the command itself: its exec, its run and its
//     exit) and of the gate's watchdog when one is running (see
//     watchdogCPU), so that work moved out of this process still counts;
//   - self-cpu-ns/op: this process's own CPU time alone;
//   - ctxsw/op: this process's context switches, voluntary and not.
//
// The gate and os/exec run the same command, so the command's own CPU time
// is the same on both sides of a ratio.
type runMeter struct {
	self, kids, watchdog time.Duration
	switches             int64
}

func startRunMeter() runMeter {
	var m runMeter
	m.self, m.kids, m.switches = rusageCPU()
	m.watchdog = watchdogCPU()
	return m
}

// Report adds the metrics to b.
func (m runMeter) Report(b *testing.B) {
	self, kids, switches := rusageCPU()
	watchdog := watchdogCPU()
	n := float64(b.N)
	b.ReportMetric(float64(self-m.self+kids-m.kids+watchdog-m.watchdog)/n, "cpu-ns/op")
	b.ReportMetric(float64(self-m.self)/n, "self-cpu-ns/op")
	b.ReportMetric(float64(switches-m.switches)/n, "ctxsw/op")
}

// rusageCPU returns this process's CPU time, its reaped children's, and
// its context switches.
func rusageCPU() (self, kids time.Duration, switches int64) {
	var s, c syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &s) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &c) != nil {
		return 0, 0, 0
	}
	self = time.Duration(s.Utime.Nano() + s.Stime.Nano())
	kids = time.Duration(c.Utime.Nano() + c.Stime.Nano())
	return self, kids, int64(s.Nvcsw + s.Nivcsw)
}

// BenchmarkRun runs /bin/true through the gate with DefaultExecFn: lookup,
// validation, a new process group, stdout and stderr read into bounded
// buffers, the group guarded by the watchdog and killed after the leader
// exits, and a Result.
func BenchmarkRun(b *testing.B) {
	x := benchExecutor(b, nil, execgate.CommandSpec{Name: "true", Command: "/bin/true", Dir: "/", Args: execgate.Fixed()})
	ctx := context.Background()
	b.ReportAllocs()
	m := startRunMeter()
	for b.Loop() {
		res, err := x.Run(ctx, "true", nil)
		if err != nil || !res.OK {
			b.Fatal(err, res)
		}
	}
	m.Report(b)
}

// benchSpacedGap is the pause between the calls of BenchmarkRunSpaced.
const benchSpacedGap = 50 * time.Millisecond

// BenchmarkRunSpaced is BenchmarkRun with a pause of benchSpacedGap
// between calls, outside the timer, as a gate that serves an agent's calls
// one at a time sees them. It reports watchdog-cpu-ns/op, the CPU time the
// gate's watchdog used per call, pauses included (see watchdogCPU): a
// watchdog that spends its idle time waking up shows here, where
// back-to-back calls hide it.
func BenchmarkRunSpaced(b *testing.B) {
	x := benchExecutor(b, nil, execgate.CommandSpec{Name: "true", Command: "/bin/true", Dir: "/", Args: execgate.Fixed()})
	ctx := context.Background()
	// The first call starts the watchdog, which then settles.
	if _, err := x.Run(ctx, "true", nil); err != nil {
		b.Fatal(err)
	}
	time.Sleep(benchSpacedGap)
	w0 := watchdogCPU()
	for b.Loop() {
		res, err := x.Run(ctx, "true", nil)
		if err != nil || !res.OK {
			b.Fatal(err, res)
		}
		b.StopTimer()
		time.Sleep(benchSpacedGap)
		b.StartTimer()
	}
	b.ReportMetric(float64(watchdogCPU()-w0)/float64(b.N), "watchdog-cpu-ns/op")
}

// BenchmarkRawExec runs /bin/true with os/exec doing the same work as the
// gate's process part: the same argv, its own process group (Setpgid), an
// empty environment, the same fixed directory, stdin the null device, and
// stdout and stderr captured into buffers through pipes.
func BenchmarkRawExec(b *testing.B) {
	b.ReportAllocs()
	m := startRunMeter()
	defer m.Report(b)
	for b.Loop() {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("/bin/true")
		cmd.Env = []string{}
		cmd.Dir = "/"
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawExecFloor is the floor: exec.Command("/bin/true").Run()
// with no capture (stdout and stderr are the null device).
func BenchmarkRawExecFloor(b *testing.B) {
	b.ReportAllocs()
	m := startRunMeter()
	defer m.Report(b)
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// Output flood.

// benchFloodBytes is how much the flooding child writes: 1 GiB.
const benchFloodBytes = 1 << 30

// heapSampler records the peak of the heap's object bytes (live objects
// and garbage not yet swept) while it runs, sampling runtime/metrics,
// which does not stop the world, every millisecond.
type heapSampler struct {
	peak atomic.Uint64
	stop chan struct{}
	done sync.WaitGroup
}

func startHeapSampler() *heapSampler {
	s := &heapSampler{stop: make(chan struct{})}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > s.peak.Load() {
			s.peak.Store(v)
		}
	}
	read()
	s.done.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				read()
				return
			case <-t.C:
				read()
			}
		}
	})
	return s
}

// Stop ends sampling and returns the peak in bytes.
func (s *heapSampler) Stop() uint64 {
	close(s.stop)
	s.done.Wait()
	return s.peak.Load()
}

// BenchmarkOutputFlood has a child write 1 GiB to stdout, through the gate
// (which keeps 64 KiB and drains and counts the rest) and through os/exec
// copying to io.Discard. peak-heap-B is the highest heap object bytes seen
// while the benchmark ran, sampled every millisecond: the whole test process,
// benchmark harness included.
func BenchmarkOutputFlood(b *testing.B) {
	head := benchLookPath(b, "head")
	floodArgs := []string{"-c", fmt.Sprint(benchFloodBytes), "/dev/zero"}
	b.Run("impl=gate", func(b *testing.B) {
		x := benchExecutor(b, nil, execgate.CommandSpec{
			Name: "flood", Command: head, Dir: "/", Args: execgate.Fixed(floodArgs...), Timeout: 5 * time.Minute,
		})
		ctx := context.Background()
		runtime.GC()
		s := startHeapSampler()
		b.SetBytes(benchFloodBytes)
		b.ReportAllocs()
		cpu := startCPUMeter()
		for b.Loop() {
			res, err := x.Run(ctx, "flood", nil)
			if err != nil || !res.OK || int64(len(res.Stdout))+res.StdoutDropped != benchFloodBytes {
				b.Fatal(err, res.Termination, len(res.Stdout), res.StdoutDropped)
			}
		}
		cpu.Report(b)
		b.ReportMetric(float64(s.Stop()), "peak-heap-B")
	})
	b.Run("impl=raw", func(b *testing.B) {
		runtime.GC()
		s := startHeapSampler()
		b.SetBytes(benchFloodBytes)
		b.ReportAllocs()
		cpu := startCPUMeter()
		for b.Loop() {
			cmd := exec.Command(head, floodArgs...)
			cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
		cpu.Report(b)
		b.ReportMetric(float64(s.Stop()), "peak-heap-B")
	})
}

// Timeout with a grandchild holding the pipes.

// benchHoldSeconds is how long the grandchild sleeps, holding the output
// pipes, after its parent has been killed.
const benchHoldSeconds = "1"

// benchTimeout is the timeout of each call.
const benchTimeout = 50 * time.Millisecond

// BenchmarkTimeoutGrandchild times a call whose child is killed at its
// timeout while a grandchild it started keeps stdout and stderr open: the
// child is timeout(1) --foreground (which stays in the caller's process
// group) running sleep 1. The gate kills the whole group at the timeout
// and returns. os/exec with CommandContext kills only the child and, with
// the output captured, waits for the grandchild to close the pipes, unless
// WaitDelay is set (here to the same 50 ms).
func BenchmarkTimeoutGrandchild(b *testing.B) {
	timeoutCmd := benchLookPath(b, "timeout")
	sleep := benchLookPath(b, "sleep")
	args := []string{"--foreground", "30", sleep, benchHoldSeconds}
	b.Run("impl=gate", func(b *testing.B) {
		x := benchExecutor(b, nil, execgate.CommandSpec{
			Name: "hold", Command: timeoutCmd, Dir: "/", Args: execgate.Fixed(args...), Timeout: benchTimeout,
		})
		ctx := context.Background()
		for b.Loop() {
			res, err := x.Run(ctx, "hold", nil)
			if err != nil || res.Termination != execgate.TerminationTimeout {
				b.Fatal(err, res.Termination)
			}
		}
	})
	raw := func(waitDelay time.Duration) func(b *testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
				var stdout, stderr bytes.Buffer
				cmd := exec.CommandContext(ctx, timeoutCmd, args...)
				cmd.Env = []string{}
				cmd.Dir = "/"
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				cmd.WaitDelay = waitDelay
				if err := cmd.Run(); err == nil {
					b.Fatal("the child was not killed")
				}
				cancel()
				// Not timed: end the grandchild, which os/exec left
				// running, so that iterations do not pile up sleepers.
				b.StopTimer()
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				b.StartTimer()
			}
		}
	}
	b.Run("impl=raw", raw(0))
	b.Run("impl=raw-waitdelay", raw(benchTimeout))
}

// Approvals.

// benchApprovalInput is the call proposed by the approval benchmarks.
const benchApprovalInput = `{"flags":{"max-count":20,"author":"Ann Lee","format":"oneline"},"args":["main","src"]}`

// benchNoopExec is an ExecFn that starts nothing, so that the approval
// benchmarks measure the gate alone.
func benchNoopExec(context.Context, execgate.Invocation) execgate.Outcome { return execgate.Outcome{} }

// BenchmarkApprovalRoundTrip is Propose followed by Execute of the
// returned Approval, with the in-memory store and an ExecFn that starts
// nothing.
func BenchmarkApprovalRoundTrip(b *testing.B) {
	x := benchExecutor(b, benchNoopExec, execgate.CommandSpec{Name: "git.log", Command: "/bin/true", Dir: "/", Args: execgate.Flags(benchFlagSpec())})
	ctx := context.Background()
	in := json.RawMessage(benchApprovalInput)
	b.ReportAllocs()
	for b.Loop() {
		ap, err := x.Propose(ctx, "git.log", in, "deploy fix")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := x.Execute(ctx, ap); err != nil {
			b.Fatal(err)
		}
	}
}

// benchPending is how many pending approvals BenchmarkPendingApprovals
// stores.
const benchPending = 10000

// BenchmarkPendingApprovals proposes 10,000 approvals into one in-memory
// store and reports the heap they hold, per pending approval (B/pending,
// measured after a GC before and after), and the time to propose all of
// them (ns/op).
func BenchmarkPendingApprovals(b *testing.B) {
	a, err := execgate.NewAllowlist(execgate.CommandSpec{Name: "git.log", Command: "/bin/true", Dir: "/", Args: execgate.Flags(benchFlagSpec())})
	require.NoError(b, err)
	ctx := context.Background()
	in := json.RawMessage(benchApprovalInput)
	var perPending float64
	for b.Loop() {
		b.StopTimer()
		store := execgate.NewMemoryStore(execgate.MemoryStoreOptions{Capacity: benchPending, PerPrincipalCapacity: -1})
		x, err := execgate.NewExecutor(execgate.Config{Allowlist: a, ExecFn: benchNoopExec, Store: store})
		require.NoError(b, err)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		for range benchPending {
			if _, err := x.Propose(ctx, "git.log", in, "deploy fix"); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		if store.Len() != benchPending {
			b.Fatalf("store holds %d", store.Len())
		}
		perPending = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / benchPending
		runtime.KeepAlive(x)
		b.StartTimer()
	}
	b.ReportMetric(perPending, "B/pending")
}
