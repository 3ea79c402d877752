package flux7_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/config/flux7"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// goldenKinds are the kinds each golden input is converted with.
var goldenKinds = map[string][]string{
	"kinds": {
		"-n=string", "--namespace=string", // every tool
		"kubectl:-o=string", "kubectl:--output=string", // one tool
		"kubectl.logs:--tail=int", "kubectl.logs:-f=none", // one command
		"terraform:-target=string", "terraform.apply:-auto-approve=none", "terraform.apply:-parallelism=int",
	},
}

// TestGolden converts every testdata/*.flux7.yaml, compares the output
// and the notes with NAME.golden.yaml and NAME.notes (rewritten with
// -update), loads the output, and checks that it allows no more than the
// input.
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "*.flux7.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, inputs)
	for _, in := range inputs {
		base := strings.TrimSuffix(filepath.Base(in), ".flux7.yaml")
		t.Run(base, func(t *testing.T) {
			data, err := os.ReadFile(in)
			require.NoError(t, err)
			var opts flux7.Options
			for _, s := range goldenKinds[base] {
				k, err := flux7.ParseKind(s)
				require.NoError(t, err)
				opts.Kinds = append(opts.Kinds, k)
			}
			res, err := flux7.Convert(filepath.Base(in), data, opts)
			require.NoError(t, err)
			var notes strings.Builder
			for _, n := range res.Notes {
				notes.WriteString(n.String())
				notes.WriteByte('\n')
			}
			requireNoWider(t, data, mustLoad(t, res.YAML))
			golden(t, filepath.Join("testdata", base+".golden.yaml"), string(res.YAML))
			golden(t, filepath.Join("testdata", base+".notes"), notes.String())
		})
	}
}

// golden compares got with the file at path, or rewrites the file with
// -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -run TestGolden -update")
	require.Equal(t, string(want), got, "%s differs; if the change is intended, run go test -run TestGolden -update", path)
}

// mustLoad loads a converted file as the execgate binary would, and
// fails the test unless it loads.
func mustLoad(t *testing.T, out []byte) *config.Loaded {
	t.Helper()
	l, err := config.LoadBytes("converted.yaml", out)
	require.NoError(t, err, "the output does not load:\n%s", out)
	return l
}
