//go:build linux

package execgate

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/execgate/execgate/internal/confine"
	"github.com/execgate/execgate/internal/proc"
)

// Warm helpers: a confined call of DefaultExecFn is handed, when one is
// ready, to a confinement helper started before it, in the namespaces
// the call needs, instead of starting one (see confine.Warm). What a
// confined start costs is mostly that start: the exec of this program,
// its runtime, the new namespaces and a loopback interface; what the call
// itself needs (the read-only tree and its write paths, the capabilities,
// Landlock, the system call filters, the limits) is still done for it
// alone, in the helper, after the handoff.
//
// After a confined call, DefaultExecFn keeps up to warmPerKind helpers
// ready for each kind of namespaces it used, each for at most warmIdle:
// a program that stops confining calls keeps none after that. A warm
// helper runs nothing of a call before its handoff; it is this program,
// waiting on a socket only this process holds the other end of, and it
// ends with this process (a parent-death signal, and its socket closing).
//
// A helper's mount namespace is a copy of this process's, made when it
// started. So that no call sees mounts as they were rather than as they
// are, every change to this process's mount table (watched through
// /proc/self/mountinfo) retires every helper started before it; where
// the table cannot be watched there are no warm helpers.
const (
	warmPerKind   = 2
	warmIdle      = 30 * time.Second
	warmBrokenFor = time.Minute
)

// warmHelpers is the process's pool of warm helpers.
var warmHelpers warmPool

// warmKey is a kind of warm helper: its namespaces, and the user and
// group its user namespace maps.
type warmKey struct {
	ns       confine.Namespaces
	uid, gid int
}

// warmPool keeps warm helpers by kind. It is safe for concurrent use.
type warmPool struct {
	mu  sync.Mutex
	off bool // no warm helpers: tests of the other start
	// closing counts the closeIdle calls under way: none starts a helper.
	closing int
	opened  bool
	mounts  int    // /proc/self/mountinfo, or -1 when it cannot be watched
	gen     uint64 // counts the changes seen to the mount table
	kinds   map[warmKey]*warmKind
	// handed counts the calls handed to a warm helper (tests).
	handed atomic.Int64
	// keepers counts the goroutines that keep a helper not handed a
	// call (see keep).
	keepers sync.WaitGroup
}

// warmKind is the pool's state for one kind.
type warmKind struct {
	idle     []*warmHelper
	starting int
	// broken is until when no helper of this kind is started, after one
	// could not be started or prepared (the kernel refuses its
	// namespaces, say): until then the calls of this kind start their
	// own, which report why.
	broken time.Time
}

// warmHelper is one warm helper process.
type warmHelper struct {
	cmd *exec.Cmd
	w   *confine.Warm
	gen uint64 // the pool's gen when it started
	// fate tells the goroutine that keeps the helper what became of it:
	// true, handed a call; false, to be ended.
	fate chan bool
	// done is closed by the call it was handed, once the helper has been
	// reaped.
	done chan struct{}
}

// take returns a warm helper for ns, or nil if none is ready, and starts
// more so that the next call finds one. The caller must call release or
// discard on what it got.
func (p *warmPool) take(ns confine.Namespaces) *warmHelper {
	key := warmKey{ns, os.Geteuid(), os.Getegid()}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.usable() {
		return nil
	}
	p.poll()
	k := p.kinds[key]
	if k == nil {
		k = &warmKind{}
		p.kinds[key] = k
	}
	got, keep, retired := pick(k.idle, p.gen)
	for _, h := range retired {
		h.fate <- false // started before the mount table last changed
	}
	if got != nil {
		got.fate <- true
	}
	k.idle = keep
	p.fill(key, k)
	return got
}

// pick chooses, among the idle helpers of a kind, the newest one started
// at generation gen of the mount table, and says which to keep idle and
// which to retire (those of an older generation). It does not change idle.
func pick(idle []*warmHelper, gen uint64) (got *warmHelper, keep, retired []*warmHelper) {
	for i := len(idle) - 1; i >= 0; i-- {
		switch h := idle[i]; {
		case h.gen != gen:
			retired = append(retired, h)
		case got == nil:
			got = h
		default:
			keep = append(keep, h)
		}
	}
	slices.Reverse(keep)
	return got, keep, retired
}

// usable reports whether the pool may be used, opening the mount table
// the first time. p.mu is held.
func (p *warmPool) usable() bool {
	if p.off || p.closing > 0 {
		return false
	}
	if !p.opened {
		p.opened = true
		p.kinds = make(map[warmKey]*warmKind)
		fd, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			fd = -1
		}
		p.mounts = fd
	}
	return p.mounts >= 0
}

