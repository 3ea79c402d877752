//go:build linux

package execgate

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/execgate/execgate/internal/proc"
)

// An unconfined call on Linux is supervised by the goroutine that started
// it, alone: one poll(2) on its locked thread waits for output on both
// pipes, for the leader's exit (a pidfd, readable once the leader has
// exited, while it stays a zombie), for a cancellation (an eventfd written
// by a context callback) and for the next limit (the poll's timeout). No
// reader goroutine, no timer, and no pipe registered with the runtime's
// poller: each of those cost a call wake-ups of other threads, which made
// a short command cost this process more processor time than os/exec. What
// happens is the same as in supervise, step for step (see
// [DefaultExecFn]). A confined call handed to a warm helper is supervised
// by the same loop, the helper being the leader (see superviseWarm),
// though its pipes, made by os.Pipe, stay registered with the poller; a
// confined call that starts its own helper, a kernel without pidfds
// (before 5.3), and a started call whose leader no pidfd can be had for,
// take supervise.

// polledSupervision reports whether this kernel gives pidfds, probed once.
var polledSupervision = sync.OnceValue(func() bool {
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
})

// chunkPool holds the read buffers of polled calls. A chunk's bytes are
// never handed out: only what the latest read put in it is copied into a
// call's bounded buffers (and offered to its watcher), so a chunk reused
// by another call cannot carry bytes over.
var chunkPool = sync.Pool{New: func() any { return new([readChunk]byte) }}

// runPolled starts inv, as runProcess would, and supervises it with one
// poll loop. It reports false, having done nothing, when this kernel has no
// pidfds; the caller then takes the general path.
func runPolled(ctx context.Context, inv Invocation, path string, env []string, exe *os.File, timeout time.Duration, maxOutput int) (Outcome, bool) {
	if !polledSupervision() {
		return Outcome{}, false
	}
	return startPolled(ctx, inv, path, env, exe, timeout, maxOutput, linuxKernel), true
}

// polledKernel is what a polled call asks of the kernel beyond its pipes:
// the start, a pidfd of the leader when the start gave none, and the waits
// of its loop. Every call uses linuxKernel.
type polledKernel struct {
	start     func(cmd *exec.Cmd) error
	pidfdOpen func(pid int) (int, error)
	poll      pollFunc
}

// linuxKernel is the polledKernel of every call.
var linuxKernel = polledKernel{
	start:     (*exec.Cmd).Start,
	pidfdOpen: func(pid int) (int, error) { return unix.PidfdOpen(pid, 0) },
	poll:      ppoll,
}

// pollFunc waits for events on fds as ppoll(2) does, for at most timeout,
// or without a limit when timeout is nil. An interrupted wait reports
// unix.EINTR.
type pollFunc func(fds []unix.PollFd, timeout *unix.Timespec) error

// ppoll is the pollFunc of every call: ppoll(2) with the thread's signal
// mask as it is.
func ppoll(fds []unix.PollFd, timeout *unix.Timespec) error {
	_, err := unix.Ppoll(fds, timeout, nil)
	return err
}

