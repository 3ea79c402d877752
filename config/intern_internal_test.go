package config

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLoad_EqualStringsAreKeptOnce loads two tools written out alike but
// for their names: the descriptions, patterns and environment values
// their specs keep are one string each, shared, not one copy per tool
// (a file of many tools in the same shape kept each one's own).
func TestLoad_EqualStringsAreKeptOnce(t *testing.T) {
	tool := func(name string) string {
		return "  - name: " + name + `
    bin: /bin/echo
    description: Print words, as many as given, on one line.
    env: {LANG: C.UTF-8}
    bare:
      positionals: {max: 4, pattern: '^[a-z]{1,20}$'}
`
	}
	l, err := LoadBytes("tools.yaml", []byte("version: 1\ntools:\n"+tool("a")+tool("b")))
	require.NoError(t, err)
	a, ok := l.Allowlist.Lookup("a.run")
	require.True(t, ok)
	b, ok := l.Allowlist.Lookup("b.run")
	require.True(t, ok)
	same := func(x, y string) bool { return x == y && unsafe.StringData(x) == unsafe.StringData(y) }
	assert.True(t, strings.HasPrefix(a.Description, "Print words"))
	assert.True(t, same(a.Description, b.Description), "the description is kept once")
	assert.True(t, same(a.Env["LANG"], b.Env["LANG"]), "an environment value is kept once")
}
