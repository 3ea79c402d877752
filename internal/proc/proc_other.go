//go:build unix && !linux

package proc

import (
	"errors"
	"os"
)

// OpenExecutable opens path read-only and close-on-exec, for hashing. The
// caller must keep the returned file open until the child has started.
func OpenExecutable(path string) (*os.File, error) {
	return openReadOnly(path)
}

// ExecPath returns the path f was opened with. This platform offers no way
// for os/exec to execute an open descriptor, so the file is executed by
// path: a file renamed over that path between hashing and exec would run
// instead of the hashed one. Pinned executables should live in a directory
// that only trusted users can write to.
func ExecPath(f *os.File) (string, error) {
	return f.Name(), nil
}

// WaitExit is not supported on this platform: it returns
// errors.ErrUnsupported at once, and the caller must reap the process to
// learn that it exited. Killing the rest of its process group after that
// leaves a short window in which the group ID could, in principle, have
// been reused; it needs every process ID to be recycled and the new
// process to make itself a group leader within that window.
func WaitExit(pid int) error {
	return errors.ErrUnsupported
}

// CloseOnExecAboveStderr marks every descriptor of this process above
// stderr close-on-exec, so that a child started next inherits only what
// it is handed: one fcntl per descriptor listed in /dev/fd.
func CloseOnExecAboveStderr() {
	closeOnExecListed("/dev/fd")
}
