package main

import (
	"context"
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

// gitObject writes an object of the given type into the root's repository
// and returns its name.
func (s *proofScene) gitObject(t *testing.T, typ, body string) string {
	t.Helper()
	cmd := exec.Command("git", "hash-object", "-t", typ, "-w", "--stdin")
	cmd.Dir = s.root
	cmd.Env = []string{"HOME=" + s.base, "GIT_CONFIG_NOSYSTEM=1"}
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

// TestTypedGrammars_GitProfileDefaultFormatRunsNoGpg: a repository's
// format.pretty is log's and show's default format, and its %G? and %GG
// check a signature with the repository's gpg.program, printing what it
// says; the profile's format.pretty=medium and gpg programs keep any
// from running (invariant 12 of DESIGN.md, without the confinement).
func TestTypedGrammars_GitProfileDefaultFormatRunsNoGpg(t *testing.T) {
	s := newProofScratch(t, "git", "")
	s.git(t, "init", "-q")
	s.git(t, "add", "README")
	s.git(t, "commit", "-q", "-m", "one")
	tree := s.gitObject(t, "tree", "") // the empty tree
	signed := s.gitObject(t, "commit", "tree "+tree+"\nauthor t <t@e> 1700000000 +0000\ncommitter t <t@e> 1700000000 +0000\n"+
		"gpgsig -----BEGIN PGP SIGNATURE-----\n \n AAAA\n -----END PGP SIGNATURE-----\n\nsigned\n")
	s.git(t, "update-ref", "refs/heads/signed", signed)
	prog := filepath.Join(s.base, "gpg")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\ntouch "+s.marker+"; cat "+s.secret+" >&2; exit 1\n"), 0o755))
	s.git(t, "config", "gpg.program", prog)
	s.git(t, "config", "gpg.ssh.program", prog)
	s.git(t, "config", "format.pretty", "format:%h %G? %GG")
	run := unconfinedGitRun(t, s)
	for _, c := range []struct {
		name string
		args []string
	}{{"git.log", []string{"-n", "1", "signed"}}, {"git.show", []string{"signed"}}, {"git.show", []string{"--stat", "signed"}}} {
		r := run(c.name, c.args...)
		assert.NotContains(t, r.Stdout+r.Stderr, proofCanary, "%s %v", c.name, c.args)
		assert.NoFileExists(t, s.marker, "%s %v ran the repository's gpg.program", c.name, c.args)
		os.Remove(s.marker)
	}
}

// gitSubmoduleWithWorkTree makes "sub" a repository inside the root,
// recorded in the root's index as a submodule, whose own config moves its
// work tree to the scene's base, beside the root, and whose index and
// HEAD hold the canary file secret.txt there.
func (s *proofScene) gitSubmoduleWithWorkTree(t *testing.T) {
	t.Helper()
	sub := filepath.Join(s.root, "sub")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	s.git(t, "init", "-q")
	s.git(t, "-C", "sub", "init", "-q")
	s.git(t, "-C", "sub", "config", "core.worktree", s.base)
	subGit := "--git-dir=" + filepath.Join(sub, ".git")
	s.git(t, subGit, "-C", s.base, "add", "secret.txt")
	s.git(t, subGit, "-C", s.base, "commit", "-q", "-m", "a")
	s.git(t, "add", "README", "sub")
	s.git(t, "commit", "-q", "-m", "one")
}

// TestTypedGrammars_GitProfileSubmoduleWorkTreeReadsNothingOutside: a
// submodule whose own core.worktree is the directory above the root,
// and whose index records the file there, would make diff and status
// say whether that file holds what the index guesses; their output is
// the same whatever it holds.
func TestTypedGrammars_GitProfileSubmoduleWorkTreeReadsNothingOutside(t *testing.T) {
	s := newProofScratch(t, "git", "")
	s.gitSubmoduleWithWorkTree(t)
	run := unconfinedGitRun(t, s)
	fi, err := os.Stat(s.secret)
	require.NoError(t, err)
	// Rewrite the file outside with the same size and time: only its
	// ctime changes, and git rehashes its content.
	rewrite := func(content string) {
		require.NoError(t, os.WriteFile(s.secret, []byte(content), 0o600))
		require.NoError(t, os.Chtimes(s.secret, fi.ModTime(), fi.ModTime()))
	}
	guessed := proofCanary + "\n"
	wrong := strings.Repeat("x", len(proofCanary)) + "\n"
	for _, c := range []struct {
		name string
		args []string
	}{{"git.diff", nil}, {"git.status", []string{"--porcelain", "v2", "--untracked-files", "no"}}} {
		rewrite(guessed)
		same := run(c.name, c.args...)
		rewrite(wrong)
		other := run(c.name, c.args...)
		assert.Equal(t, same.Stdout, other.Stdout, "%s tells what a file outside the root holds", c.name)
	}
}

// TestTypedGrammars_GitProfileStatusRunsNoSubmoduleSummary: a
// repository's status.submoduleSummary would make status run git
// submodule summary, a shell script that starts programs other than git.
func TestTypedGrammars_GitProfileStatusRunsNoSubmoduleSummary(t *testing.T) {
	s := newProofScratch(t, "git", "")
	s.gitSubmoduleWithWorkTree(t)
	s.git(t, "-C", "sub", "commit", "-q", "--allow-empty", "-m", "b")
	s.git(t, "config", "status.submoduleSummary", "true")
	r := unconfinedGitRun(t, s)("git.status")
	assert.NotContains(t, r.Stdout, "Submodules changed but not updated", "git submodule summary ran")
	assert.NotContains(t, r.Stdout, "Submodule changes to be committed", "git submodule summary ran")
}

// TestTypedGrammars_GitProfileLsFilesReadsNoLinkedDirectory: ls-files
// --modified hashes each indexed path, through a directory that links
// out too, so that two guesses of a file outside would be told apart;
// the profile does not offer it.
func TestTypedGrammars_GitProfileLsFilesReadsNoLinkedDirectory(t *testing.T) {
	s := newProofScratch(t, "git", "")
	s.git(t, "init", "-q")
	s.git(t, "add", "README")
	s.git(t, "commit", "-q", "-m", "one")
	right := s.gitObject(t, "blob", proofCanary+"\n")
	wrong := s.gitObject(t, "blob", strings.Repeat("x", len(proofCanary))+"\n")
	s.git(t, "update-index", "--add", "--cacheinfo", "100644,"+right+",up1/secret.txt", "--cacheinfo", "100644,"+wrong+",up2/secret.txt")
	require.NoError(t, os.Symlink("..", filepath.Join(s.root, "up1")))
	require.NoError(t, os.Symlink("..", filepath.Join(s.root, "up2")))
	_, err := unconfinedExecutor(t, s).Run(context.Background(), "git.ls-files", json.RawMessage(`{"args":["--modified"]}`))
	var ve *execgate.ValidationError
	require.ErrorAs(t, err, &ve, "the profile offers no --modified")

	// The scene is live: git ls-files --modified tells the guesses apart.
	live := exec.Command("git", "--no-pager", "--git-dir=.git/.", "--work-tree=.", "ls-files", "--modified")
	live.Dir = s.root
	live.Env = []string{"HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1"}
	out, err := live.Output()
	require.NoError(t, err)
	assert.NotEqual(t, strings.Contains(string(out), "up1/"), strings.Contains(string(out), "up2/"),
		"ls-files --modified tells which guess of the file outside is right: %q", out)
}

// TestTypedGrammars_GitProfileGrepReadsNoSubmoduleElsewhere: with the
// repository's submodule.recurse, grep would search the repository a
// submodule's .git file names, outside the root.
func TestTypedGrammars_GitProfileGrepReadsNoSubmoduleElsewhere(t *testing.T) {
	s := newProofScratch(t, "git", "")
	other := s.otherRepository(t)
	sub := filepath.Join(s.root, "sub")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	s.git(t, "init", "-q")
	s.git(t, "-C", "sub", "init", "-q")
	s.git(t, "-C", "sub", "commit", "-q", "--allow-empty", "-m", "a")
	require.NoError(t, os.WriteFile(filepath.Join(s.root, ".gitmodules"), []byte("[submodule \"sub\"]\n\tpath = sub\n\turl = ./sub\n"), 0o644))
	s.git(t, "add", "README", "sub", ".gitmodules")
	s.git(t, "commit", "-q", "-m", "one")
	require.NoError(t, os.RemoveAll(filepath.Join(sub, ".git")))
	require.NoError(t, os.WriteFile(filepath.Join(sub, ".git"), []byte("gitdir: "+filepath.Join(other, ".git")+"\n"), 0o644))
	s.git(t, "config", "submodule.recurse", "true")
	s.git(t, "config", "submodule.sub.url", "./sub")
	r := unconfinedGitRun(t, s)("git.grep", "-e", "canary")
	assert.NotContains(t, r.Stdout+r.Stderr, proofCanary)
}

// TestTypedGrammars_GitProfileReadsNoLinkedGraftFile: a
// .git/info/grafts that links to a file outside would have log print
// its lines as bad graft data.
func TestTypedGrammars_GitProfileReadsNoLinkedGraftFile(t *testing.T) {
	s := newProofScratch(t, "git", "")
	s.git(t, "init", "-q")
	s.git(t, "add", "README")
	s.git(t, "commit", "-q", "-m", "one")
	require.NoError(t, os.MkdirAll(filepath.Join(s.root, ".git", "info"), 0o755))
	require.NoError(t, os.Symlink(s.secret, filepath.Join(s.root, ".git", "info", "grafts")))
	r := unconfinedGitRun(t, s)("git.log")
	assert.NotContains(t, r.Stdout+r.Stderr, proofCanary)
}
