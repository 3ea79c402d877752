//go:build !unix

package execgate

import (
	"context"
	"errors"
	"runtime"
)

// defaultExecFn is DefaultExecFn where execgate cannot start processes
// (js/wasm, wasip1, Windows, Plan 9): it starts nothing and reports a spawn
// error, so the rest of the package still builds and refuses safely.
func defaultExecFn(ctx context.Context, inv Invocation) Outcome {
	return Outcome{Err: errors.New("execgate: starting processes is not supported on " + runtime.GOOS)}
}
