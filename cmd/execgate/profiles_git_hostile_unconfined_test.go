package main

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// TestTypedGrammars_GitProfileRemoteVcsIsNoTransport: a remote's vcs
// names its helper directly, and git runs it as "git remote-<vcs>",
// which the repository defines as an alias. The one name the profile's
// GIT_ALLOW_PROTOCOL lets through, "_", can be no alias; "-none" and ssh,
// which it once allowed or a site may, can; and help.autocorrect does
// not turn a missing "remote-_" into the alias "remote-a".
func TestTypedGrammars_GitProfileRemoteVcsIsNoTransport(t *testing.T) {
	s := newProofScratch(t, "git", "")
	s.git(t, "init", "-q")
	s.git(t, "add", "README")
	s.git(t, "commit", "-q", "-m", "one")
	payload := "!sh -c 'touch " + s.marker + "; cat " + s.secret + "' --"
	for _, kv := range [][2]string{
		{"core.repositoryformatversion", "1"},
		{"extensions.partialClone", "origin"},
		{"remote.origin.url", "x"},
		{"remote.origin.promisor", "true"},
		{"remote.origin.vcs", "-none"},
		{"alias.remote--none", payload},
		{"alias.remote-ssh", payload},
		// What a helper named by the allowed name would be corrected to.
		{"alias.remote-a", payload},
		{"help.autocorrect", "immediate"},
	} {
		s.git(t, "config", kv[0], kv[1])
	}
	// Each layer alone: the profile's environment as it is, where a git
	// that knows GIT_NO_LAZY_FETCH tries no promisor, and without that
	// variable, as an older git runs, where the list of transports
	// alone must hold.
	specs := unconfinedSpecs(t, s)
	older := make([]execgate.CommandSpec, len(specs))
	for i, sp := range specs {
		require.Contains(t, sp.Env, "GIT_NO_LAZY_FETCH", "the profile sets it")
		sp.Env = maps.Clone(sp.Env)
		delete(sp.Env, "GIT_NO_LAZY_FETCH")
		older[i] = sp
	}
	for _, c := range []struct {
		why   string
		specs []execgate.CommandSpec
	}{{"the profile's environment", specs}, {"without GIT_NO_LAZY_FETCH", older}} {
		a, err := execgate.NewAllowlist(c.specs...)
		require.NoError(t, err)
		x, err := execgate.NewExecutor(execgate.Config{Allowlist: a})
		require.NoError(t, err)
		for _, vcs := range []string{"-none", "_", "remote-a", "ssh"} { // once allowed, the allowed name, a near name, a transport's
			t.Run(c.why+", vcs "+vcs, func(t *testing.T) {
				s.git(t, "config", "remote.origin.vcs", vcs)
				defer os.Remove(s.marker)
				r, err := x.Run(context.Background(), "git.show", json.RawMessage(`{"args":["`+missingGitObject+`"]}`))
				require.NoError(t, err)
				assert.NotContains(t, r.Stdout+r.Stderr, proofCanary)
				assert.NoFileExists(t, s.marker, "the helper's alias ran: %s", r.Stderr)
			})
		}
	}

	// The scene is live: with the GIT_ALLOW_PROTOCOL the profile had
	// before, "-none", and no GIT_NO_LAZY_FETCH, the alias runs.
	cmd := exec.Command("git", "--no-pager", "show", missingGitObject)
	cmd.Dir = s.root
	cmd.Env = []string{"HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin", "GIT_ALLOW_PROTOCOL=-none"}
	s.git(t, "config", "remote.origin.vcs", "-none")
	out, _ := cmd.CombinedOutput()
	assert.FileExists(t, s.marker, "vcs -none runs the alias remote--none: %s", out)
}

// TestTypedGrammars_GitProfileBlameReadsNoRevsFile: blame.ignoreRevsFile in the repository's config names a file anywhere,
// and git blame dies printing its first line.
func TestTypedGrammars_GitProfileBlameReadsNoRevsFile(t *testing.T) {
	s := newProofScratch(t, "git", "")
	s.git(t, "init", "-q")
	s.git(t, "add", "README")
	s.git(t, "commit", "-q", "-m", "one")
	s.git(t, "config", "blame.ignoreRevsFile", s.secret)
	r := unconfinedGitRun(t, s)("git.blame", "README")
	assert.NotContains(t, r.Stdout+r.Stderr, proofCanary)
	assert.Equal(t, 0, r.ExitCode, r.Stderr)
}

// TestTypedGrammars_GitProfileSubmoduleDiffRunsNoProgram: with diff.submodule=diff in the repository's config, a diff that
// touches a submodule runs "git diff" in it, without --no-ext-diff: the
// submodule's own diff.external runs.
func TestTypedGrammars_GitProfileSubmoduleDiffRunsNoProgram(t *testing.T) {
	s := newProofScratch(t, "git", "")
	sub := filepath.Join(s.root, "sub")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "f"), []byte("a\n"), 0o644))
	s.git(t, "init", "-q")
	s.git(t, "-C", "sub", "init", "-q")
	s.git(t, "-C", "sub", "add", "f")
	s.git(t, "-C", "sub", "commit", "-q", "-m", "a")
	s.git(t, "add", "README", "sub")
	s.git(t, "commit", "-q", "-m", "one")
	require.NoError(t, os.WriteFile(filepath.Join(sub, "f"), []byte("b\n"), 0o644))
	s.git(t, "-C", "sub", "commit", "-q", "-a", "-m", "b")
	s.git(t, "commit", "-q", "-a", "-m", "bump")
	require.NoError(t, os.WriteFile(filepath.Join(sub, "f"), []byte("c\n"), 0o644))
	s.git(t, "-C", "sub", "commit", "-q", "-a", "-m", "c")
	s.git(t, "config", "diff.submodule", "diff")
	s.git(t, "-C", "sub", "config", "diff.external", "sh -c 'touch "+s.marker+"; cat "+s.secret+"' --")
	run := unconfinedGitRun(t, s)
	for _, c := range []struct {
		name string
		args []string
	}{{"git.diff", nil}, {"git.show", nil}, {"git.log", []string{"-p", "-n", "1"}}} {
		r := run(c.name, c.args...)
		assert.NotContains(t, r.Stdout+r.Stderr, proofCanary, c.name)
		assert.NoFileExists(t, s.marker, "%s ran the submodule's diff.external", c.name)
		os.Remove(s.marker)
	}
}

