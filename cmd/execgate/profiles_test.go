package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/profiles"
)

// TestProfilesCommand_ListsEachProfileOnOneLine: execgate profiles prints
// one line for each embedded profile, in order, with its name and its
// summary, and nothing else; the profiles the project ships are all there.
func TestProfilesCommand_ListsEachProfileOnOneLine(t *testing.T) {
	code, out, errOut := runCLI(t, "", "profiles")
	require.Equal(t, exitOK, code, errOut)
	require.True(t, strings.HasSuffix(out, "\n"), out)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	names := profiles.Names()
	require.Subset(t, names, []string{"git", "rg", "fd", "find", "jq", "yq", "grep", "head", "tail", "cat",
		"wc", "ls", "sort", "sed", "tar", "curl", "gh", "kubectl", "terraform"}, "the profiles the project ships")
	require.Len(t, lines, len(names), "one line a profile:\n%s", out)
	for i, name := range names {
		summary := profiles.Summary(name)
		require.NotEmpty(t, summary, "%s has a summary", name)
		got, rest, ok := strings.Cut(lines[i], " ")
		require.True(t, ok, "a name and a summary: %q", lines[i])
		assert.Equal(t, name, got, "line %d", i+1)
		assert.Equal(t, summary, strings.TrimLeft(rest, " "), "line %d: %s's summary", i+1, name)
	}
}

func TestInitCommand_WritesAStarterThatLoadsAndRefusesToOverwrite(t *testing.T) {
	for _, p := range []string{"git", "rg", "jq"} {
		if _, err := lookPath(p); err != nil {
			t.Skipf("init loads what it writes, which needs %s on PATH", p)
		}
	}
	root := t.TempDir()
	file := filepath.Join(t.TempDir(), "tools.yaml")
	code, out, errOut := runCLI(t, "", "init", "--profile", "git,rg,jq", "--root", root, "-o", file)
	require.Equal(t, exitOK, code, errOut)
	assert.Empty(t, out)
	l, err := config.LoadFile(file)
	require.NoError(t, err)
	var names []string
	for _, tl := range l.Tools {
		names = append(names, tl.Name)
	}
	assert.Equal(t, []string{"git", "rg", "jq"}, names)
	for _, s := range l.Allowlist.Specs() {
		assert.Equal(t, root, s.Dir, s.Name)
	}

	before, err := os.ReadFile(file)
	require.NoError(t, err)
	code, _, errOut = runCLI(t, "", "init", "--profile", "git", "--root", root, "-o", file)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "exists")
	after, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, before, after, "an existing file is left as it was")

	code, _, errOut = runCLI(t, "", "init", "--profile", "git,gti", "--root", root)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `no profile "gti"`)
	code, _, _ = runCLI(t, "", "init", "--root", root)
	assert.Equal(t, exitUsage, code)
	code, _, errOut = runCLI(t, "", "init", "--profile", "git", "--root", filepath.Join(root, "missing"))
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "is not a directory")
}

func lookPath(name string) (string, error) { return exec.LookPath(name) }

// TestInitCommand_GivesAProfileTheSiteValuesItMarks writes a starter with
// curl and kubectl, whose profiles need hosts, namespaces and a
// kubeconfig: the flags give them, the file loads, and a profile that
// needs one the flags do not give is refused with what to add.
func TestInitCommand_GivesAProfileTheSiteValuesItMarks(t *testing.T) {
	for _, p := range []string{"curl", "kubectl"} {
		if _, err := lookPath(p); err != nil {
			t.Fatalf("init loads what it writes, which needs %s on PATH (CI installs it)", p)
		}
	}
	root := t.TempDir()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	code, out, errOut := runCLI(t, "", "init", "--profile", "curl,kubectl", "--root", root,
		"--hosts", "api.github.com,example.org", "--namespaces", "default, team-a", "--kubeconfig", kubeconfig)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, `hosts: ["api.github.com", "example.org"]`)
	assert.Contains(t, out, `namespaces: ["default", "team-a"]`)
	assert.Contains(t, out, `kubeconfig: "`+kubeconfig+`"`)
	assert.Equal(t, 1, strings.Count(out, "hosts:"), "only curl marks hosts")
	l, err := config.LoadBytes("tools.yaml", []byte(out))
	require.NoError(t, err)
	assert.Len(t, l.Tools, 2)

	code, _, errOut = runCLI(t, "", "init", "--profile", "curl", "--root", root)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `profile "curl" needs hosts`)
}
