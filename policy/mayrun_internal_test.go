package policy

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// subcommandNames returns every name d+"."+sub with sub of 1 to max
// characters, its first from first and the others from rest.
func subcommandNames(d, first, rest string, max int) []string {
	var out []string
	var grow func(prefix string)
	grow = func(prefix string) {
		out = append(out, prefix)
		if len(prefix)-len(d)-1 == max {
			return
		}
		for i := 0; i < len(rest); i++ {
			grow(prefix + rest[i:i+1])
		}
	}
	for i := 0; i < len(first); i++ {
		grow(d + "." + first[i:i+1])
	}
	return out
}

// randomPattern returns a tool pattern of up to n characters from the
// characters of names, upper case, '.', '*' and '?'.
func randomPattern(r *rand.Rand, n int) string {
	const chars = "tf.a1-A*?*?"
	for {
		b := make([]byte, 1+r.IntN(n))
		for i := range b {
			b[i] = chars[r.IntN(len(chars))]
		}
		if g, err := compileToolGlob(string(b)); err == nil {
			return g.pat
		}
	}
}

// TestSubcommandPatterns_AgreeWithMatch checks the two judgments over
// all of a dispatcher's names against matching each name: a witness of
// a match can always be rewritten into the letters a, t and f, '-' and
// '1', which the enumerated names hold, and needs at most one
// subcommand character more than the pattern has characters, so a
// pattern of up to five characters that matches some name matches one
// of the names here, of up to six subcommand characters.
func TestSubcommandPatterns_AgreeWithMatch(t *testing.T) {
	const d = "tf"
	names := subcommandNames(d, "atf", "atf-1", 6)
	r := rand.New(rand.NewPCG(1, 2))
	for range 1500 {
		pat := randomPattern(r, 5)
		g := newGlob(pat)
		some, every := false, true
		for _, n := range names {
			if g.match(n) {
				some = true
			} else {
				every = false
			}
		}
		require.Equal(t, some, g.matchesSubcommandOf(d), "%q matches some name", pat)
		if g.matchesEverySubcommandOf(d) {
			require.True(t, every, "%q was taken to match every name", pat)
		}
	}
	for _, pat := range []string{"*", "tf.*", "t*", "tf*", "tf.?*", "?f.*", "??.?*"} {
		require.True(t, newGlob(pat).matchesEverySubcommandOf(d), pat)
	}
}

// TestMayDispatch_IsSound: when mayDispatch reports that no name of a
// dispatcher could be allowed, no enumerated name is decided by a rule
// that allows or holds it.
func TestMayDispatch_IsSound(t *testing.T) {
	const d = "tf"
	names := subcommandNames(d, "atf", "atf-1", 4)
	actions := []string{execgate.ActionAllow, execgate.ActionDeny, execgate.ActionRequireApproval}
	r := rand.New(rand.NewPCG(3, 4))
	hidden := 0
	for range 2000 {
		var rules []Rule
		for range 1 + r.IntN(4) {
			rules = append(rules, Rule{Action: actions[r.IntN(len(actions))], Tools: []string{randomPattern(r, 5), randomPattern(r, 5)}})
		}
		rs, err := compile([]Policy{{Name: "p", Principal: "*", Rules: rules}})
		require.NoError(t, err)
		c := rs.star
		own := func(n string) bool { return n == "tf.a" }
		if c.mayDispatch(d, own) {
			continue
		}
		hidden++
		for _, n := range names {
			if own(n) {
				continue
			}
			if rule := c.ruleFor(n); rule != nil {
				require.Equal(t, execgate.ActionDeny, rule.action, "%+v hid %q, which rule %s decides", rules, n, rule.id)
			}
		}
	}
	require.Greater(t, hidden, 100, "the test hides enough to mean something")
}
