package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
)

// FuzzLoad checks that no input makes LoadBytes panic, and that it either
// builds an Allowlist or reports at least one problem, each naming the
// file. The seeds are the examples in testdata.
func FuzzLoad(f *testing.F) {
	for _, pattern := range []string{"*.yaml", "errors/*.yaml"} {
		files, err := filepath.Glob(filepath.Join(testdataDir, pattern))
		require.NoError(f, err)
		for _, file := range files {
			data, err := os.ReadFile(file)
			require.NoError(f, err)
			f.Add(data)
		}
	}
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("version: 1\ntools: [{name: t, bin: /bin/echo, <<: {x: 1}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := config.LoadBytes("fuzz.yaml", data)
		if err == nil {
			require.NotNil(t, l)
			require.NotNil(t, l.Allowlist)
			return
		}
		require.Nil(t, l)
		var list config.ErrorList
		require.True(t, errors.As(err, &list), "%T: %v", err, err)
		require.NotEmpty(t, list)
		for _, e := range list {
			require.Equal(t, "fuzz.yaml", e.File)
			require.NotEmpty(t, e.Message)
		}
	})
}
