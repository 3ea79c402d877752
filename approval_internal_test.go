package execgate

import (
	"context"
	"errors"
	"fmt"
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

// TestSpawnFree_HandMadeApprovalCannotExecute builds an envelope whose
// digest is exactly what the gate would compute for it, with the real spec
// fingerprint: without a stored record it still runs nothing.
//
// Invariant 10 of DESIGN.md.
func TestSpawnFree_HandMadeApprovalCannotExecute(t *testing.T) {
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

// TestSpawnFree_SubsetBuildsForWasm builds a program that uses
// NewAllowlist, Struct and Proposer.Check for GOOS=js GOARCH=wasm, where no
// process can be started.
//
// Invariant 10 of DESIGN.md.
func TestSpawnFree_SubsetBuildsForWasm(t *testing.T) {
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the go command must be on PATH for this test")
	cmd := exec.Command(goTool, "build", "-o", filepath.Join(t.TempDir(), "check.wasm"), "./internal/wasmcheck")
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm", "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "wasm build failed:\n%s", out)
}

// TestDigestBinding_DigestsRevealNoEnvironment proposes a call whose spec
// holds a four-digit secret in its environment, then tries every value
// against the approval's and the proposal's digests the way an attacker
// who knows the encoding would: none matches, because both are salted with
// secrets that never leave the trusted side.
//
// Invariant 9 of DESIGN.md.
func TestDigestBinding_DigestsRevealNoEnvironment(t *testing.T) {
	spec := CommandSpec{Name: "deploy", Command: "/bin/echo", Args: Fixed("go"), Dir: "/", Env: map[string]string{"PIN": "7391"}}
	a, err := NewAllowlist(spec)
	require.NoError(t, err)
	x, err := NewExecutor(Config{Allowlist: a, ExecFn: func(context.Context, Invocation) Outcome { return Outcome{} }})
	require.NoError(t, err)
	ap, err := x.Propose(context.Background(), "deploy", nil, "")
	require.NoError(t, err)
	p, err := x.Proposer().Check("deploy", nil)
	require.NoError(t, err)

	stdinHash := stdinSHA256(nil)
	for pin := range 10000 {
		spec.Env = map[string]string{"PIN": fmt.Sprintf("%04d", pin)}
		guess, err := NewAllowlist(spec)
		require.NoError(t, err)
		e, _ := guess.lookup("deploy")
		for _, fp := range []string{e.fingerprint, saltedFingerprint(nil, e.fingerprint)} {
			require.NotEqual(t, ap.Digest, approvalDigest(&ap, fp, stdinHash), "the PIN is recoverable from the approval digest")
		}
		require.NotEqual(t, p.Digest, proposalDigest(nil, e.fingerprint, Argv{Args: []string{"go"}}), "the PIN is recoverable from the proposal digest")
	}

	// Two proposals of the same call carry unrelated digests.
	ap2, err := x.Propose(context.Background(), "deploy", nil, "")
	require.NoError(t, err)
	assert.NotEqual(t, ap.Digest, ap2.Digest)
}
