//go:build unix

package proc

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// KillGroup sends SIGKILL to every process in the process group pgid. A
// group that no longer has any member is not an error. KillGroup refuses a
// pgid below 2, because kill(2) gives -0 and -1 special meanings (the
// caller's own group, every process it may signal), and one above the
// largest process ID.
func KillGroup(pgid int) error {
	// kill(2) takes a pid_t: a larger number would wrap around into
	// another process, or into -1.
	if pgid < 2 || pgid > math.MaxInt32 {
		return fmt.Errorf("proc: refusing to kill process group %d", pgid)
	}
	err := unix.Kill(-pgid, unix.SIGKILL)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	return err
}

// SignalName returns the conventional name of sig, such as "SIGKILL", or
// "signal N" for a signal without one (real-time signals, for example).
func SignalName(sig syscall.Signal) string {
	if name := unix.SignalName(sig); name != "" {
		return name
	}
	return "signal " + strconv.Itoa(int(sig))
}

// openReadOnly opens path for reading with close-on-exec set, so that no
// child started concurrently by another goroutine keeps the descriptor
// after its own exec.
func openReadOnly(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|unix.O_CLOEXEC, 0)
}

// closeOnExecListed marks close-on-exec each descriptor above stderr that
// the directory dir (/proc/self/fd, /dev/fd) lists, or, when it cannot be
// read, each of the first 1024.
func closeOnExecListed(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		for fd := 3; fd < 1024; fd++ {
			syscall.CloseOnExec(fd) // harmless on a closed descriptor
		}
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