// poll counts a change of the mount table since the last poll. p.mu is
// held.
func (p *warmPool) poll() {
	fds := []unix.PollFd{{Fd: int32(p.mounts), Events: unix.POLLPRI}}
	n, err := unix.Poll(fds, 0)
	if err != nil || n > 0 {
		p.gen++
	}
}

// fill starts helpers of kind k until it has warmPerKind, ready or
// starting. p.mu is held.
func (p *warmPool) fill(key warmKey, k *warmKind) {
	if time.Now().Before(k.broken) {
		return
	}
	for len(k.idle)+k.starting < warmPerKind {
		k.starting++
		p.keepers.Add(1)
		go p.keep(key, k)
	}
}

// keep starts one helper of kind key and keeps it until it is handed a
// call, retired, or idle for warmIdle, on one locked OS thread: the
// helper's parent-death signal fires when the thread that started it
// ends, so the thread stays until the helper has been reaped.
func (p *warmPool) keep(key warmKey, k *warmKind) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h, err := p.start(key)
	if h != nil {
		// Hold the helper's namespaces until it has been reaped and its
		// call has returned: the last process of a mount namespace to end
		// tears it down (every mount, and a wait for the kernel's
		// read-copy-update grace period) before its parent learns it
		// ended, and a call would wait for that. Held here, they go after
		// the call.
		defer closeFDs(holdNamespaces(h.cmd.Process.Pid))
		// Listed only once it has prepared what it prepares ahead: a call
		// is never handed to one whose preparation could still fail.
		if err = h.w.Prepared(); err != nil {
			h.end()
			h = nil
		}
	}
	p.mu.Lock()
	k.starting--
	if err != nil || p.off || p.closing > 0 {
		if err != nil && !errors.Is(err, errIdentityChanged) {
			k.broken = time.Now().Add(warmBrokenFor)
		}
		p.mu.Unlock()
		if h != nil {
			h.end()
		}
		p.keepers.Done()
		return
	}
	k.idle = append(k.idle, h)
	p.mu.Unlock()

	t := time.NewTimer(warmIdle)
	defer t.Stop()
	var handed bool
	select {
	case handed = <-h.fate:
	case <-t.C:
		p.mu.Lock()
		i := slices.Index(k.idle, h)
		if i >= 0 {
			k.idle = slices.Delete(k.idle, i, i+1)
		}
		p.mu.Unlock()
		if i < 0 {
			handed = <-h.fate // taken or retired as the timer fired
		}
	}
	if handed {
		p.keepers.Done() // closeIdle does not wait for a call
		<-h.done
		return
	}
	h.end()
	p.keepers.Done()
}

// start starts a helper of kind key.
func (p *warmPool) start(key warmKey) (*warmHelper, error) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer null.Close()
	w, err := confine.NewWarm(key.ns)
	if err != nil {
		return nil, err
	}
	if uid, gid := w.IDs(); uid != key.uid || gid != key.gid {
		// This process changed its user or group since the call that
		// asked for the helper: it would be of another kind.
		w.Close()
		return nil, errIdentityChanged
	}
	cmd := &exec.Cmd{
		Path:        confine.HelperPath,
		Args:        w.Args(),
		Env:         []string{},
		Dir:         "/",
		ExtraFiles:  w.Files(null),
		SysProcAttr: w.SysProcAttr(),
	}
	proc.SetParentDeathSignal(cmd.SysProcAttr)
	p.mu.Lock()
	p.poll()
	gen := p.gen
	p.mu.Unlock()
	proc.CloseOnExecAboveStderr()
	err = cmd.Start()
	w.Started()
	if err != nil {
		w.Close()
		return nil, err
	}
	return &warmHelper{cmd: cmd, w: w, gen: gen, fate: make(chan bool, 1), done: make(chan struct{})}, nil
}

// errIdentityChanged is start's error when the process's effective user
// or group is no longer the one the helper was asked for.
var errIdentityChanged = errors.New("the effective user or group changed")

// holdNamespaces opens the namespaces of the process pid that it does not
// share with this one, and returns their descriptors.
func holdNamespaces(pid int) []int {
	var fds []int
	for _, ns := range []string{"mnt", "pid", "net", "ipc", "user"} {
		self, err1 := os.Readlink("/proc/self/ns/" + ns)
		theirs, err2 := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/" + ns)
		if err1 != nil || err2 != nil || self == theirs {
			continue
		}
		fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/ns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			fds = append(fds, fd)
		}
	}
	return fds
}

// closeFDs closes each descriptor of fds.
func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// end ends a helper that was not handed a call, and reaps it.
func (h *warmHelper) end() {
	h.w.Close()
	h.cmd.Process.Kill() // the first process of its PID namespace: the rest go with it
	h.cmd.Wait()
}

