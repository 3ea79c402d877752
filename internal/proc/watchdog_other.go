//go:build unix && !linux

package proc

import (
	"errors"
	"syscall"
)

// SetParentDeathSignal does nothing on this platform, which has no
// parent-death signal.
func SetParentDeathSignal(attr *syscall.SysProcAttr) {}

// Guard is not supported on this platform: it returns
// errors.ErrUnsupported, and a group whose parent dies is not killed.
func Guard(pgid int) error { return errors.ErrUnsupported }

// Release does nothing on this platform.
func Release(pgid int) {}

// RunWatchdogIfRequested does nothing on this platform.
func RunWatchdogIfRequested() {}
