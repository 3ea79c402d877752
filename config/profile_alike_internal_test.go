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
// second only those that did not hold at the first, in the second's own
// directory, so that the second gets a warning exactly for those that
// fail there too.
func TestExamples_ProfileEntriesInOtherWorkingDirectoriesShareTheirExamples(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	full, empty, empty2 := t.TempDir(), t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(full+"/archive.tar", []byte("x"), 0o600))
	entry := func(name, dir string) string {
		return fmt.Sprintf("  - profile: tar\n    name: %s\n    bin: %s\n    working_dir: %s\n", name, self, dir)
	}
	load := func(entries ...string) (run int, warned map[string]int) {
		t.Helper()
		l, err := LoadBytes("tools.yaml", []byte("version: 1\ntools:\n"+strings.Join(entries, "")))
		require.NoError(t, err)
		warned = map[string]int{}
		for _, w := range l.Warnings() {
			warned[strings.SplitN(w.Path, ".", 2)[0]]++
		}
		return l.examplesRun, warned
	}
	one, none := load(entry("a", full))
	require.Positive(t, one)
	require.Empty(t, none, "the examples hold where archive.tar is")
	_, fails := load(entry("a", empty))
	failing := fails["tools[0]"]
	require.Positive(t, failing, "some examples need archive.tar")

	run, warned := load(entry("a", full), entry("b", empty))
	assert.Equal(t, one, run, "the second entry's examples are not checked again when all held at the first")
	assert.Empty(t, warned)

	run, warned = load(entry("a", empty), entry("b", full))
	assert.Equal(t, one+failing, run, "those that failed at the first are checked again at the second")
	assert.Equal(t, map[string]int{"tools[0]": failing}, warned, "and hold there")

	run, warned = load(entry("a", empty), entry("b", empty2))
	assert.Equal(t, one+failing, run)
	assert.Equal(t, map[string]int{"tools[0]": failing, "tools[1]": failing}, warned, "each entry warns for its own directory")
}
