package profiles_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/profiles"
)

// profileNeeds lists what a profile may have beyond the rule every
// profile keeps: read the working directory, write nothing, reach no
// network, and every command read-only. A profile that needs more is
// listed here with what it needs and why, so that a new profile (or a
// change to one) that writes, reaches a host or is not read-only fails
// until it is.
var profileNeeds = map[string]struct {
	write       []string // the confinement's write paths
	egress      []string // the hosts the gate's egress proxy lets it reach
	network     bool     // the whole network
	notReadOnly []string // commands that change something, each held for approval
}{
	// git opens /dev/null for reading and writing.
	"git": {write: []string{"/dev/null"}},
	// curl reaches the site's hosts (the test's: see siteValues) on 443.
	"curl": {egress: []string{"api.example.org:443", "example.com:443"}},
	// gh reaches GitHub's API and site.
	"gh": {egress: []string{"api.github.com:443", "github.com:443"}},
	// The API server is wherever the site's kubeconfig says.
	"kubectl": {network: true},
	// apply changes infrastructure: only through a person's approval.
	"terraform": {notReadOnly: []string{"apply"}},
}

// profileCommands returns the examples of each command of the profile's
// text, by command name ("run" for a bare entry).
func profileCommands(t *testing.T, name string) map[string]struct{ allow, refuse int } {
	t.Helper()
	data, ok := profiles.Lookup(name)
	require.True(t, ok)
	type entry struct {
		Examples struct {
			Allow  []yaml.Node `yaml:"allow"`
			Refuse []yaml.Node `yaml:"refuse"`
		} `yaml:"examples"`
	}
	var p struct {
		Commands map[string]entry `yaml:"commands"`
		Bare     *entry           `yaml:"bare"`
	}
	require.NoError(t, yaml.Unmarshal(data, &p))
	out := map[string]struct{ allow, refuse int }{}
	for c, e := range p.Commands {
		out[c] = struct{ allow, refuse int }{len(e.Examples.Allow), len(e.Examples.Refuse)}
	}
	if p.Bare != nil {
		out["run"] = struct{ allow, refuse int }{len(p.Bare.Examples.Allow), len(p.Bare.Examples.Refuse)}
	}
	return out
}

// TestProfiles_EachCommandIsReadOnlyConfinedAndHasExamples loads every
// profile and checks each of its commands: it has an example that must
// pass and one that must be refused; it is annotated read-only (a command
// that is not is listed in profileNeeds and held for approval); its
// confinement is required, reads the working directory, writes nothing
// and reaches no network, beyond what profileNeeds lists.
func TestProfiles_EachCommandIsReadOnlyConfinedAndHasExamples(t *testing.T) {
	for name := range profileNeeds {
		_, ok := profiles.Lookup(name)
		assert.True(t, ok, "profileNeeds lists %q, which is no profile", name)
	}
	for _, name := range profiles.Names() {
		t.Run(name, func(t *testing.T) {
			needs := profileNeeds[name]
			cmds := profileCommands(t, name)
			require.NotEmpty(t, cmds, "a profile has commands or a bare entry")
			for c, n := range cmds {
				assert.Positive(t, n.allow, "%s.%s has an example that must pass", name, c)
				assert.Positive(t, n.refuse, "%s.%s has an example that must be refused", name, c)
			}

			dir := exampleDir(t)
			l, err := config.LoadBytes(name+".yaml", []byte(asConfig(t, name, dir)))
			require.NoError(t, err)
			var seen []string
			for _, s := range l.Allowlist.Specs() {
				cmd, ok := strings.CutPrefix(s.Name, name+".")
				require.True(t, ok, "%s belongs to the profile's tool", s.Name)
				seen = append(seen, cmd)
				require.NotNil(t, s.Hints.ReadOnly, "%s says whether it is read-only", s.Name)
				if contains(needs.notReadOnly, cmd) {
					assert.False(t, *s.Hints.ReadOnly, "%s is listed as not read-only", s.Name)
					assert.Equal(t, execgate.ActionRequireApproval, s.Floor, "%s, which is not read-only, is held for approval", s.Name)
				} else {
					assert.True(t, *s.Hints.ReadOnly, "%s is annotated read-only", s.Name)
				}

				c := s.Confine
				require.NotNil(t, c, "%s is confined", s.Name)
				assert.False(t, c.BestEffort, "%s's confinement is required, not best effort", s.Name)
				assert.Contains(t, c.Read, dir, "%s reads the working directory", s.Name)
				assert.ElementsMatch(t, needs.write, c.Write, "%s writes nothing but what profileNeeds lists", s.Name)
				assert.Equal(t, needs.network, c.Network, "%s has the whole network only when profileNeeds says so", s.Name)
				var egress []string
				if c.Egress != nil {
					egress = c.Egress.Allow
					assert.NotEmpty(t, egress, "%s lists the hosts its egress allows", s.Name)
				}
				assert.ElementsMatch(t, needs.egress, egress, "%s reaches no host but those profileNeeds lists", s.Name)
			}
			sort.Strings(seen)
			want := make([]string, 0, len(cmds))
			for c := range cmds {
				want = append(want, c)
			}
			sort.Strings(want)
			assert.Equal(t, want, seen, "every command of the profile is served, and nothing else")
			for _, c := range needs.notReadOnly {
				assert.Contains(t, seen, c, "profileNeeds lists a command the profile has")
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
