//go:build unix

package execgate

import "github.com/execgate/execgate/internal/proc"

// init enters the watchdog when, and only when, this process was started
// as one by DefaultExecFn (see "When the gate dies" in the package
// documentation). In any other process it compares os.Args[1] with a
// constant and returns.
func init() {
	proc.RunWatchdogIfRequested()
}
