//go:build unix && !linux

package execgate_test

import "time"

// watchdogCPU is 0: there is no watchdog on this platform.
func watchdogCPU() time.Duration { return 0 }
