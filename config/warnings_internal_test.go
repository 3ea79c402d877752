package config

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/policy"
)

// TestGlobsMeet_AgreesWithThePolicyEngine pins globsMeet, on a name, to
// what the policy package decides: a pattern meets a name exactly when a
// rule with that pattern decides a call to it.
func TestGlobsMeet_AgreesWithThePolicyEngine(t *testing.T) {
	patterns := []string{
		"*", "?", "git", "git.*", "git.?", "git.s*", "*.status", "g*t.*s",
		"kubectl.get", "kube*.g?t", "kubctl.*", "*-*", "a*b*c", "??", "*?*",
	}
	names := []string{
		"git", "git.s", "git.status", "gh.status", "gist.logs",
		"kubectl.get", "kubectl.gut", "kubectl.get-all", "a-b", "abc", "axbyc", "ab",
	}
	for _, pat := range patterns {
		eng, err := policy.New([]policy.Policy{{Name: "p", Principal: "*", Rules: []policy.Rule{{Tools: []string{pat}, Action: execgate.ActionAllow}}}}, policy.Options{})
		require.NoError(t, err, pat)
		for _, name := range names {
			d, err := eng.Decide(context.Background(), execgate.Request{Op: execgate.OpRun, Name: name})
			require.NoError(t, err)
			assert.Equal(t, d.Action == execgate.ActionAllow, globsMeet(pat, name), "pattern %q, name %q", pat, name)
		}
	}
}

// TestGlobsMeet_TwoPatterns checks the cases a name cannot show: two
// patterns meet when one string matches both.
func TestGlobsMeet_TwoPatterns(t *testing.T) {
	for _, tc := range []struct {
		p, q string
		meet bool
	}{
		{"git.*", "git.?*", true},
		{"*.status", "git.?*", true},
		{"git", "git.?*", false},
		{"gi?", "git.?*", false},
		{"g*", "git.?*", true},
		{"kubectl.*", "git.?*", false},
		{"*x", "y*", true},
		{"a?c", "?b?", true},
		{"a?c", "?b", false},
		{"*", "", true},
		{"?", "", false},
	} {
		assert.Equal(t, tc.meet, globsMeet(tc.p, tc.q), "%q and %q", tc.p, tc.q)
		assert.Equal(t, tc.meet, globsMeet(tc.q, tc.p), "%q and %q", tc.q, tc.p)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"kubctl.*", "kubectl.*", 1},
		{"gti.*", "git.*", 2},
		{"kitten", "sitting", 3},
	} {
		assert.Equal(t, tc.d, editDistance(tc.a, tc.b), "%q, %q", tc.a, tc.b)
		assert.Equal(t, tc.d, editDistance(tc.b, tc.a), "%q, %q", tc.b, tc.a)
	}
}
