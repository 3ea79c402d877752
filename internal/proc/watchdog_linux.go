//go:build linux

package proc

import (
	"encoding/binary"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// WatchdogMarker is os.Args[1] of a watchdog process.
const WatchdogMarker = "execgate-watchdog-v1"

// The watchdog's messages: one opcode byte and a process group ID as four
// little-endian bytes, so that each message is one write of less than
// PIPE_BUF bytes and never interleaves with another.
const (
	opGuard   = 'g'
	opRelease = 'r'
	msgSize   = 5
)

// watchdog is this process's side of its watchdog: the process, the write
// end of the pipe it reads, and the groups it guards, to register again
// with a new watchdog if the old one is gone or stalled.
var watchdog struct {
	mu      sync.Mutex
	proc    *os.Process // nil until the first Guard, or after the watchdog was replaced
	w       *os.File
	guarded map[int]struct{}
}

// SetParentDeathSignal makes the kernel send SIGKILL to a child started
// with attr when the thread that started it ends, which, for a thread that
// stays locked to the starting goroutine until the child has been reaped,
// is when this process dies.
func SetParentDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}

// Guard asks this process's watchdog to kill the process group pgid if
// this process dies before Release(pgid). The watchdog is started on first
// use, and replaced when it is gone or does not keep up; Guard never
// waits for it. Guard reports an error when no watchdog can be started;
// the group then goes unguarded, and nothing of it is kept.
func Guard(pgid int) error {
	watchdog.mu.Lock()
	defer watchdog.mu.Unlock()
	if watchdog.guarded == nil {
		watchdog.guarded = make(map[int]struct{})
	}
	watchdog.guarded[pgid] = struct{}{}
	if watchdog.w != nil && send(watchdog.w, opGuard, pgid) == nil {
		return nil
	}
	if err := replaceWatchdog(); err != nil {
		delete(watchdog.guarded, pgid)
		return err
	}
	return nil
}

// Release tells the watchdog that the group pgid no longer needs guarding.
// Call it before the group's leader is reaped, while pgid cannot yet name
// another group. It never waits for the watchdog.
func Release(pgid int) {
	watchdog.mu.Lock()
	defer watchdog.mu.Unlock()
	delete(watchdog.guarded, pgid)
	if watchdog.w != nil && send(watchdog.w, opRelease, pgid) != nil {
		// The watchdog is gone or stalled: replace it, so that the
		// groups still guarded stay so. If that fails, the next Guard
		// tries again.
		replaceWatchdog()
	}
}

// replaceWatchdog ends the current watchdog, if any, and starts a new one
// that guards every group in watchdog.guarded. The caller holds
// watchdog.mu.
func replaceWatchdog() error {
	if watchdog.proc != nil {
		// Killed and reaped here, so that no replaced watchdog stays
		// behind as a zombie; SIGKILL makes the wait short.
		watchdog.w.Close()
		watchdog.proc.Kill()
		watchdog.proc.Wait()
		watchdog.proc, watchdog.w = nil, nil
	}
	p, w, err := startWatchdog()
	if err != nil {
		return err
	}
	for g := range watchdog.guarded {
		if err := send(w, opGuard, g); err != nil {
			w.Close()
			p.Kill()
			p.Wait()
			return err
		}
	}
	watchdog.proc, watchdog.w = p, w
	return nil
}

// send writes one message without waiting: the pipe's descriptor is
// non-blocking, so a watchdog that does not read (stopped, or flooded)
// makes it fail with EAGAIN at once instead of holding up every call.
func send(w *os.File, op byte, pgid int) error {
	var msg [msgSize]byte
	msg[0] = op
	binary.LittleEndian.PutUint32(msg[1:], uint32(pgid))
	rc, err := w.SyscallConn()
	if err != nil {
		return err
	}
	var n int
	var werr error
	if err := rc.Write(func(fd uintptr) bool {
		n, werr = unix.Write(int(fd), msg[:])
		return true
	}); err != nil {
		return err
	}
	if werr != nil {
		return werr
	}
	if n != msgSize {
		return io.ErrShortWrite
	}
	return nil
}

// startWatchdog starts this program again as a watchdog, reading the
// returned pipe. The watchdog is in a process group of its own, so a
// terminal's signals to this process's group do not reach it, and it has
// no parent-death signal: it must outlive this process to do its work.
func startWatchdog() (*os.Process, *os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	cmd := &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        []string{os.Args[0], WatchdogMarker},
		Env:         []string{},
		Stdin:       r,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, nil, err
	}
	return cmd.Process, w, nil
}

