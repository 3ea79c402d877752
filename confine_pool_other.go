//go:build !linux

package execgate

// CloseIdleConfinementHelpers ends the confinement helpers that
// [DefaultExecFn] keeps started ahead of confined calls on Linux. Here
// there are none, and it does nothing.
func CloseIdleConfinementHelpers() {}
