package execgate

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInvariant10_HandMadeApprovalCannotExecute builds an envelope whose
// digest is exactly what the gate would compute for it, with the real spec
// fingerprint: without a stored record it still runs nothing.
func TestInvariant10_HandMadeApprovalCannotExecute(t *testing.T) {
	a, err := NewAllowlist(CommandSpec{Name: "echo.say", Command: "/bin/echo", Args: Fixed("hi")})
	require.NoError(t, err)
	var spawned atomic.Int64
	x, err := NewExecutor(Config{Allowlist: a, ExecFn: func(context.Context, Invocation) Outcome {
		spawned.Add(1)
		return Outcome{}
	}})
	require.NoError(t, err)

	e, _ := a.lookup("echo.say")
	now := time.Now().UTC()
	ap := Approval{
		ID: uuid.Must(uuid.NewV7()).String(), Name: "echo.say", Command: "/bin/echo", Args: []string{"hi"},
		PolicyVersion: "1", CreatedAt: now, ExpiresAt: now.Add(time.Hour),
	}
	ap.Digest = approvalDigest(&ap, e.fingerprint, stdinSHA256(nil))
	_, err = x.Execute(context.Background(), ap)
	var ae *ApprovalError
	require.True(t, errors.As(err, &ae), "got %v", err)
	assert.Equal(t, ReasonUnknown, ae.Reason)
	assert.Zero(t, spawned.Load())
}

// TestInvariant10_SpawnFreeSubsetBuildsForWasm builds a program that uses
// NewAllowlist, Struct and Proposer.Check for GOOS=js GOARCH=wasm, where no
// process can be started.
func TestInvariant10_SpawnFreeSubsetBuildsForWasm(t *testing.T) {
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the go command must be on PATH for this test")
	cmd := exec.Command(goTool, "build", "-o", filepath.Join(t.TempDir(), "check.wasm"), "./internal/wasmcheck")
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm", "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "wasm build failed:\n%s", out)
}
