package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExamples_CheckedOnceForEntriesAlikeButForTheirNames loads tools
// whose entries differ only in their names, or also in their working
// directory: the examples of an entry that is, but for its name, one
// checked before are not run again when they all held there, a failure
// is still reported at every entry that has it, under that entry's name,
// and an entry that differs in anything else is checked in full.
func TestExamples_CheckedOnceForEntriesAlikeButForTheirNames(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	withFile, without := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(withFile, "present"), []byte("x"), 0o600))
	entry := func(name, dir string) string {
		return fmt.Sprintf(`  - name: %s
    bin: %s
    working_dir: %s
    bare:
      positionals: {max: 4, path: {must: file}}
      examples:
        allow: [{args: [present]}, {}]
        refuse: [{args: [/etc/passwd]}]
`, name, self, dir)
	}
	for _, c := range []struct {
		why     string
		entries []string
		run     int      // examples checked, when the load succeeds
		refused []string // the tools whose allow example of present is refused
	}{
		{"a second entry like the first but for its name is not checked again", []string{entry("a", withFile), entry("b", withFile)}, 3, nil},
		{"nor is a third", []string{entry("a", withFile), entry("b", withFile), entry("c", withFile)}, 3, nil},
		{"an entry with another working directory is checked in full", []string{entry("a", withFile), entry("b", without)}, 0, []string{"b"}},
		{"a failure is reported at every entry alike, under its own name", []string{entry("a", without), entry("b", without)}, 0, []string{"a", "b"}},
	} {
		data := "version: 1\ntools:\n" + strings.Join(c.entries, "")
		l, err := LoadBytes("tools.yaml", []byte(data))
		if c.refused == nil {
			require.NoError(t, err, c.why)
			assert.Equal(t, c.run, l.examplesRun, c.why)
			continue
		}
		var list ErrorList
		require.ErrorAs(t, err, &list, c.why)
		var got []string
		for _, e := range list {
			for _, name := range []string{"a", "b", "c"} {
				if strings.Contains(e.Message, fmt.Sprintf(`allow example for "%s.run" was refused`, name)) && strings.Contains(e.Message, `path "present" does not exist`) {
					got = append(got, name)
				}
			}
		}
		assert.Equal(t, c.refused, got, c.why)
	}
}
