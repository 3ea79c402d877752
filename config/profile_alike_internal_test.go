package config

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExamples_EntriesNamingAProfileAreAlikeOnlyWhenTheyExpandAlike loads
// entries naming the curl profile and counts the examples checked: an
// entry with the same site values and overrides as one before, but for
// its name, is not checked again, and one that differs in a site value,
// an override, the order of its overrides or an override's tag is
// checked in full, as it would be alone.
func TestExamples_EntriesNamingAProfileAreAlikeOnlyWhenTheyExpandAlike(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	entry := func(name, extra string) string {
		return fmt.Sprintf("  - profile: curl\n    name: %s\n    bin: %s\n    working_dir: %s\n%s", name, self, dir, extra)
	}
	load := func(entries ...string) int {
		t.Helper()
		l, err := LoadBytes("tools.yaml", []byte("version: 1\ntools:\n"+strings.Join(entries, "")))
		require.NoError(t, err)
		return l.examplesRun
	}
	hostsA := "    hosts: [example.com]\n"
	hostsB := "    hosts: [example.org]\n"
	one := load(entry("a", hostsA))
	require.Positive(t, one, "the curl profile's examples are checked at load")
	for _, c := range []struct {
		why     string
		entries []string
		run     int
	}{
		{"a second entry alike but for its name is not checked again", []string{entry("a", hostsA), entry("b", hostsA)}, one},
		{"nor is a third", []string{entry("a", hostsA), entry("b", hostsA), entry("c", hostsA)}, one},
		{"other hosts are checked in full", []string{entry("a", hostsA), entry("b", hostsB)}, 2 * one},
		{"another override is checked in full", []string{entry("a", hostsA), entry("b", hostsA+"    timeout: 7s\n")}, 2 * one},
		{"the same overrides in another order are checked in full", []string{entry("a", hostsA+"    timeout: 7s\n    max_output: 1KiB\n"), entry("b", hostsA+"    max_output: 1KiB\n    timeout: 7s\n")}, 2 * one},
		{"the same overrides in the same order are not", []string{entry("a", hostsA+"    timeout: 7s\n    max_output: 1KiB\n"), entry("b", hostsA+"    timeout: 7s\n    max_output: 1KiB\n")}, one},
		{"a site value quoted is the same value", []string{entry("a", hostsA), entry("b", "    hosts: [\"example.com\"]\n")}, one},
	} {
		assert.Equal(t, c.run, load(c.entries...), c.why)
	}
}

// TestExamples_ProfileEntriesInOtherWorkingDirectoriesShareTheirExamples
// loads two entries naming the tar profile, alike but for their names and
// working directories, one holding the archive.tar its examples name and
// one empty. A profile's examples are the same calls of the same grammar
// in either: they are checked in full at the first entry, and at the
// second only those that did not hold at the first and the refuse
// examples a path rule refused there (a path rule's root is the working
// directory; what the grammar refuses it refuses anywhere), in the
// second's own directory, so that the second gets a warning exactly for
// those that fail there. A second entry in the same directory as the
// first checks none again.
func TestExamples_ProfileEntriesInOtherWorkingDirectoriesShareTheirExamples(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	full, full2, empty, empty2 := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(full+"/archive.tar", []byte("x"), 0o600))
	require.NoError(t, os.WriteFile(full2+"/archive.tar", []byte("x"), 0o600))
	entry := func(profile, name, dir string) string {
		return fmt.Sprintf("  - profile: %s\n    name: %s\n    bin: %s\n    working_dir: %s\n", profile, name, self, dir)
	}
	load := func(entries ...string) (run int, warned map[string][]string) {
		t.Helper()
		l, err := LoadBytes("tools.yaml", []byte("version: 1\ntools:\n"+strings.Join(entries, "")))
		require.NoError(t, err)
		warned = map[string][]string{}
		for _, w := range l.Warnings() {
			tool := strings.SplitN(w.Path, ".", 2)[0]
			warned[tool] = append(warned[tool], w.Message)
		}
		return l.examplesRun, warned
	}
	tar := func(name, dir string) string { return entry("tar", name, dir) }
	one, none := load(tar("a", full))
	require.Positive(t, one)
	require.Empty(t, none, "the examples hold where archive.tar is")
	_, fails := load(tar("a", empty))
	failing := len(fails["tools[0]"])
	require.Positive(t, failing, "some examples need archive.tar")
	run, warned := load(tar("a", full), tar("b", full2))
	assert.Greater(t, run, one, "the refuse examples a path rule refused are checked again in another directory")
	assert.Less(t, run, 2*one, "but not every example")
	assert.Empty(t, warned)

	run, warned = load(tar("a", full), tar("b", full))
	assert.Equal(t, one, run, "in the same directory, none is checked again when all held at the first")
	assert.Empty(t, warned)

	_, warned = load(tar("a", full), tar("b", empty))
	assert.Empty(t, warned, "in another, the allow examples that held at the first are not checked again")

	_, warned = load(tar("a", empty), tar("b", full))
	assert.Len(t, warned["tools[0]"], failing)
	assert.Empty(t, warned["tools[1]"], "those that failed at the first are checked again at the second, and hold there")

	_, warned = load(tar("a", empty), tar("b", empty2))
	assert.Len(t, warned["tools[0]"], failing, "each entry warns for its own directory")
	assert.Len(t, warned["tools[1]"], failing)

	// A refuse example that a directory lets through is a warning at
	// the entry whose directory it is, whichever entry comes first.
	for _, order := range [][2]string{{"/nonexistent/dir", "/etc"}, {"/etc", "/nonexistent/dir"}} {
		_, warned = load(entry("wc", "a", order[0]), entry("wc", "b", order[1]))
		at := "tools[1]"
		if order[0] == "/etc" {
			at = "tools[0]"
		}
		assert.Contains(t, strings.Join(warned[at], "\n"), "refuse example for", "an entry in /etc: %v", warned)
		assert.Contains(t, strings.Join(warned[at], "\n"), "/etc/passwd", "an entry in /etc: %v", warned)
	}
}
