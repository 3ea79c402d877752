package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
)

// wantRe matches the header lines of an error example:
//
//	# want: LINE PATH: MESSAGE
//
// PATH may be empty; MESSAGE is a substring of the expected message.
var wantRe = regexp.MustCompile(`(?m)^# want: (\d+) ([^ ]*): (.+)$`)

type want struct {
	line    int
	path    string
	message string
}

// TestErrorFiles loads every file in testdata/errors and checks that
// it is refused with exactly the problems its "# want:" lines name: line,
// key path and message.
func TestErrorFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testdataDir, "errors", "*.yaml"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 40)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			var wants []want
			for _, m := range wantRe.FindAllStringSubmatch(string(data), -1) {
				line, err := strconv.Atoi(m[1])
				require.NoError(t, err)
				wants = append(wants, want{line: line, path: m[2], message: m[3]})
			}
			require.NotEmpty(t, wants, "%s has no '# want:' line", file)

			l, err := config.LoadFile(file)
			require.Error(t, err)
			assert.Nil(t, l)
			var list config.ErrorList
			require.True(t, errors.As(err, &list), "%T: %v", err, err)
			require.Len(t, list, len(wants), "got:%s", describe(list))
			for i, w := range wants {
				e := list[i]
				assert.Equal(t, file, e.File)
				assert.Equal(t, w.line, e.Line, "line of %q; got:%s", w.message, describe(list))
				assert.Equal(t, w.path, e.Path, "path of %q; got:%s", w.message, describe(list))
				assert.Contains(t, e.Message, w.message, "got:%s", describe(list))
				prefix := file + ":"
				if w.line > 0 {
					prefix += fmt.Sprintf("%d:", w.line)
				}
				assert.True(t, strings.HasPrefix(e.Error(), prefix), "%q does not start with %q", e.Error(), prefix)
			}
			// The whole list reads one problem per line, and errors.As
			// also finds the first problem alone.
			assert.Len(t, strings.Split(err.Error(), "\n"), len(wants))
			var first *config.Error
			require.True(t, errors.As(err, &first))
			assert.Same(t, list[0], first)
		})
	}
}