// release is called by the call a helper was handed, once it has been
// reaped.
func (h *warmHelper) release() { close(h.done) }

// discard is called by a call that took a helper and could not hand it
// the call: the helper is ended, and the call starts another way.
func (h *warmHelper) discard() {
	h.end()
	close(h.done)
}

// closeIdle ends every idle helper, those being started included, and
// waits for the goroutines that kept them. With off, the pool starts no
// more until it is turned on again (tests of the other start).
func (p *warmPool) closeIdle(off bool) {
	p.mu.Lock()
	p.closing++
	for _, k := range p.kinds {
		for _, h := range k.idle {
			h.fate <- false
		}
		k.idle = nil
	}
	p.mu.Unlock()
	p.keepers.Wait()
	p.mu.Lock()
	p.closing--
	if off {
		p.off = true
	}
	p.mu.Unlock()
}

// setOff turns the pool off or on again (tests).
func (p *warmPool) setOff(off bool) {
	p.closeIdle(off)
	if !off {
		p.mu.Lock()
		p.off = false
		p.mu.Unlock()
	}
}

// CloseIdleConfinementHelpers ends the confinement helpers that
// [DefaultExecFn] keeps started ahead of confined calls, and waits for the
// goroutines that keep them, as [net/http.Transport.CloseIdleConnections]
// does for idle connections: for tests that look for goroutines or
// processes left behind, and for a program about to stop confining calls
// for a long time. Calls running are not affected, and a later confined
// call starts helpers again. Elsewhere than on Linux there are none, and
// it does nothing.
func CloseIdleConfinementHelpers() { warmHelpers.closeIdle(false) }

// runWarm runs the call on a warm helper, if one is ready: the handoff,
// then the supervision of an unconfined call (see superviseWarm). It reports false, having started
// nothing, when there was none or the handoff failed; the call then
// starts its own helper.
func (c *confinedStart) runWarm(ctx context.Context, inv Invocation, p *pipes, exe *os.File, timeout time.Duration, maxOutput int) (Outcome, bool) {
	dir := inv.Dir
	if dir == "" {
		dir = "."
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Outcome{}, false
	}
	h := warmHelpers.take(c.ns)
	if h == nil {
		return Outcome{}, false
	}
	if ctx.Err() != nil {
		h.discard()
		return Outcome{ExitCode: -1, Termination: TerminationCanceled}, true
	}
	req := c.req
	req.Dir = dir
	start := time.Now()
	l, err := h.w.Handoff(req, p.outW, p.errW, p.inR, exe)
	if err != nil {
		h.discard()
		return Outcome{}, false
	}
	warmHelpers.handed.Add(1)
	p.closeChild()
	if exe != nil {
		exe.Close()
	}
	c.launch = l
	c.serveEgress()
	out := c.finish(inv, superviseWarm(ctx, inv, h.cmd, p, start, timeout, maxOutput))
	h.release()
	return out, true
}

// superviseWarm supervises a call handed to a warm helper as runPolled
// does an unconfined call: from this goroutine alone, with one poll over
// both pipes, a pidfd of the helper (this process's child, not reaped
// until the loop reaps it, so the pidfd names it) and an eventfd for
// the context. Where any of those cannot be had, it supervises the call
// the general way, which needs none of them: the command runs already.
func superviseWarm(ctx context.Context, inv Invocation, cmd *exec.Cmd, p *pipes, start time.Time, timeout time.Duration, maxOutput int) Outcome {
	if !polledSupervision() {
		return supervise(ctx, inv, cmd, p, start, timeout, maxOutput)
	}
	outR, err1 := rawFD(p.outR)
	errR, err2 := rawFD(p.errR)
	if err1 != nil || err2 != nil {
		return supervise(ctx, inv, cmd, p, start, timeout, maxOutput)
	}
	cancel, err := newCanceler(ctx)
	if err != nil {
		return supervise(ctx, inv, cmd, p, start, timeout, maxOutput)
	}
	defer cancel.close()
	pidfd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		return supervise(ctx, inv, cmd, p, start, timeout, maxOutput)
	}
	defer unix.Close(pidfd)
	// The loop reads the pipes' descriptors, which p's files (non-blocking
	// already) keep open and runProcess closes; it closes stdin's write end
	// through p's file when the leader exits.
	pp := polledPipes{outR: outR, errR: errR, inW: p.inW}
	return superviseLoop(ctx, inv, cmd, &pp, pidfd, cancel, ppoll, start, timeout, maxOutput)
}

// rawFD is f's descriptor, read without putting f in blocking mode (as
// Fd would).
func rawFD(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	if err := rc.Control(func(u uintptr) { fd = int(u) }); err != nil {
		return -1, err
	}
	return fd, nil
}
