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
)

// TestTypedGrammars_GitDiffCannotReadOutsideTheWorkTree runs the real git
// (invariant 12 of DESIGN.md):
// with paths declared as paths, git.diff of a path outside the work tree,
// which git would answer by switching to --no-index and printing the file,
// is refused before git starts, while a diff inside the tree still runs.
func TestTypedGrammars_GitDiffCannotReadOutsideTheWorkTree(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	require.NoError(t, err, "this test runs the real git")
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "src"), 0o755))
	const canary = "canary-outside-the-work-tree"
	require.NoError(t, os.WriteFile(filepath.Join(base, "secret.txt"), []byte(canary+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "README"), []byte("hello\n"), 0o644))
	for _, args := range [][]string{
		{"init", "-q"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "add", "README"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "one"},
	} {
		cmd := exec.Command(gitPath, args...)
		cmd.Dir = repo
		cmd.Env = []string{"HOME=" + base, "GIT_CONFIG_NOSYSTEM=1"}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	require.NoError(t, os.WriteFile(filepath.Join(repo, "README"), []byte("hello, changed\n"), 0o644))

	cfg := `version: 1
defaults: {timeout: 20s, env: {HOME: ` + base + `}}
tools:
  - name: git
    bin: ` + gitPath + `
    strict: true
    working_dir: ` + repo + `
    global_args: ["--no-pager", "-c", "core.hooksPath=/dev/null"]
    commands:
      diff:
        description: Show changes in the work tree.
        positionals: {max: 2, path: {}}
`
	path := writeFile(t, "tools.yaml", cfg)
	for _, c := range []struct {
		name, input string
		ok          bool
		want        string
	}{
		{"a diff of a file in the work tree runs", `{"args":["README"]}`, true, "+hello, changed"},
		{"a path climbing out of the work tree is refused before git runs", `{"args":["src/../../secret.txt","README"]}`, false, "is outside the working directory"},
		{"an absolute path outside is refused", `{"args":["` + filepath.Join(base, "secret.txt") + `","README"]}`, false, "is outside the working directory"},
		{"/etc/passwd is refused", `{"args":["/etc/passwd","README"]}`, false, "is outside the working directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", "run", "--config", path, "git.diff", c.input)
			assert.NotContains(t, out+errOut, canary, "the file outside the work tree is never read")
			if !c.ok {
				assert.NotEqual(t, exitOK, code)
				assert.Contains(t, out+errOut, c.want)
				return
			}
			require.Equal(t, exitOK, code, "%s%s", out, errOut)
			var r execgate.Result
			require.NoError(t, json.Unmarshal([]byte(out), &r), out)
			assert.True(t, strings.Contains(r.Stdout, c.want), "%s", r.Stdout)
		})
	}
}
