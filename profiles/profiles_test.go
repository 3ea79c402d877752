package profiles_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/profiles"
)

// asConfig wraps a profile's tools entry in a configuration file.
func asConfig(entry []byte) string {
	var b strings.Builder
	b.WriteString("version: 1\ntools:\n  -\n")
	for _, line := range strings.Split(strings.TrimRight(string(entry), "\n"), "\n") {
		b.WriteString("    " + line + "\n")
	}
	return b.String()
}

// TestProfiles_LoadAndPassTheirExamples loads every embedded profile as a
// configuration: each must load, which runs its allow and refuse examples.
func TestProfiles_LoadAndPassTheirExamples(t *testing.T) {
	names := profiles.Names()
	require.Subset(t, names, []string{"git", "jq", "rg"})
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			data, ok := profiles.Lookup(name)
			require.True(t, ok)
			l, err := config.LoadBytes(name+".yaml", []byte(asConfig(data)))
			require.NoError(t, err)
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
