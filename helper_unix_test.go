//go:build unix

package execgate

import "syscall"

// newSessionAttr returns process attributes that start a helper's child in
// a new session, and so outside the helper's process group.
func newSessionAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}
