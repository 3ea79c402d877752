package config

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWorkingDir_OneRuleForEveryToolsEntry pins the working_dir rule to
// workingDirProblem: a tools entry of its own and one that names a
// profile refuse the same values, with its message, and accept the same
// values; and the message is written once in the package's sources, so a
// second copy of the rule cannot drift from it.
func TestWorkingDir_OneRuleForEveryToolsEntry(t *testing.T) {
	if _, err := os.Stat("/bin/echo"); err != nil {
		t.Skip("this test names /bin/echo, which this machine lacks")
	}
	dir := t.TempDir()
	entries := map[string]string{
		"a tool of its own": "name: echo\n    bin: /bin/echo",
		"a profile's entry": "profile: git",
	}
	for _, w := range []string{"relative/dir", "./dir", "", "/srv/a\x00b", dir, dir + "/."} {
		for kind, entry := range entries {
			t.Run(kind+" "+strconv.Quote(w), func(t *testing.T) {
				data := "version: 1\ntools:\n  - " + entry + "\n    working_dir: " + strconv.Quote(w) + "\n"
				_, err := LoadBytes("tools.yaml", []byte(data))
				var list ErrorList
				if err != nil {
					require.True(t, errors.As(err, &list), err.Error())
				}
				var at []*Error
				for _, e := range list {
					if e.Path == "tools[0].working_dir" {
						at = append(at, e)
					}
				}
				want := workingDirProblem(w)
				if want == "" {
					assert.Empty(t, at, "accepted as working_dir: %v", err)
					return
				}
				require.Len(t, at, 1, "refused once, under working_dir: %v", err)
				assert.True(t, strings.HasSuffix(at[0].Message, want), at[0].Message)
			})
		}
	}

	sources, err := filepath.Glob("*.go")
	require.NoError(t, err)
	copies := 0
	for _, f := range sources {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		copies += strings.Count(string(data), `"must be an absolute path without NUL`)
	}
	assert.Equal(t, 1, copies, "the working_dir rule is written once, in workingDirProblem")
}