// TestTypedGrammars_GitProfileReadOnlyWritesNoIndex: the read-only commands write nothing, not even the index git status
// and git diff refresh when a file's stat data changed.
func TestTypedGrammars_GitProfileReadOnlyWritesNoIndex(t *testing.T) {
	s := newProofScratch(t, "git", "")
	s.git(t, "init", "-q")
	s.git(t, "add", "README", "src/main.go")
	s.git(t, "commit", "-q", "-m", "one")
	run := unconfinedGitRun(t, s)
	for i, name := range []string{"git.diff", "git.status", "git.ls-files", "git.grep", "git.log", "git.blame"} {
		args := map[string][]string{"git.grep": {"-e", "hello"}, "git.blame": {"README"}, "git.ls-files": {"--others"}}[name]
		later := time.Now().Add(time.Duration(2*i+2) * time.Second)
		require.NoError(t, os.Chtimes(filepath.Join(s.root, "README"), later, later))
		before := s.snapshot(t)
		r := run(name, args...)
		assert.Equal(t, 0, r.ExitCode, "%s: %s", name, r.Stderr)
		assert.Equal(t, before, s.snapshot(t), "%s changed a file", name)
	}
}

// TestTypedGrammars_GitProfileGrepFollowsNoLinkedDirectory: the index names up/secret.txt and the work tree's "up" is a link to
// the root's parent: git grep opens the file through the link.
func TestTypedGrammars_GitProfileGrepFollowsNoLinkedDirectory(t *testing.T) {
	s := newProofScratch(t, "git", "")
	s.git(t, "init", "-q")
	s.git(t, "add", "README")
	s.git(t, "commit", "-q", "-m", "one")
	require.NoError(t, os.MkdirAll(filepath.Join(s.root, "up"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(s.root, "up", "secret.txt"), []byte("x\n"), 0o644))
	s.git(t, "add", "up/secret.txt")
	s.git(t, "commit", "-q", "-m", "two")
	require.NoError(t, os.RemoveAll(filepath.Join(s.root, "up")))
	require.NoError(t, os.Symlink("..", filepath.Join(s.root, "up")))
	r := unconfinedGitRun(t, s)("git.grep", "-e", "canary")
	assert.NotContains(t, r.Stdout+r.Stderr, proofCanary)
}

// TestTypedGrammars_GitProfileReadsNoConfigNamedFile: mailmap.file, diff.orderFile and core.excludesFile in the repository's
// config name files anywhere; a mailmap's names are printed as authors.
func TestTypedGrammars_GitProfileReadsNoConfigNamedFile(t *testing.T) {
	s := newProofScratch(t, "git", "")
	mm := filepath.Join(s.base, "mailmap")
	require.NoError(t, os.WriteFile(mm, []byte(proofCanary+" <t@example.com>\n"), 0o600))
	s.git(t, "init", "-q")
	s.git(t, "add", "README")
	s.git(t, "commit", "-q", "-m", "one")
	s.git(t, "config", "mailmap.file", mm)
	run := unconfinedGitRun(t, s)
	for _, c := range []struct {
		name string
		args []string
	}{{"git.log", nil}, {"git.show", nil}, {"git.blame", []string{"README"}}} {
		r := run(c.name, c.args...)
		assert.NotContains(t, r.Stdout+r.Stderr, proofCanary, c.name)
	}
}

// TestTypedGrammars_GitProfileReadsNoRepositoryElsewhere: the working
// directory's .git is a file naming a repository elsewhere ("gitdir:"),
// which --git-dir=.git would follow; --git-dir=.git/. is no repository
// then, and the other repository's history is never read. (Links inside
// a .git directory are left to the confinement: see git.yaml.)
func TestTypedGrammars_GitProfileReadsNoRepositoryElsewhere(t *testing.T) {
	s := newProofScratch(t, "git", "")
	other := s.otherRepository(t)
	require.NoError(t, os.WriteFile(filepath.Join(s.root, ".git"), []byte("gitdir: "+filepath.Join(other, ".git")+"\n"), 0o644))
	run := unconfinedGitRun(t, s)
	r := run("git.log", "-p")
	assert.NotContains(t, r.Stdout+r.Stderr, proofCanary, "a .git file")
	assert.Contains(t, r.Stderr, "not a git repository", "a .git file is no repository for the profile")

	// The scene is live: --git-dir=.git follows the file.
	live := exec.Command("git", "--no-pager", "--git-dir=.git", "--work-tree=.", "log", "-p")
	live.Dir = s.root
	live.Env = []string{"HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1"}
	out, _ := live.CombinedOutput()
	assert.Contains(t, string(out), proofCanary, "--git-dir=.git reads the repository the file names")
}