// RunWatchdogIfRequested becomes the watchdog, and exits, when this
// process was started as one (os.Args[1] is WatchdogMarker, standard input
// is a pipe, and the process runs with the privileges of whoever started
// it); otherwise it returns at once.
func RunWatchdogIfRequested() {
	if len(os.Args) != 2 || os.Args[1] != WatchdogMarker {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(0, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		os.Stderr.WriteString("execgate: not starting as a watchdog: standard input is not a pipe\n")
		os.Exit(2)
	}
	// A set-user-ID or file-capability start would let whoever started
	// it kill with privileges it does not have.
	if os.Getuid() != os.Geteuid() || os.Getgid() != os.Getegid() {
		os.Stderr.WriteString("execgate: not starting as a watchdog: running with privileges its starter lacks\n")
		os.Exit(2)
	}
	// Not dumpable: processes of the same user cannot trace it or open
	// its descriptors through /proc, so a command cannot write to its
	// pipe that way.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	// Signals meant for a terminal's foreground group, or a service
	// manager's stop, must not end the watchdog before the process it
	// guards: it ends when that process's end closes the pipe.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	os.Exit(runWatchdog(os.Stdin, &pacer{batch: watchdogBatch, now: time.Now, sleep: sleepThread}))
}

// watchdogBatch is how long the watchdog waits, after a read that came
// less than that after the one before, before it reads again. The messages
// wait in the pipe meanwhile, so that many calls cost the watchdog one
// wake-up, and a write to a pipe whose reader is not waiting wakes nobody:
// without the pause, each message woke the watchdog and its runtime, which
// cost a process running calls back to back several context switches per
// call. The set it acts on at the end is the same, since everything
// written before the pipe ended is read before its end; the pause only
// delays the kills after the gate dies by as much. A pipe holds thousands
// of messages, far more than a gate writes in a pause, so a watchdog that
// pauses is never taken for one that does not keep up.
const watchdogBatch = 10 * time.Millisecond

// pacer decides when the watchdog pauses between reads. Only a busy pipe
// pays: after a read that returned less than batch after the previous read
// (or the pause after it) ended, it sleeps for batch; after a read that
// waited longer, such as the first message after an idle spell, it reads
// again at once. A gate whose calls are spaced out thus costs the watchdog
// no more than one wake-up per message, where pausing after every read
// cost it a pause, and its runtime's timers, per call.
type pacer struct {
	batch time.Duration
	now   func() time.Time
	sleep func(time.Duration)
	last  time.Time // when the previous read, or the pause after it, ended
}

// afterRead is called after each read that returned messages.
func (p *pacer) afterRead() {
	t := p.now()
	if !p.last.IsZero() && t.Sub(p.last) < p.batch {
		p.sleep(p.batch)
		t = p.now()
	}
	p.last = t
}

// sleepThread sleeps for d in nanosleep(2), restarted with what is left
// when a signal interrupts it. The thread blocks in the kernel, so the
// watchdog's runtime has no timer to run and nothing to wake for while it
// pauses, which time.Sleep would give it.
func sleepThread(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}

// runWatchdog keeps the set of guarded groups from r until r ends, then
// kills every group still in it. A message naming no possible process
// group (below 2, above the largest process ID) is ignored. After each
// read that returned messages it asks pace, if not nil, whether to pause
// before reading again.
func runWatchdog(r io.Reader, pace *pacer) int {
	guarded := make(map[int]struct{})
	// A whole number of messages, so that a read of a pipe written one
	// message at a time returns whole messages; a short read is kept
	// and completed by the next anyway.
	buf := make([]byte, 819*msgSize)
	have := 0
	for {
		n, err := r.Read(buf[have:])
		have += n
		done := 0
		for ; have-done >= msgSize; done += msgSize {
			apply(guarded, buf[done:done+msgSize])
		}
		have = copy(buf, buf[done:have])
		if err != nil {
			break
		}
		if n > 0 && pace != nil {
			pace.afterRead()
		}
	}
	for pgid := range guarded {
		KillGroup(pgid) // an error means the group is gone, or not ours
	}
	return 0
}

// apply applies one message to the set of guarded groups.
func apply(guarded map[int]struct{}, msg []byte) {
	pgid := binary.LittleEndian.Uint32(msg[1:])
	if pgid < 2 || pgid > math.MaxInt32 {
		return
	}
	switch msg[0] {
	case opGuard:
		guarded[int(pgid)] = struct{}{}
	case opRelease:
		delete(guarded, int(pgid))
	}
}
