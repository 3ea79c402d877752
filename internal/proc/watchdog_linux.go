//go:build linux

package proc

import (
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"

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

// watchdog is this process's side of its watchdog: the write end of the
// pipe the watchdog reads, and the groups it guards, to register again
// with a new watchdog if the old one is gone.
var watchdog struct {
	mu      sync.Mutex
	w       *os.File // nil until the first Guard, or after a failed write
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
// use, and again if it has gone; Guard reports an error only when it
// cannot be started, and the group then goes unguarded.
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
	// No watchdog yet, or it has gone: start one and hand it every group
	// still guarded.
	closeWatchdog()
	w, err := startWatchdog()
	if err != nil {
		return err
	}
	for g := range watchdog.guarded {
		if err := send(w, opGuard, g); err != nil {
			w.Close()
			return err
		}
	}
	watchdog.w = w
	return nil
}

// Release tells the watchdog that the group pgid no longer needs guarding.
// Call it before the group's leader is reaped, while pgid cannot yet name
// another group.
func Release(pgid int) {
	watchdog.mu.Lock()
	defer watchdog.mu.Unlock()
	delete(watchdog.guarded, pgid)
	if watchdog.w != nil && send(watchdog.w, opRelease, pgid) != nil {
		closeWatchdog()
	}
}

func closeWatchdog() {
	if watchdog.w != nil {
		watchdog.w.Close()
		watchdog.w = nil
	}
}

func send(w *os.File, op byte, pgid int) error {
	var msg [msgSize]byte
	msg[0] = op
	binary.LittleEndian.PutUint32(msg[1:], uint32(pgid))
	_, err := w.Write(msg[:])
	return err
}

// startWatchdog starts this program again as a watchdog, reading the
// returned pipe. The watchdog is in a process group of its own, so a
// terminal's signals to this process's group do not reach it, and it has
// no parent-death signal: it must outlive this process to do its work.
func startWatchdog() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
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
		return nil, err
	}
	// Nothing waits for the watchdog: it lives as long as this process
	// and is reaped by whoever inherits it. Release the os.Process so it
	// holds nothing.
	cmd.Process.Release()
	return w, nil
}

// RunWatchdogIfRequested becomes the watchdog, and exits, when this
// process was started as one (os.Args[1] is WatchdogMarker and standard
// input is a pipe); otherwise it returns at once.
func RunWatchdogIfRequested() {
	if len(os.Args) != 2 || os.Args[1] != WatchdogMarker {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(0, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		os.Stderr.WriteString("execgate: not starting as a watchdog: standard input is not a pipe\n")
		os.Exit(2)
	}
	// Signals meant for a terminal's foreground group, or a service
	// manager's stop, must not end the watchdog before the process it
	// guards: it ends when that process's end closes the pipe.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	os.Exit(runWatchdog(os.Stdin))
}

// runWatchdog keeps the set of guarded groups from r until r ends, then
// kills every group still in it.
func runWatchdog(r io.Reader) int {
	guarded := make(map[int]struct{})
	var msg [msgSize]byte
	for {
		if _, err := io.ReadFull(r, msg[:]); err != nil {
			break
		}
		pgid := int(binary.LittleEndian.Uint32(msg[1:]))
		switch msg[0] {
		case opGuard:
			guarded[pgid] = struct{}{}
		case opRelease:
			delete(guarded, pgid)
		}
	}
	for pgid := range guarded {
		KillGroup(pgid) // an error means the group is gone, or not ours
	}
	return 0
}
