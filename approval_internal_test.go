package execgate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// widestSchema builds the largest argv an approval may carry, of the
// character encoding/json writes longest but for the control characters
// (a double quote, two bytes), and the largest stdin preview, of the one
// it writes longest of all ("<", six bytes).
type widestSchema struct{}

func (widestSchema) Parse(json.RawMessage) (Argv, error) {
	args := make([]string, MaxApprovalArgs)
	for i := range args {
		args[i] = strings.Repeat(`"`, MaxApprovalArgBytes)
	}
	return Argv{Args: args, Stdin: []byte(strings.Repeat("<", MaxStdinPreview))}, nil
}
func (widestSchema) JSONSchema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }

// The largest approval the envelope limits and NewAllowlist allow, its
// argv, reason, stdin preview and confinement all as wide as they may be
// and written with the characters JSON escapes longest, comes back from
// JSON and executes: Propose never issues an approval that the decoder
// would refuse as too large. A confinement larger than an approval can
// show is refused when the allowlist is built.
//
// Invariant 8 of DESIGN.md.
func TestSingleUse_TheWidestApprovalSurvivesJSON(t *testing.T) {
	path := func(i int) string { return fmt.Sprintf("/%s%03d", strings.Repeat("<", 4000), i) }
	var read []string
	for n := 0; n+len(path(0))+1 <= maxShownConfinementBytes; n += len(path(0)) + 1 {
		read = append(read, path(len(read)))
	}
	spec := CommandSpec{Name: "wide.run", Command: "/bin/echo", Args: widestSchema{}, Confine: &Confinement{Read: read}}
	a, err := NewAllowlist(spec)
	require.NoError(t, err)
	var spawned atomic.Int64
	x, err := NewExecutor(Config{Allowlist: a, ExecFn: func(context.Context, Invocation) Outcome {
		spawned.Add(1)
		return Outcome{}
	}})
	require.NoError(t, err)
	ap, err := x.Propose(context.Background(), "wide.run", nil, strings.Repeat("<", MaxReasonBytes))
	require.NoError(t, err)
	b, err := json.Marshal(ap)
	require.NoError(t, err)
	require.Greater(t, len(b), 2*MaxApprovalArgs*MaxApprovalArgBytes+64<<10, "the envelope is wider than the argv's room and the rest")
	var back Approval
	require.NoError(t, json.Unmarshal(b, &back))
	_, err = x.Execute(context.Background(), back)
	require.NoError(t, err)
	assert.Equal(t, int64(1), spawned.Load())

	spec.Confine = &Confinement{Read: append(read, path(len(read)))}
	_, err = NewAllowlist(spec)
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Confine", ce.Field)
	assert.Contains(t, ce.Message, "more than the")
}
