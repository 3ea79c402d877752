//go:build unix

package execgate

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// newSessionAttr returns process attributes that start a helper's child in
// a new session, and so outside the helper's process group.
func newSessionAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

func init() {
	// "leavegroup": move into the parent's process group (leaving the one
	// DefaultExecFn made for this process, without a new session), say
	// so, then sleep for the duration args[0]. A kill of the original
	// group no longer reaches this process.
	moreHelpers["leavegroup"] = func(args []string) int {
		pgid, err := syscall.Getpgid(os.Getppid())
		if err != nil {
			return helperFail(err)
		}
		if err := syscall.Setpgid(0, pgid); err != nil {
			return helperFail(err)
		}
		fmt.Println("left")
		d, err := time.ParseDuration(helperArg(args, 0))
		if err != nil {
			return helperFail(err)
		}
		time.Sleep(d)
		return 0
	}
}
