package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTypedGrammars_GitProfileDiffReusesNoLinkedFile: the index names
// up/secret.txt and up2/secret.txt with the size and mtime of the canary
// beside the root, the repository's config asks for core.checkStat=minimal
// and core.trustctime=false, and the work tree's "up" and "up2" are links
// to the root's parent. A diff takes a work-tree file whose stat data
// matches its index entry for the blob, with no check for a link on the
// way: git diff, diff --cached, and show and log -p of a commit with a
// gitlink (which loads the index) would print the canary. The profile's
// core.checkStat=default and core.trustctime=true make the inode and
// ctime count, which the index made for the decoy does not match.
func TestTypedGrammars_GitProfileDiffReusesNoLinkedFile(t *testing.T) {
	s := newProofScratch(t, "git", "")
	old := time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC)
	require.NoError(t, os.Chtimes(s.secret, old, old))
	canary, err := os.ReadFile(s.secret)
	require.NoError(t, err)
	decoy := []byte(strings.Repeat("x", len(canary)-1) + "\n")
	for _, d := range []string{"up", "up2"} {
		require.NoError(t, os.MkdirAll(filepath.Join(s.root, d), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(s.root, d, "secret.txt"), decoy, 0o644))
		require.NoError(t, os.Chtimes(filepath.Join(s.root, d, "secret.txt"), old, old))
	}
	s.git(t, "init", "-q")
	s.git(t, "add", "README")
	s.git(t, "commit", "-q", "-m", "one")
	s.git(t, "update-index", "--add", "--cacheinfo", "160000,"+s.gitOut(t, "rev-parse", "HEAD")+",sub")
	s.git(t, "add", "up/secret.txt")
	s.git(t, "commit", "-q", "-m", "two")
	s.git(t, "add", "up2/secret.txt") // staged, for diff --cached
	s.git(t, "config", "core.checkStat", "minimal")
	s.git(t, "config", "core.trustctime", "false")
	for _, d := range []string{"up", "up2"} {
		require.NoError(t, os.RemoveAll(filepath.Join(s.root, d)))
		require.NoError(t, os.Symlink("..", filepath.Join(s.root, d)))
	}
	run := unconfinedGitRun(t, s)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"git.diff", nil},
		{"git.diff", []string{"--cached"}},
		{"git.show", nil},
		{"git.log", []string{"-p", "-n", "1"}},
	} {
		r := run(c.name, c.args...)
		assert.Equal(t, 0, r.ExitCode, "%s %v: %s", c.name, c.args, r.Stderr)
		assert.Contains(t, r.Stdout, "+++ ", "%s %v shows a diff", c.name, c.args)
		assert.NotContains(t, r.Stdout+r.Stderr, proofCanary, "%s %v printed the file outside", c.name, c.args)
	}
	// The scene is live: git without the profile's stat settings prints
	// the canary.
	cmd := exec.Command("git", "--no-pager", "--git-dir=.git/.", "--work-tree=.", "-c", "diff.autoRefreshIndex=false", "diff", "--no-ext-diff", "--no-textconv", "--cached")
	cmd.Dir = s.root
	cmd.Env = []string{"HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1", "GIT_OPTIONAL_LOCKS=0"}
	out, _ := cmd.CombinedOutput()
	assert.Contains(t, string(out), proofCanary, "the repository's stat settings let diff take the linked file")
}

// TestProfileProof_GitLinkedWorkTree runs the git profile, confined as
// it says (invariant 13 of DESIGN.md), in work trees whose links lead
// out in ways no git option turns off: a directory "up" linked to the
// root's parent, whose .gitattributes git reads for every path under up
// and whose invalid attribute names it prints, and a .gitmodules that is
// a link to a file outside, which log and show of a commit with a gitlink
// read. The confinement reads nothing outside the root, so no call
// prints the canary; without it each does (the scene is live).
func TestProfileProof_GitLinkedWorkTree(t *testing.T) {
	scenes := []struct {
		why   string
		setup func(t *testing.T, s *proofScene)
		calls []attack
	}{
		{
			"a linked directory's .gitattributes",
			func(t *testing.T, s *proofScene) {
				s.git(t, "init", "-q")
				require.NoError(t, os.MkdirAll(filepath.Join(s.root, "up"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(s.root, "up", "x"), []byte("x\n"), 0o644))
				s.git(t, "add", "README", "up/x")
				s.git(t, "commit", "-q", "-m", "one")
				require.NoError(t, os.RemoveAll(filepath.Join(s.root, "up")))
				require.NoError(t, os.Symlink("..", filepath.Join(s.root, "up")))
				require.NoError(t, os.WriteFile(filepath.Join(s.base, ".gitattributes"), []byte("* "+proofCanary+"@\n"), 0o600))
			},
			[]attack{
				{"show", "git.show", args()},
				{"log -p", "git.log", args("-p")},
				{"diff", "git.diff", args()},
				{"grep", "git.grep", args("-e", "x")},
			},
		},
		{
			"a .gitmodules linked out",
			func(t *testing.T, s *proofScene) {
				s.git(t, "init", "-q")
				s.git(t, "add", "README")
				s.git(t, "commit", "-q", "-m", "one")
				s.git(t, "update-index", "--add", "--cacheinfo", "160000,"+s.gitOut(t, "rev-parse", "HEAD")+",sub")
				s.git(t, "commit", "-q", "-m", "two")
				outside := filepath.Join(s.base, "modules")
				require.NoError(t, os.WriteFile(outside, []byte("[submodule \"../"+proofCanary+"\"]\n\tpath = sub\n"), 0o600))
				require.NoError(t, os.Symlink(outside, filepath.Join(s.root, ".gitmodules")))
			},
			[]attack{
				{"log -p", "git.log", args("-p", "-n", "1")},
				{"show", "git.show", args()},
			},
		},
	}
	for _, sc := range scenes {
		t.Run(sc.why, func(t *testing.T) {
			s := newProofScene(t, "git")
			sc.setup(t, s)
			s.runAttacks(t, sc.calls)
			live := unconfinedGitRun(t, s)
			var leaked bool
			for _, c := range sc.calls {
				r := live(c.name, anyStrings(c.input["args"])...)
				leaked = leaked || strings.Contains(r.Stdout+r.Stderr, proofCanary)
			}
			assert.True(t, leaked, "the scene is live: without the confinement a call prints the canary")
		})
	}
}
