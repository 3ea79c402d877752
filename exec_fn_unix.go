//go:build unix

package execgate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/execgate/execgate/internal/proc"
)

const (
	// readChunk is the size of the fixed buffer each output reader uses.
	// Together with MaxOutput it bounds the memory a call can hold,
	// however much the child writes.
	readChunk = 32 << 10

	// drainGrace is how long [DefaultExecFn] keeps waiting for output after
	// the leader has been reaped and its group killed. Only a process that
	// left the group (with setsid, for example) can still hold the pipes
	// then. When the grace ends, what is already in the pipes is still
	// read, without waiting; what is written after that is lost, and the
	// [Outcome] says so (OutputIncomplete).
	drainGrace = time.Second

	// maxSweep bounds what the last read of a pipe, after the grace, takes
	// in: more than a pipe holds, so it reads everything that was there,
	// but not forever if a process outside the group keeps writing.
	maxSweep = 4 << 20
)

// defaultExecFn is DefaultExecFn on Unix systems. See its doc comment for
// the contract; the comments below say how each part of it is kept.
func defaultExecFn(ctx context.Context, inv Invocation) Outcome {
	if ctx.Err() != nil {
		return Outcome{ExitCode: -1, Termination: TerminationCanceled}
	}
	var exe *os.File
	if inv.SHA256 != "" {
		f, err := openPinned(inv.Path, inv.SHA256)
		if err != nil {
			return spawnFailed(err)
		}
		exe = f
	}
	return runProcess(ctx, inv, exe)
}

// spawnFailed is the Outcome of a call that started no process.
func spawnFailed(err error) Outcome {
	return Outcome{ExitCode: -1, Err: err}
}

