package main

import (
	"context"
	"encoding/json"
	"net/netip"
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

// TestTypedGrammars_GitProfileReachesNoTransportEvenUnconfined makes the
// calls of the git profile that ask a partial clone for an object it
// lacks, through the gate but outside any confinement (invariant 12 of
// DESIGN.md: the profile holds without the backstop of invariant 13), in
// the repository hostileGitRepository makes, whose own
// protocol.<name>.allow let every promisor's transport through: the
// stray listener gets no connection, no ext:: command or remote helper
// runs, and the canary that a file:// promisor outside the root holds is
// never read. The same argv with the profile's environment less
// GIT_ALLOW_PROTOCOL (HOME and LANG) reaches every one of them.
func TestTypedGrammars_GitProfileReachesNoTransportEvenUnconfined(t *testing.T) {
	s := newProofScratch(t, "git", "")
	stray := newNetProofStray(t, netProofHost{name: "127.0.0.1", addr: netip.MustParseAddr("127.0.0.1")})
	outside := s.hostileGitRepository(t, stray)
	a := unconfinedAllowlist(t, s)
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: a})
	require.NoError(t, err)

	calls := []struct {
		why, name string
		args      []string
	}{
		{"show of an object the repository lacks", "git.show", []string{missingGitObject}},
		{"show of the canary a promisor outside the root holds", "git.show", []string{outside}},
	}
	for _, c := range calls {
		t.Run(c.why, func(t *testing.T) {
			defer os.Remove(s.marker) // each case starts without one
			accepted := stray.accepted.Load()
			in, err := json.Marshal(map[string]any{"args": c.args})
			require.NoError(t, err)
			r, err := x.Run(context.Background(), c.name, in)
			require.NoError(t, err)
			assert.NotEqual(t, 0, r.ExitCode, "git has no such object: %s", r.Stderr)
			assert.Regexp(t, `not allowed|lazy fetching disabled`, r.Stderr, "git refuses the promisors' transports, or tries none")
			assert.NotContains(t, r.Stdout+r.Stderr, proofCanary, "the canary outside the root is never read")
			assert.NoFileExists(t, s.marker, "no ext:: command or remote helper ran: %s", r.Stderr)
			assert.Equal(t, accepted, stray.accepted.Load(), "no call reached the stray listener: %s", r.Stderr)
		})
	}

	// The scene is live: the same argv, run with HOME and LANG alone,
	// reaches the stray listener, runs the ext:: command or the helper's
	// alias, and reads the canary through the file:// promisor; with an
	// empty GIT_ALLOW_PROTOCOL, which allows the empty transport name
	// alone, the helper of "::x" runs the alias.
	p := execgate.NewProposer(a)
	live := func(env []string, name string, args ...string) string {
		t.Helper()
		in, err := json.Marshal(map[string]any{"args": args})
		require.NoError(t, err)
		prop, err := p.Check(name, in)
		require.NoError(t, err)
		cmd := exec.Command(prop.Command, prop.Args...)
		cmd.Dir = s.root
		cmd.Env = env
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	before := []string{"HOME=/nonexistent", "LANG=C.UTF-8"}
	accepted := stray.accepted.Load()
	out := live(append(before, "GIT_ALLOW_PROTOCOL="), "git.show", missingGitObject)
	assert.FileExists(t, s.marker, "an empty GIT_ALLOW_PROTOCOL lets the helper of \"::x\" run: %s", out)
	assert.Equal(t, accepted, stray.accepted.Load(), "and no other transport: %s", out)
	os.Remove(s.marker)
	out = live(before, "git.show", missingGitObject)
	assert.Greater(t, stray.accepted.Load(), accepted, "the scene's http promisor is reached without the profile's environment: %s", out)
	assert.FileExists(t, s.marker, "the scene's ext:: promisor runs without the profile's environment: %s", out)
	assert.Contains(t, live(before, "git.show", outside), proofCanary, "the scene's file:// promisor serves the canary without the profile's environment")
}
