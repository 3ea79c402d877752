package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
)

// TestProfile_ProblemsAmongManyEntriesNameTheirOwnProfile loads entries
// naming profiles, in block and flow style, between tools written out,
// each with one problem: every problem is at its own line, and names the
// profile of its entry, or none for a tool written out.
func TestProfile_ProblemsAmongManyEntriesNameTheirOwnProfile(t *testing.T) {
	text := `version: 1
tools:
  - profile: git
    timeout: banana
  - name: t
    bin: /bin/echo
    timeout: apple
    bare: {}
  - {profile: jq, name: j2, max_output: lots}
  - name: u
    bin: /bin/echo
    max_output: many
    bare: {}
  - profile: git
    name: g3
    sha256: xyz
`
	_, err := config.LoadBytes("tools.yaml", []byte(text))
	var list config.ErrorList
	require.True(t, errors.As(err, &list), "%v", err)
	for _, c := range []struct {
		why  string
		line int
		path string
		want string // the message's start
	}{
		{"an override of the first entry names its profile", 4, "tools[0].timeout", `profile "git": "banana"`},
		{"a tool written out names none", 7, "tools[1].timeout", `"apple"`},
		{"an entry in flow style names its own profile", 9, "tools[2].max_output", `profile "jq": "lots"`},
		{"a tool written out after it names none", 12, "tools[3].max_output", `"many"`},
		{"the last entry names its profile", 16, "tools[4].sha256", `profile "git": must be 64 hex digits`},
	} {
		var found bool
		for _, e := range list {
			if e.Line == c.line && e.Path == c.path {
				found = true
				assert.True(t, strings.HasPrefix(e.Message, c.want), "%s: %q", c.why, e.Message)
			}
		}
		assert.True(t, found, "%s: no problem at line %d, %s in %v", c.why, c.line, c.path, err)
	}
	assert.Len(t, list, 5, "%v", err)
}