// openPinned opens the executable at path, hashes it through the opened
// descriptor and returns the descriptor if the content matches want (hex
// SHA-256). The caller executes that descriptor (see proc.ExecPath) and
// closes it once the child has started.
func openPinned(path, want string) (*os.File, error) {
	f, err := proc.OpenExecutable(path)
	if err != nil {
		return nil, fmt.Errorf("execgate: cannot open pinned executable %s: %w", path, pathErrorCause(err))
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("execgate: cannot stat pinned executable %s: %w", path, pathErrorCause(err))
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("execgate: pinned executable %s is not a regular file", path)
	}
	h := sha256.New()
	if _, err := io.CopyBuffer(h, f, make([]byte, readChunk)); err != nil {
		f.Close()
		return nil, fmt.Errorf("execgate: cannot hash pinned executable %s: %w", path, pathErrorCause(err))
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != strings.ToLower(want) {
		f.Close()
		return nil, fmt.Errorf("execgate: %s does not match its pinned SHA-256; refusing to start it", path)
	}
	return f, nil
}

// startError describes a failed exec.Cmd.Start. It names inv.Path and, for
// a bad working directory, the directory; it never includes the
// environment or stdin.
//
// With SysProcAttr set, os.StartProcess does not check the working
// directory itself, and a failed chdir in the child is reported like a
// failed exec ("no such file or directory"). So when the start fails, the
// directory is checked here, to say which of the two is missing.
func startError(inv Invocation, err error) error {
	if inv.Dir != "" {
		fi, serr := os.Stat(inv.Dir)
		if serr == nil && !fi.IsDir() {
			serr = syscall.ENOTDIR
		}
		if serr != nil {
			return fmt.Errorf("execgate: cannot start %s: working directory %s: %w", inv.Path, inv.Dir, pathErrorCause(serr))
		}
	}
	return fmt.Errorf("execgate: cannot start %s: %w", inv.Path, pathErrorCause(err))
}

// pipes are the three pipes between [DefaultExecFn] and one child. The child
// ends (inR, outW, errW) are handed to the child as *os.File, so os/exec
// starts no copying goroutines of its own, and closed in the parent right
// after Start. The parent ends are pollable, so closing one from another
// goroutine unblocks a Read or Write in progress.
type pipes struct {
	inR, inW   *os.File // nil when the child's stdin is empty
	outR, outW *os.File
	errR, errW *os.File
}

// open creates the pipes; withStdin says whether stdin gets one (otherwise
// os/exec connects the child's stdin to the null device). On failure
// nothing stays open.
func (p *pipes) open(withStdin bool) error {
	var err error
	if p.outR, p.outW, err = os.Pipe(); err != nil {
		return err
	}
	if p.errR, p.errW, err = os.Pipe(); err != nil {
		p.closeAll()
		return err
	}
	if withStdin {
		if p.inR, p.inW, err = os.Pipe(); err != nil {
			p.closeAll()
			return err
		}
	}
	return nil
}

// closeChild closes the parent's copies of the child's ends.
func (p *pipes) closeChild() {
	closeFiles(p.inR, p.outW, p.errW)
}

// closeAll closes every end that is still open.
func (p *pipes) closeAll() {
	closeFiles(p.inR, p.inW, p.outR, p.outW, p.errR, p.errW)
}

// closeFiles closes each non-nil file, ignoring errors: a file closed
// twice reports os.ErrClosed and nothing else happens.
func closeFiles(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// runProcess starts inv and supervises it to the end. If exe is not nil,
// it is the opened, verified executable: it is executed through its
// descriptor where the platform allows it, and runProcess closes it.
//
// It is long because it is the order of a start, each step commented
// where it happens (the thread lock, the defaults, the executable's
// descriptor, the confinement helper, the pipes, the start, the process
// group): that order is what makes a start safe, and it reads in one place.
func runProcess(ctx context.Context, inv Invocation, exe *os.File) Outcome {
	if exe != nil {
		defer exe.Close()
	}
	// The child's parent-death signal fires when the thread that started
	// it ends. Keeping this goroutine on its thread until the child has
	// been reaped means that thread ends only with this process.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	timeout := inv.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	maxOutput := inv.MaxOutput
	if maxOutput <= 0 {
		maxOutput = DefaultMaxOutput
	}
	// A nil Env would make os/exec hand the child this process's
	// environment; an empty, non-nil one gives it nothing.
	env := inv.Env
	if env == nil {
		env = []string{}
	}
	path := inv.Path
	if exe != nil {
		p, err := proc.ExecPath(exe)
		if err != nil {
			return spawnFailed(fmt.Errorf("execgate: cannot start pinned executable %s: %w", inv.Path, err))
		}
		path = p
	}

	// An unconfined call is supervised by this goroutine alone where the
	// kernel allows it (see runPolled).
	if inv.Confine == nil {
		if out, ok := runPolled(ctx, inv, path, env, exe, timeout, maxOutput); ok {
			return out
		}
	}

	// A confined call starts the confinement helper instead, which
	// confines itself and then executes exactly what the rest of this
	// function describes (see confine_linux.go).
	var conf *confinedStart
	if inv.Confine != nil {
		c, err := newConfinedStart(inv, exe)
		if err != nil {
			return spawnFailed(err)
		}
		defer c.close()
		conf = c
	}

	var p pipes
	if err := p.open(len(inv.Stdin) > 0); err != nil {
		return spawnFailed(fmt.Errorf("execgate: cannot start %s: creating pipes: %w", inv.Path, err))
	}
	defer p.closeAll()
	if conf != nil {
		if out, ok := conf.runWarm(ctx, inv, &p, exe, timeout, maxOutput); ok {
			return out
		}
		if err := conf.cold(inv); err != nil {
			return spawnFailed(err)
		}
	}
	for {
		cmd := newCmd(inv, path, env, p.inR, p.outW, p.errW)
		if conf != nil {
			conf.apply(cmd)
		}
		proc.SetParentDeathSignal(cmd.SysProcAttr)
		if ctx.Err() != nil {
			return Outcome{ExitCode: -1, Termination: TerminationCanceled}
		}
		// Nothing but what cmd names reaches the child: not a
		// descriptor the program that started this process left open.
		proc.CloseOnExecAboveStderr()
		start := time.Now()
		err := cmd.Start()
		if err != nil && conf != nil && conf.retry() {
			continue // a best-effort confinement without namespaces
		}
		p.closeChild()
		if exe != nil {
			exe.Close()
		}
		if err != nil {
			if conf != nil {
				return spawnFailed(conf.startError(inv, err))
			}
			return spawnFailed(startError(inv, err))
		}
		if conf == nil {
			return supervise(ctx, inv, cmd, &p, start, timeout, maxOutput)
		}
		conf.started()
		return conf.finish(inv, supervise(ctx, inv, cmd, &p, start, timeout, maxOutput))
	}
}

// newCmd is the command that starts inv: built field by field from an
// absolute path and an argv slice, no lookup, no shell. argv[0] is always
// the path the allowlist resolved, also when path is /proc/self/fd/N. The
// child's stdin is the null device when stdin is nil.
func newCmd(inv Invocation, path string, env []string, stdin, stdout, stderr *os.File) *exec.Cmd {
	cmd := &exec.Cmd{
		Path:        path,
		Args:        append([]string{inv.Path}, inv.Args...),
		Env:         env,
		Dir:         inv.Dir,
		Stdout:      stdout,
		Stderr:      stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if stdin != nil {
		cmd.Stdin = stdin
	}
	return cmd
}

// supervise runs from the moment cmd has started: it reads the output,
// feeds stdin, enforces the limits, kills the process group, reaps the
// leader, and reports the Outcome. Every goroutine it starts has ended when
// it returns, except that a limit's callback that fired as the leader
// exited may still be returning (it finds the limits disarmed and does
// nothing).
//
// The calling goroutine itself waits for the leader to exit, as
// exec.Cmd.Wait would; the limits are timers and a context callback that
// kill the group (see groupKiller), so supervising a call costs no
// goroutine beyond the output readers and, when there is stdin, its
// writer.
//
// It is long because the readers, the stdin writer, the limits and the
// watchdog share the state declared at its top (the last output time, the
// readers still reading, the incomplete flag) and must be set up in this
// order, before the leader is waited for.
func supervise(ctx context.Context, inv Invocation, cmd *exec.Cmd, p *pipes, start time.Time, timeout time.Duration, maxOutput int) Outcome {
	pid := cmd.Process.Pid
	var wg sync.WaitGroup

	// lastOutput is when either stream last delivered a byte, as a
	// duration since start, for the no-output timeout. reading counts the
	// readers that have not yet seen end-of-file; incomplete is set by one
	// that stopped before it.
	var lastOutput atomic.Int64
	var reading atomic.Int32
	var incomplete atomic.Bool
	stdout := newBoundedBuffer(maxOutput)
	stderr := newBoundedBuffer(maxOutput)
	// A watcher gets what the readers read, when the call has one (see
	// Watch); it never makes them wait.
	watch := startWatch(ctx, start)
	defer watch.stop()
	reading.Store(2)
	for i, s := range []struct {
		r   *os.File
		buf *boundedBuffer
	}{{p.outR, stdout}, {p.errR, stderr}} {
		wg.Go(func() {
			if !drain(s.r, &tappedBuffer{s.buf, watch, i}, &lastOutput, start) {
				incomplete.Store(true)
			}
			reading.Add(-1)
		})
	}

	// Stdin is written by its own goroutine, so a child that does not read
	// it cannot block anything; closeStdin ends the write early.
	closeStdin := func() {}
	if p.inW != nil {
		closeStdin = sync.OnceFunc(func() { p.inW.Close() })
		wg.Go(func() {
			p.inW.Write(inv.Stdin) // an error means the child stopped reading
			closeStdin()
		})
	}

	k := &groupKiller{leader: cmd.Process}
	k.arm(ctx, inv, &lastOutput, start, timeout)

	// If this process dies, the watchdog kills the group; the leader
	// itself has its parent-death signal. A watchdog that cannot be
	// started leaves only the latter (see DefaultExecFn). Guard never
	// waits, and the limits are armed already.
	guarded := proc.Guard(pid) == nil

	// Wait for the leader to exit. On Linux it is not reaped: it stays a
	// zombie, so its process group ID stays reserved until the group has
	// been killed below. Elsewhere, or if waitid fails, the leader is
	// reaped here; see proc.WaitExit for the window that leaves.
	reaped := false
	if proc.WaitExit(pid) != nil {
		cmd.Wait() // the outcome is read from cmd.ProcessState
		reaped = true
	}

	// The leader has exited: stop the limits, kill what is left of its
	// group (an error means there is nothing left, or nothing this process
	// may kill), then reap the leader.
	reason := k.disarm()
	proc.KillGroup(pid)
	if guarded {
		proc.Release(pid)
	}
	if !reaped {
		cmd.Wait()
	}
	closeStdin()

	// Wait for the readers: they see end-of-file once every process that
	// holds the pipes is gone, which is at once unless one left the group.
	// Bound that wait with a read deadline; when it passes, each reader
	// still takes in what is already in its pipe (see drain), so a pause
	// of this process longer than the grace loses nothing. A pipe that
	// cannot take a deadline is closed after the grace instead, and its
	// output reported incomplete.
	if reading.Load() > 0 {
		at := time.Now().Add(drainGrace)
		for _, r := range []*os.File{p.outR, p.errR} {
			if r.SetReadDeadline(at) != nil {
				t := time.AfterFunc(drainGrace, func() { r.Close() })
				defer t.Stop()
			}
		}
	}
	wg.Wait()
	watch.stop()

	out := classify(cmd.ProcessState, reason)
	out.PID = pid
	out.Stdout, out.StdoutDropped = stdout.Bytes()
	out.Stderr, out.StderrDropped = stderr.Bytes()
	out.OutputIncomplete = incomplete.Load()
	return out
}

// groupKiller enforces a call's limits while its leader runs: a timer for
// the timeout, one for the no-output timeout, and a callback on the
// context. Each kills the whole process group and the leader, and records
// why; the first reason wins. disarm, called once the leader has exited
// and, on Linux, before it is reaped, stops them, so no kill can reach the
// group ID after the leader's process ID has been released (elsewhere see
// proc.WaitExit for the window that leaves).
type groupKiller struct {
	mu       sync.Mutex
	leader   *os.Process // its Pid is also the group's ID
	reason   Termination
	disarmed bool
	deadline *time.Timer
	silence  *time.Timer // nil without a no-output timeout
	stopCtx  func() bool
}

// arm starts the timers and the context callback.
func (k *groupKiller) arm(ctx context.Context, inv Invocation, lastOutput *atomic.Int64, start time.Time, timeout time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.deadline = time.AfterFunc(timeout-time.Since(start), func() {
		k.kill(TerminationTimeout)
	})
	if inv.NoOutputTimeout > 0 {
		limit := inv.NoOutputTimeout
		k.silence = time.AfterFunc(limit, func() {
			k.mu.Lock()
			defer k.mu.Unlock()
			quiet := time.Since(start) - time.Duration(lastOutput.Load())
			if quiet >= limit {
				k.killLocked(TerminationNoOutputTimeout)
			} else if !k.disarmed {
				k.silence.Reset(limit - quiet)
			}
		})
	}
	k.stopCtx = context.AfterFunc(ctx, func() { k.kill(TerminationCanceled) })
}

// kill kills the group and the leader for reason r, unless disarmed.
func (k *groupKiller) kill(r Termination) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.killLocked(r)
}

func (k *groupKiller) killLocked(r Termination) {
	if k.disarmed {
		return
	}
	if k.reason == "" {
		k.reason = r
	}
	// Until disarm, on Linux, the leader is not reaped, so pid is still
	// its process group ID; elsewhere it may have been reaped a moment
	// ago (see proc.WaitExit).
	proc.KillGroup(k.leader.Pid)
	// The leader itself too: it may have moved into another process group
	// of its session, out of reach of the group kill. os.Process does not
	// signal a process it has reaped (on Linux it signals through a pidfd).
	k.leader.Kill()
}

// disarm stops every limit and returns the reason of the first kill, or ""
// if there was none. After disarm returns, no callback kills anything.
func (k *groupKiller) disarm() Termination {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.disarmed = true
	k.deadline.Stop()
	if k.silence != nil {
		k.silence.Stop()
	}
	k.stopCtx()
	return k.reason
}

// drain reads r into buf until end-of-file, through a fixed buffer, and
// records in lastOutput when each chunk arrived. It reports whether it
// read to end-of-file, so that every byte written to the pipe was read.
//
// When r's read deadline passes, drain clears it and reads, without
// waiting, whatever is in the pipe already: the deadline bounds how long
// DefaultExecFn waits for a process outside the group, and must not drop
// bytes that a process wrote before it ended but that this process, paused
// or starved of CPU, had not read yet.
func drain(r *os.File, buf *tappedBuffer, lastOutput *atomic.Int64, start time.Time) (complete bool) {
	chunk := make([]byte, readChunk)
	for {
		n, err := r.Read(chunk)
		if n > 0 {
			lastOutput.Store(int64(time.Since(start)))
			buf.Write(chunk[:n])
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return true
		case errors.Is(err, os.ErrDeadlineExceeded):
			return sweep(r, buf, chunk)
		default: // closed after the grace, or a read error
			return false
		}
	}
}

// sweep reads what is in the pipe r without waiting for more, at most
// maxSweep bytes, and reports whether it reached end-of-file.
func sweep(r *os.File, buf *tappedBuffer, chunk []byte) (complete bool) {
	rc, err := r.SyscallConn()
	if err != nil || r.SetReadDeadline(time.Time{}) != nil {
		return false
	}
	if err := rc.Read(func(fd uintptr) bool {
		complete = sweepFD(int(fd), buf, chunk)
		return true // never wait in the runtime's poller
	}); err != nil {
		return false
	}
	return complete
}

// sweepFD reads what is in the non-blocking pipe fd without waiting for
// more, at most maxSweep bytes, and reports whether it reached
// end-of-file: an empty pipe that a writer still holds answers EAGAIN at
// once.
func sweepFD(fd int, buf *tappedBuffer, chunk []byte) (complete bool) {
	for total := 0; total < maxSweep; {
		n, err := syscall.Read(fd, chunk)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil: // EAGAIN: a writer still holds it
			return false
		case n == 0:
			return true
		}
		buf.Write(chunk[:n])
		total += n
	}
	return false
}

// tappedBuffer is a reader's boundedBuffer, and the call's watcher (nil
// when it has none), which gets a copy of each chunk as stream s. Neither
// keeps the chunk, so a reader's buffer can stay on its stack.
type tappedBuffer struct {
	*boundedBuffer
	watch *watcher
	s     int
}

func (b *tappedBuffer) Write(p []byte) (int, error) {
	b.boundedBuffer.Write(p)
	b.watch.offer(b.s, p)
	return len(p), nil
}

// classify turns the leader's final state into a termination, exit code
// and signal name. A leader that exited with a status reports it, whatever
// was killed afterwards; a leader ended by a signal reports the reason it
// was killed for, or TerminationSignal if DefaultExecFn did not kill it.
func classify(state *os.ProcessState, reason Termination) Outcome {
	var ws syscall.WaitStatus
	if state != nil {
		ws, _ = state.Sys().(syscall.WaitStatus)
	}
	switch {
	case state != nil && ws.Exited():
		return Outcome{ExitCode: ws.ExitStatus(), Termination: TerminationExit}
	case state != nil && ws.Signaled():
		out := Outcome{ExitCode: -1, Termination: TerminationSignal, Signal: proc.SignalName(ws.Signal())}
		if reason != "" {
			out.Termination = reason
		}
		return out
	case reason != "":
		return Outcome{ExitCode: -1, Termination: reason}
	default:
		// The status could not be collected: something else in this
		// process reaped the child (SIGCHLD ignored, for example). It did
		// run, so this is not a spawn error; it did not exit observably.
		return Outcome{ExitCode: -1, Termination: TerminationSignal}
	}
}
