//go:build !unix

package execgate

import (
	"context"
	"errors"
	"runtime"
)

func defaultExecFn(ctx context.Context, inv Invocation) Outcome {
	return Outcome{Err: errors.New("execgate: starting processes is not supported on " + runtime.GOOS)}
}
