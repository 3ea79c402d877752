package profiles_test

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

// asConfig returns a configuration naming the profile, working in dir.
// Its examples that do not hold there are warnings.
// The profile's program is its bin when it is installed (under its own
// name or an alias); otherwise the running test binary stands in, which
// checks the grammar and the examples (they never run the program) but
// says nothing about the program itself: the proof tests in cmd/execgate
// do that.
func asConfig(t *testing.T, name, dir string) string {
	t.Helper()
	bin := ""
	for _, n := range profiles.Programs(name) {
		if p, err := exec.LookPath(n); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		self, err := os.Executable()
		require.NoError(t, err)
		bin = self
		t.Logf("%s is not installed here: its grammar and examples are checked with a stand-in executable", name)
	}
	return "version: 1\ntools:\n  - profile: " + name + "\n    bin: " + bin + "\n    working_dir: " + dir + "\n" + siteValues(t, name)
}

// exampleDir returns a scratch directory holding the files a profile's
// examples may name: README, src/main.go, data.json, data.yaml and
// archive.tar, each small.
func exampleDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	for name, text := range map[string]string{
		"README":      "hello\n",
		"src/main.go": "package main // hello\n",
		"data.json":   `{"name":"n"}` + "\n",
		"data.yaml":   "name: n\n",
		"archive.tar": "",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	return dir
}

// siteValues returns the lines that set, for the profile called name, the
// site values it marks, with values any site could have.
func siteValues(t *testing.T, name string) string {
	t.Helper()
	data, _ := profiles.Lookup(name)
	var out string
	for _, v := range []struct{ mark, line string }{
		{"${hosts}", "    hosts: [example.com, api.example.org]\n"},
		{"${namespaces}", "    namespaces: [default, team-a]\n"},
		{"${kubeconfig}", "    kubeconfig: " + filepath.Join(t.TempDir(), "kubeconfig") + "\n"},
	} {
		if strings.Contains(string(data), v.mark) {
			out += v.line
		}
	}
	return out
}

// TestProfiles_LoadAndPassTheirExamples loads every embedded profile as a
// configuration: each must load, which runs its allow and refuse examples.
func TestProfiles_LoadAndPassTheirExamples(t *testing.T) {
	names := profiles.Names()
	require.Subset(t, names, []string{"git", "jq", "rg"})
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			_, ok := profiles.Lookup(name)
			require.True(t, ok)
			l, err := config.LoadBytes(name+".yaml", []byte(asConfig(t, name, exampleDir(t))))
			require.NoError(t, err)
			assert.Empty(t, l.Warnings(), "a profile's examples hold and each command is described")
			require.Len(t, l.Tools, 1)
			assert.Equal(t, name, l.Tools[0].Name, "a profile's tool is named after its program")
			assert.NotEmpty(t, profiles.Summary(name))
		})
	}
}

func TestProfiles_LookupRefusesUnknownNames(t *testing.T) {
	for _, n := range []string{"", "nope", "../profiles/git", "git.yaml"} {
		_, ok := profiles.Lookup(n)
		assert.False(t, ok, n)
	}
}
