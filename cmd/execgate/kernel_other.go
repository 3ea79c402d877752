//go:build !linux

package main

import "runtime"

// probe reports that confinement is not supported on this platform.
func probe() kernelSupport {
	return kernelSupport{os: runtime.GOOS}
}
