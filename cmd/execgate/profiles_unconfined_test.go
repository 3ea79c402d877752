package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
)

// The helpers of the tests that run a profile without its confinement,
// in a scene of profiles_proof_test.go.

// unconfinedSpecs returns the specs of the scene's configuration with
// every spec's confinement removed: what the grammar alone holds
// (invariant 12 of DESIGN.md, without the backstop of invariant 13).
func unconfinedSpecs(t *testing.T, s *proofScene) []execgate.CommandSpec {
	t.Helper()
	l, err := config.LoadFile(s.config)
	require.NoError(t, err)
	specs := l.Allowlist.Specs()
	for i := range specs {
		specs[i].Confine = nil
	}
	return specs
}

// unconfinedAllowlist returns the Allowlist of unconfinedSpecs.
func unconfinedAllowlist(t *testing.T, s *proofScene) *execgate.Allowlist {
	t.Helper()
	a, err := execgate.NewAllowlist(unconfinedSpecs(t, s)...)
	require.NoError(t, err)
	return a
}

// unconfinedExecutor returns an Executor of unconfinedAllowlist.
func unconfinedExecutor(t *testing.T, s *proofScene) *execgate.Executor {
	t.Helper()
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: unconfinedAllowlist(t, s)})
	require.NoError(t, err)
	return x
}

// otherRepository makes a repository "other" beside the scene's root,
// whose one commit holds private.txt with the canary, and returns its
// directory.
func (s *proofScene) otherRepository(t *testing.T) string {
	t.Helper()
	other := filepath.Join(s.base, "other")
	require.NoError(t, os.MkdirAll(other, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(other, "private.txt"), []byte(proofCanary+"\n"), 0o644))
	s.git(t, "-C", other, "init", "-q")
	s.git(t, "-C", other, "add", "private.txt")
	s.git(t, "-C", other, "commit", "-q", "-m", "private")
	return other
}

// unconfinedGitRun returns a function that makes a call of the git
// profile at the scene's root through the gate, with the profile's argv
// and environment but without its confinement (invariant 12 of
// DESIGN.md: the profile holds without the backstop).
func unconfinedGitRun(t *testing.T, s *proofScene) func(name string, args ...string) execgate.Result {
	t.Helper()
	x := unconfinedExecutor(t, s)
	return func(name string, args ...string) execgate.Result {
		t.Helper()
		in, err := json.Marshal(map[string]any{"args": args})
		require.NoError(t, err)
		r, err := x.Run(context.Background(), name, in)
		require.NoError(t, err)
		return r
	}
}
