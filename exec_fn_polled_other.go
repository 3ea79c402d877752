//go:build unix && !linux

package execgate

import (
	"context"
	"os"
	"time"
)

// runPolled reports false: outside Linux every call takes the general
// path (see supervise).
func runPolled(ctx context.Context, inv Invocation, path string, env []string, exe *os.File, timeout time.Duration, maxOutput int) (Outcome, bool) {
	return Outcome{}, false
}