// startPolled is runPolled once the kernel is known to give pidfds, asking
// k for what it needs.
func startPolled(ctx context.Context, inv Invocation, path string, env []string, exe *os.File, timeout time.Duration, maxOutput int, k polledKernel) Outcome {
	var p polledPipes
	if err := p.open(len(inv.Stdin) > 0); err != nil {
		return spawnFailed(fmt.Errorf("execgate: cannot start %s: creating pipes: %w", inv.Path, err))
	}
	defer p.closeAll()
	// The eventfd that wakes the poll on a cancellation is made before
	// anything runs, as the pipes are: a call that could not watch its
	// context is refused unstarted, never started and then killed and
	// recorded canceled while its context was not done.
	cancel, err := newCanceler(ctx)
	if err != nil {
		return spawnFailed(fmt.Errorf("execgate: cannot start %s: creating the eventfd that watches the call's context: %w; nothing ran, try again when this process has descriptors to spare", inv.Path, err))
	}
	defer cancel.close()
	pidfd := -1
	cmd := newCmd(inv, path, env, p.inR, p.outW, p.errW)
	cmd.SysProcAttr.PidFD = &pidfd
	proc.SetParentDeathSignal(cmd.SysProcAttr)
	if ctx.Err() != nil {
		return Outcome{ExitCode: -1, Termination: TerminationCanceled}
	}
	// Nothing but what cmd names reaches the child: not a descriptor the
	// program that started this process left open.
	proc.CloseOnExecAboveStderr()
	start := time.Now()
	err = k.start(cmd)
	closeFiles(p.inR, p.outW, p.errW)
	p.inR, p.outW, p.errW = nil, nil, nil
	if exe != nil {
		exe.Close()
	}
	if err != nil {
		return spawnFailed(startError(inv, err))
	}
	if pidfd < 0 {
		// Not expected where pidfd_open works: the kernel took the clone
		// without one. The leader is not reaped yet, so pidfd_open still
		// names it.
		if pidfd, err = k.pidfdOpen(cmd.Process.Pid); err != nil {
			// The command runs already: it is supervised the general
			// way, which needs no pidfd, and its record says what it
			// did (never a spawn error for a process that ran).
			return p.superviseGeneral(ctx, inv, cmd, start, timeout, maxOutput)
		}
	}
	defer unix.Close(pidfd)
	return superviseLoop(ctx, inv, cmd, &p, pidfd, cancel, k.poll, start, timeout, maxOutput)
}

// polledPipes are the pipes of a polled call. The parent's ends of stdout
// and stderr are bare non-blocking descriptors, read when poll says so; the
// child's ends are blocking *os.File values, so that os/exec hands them to
// the child as they are, and neither is registered with the runtime's
// poller. Stdin, when there is any, is an os.Pipe written by a goroutine,
// as in supervise. Every descriptor is close-on-exec.
type polledPipes struct {
	outR, errR int // -1 once closed
	outW, errW *os.File
	inR, inW   *os.File // nil without stdin
}

// open creates the pipes; on failure nothing stays open.
func (p *polledPipes) open(withStdin bool) error {
	p.outR, p.errR = -1, -1
	var out, errp [2]int
	if err := unix.Pipe2(out[:], unix.O_CLOEXEC); err != nil {
		return err
	}
	if err := unix.Pipe2(errp[:], unix.O_CLOEXEC); err != nil {
		unix.Close(out[0])
		unix.Close(out[1])
		return err
	}
	p.outR, p.errR = out[0], errp[0]
	for _, fd := range []int{p.outR, p.errR} {
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(out[1])
			unix.Close(errp[1])
			p.closeAll()
			return err
		}
	}
	p.outW, p.errW = os.NewFile(uintptr(out[1]), "|1"), os.NewFile(uintptr(errp[1]), "|2")
	if withStdin {
		var err error
		if p.inR, p.inW, err = os.Pipe(); err != nil {
			p.closeAll()
			return err
		}
	}
	return nil
}

// superviseGeneral hands the parent's ends to supervise, which reads them
// through the runtime's poller (they are non-blocking already), and
// supervises the started cmd with it.
func (p *polledPipes) superviseGeneral(ctx context.Context, inv Invocation, cmd *exec.Cmd, start time.Time, timeout time.Duration, maxOutput int) Outcome {
	g := pipes{
		outR: os.NewFile(uintptr(p.outR), "|1"),
		errR: os.NewFile(uintptr(p.errR), "|2"),
		inW:  p.inW,
	}
	p.outR, p.errR, p.inW = -1, -1, nil
	defer g.closeAll()
	return supervise(ctx, inv, cmd, &g, start, timeout, maxOutput)
}

// closeAll closes every end that is still open.
func (p *polledPipes) closeAll() {
	for _, fd := range []*int{&p.outR, &p.errR} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	closeFiles(p.outW, p.errW, p.inR, p.inW)
}

