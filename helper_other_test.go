//go:build !unix

package execgate

import "syscall"

// newSessionAttr returns nil: sessions are a Unix notion, and the process
// tests that use them run only on Unix.
func newSessionAttr() *syscall.SysProcAttr {
	return nil
}
