package config_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
)

// testdataDir holds the configuration examples the tests load.
const testdataDir = "testdata"

// standIns copies /bin/true into a new directory under each of names and
// returns the directory. The copies are harmless executables to point a
// configuration at; tests never start them.
func standIns(t *testing.T, names ...string) string {
	t.Helper()
	src, err := os.ReadFile("/bin/true")
	require.NoError(t, err)
	dir := t.TempDir()
	for _, n := range names {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), src, 0o755))
	}
	return dir
}

// loadString loads a configuration given as text. Tabs are not valid YAML
// indentation, so the text is written with spaces.
func loadString(t *testing.T, text string) (*config.Loaded, error) {
	t.Helper()
	return config.LoadBytes("test.yaml", []byte(text))
}

// mustLoad loads text and fails the test on any error.
func mustLoad(t *testing.T, text string) *config.Loaded {
	t.Helper()
	l, err := loadString(t, text)
	require.NoError(t, err)
	require.NotNil(t, l)
	require.NotNil(t, l.Allowlist)
	return l
}

// loadErrors loads text and returns its problems, failing the test if it
// loads.
func loadErrors(t *testing.T, text string) config.ErrorList {
	t.Helper()
	l, err := loadString(t, text)
	require.Error(t, err)
	require.Nil(t, l)
	var list config.ErrorList
	require.True(t, errors.As(err, &list), "error is %T, not an ErrorList: %v", err, err)
	require.NotEmpty(t, list)
	return list
}

// describe renders problems for failure messages.
func describe(list config.ErrorList) string {
	var b strings.Builder
	for _, e := range list {
		b.WriteString("\n  ")
		b.WriteString(e.Error())
	}
	return b.String()
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
