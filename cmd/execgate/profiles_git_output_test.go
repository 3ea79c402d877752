package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// TestTypedGrammars_GitProfilePrintsNoRepositoryColor: color.ui is only
// the fallback of color.diff, color.status and color.grep, and blame
// colors by blame.coloring whatever color.ui says: a repository's
// settings put escape sequences in the output.
func TestTypedGrammars_GitProfilePrintsNoRepositoryColor(t *testing.T) {
	s := newProofScratch(t, "git", "")
	s.git(t, "init", "-q")
	s.git(t, "add", "README", "src/main.go")
	s.git(t, "commit", "-q", "-m", "one")
	for _, kv := range [][2]string{{"color.diff", "always"}, {"color.status", "always"}, {"color.grep", "always"}, {"blame.coloring", "highlightRecent"}} {
		s.git(t, "config", kv[0], kv[1])
	}
	require.NoError(t, os.WriteFile(filepath.Join(s.root, "README"), []byte("hello\nchanged\n"), 0o644))
	run := unconfinedGitRun(t, s)
	for _, c := range []struct {
		name string
		args []string
	}{{"git.diff", nil}, {"git.status", []string{"--short"}}, {"git.grep", []string{"-e", "hello"}},
		{"git.log", []string{"-p"}}, {"git.show", nil}, {"git.blame", []string{"README"}}} {
		r := run(c.name, c.args...)
		assert.NotContains(t, r.Stdout, "\x1b[", "%s %v prints the repository's colors", c.name, c.args)
	}
}

// TestTypedGrammars_GitProfileStartsBoundedThreads: a repository's
// grep.threads is the number of threads git grep starts, each a task
// of the machine's pid space, whatever the tree holds.
func TestTypedGrammars_GitProfileStartsBoundedThreads(t *testing.T) {
	s := newProofScratch(t, "git", "")
	s.git(t, "init", "-q")
	s.git(t, "add", "README")
	s.git(t, "commit", "-q", "-m", "one")
	s.git(t, "config", "grep.threads", "3000")
	a := unconfinedAllowlist(t, s)
	prop, err := execgate.NewProposer(a).Check("git.grep", json.RawMessage(`{"args":["-e","hello"]}`))
	require.NoError(t, err)
	cmd := exec.Command(prop.Command, prop.Args...)
	cmd.Dir = s.root
	for _, sp := range a.Specs() {
		if sp.Name == "git.grep" {
			for k, v := range sp.Env {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
		}
	}
	require.NoError(t, cmd.Start())
	status := filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "status")
	most := 0
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for waiting := true; waiting; {
		select {
		case err := <-done:
			require.NoError(t, err)
			waiting = false
		default:
			if b, err := os.ReadFile(status); err == nil {
				for _, l := range strings.Split(string(b), "\n") {
					if n, ok := strings.CutPrefix(l, "Threads:"); ok {
						if v, _ := strconv.Atoi(strings.TrimSpace(n)); v > most {
							most = v
						}
					}
				}
			}
		}
	}
	assert.LessOrEqual(t, most, 64, "git grep started the repository's number of threads")
}