// canceler wakes a call's poll when its context is done, through an
// eventfd that a context callback writes. close waits for a callback that
// is writing, so the descriptor is never written after it was closed (and
// its number perhaps reused).
type canceler struct {
	mu   sync.Mutex
	fd   int // -1 once closed
	stop func() bool
}

// newCanceler returns nil, and needs no descriptor, when ctx can never be
// done.
func newCanceler(ctx context.Context) (*canceler, error) {
	if ctx.Done() == nil {
		return nil, nil
	}
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, err
	}
	c := &canceler{fd: fd}
	c.stop = context.AfterFunc(ctx, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.fd >= 0 {
			one := [8]byte{1}
			unix.Write(c.fd, one[:])
		}
	})
	return c, nil
}

func (c *canceler) close() {
	if c == nil {
		return
	}
	c.stop()
	c.mu.Lock()
	unix.Close(c.fd)
	c.fd = -1
	c.mu.Unlock()
}

// superviseLoop is supervise for a call started by runPolled: it reads the
// output, enforces the limits, kills the process group, reaps the leader,
// and reports the Outcome, from one loop on the calling goroutine.
//
// It is long because it is one loop over one poll, whose state (the
// streams still open, the limits, whether the leader has exited) every
// step shares.
func superviseLoop(ctx context.Context, inv Invocation, cmd *exec.Cmd, p *polledPipes, pidfd int, cancel *canceler, poll pollFunc, start time.Time, timeout time.Duration, maxOutput int) Outcome {
	pid := cmd.Process.Pid
	stdout := newBoundedBuffer(maxOutput)
	stderr := newBoundedBuffer(maxOutput)
	watch := startWatch(ctx, start)
	defer watch.stop()
	bufs := [2]tappedBuffer{{stdout, watch, 0}, {stderr, watch, 1}}
	chunk := chunkPool.Get().(*[readChunk]byte)
	defer chunkPool.Put(chunk)

	// Stdin is written by its own goroutine, so a child that does not read
	// it cannot block anything; closeStdin ends the write early.
	var wg sync.WaitGroup
	closeStdin := func() {}
	if p.inW != nil {
		closeStdin = sync.OnceFunc(func() { p.inW.Close() })
		stdin := inv.Stdin // not inv, which would then live on the heap
		wg.Go(func() {
			p.inW.Write(stdin) // an error means the child stopped reading
			closeStdin()
		})
	}
	defer wg.Wait()

	// kill kills the group and the leader once, for reason r; the first
	// reason wins.
	var reason Termination
	killed := false
	kill := func(r Termination) {
		if reason == "" {
			reason = r
		}
		if !killed {
			killed = true
			// Until it is reaped, pid is still the group's ID.
			proc.KillGroup(pid)
			// The leader itself too: it may have moved into another
			// process group of its session.
			cmd.Process.Kill()
		}
	}
	// If this process dies, the watchdog kills the group; the leader
	// itself has its parent-death signal. Guard never waits.
	guarded := proc.Guard(pid) == nil

	const (
		outIdx = iota
		errIdx
		pidIdx
		cancelIdx
	)
	fds := []unix.PollFd{{Fd: int32(p.outR), Events: unix.POLLIN}, {Fd: int32(p.errR), Events: unix.POLLIN},
		{Fd: int32(pidfd), Events: unix.POLLIN}, {Fd: -1}}
	if cancel != nil {
		fds[cancelIdx] = unix.PollFd{Fd: int32(cancel.fd), Events: unix.POLLIN}
	}
	open := 2
	var lastOutput time.Duration // since start
	deadline := start.Add(timeout)
	var drainBy time.Time // zero until the leader has exited
	incomplete := false

	// closeStream stops reading stream i.
	closeStream := func(i int) {
		fds[i].Fd = -1
		open--
	}
	// readStream reads what stream i has, once, and reports whether it
	// reached end-of-file (or an error, which ends it too).
	readStream := func(i int) bool {
		for {
			n, err := unix.Read(int(fds[i].Fd), chunk[:])
			switch {
			case err == unix.EINTR:
				continue
			case n > 0:
				lastOutput = time.Since(start)
				bufs[i].Write(chunk[:n])
				return false
			case err == unix.EAGAIN:
				return false
			case err != nil:
				incomplete = true
			}
			return true
		}
	}
	// exited ends the leader's part: it has exited and is not reaped yet,
	// so what is left of its group is killed under its ID, the watchdog
	// is told, and it is reaped. No limit kills anything after this.
	exited := func() {
		fds[pidIdx].Fd = -1
		killed = true
		proc.KillGroup(pid)
		if guarded {
			proc.Release(pid)
		}
		cmd.Wait()
		closeStdin()
		drainBy = time.Now().Add(drainGrace)
	}

	// The poll's timeout, declared once: poll is a function value, so
	// its address escapes, and a declaration in the loop would be a heap
	// allocation per pass.
	var ts unix.Timespec
	for open > 0 || fds[pidIdx].Fd >= 0 {
		// How long to wait: until the next limit while the leader runs,
		// until the drain grace ends after it has exited, and for the
		// leader alone once it has been killed.
		var wait time.Duration
		timed := true
		now := time.Now()
		switch {
		case !drainBy.IsZero():
			wait = drainBy.Sub(now)
		case !killed:
			wait = deadline.Sub(now)
			if inv.NoOutputTimeout > 0 {
				wait = min(wait, inv.NoOutputTimeout-(now.Sub(start)-lastOutput))
			}
		default:
			timed = false
		}
		for i := range fds {
			fds[i].Revents = 0
		}
		var err error
		if timed {
			ts = unix.NsecToTimespec(int64(max(wait, 0)))
			err = poll(fds, &ts)
		} else {
			err = poll(fds, nil)
		}
		if err == unix.EINTR {
			// A signal ended the wait: no events, and the limits are
			// checked below as after a timeout, so that signals coming
			// faster than a wait ends cannot hold a limit off.
			for i := range fds {
				fds[i].Revents = 0
			}
			err = nil
		}
		if err != nil {
			// Not expected with four valid descriptors. Rather than spin,
			// end the call as a limit would, wait for the leader without
			// the poll, and report the output as possibly incomplete.
			kill(TerminationSignal)
			if fds[pidIdx].Fd >= 0 {
				proc.WaitExit(pid)
				exited()
			}
			for i := range 2 {
				if fds[i].Fd >= 0 {
					sweepFD(int(fds[i].Fd), &bufs[i], chunk[:])
					closeStream(i)
				}
			}
			incomplete = true
			continue
		}

		for i := range 2 {
			if fds[i].Fd >= 0 && fds[i].Revents != 0 && readStream(i) {
				closeStream(i)
			}
		}
		if fds[cancelIdx].Fd >= 0 && fds[cancelIdx].Revents != 0 {
			fds[cancelIdx].Fd = -1
			if fds[pidIdx].Fd >= 0 {
				kill(TerminationCanceled)
			}
		}
		if fds[pidIdx].Fd >= 0 && fds[pidIdx].Revents != 0 {
			exited()
			continue
		}

		now = time.Now()
		switch {
		case !drainBy.IsZero():
			if !now.Before(drainBy) {
				// The grace has passed: take in what is in the pipes
				// already, without waiting (see drain).
				for i := range 2 {
					if fds[i].Fd >= 0 {
						if !sweepFD(int(fds[i].Fd), &bufs[i], chunk[:]) {
							incomplete = true
						}
						closeStream(i)
					}
				}
			}
		case killed:
		case !now.Before(deadline):
			kill(TerminationTimeout)
		case inv.NoOutputTimeout > 0 && now.Sub(start)-lastOutput >= inv.NoOutputTimeout:
			kill(TerminationNoOutputTimeout)
		}
	}
	closeStdin()
	watch.stop()

	out := classify(cmd.ProcessState, reason)
	out.PID = pid
	out.Stdout, out.StdoutDropped = stdout.Bytes()
	out.Stderr, out.StderrDropped = stderr.Bytes()
	out.OutputIncomplete = incomplete
	return out
}
