package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
)

// TestTypedGrammars_GitProfileRunsNoRepositoryProgramEvenUnconfined runs
// the argv the git profile builds with the real git, outside any
// confinement (invariant 12 of DESIGN.md: the grammar holds without the
// backstop of invariant 13), in a repository whose config and
// .gitattributes name an external diff and a textconv driver that would
// create a marker: the leading --no-ext-diff and --no-textconv keep both
// from running, while the same git without them runs the driver.
func TestTypedGrammars_GitProfileRunsNoRepositoryProgramEvenUnconfined(t *testing.T) {
	gitPath := requireProgram(t, "git")
	base := t.TempDir()
	root := filepath.Join(base, "root")
	marker := filepath.Join(base, "pwned")
	require.NoError(t, os.MkdirAll(root, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(base, "pwned-not-yet"), []byte("outside\n"), 0o644))
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(gitPath, args...)
		cmd.Dir = root
		cmd.Env = []string{"HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return string(out)
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "README"), []byte("hello\n"), 0o644))
	run("init", "-q")
	run("add", "README")
	run("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "one")
	payload := "sh -c 'touch " + marker + "; echo driver-ran' --"
	run("config", "diff.external", payload)
	run("config", "diff.evil.textconv", payload)
	require.NoError(t, os.WriteFile(filepath.Join(root, ".gitattributes"), []byte("README diff=evil\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "README"), []byte("hello\nchanged\n"), 0o644))

	// A repository whose config moves its work tree to the parent
	// directory: git as a caller might run it lists the files there.
	run("config", "core.worktree", base)
	require.Contains(t, run("status", "--porcelain", "--untracked-files=all"), "pwned-not-yet", "the scene's work tree is moved")

	// The scene is live: git as a caller might run it starts the driver.
	run("diff")
	require.FileExists(t, marker, "the scene's external diff runs without the profile's options")
	require.NoError(t, os.Remove(marker))

	l, err := config.LoadBytes("tools.yaml", []byte("version: 1\ntools:\n  - profile: git\n    bin: "+gitPath+"\n    working_dir: "+root+"\n"))
	require.NoError(t, err)
	p := execgate.NewProposer(l.Allowlist)
	prop, err := p.Check("git.status", json.RawMessage(`{"args":["--porcelain","v1","--untracked-files","all"]}`))
	require.NoError(t, err)
	assert.NotContains(t, run(prop.Args...), "pwned-not-yet", "the work tree is the working directory, whatever core.worktree says")
	run("config", "--unset", "core.worktree")

	for _, c := range []struct {
		why, name, input string
	}{
		{"diff of the work tree", "git.diff", `{}`},
		{"diff of one path", "git.diff", `{"args":["README"]}`},
		{"log with patches", "git.log", `{"args":["-p"]}`},
		{"show of HEAD", "git.show", `{}`},
		{"grep of the tree", "git.grep", `{"args":["-e","hello"]}`},
		{"blame of the file", "git.blame", `{"args":["README"]}`},
	} {
		t.Run(c.why, func(t *testing.T) {
			prop, err := p.Check(c.name, json.RawMessage(c.input))
			require.NoError(t, err)
			defer os.Remove(marker) // each case starts without one
			out := run(prop.Args...)
			assert.NotContains(t, out, "driver-ran")
			assert.NoFileExists(t, marker, "argv %s ran a program the repository names", strings.Join(prop.Args, " "))
		})
	}
}
