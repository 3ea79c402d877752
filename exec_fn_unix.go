//go:build unix

package execgate

import (
	"context"
	"errors"
)

// Placeholder until the process code lands.
func defaultExecFn(ctx context.Context, inv Invocation) Outcome {
	return Outcome{Err: errors.New("execgate: not implemented")}
}
