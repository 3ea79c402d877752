//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package audit

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on f, without waiting. It is
// released when f is closed.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
