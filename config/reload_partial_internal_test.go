package config

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/policy"
)

// TestReload_RulesInForceComeBackWithTheGrantsNotMade reloads a file of
// two grants into an Engine that holds two, while a grant made through
// the Engine's API, after the reload checked the capacity and swapped the
// new rules in, takes a place: one of the file's grants cannot be made.
// ReloadBytes returns the new configuration, whose rules are in force,
// with the error naming the grant not made, so that its caller puts the
// new allowlist in force beside them rather than report that nothing
// changed. It returned only the error.
func TestReload_RulesInForceComeBackWithTheGrantsNotMade(t *testing.T) {
	now := time.Date(2030, 1, 2, 15, 0, 0, 0, time.UTC)
	opts := LoadOptions{Now: func() time.Time { return now }, Policy: policy.Options{MaxGrants: 2}}
	file := func(rule string, grants string) []byte {
		return []byte(`version: 1
tools:
  - {name: t, bin: /bin/true, bare: {}}
policies:
  - {name: p, principal: "*", rules: [{tools: ["t.run"], action: ` + rule + `}]}
grants:
` + grants)
	}
	l, err := opts.LoadBytes("v1.yaml", file("deny", "  []\n"))
	require.NoError(t, err)
	beforeFileGrants = func(eng *policy.Engine) {
		_, err := eng.Grant(policy.Grant{ID: "api", Principal: "x", Tool: "t.run", Expires: now.Add(time.Hour)})
		require.NoError(t, err)
	}
	defer func() { beforeFileGrants = nil }()
	next, err := l.ReloadBytes("v2.yaml", file("require_approval", `  - {id: g1, principal: a, tool: t.run, expires: 2030-01-02T16:00:00Z}
  - {id: g2, principal: b, tool: t.run, expires: 2030-01-02T16:00:00Z}
`))
	var list ErrorList
	require.True(t, errors.As(err, &list), "%v", err)
	require.Len(t, list, 1)
	assert.Contains(t, list[0].Message, "not created")
	assert.Equal(t, "grants[1]", list[0].Path)
	require.NotNil(t, next, "the new rules are in force: the new configuration comes back with the error")
	assert.Same(t, l.Engine, next.Engine)
	require.Len(t, next.Policies, 1)
	assert.Equal(t, "require_approval", next.Policies[0].Rules[0].Action)
	require.Len(t, next.Grants, 1)
	assert.Equal(t, "g1", next.Grants[0].ID)

	// A file that does not load still changes nothing, and comes back nil.
	beforeFileGrants = nil
	next, err = next.ReloadBytes("broken.yaml", []byte("version: 1\ntools: [\n"))
	require.Error(t, err)
	assert.Nil(t, next)
}
