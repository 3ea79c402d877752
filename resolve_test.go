package execgate_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// Invariant 3 of DESIGN.md.
func TestResolvedOnce(t *testing.T) {
	dir := t.TempDir()
	tool := filepath.Join(dir, "execgate-test-tool")
	require.NoError(t, os.WriteFile(tool, []byte("#!/bin/true\n"), 0o755))
	link := filepath.Join(dir, "execgate-test-link")
	require.NoError(t, os.Symlink(tool, link))

	t.Run("a bare name is looked up on PATH, once", func(t *testing.T) {
		t.Setenv("PATH", dir)
		a := mustAllowlist(t, execgate.CommandSpec{Name: "tool", Command: "execgate-test-tool", Args: execgate.Fixed()})
		s, _ := a.Lookup("tool")
		assert.Equal(t, tool, s.Command)
		t.Setenv("PATH", "/nonexistent")
		s, _ = a.Lookup("tool")
		assert.Equal(t, tool, s.Command, "a later PATH change changes nothing")
	})
	t.Run("an absolute path is cleaned, not symlink-resolved", func(t *testing.T) {
		a := mustAllowlist(t, execgate.CommandSpec{Name: "link", Command: dir + "/./sub/../execgate-test-link", Args: execgate.Fixed()})
		s, _ := a.Lookup("link")
		assert.Equal(t, link, s.Command)
	})
	t.Run("a match through a relative PATH entry is refused", func(t *testing.T) {
		t.Chdir(dir)
		for _, path := range []string{".", "", "./", "sub/.."} {
			t.Setenv("PATH", path)
			_, err := execgate.NewAllowlist(execgate.CommandSpec{Name: "tool", Command: "execgate-test-tool", Args: execgate.Fixed()})
			var ce *execgate.ConfigError
			require.ErrorAs(t, err, &ce, "PATH=%q", path)
			assert.Equal(t, "Command", ce.Field)
		}
	})
}
