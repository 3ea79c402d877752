//go:build !linux

package confine

// RunHelperIfRequested does nothing where confinement is not supported:
// no process is ever started as a helper there.
func RunHelperIfRequested() {}
