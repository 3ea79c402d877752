//go:build linux

package proc

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// minExecFD is the lowest descriptor number OpenExecutable hands out.
// Between fork and exec, Go's syscall package moves descriptors onto 0, 1
// and 2 and, when the parent had some of its standard descriptors closed,
// duplicates a few of them onto 3, 4, 5... first. A descriptor named in
// the exec path must stay clear of all of those.
const minExecFD = 10

// OpenExecutable opens path read-only and close-on-exec, for hashing and
// then for ExecPath. The descriptor is numbered minExecFD or above. The
// caller must keep the returned file open until the child has started.
func OpenExecutable(path string) (*os.File, error) {
	f, err := openReadOnly(path)
	if err != nil {
		return nil, err
	}
	if f.Fd() >= minExecFD {
		return f, nil
	}
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, minExecFD)
	f.Close()
	if err != nil {
		return nil, &os.PathError{Op: "dup", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// ExecPath returns a path that, passed to exec in a child forked while f
// is still open, executes the very file f refers to: /proc/self/fd/N. The
// descriptor is close-on-exec, so the child's exec resolves the path and
// then closes it; nothing of it survives in the new program, and children
// forked concurrently by other goroutines drop it at their own exec.
//
// ExecPath fails if /proc is not mounted, or if the path does not lead to
// the file f has open; the caller must then start nothing. Because the
// descriptor is closed by the time the program runs, a "#!" script cannot
// be executed this way: its interpreter would not find the path.
func ExecPath(f *os.File) (string, error) {
	p := "/proc/self/fd/" + strconv.FormatUint(uint64(f.Fd()), 10)
	opened, err := f.Stat()
	if err != nil {
		return "", err
	}
	named, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("cannot execute the opened file through /proc (is /proc mounted?): %w", errors.Unwrap(err))
	}
	if !os.SameFile(opened, named) {
		return "", errors.New("/proc/self/fd does not lead to the opened file; is /proc mounted for this process?")
	}
	return p, nil
}

// WaitExit blocks until the process pid, a child of the calling process,
// has exited, and leaves it unreaped: it stays a zombie, so neither its
// process ID nor its process group ID can be reused until the caller reaps
// it (with exec.Cmd.Wait, for example).
func WaitExit(pid int) error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// CloseOnExecAboveStderr marks every descriptor of this process above
// stderr close-on-exec, so that a child started next inherits only what
// it is handed (its stdin, stdout, stderr and explicit extra files, which
// are duplicated into place): one close_range call where the kernel has
// it (5.11), else one fcntl per open descriptor.
func CloseOnExecAboveStderr() {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	closeOnExecListed("/proc/self/fd")
}
