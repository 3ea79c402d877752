//go:build unix && !linux

package execgate

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"time"
)

// confinedStart is a confined call on a Unix system without confinement
// support: a required confinement refuses, a best-effort one runs the
// command unconfined and says so.
type confinedStart struct {
	unconfined []string
}

func newConfinedStart(inv Invocation, exe *os.File) (*confinedStart, error) {
	if !inv.Confine.BestEffort {
		return nil, fmt.Errorf("execgate: refusing to start %s: its Confinement is required, and confinement is only supported on Linux, not %s", inv.Path, runtime.GOOS)
	}
	return &confinedStart{unconfined: inv.Confine.features()}, nil
}

func (c *confinedStart) apply(cmd *exec.Cmd) {}

func (c *confinedStart) retry() bool { return false }

func (c *confinedStart) startError(inv Invocation, err error) error { return startError(inv, err) }

func (c *confinedStart) started() {}

func (c *confinedStart) finish(inv Invocation, out Outcome) Outcome {
	out.Unconfined = c.unconfined
	return out
}

func (c *confinedStart) close() {}

// runWarm reports false: there are no warm helpers here.
func (c *confinedStart) runWarm(ctx context.Context, inv Invocation, p *pipes, exe *os.File, timeout time.Duration, maxOutput int) (Outcome, bool) {
	return Outcome{}, false
}

// cold prepares nothing: there is no helper here.
func (c *confinedStart) cold(inv Invocation) error { return nil }
