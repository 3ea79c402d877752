package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// TestFillSite_PutsEachValueWhereItsMarkSays fills the site values into a
// profile entry: a list item that is only a mark becomes every value, a
// mark in a pattern becomes an alternation of the quoted values, and a
// mark anywhere else becomes the first value.
func TestFillSite_PutsEachValueWhereItsMarkSays(t *testing.T) {
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(`
global_args: ['--namespace=${namespaces}']
confine: {read: ['${kubeconfig}', /etc]}
env: {KUBECONFIG: '${kubeconfig}'}
bare:
  description: 'Fetch from ${hosts}.'
  flags: [{name: namespace, value: enum, enum: ['${namespaces}']}]
  positionals: {max: 1, pattern: '^https://${hosts}(/.*)?$'}
  examples: {allow: [{args: ['https://${hosts}/x']}]}
`), &doc))
	entry := doc.Content[0]
	assert.Equal(t, []string{"hosts", "kubeconfig", "namespaces"}, siteMarks(entry))
	fillSite(entry, map[string][]string{
		"hosts":      {"api.example.com", "b.example.org"},
		"namespaces": {"team-a", "default"},
		"kubeconfig": {"/etc/kube/config"},
	})
	var got struct {
		GlobalArgs []string            `yaml:"global_args"`
		Confine    map[string][]string `yaml:"confine"`
		Env        map[string]string   `yaml:"env"`
		Bare       struct {
			Description string           `yaml:"description"`
			Flags       []map[string]any `yaml:"flags"`
			Positionals map[string]any   `yaml:"positionals"`
			Examples    map[string][]map[string][]string
		} `yaml:"bare"`
	}
	require.NoError(t, entry.Decode(&got))
	assert.Equal(t, []string{"--namespace=team-a"}, got.GlobalArgs, "a mark in a string is the first value")
	assert.Equal(t, []string{"/etc/kube/config", "/etc"}, got.Confine["read"])
	assert.Equal(t, "/etc/kube/config", got.Env["KUBECONFIG"])
	assert.Equal(t, []any{"team-a", "default"}, got.Bare.Flags[0]["enum"], "a list item that is a mark is every value")
	assert.Equal(t, `^https://(?:api\.example\.com|b\.example\.org)(/.*)?$`, got.Bare.Positionals["pattern"], "a pattern gets the quoted values")
	assert.Equal(t, "https://api.example.com/x", got.Bare.Examples["allow"][0]["args"][0])
	assert.Equal(t, "Fetch from api.example.com, b.example.org.", got.Bare.Description, "a description names every value")
}

func TestSiteValueChecks(t *testing.T) {
	for _, c := range []struct {
		why   string
		check func(string) string
		v     string
		ok    bool
	}{
		{"a host name", hostProblem, "api.example.com", true},
		{"a host with a port", hostProblem, "api.example.com:8443", false},
		{"a host with user info", hostProblem, "user@api.example.com", false},
		{"a host in upper case", hostProblem, "API.example.com", false},
		{"a host with a path", hostProblem, "api.example.com/x", false},
		{"a host with a trailing dot", hostProblem, "example.com.", false},
		{"an empty host", hostProblem, "", false},
		{"a namespace", namespaceProblem, "team-a", true},
		{"a namespace with a dot", namespaceProblem, "team.a", false},
		{"a namespace ending in a dash", namespaceProblem, "team-", false},
		{"an absolute file", absFileProblem, "/etc/kube/config", true},
		{"a relative file", absFileProblem, "kube/config", false},
		{"a file that climbs", absFileProblem, "/etc/../root/.kube/config", false},
	} {
		assert.Equal(t, c.ok, c.check(c.v) == "", c.why)
	}
}

// TestProfileProblems_NameTheProfileAndItsLine records a problem on a node
// of an expanded profile: the message names the profile and the line the
// node has in it, while the position is the entry's in the file.
func TestProfileProblems_NameTheProfileAndItsLine(t *testing.T) {
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte("name: x\nbare:\n  flags: [{name: a}]\n"), &doc))
	entry := doc.Content[0]
	d := &decoder{problems: &problems{file: "tools.yaml"}}
	d.markProfile(entry, "demo")
	at := &yaml.Node{Line: 7, Column: 14}
	place(entry, at)
	flag := entry.Content[3].Content[1] // the flags list
	d.add(flag, "tools[0].bare.flags", "bad %s", "flag")
	d.add(at, "tools[0].profile", "not from the profile")
	err := d.err()
	require.Error(t, err)
	assert.Equal(t, `tools.yaml:7:14: tools[0].bare.flags: in profile "demo", line 3: bad flag
tools.yaml:7:14: tools[0].profile: not from the profile`, err.Error())
}

// TestReadWorkingDir_EveryConfineReadsIt adds the working directory to
// each confine of an entry: the tool's, a command's own (which replaces
// the tool's whole) and the bare entry's; an entry without one gets none.
func TestReadWorkingDir_EveryConfineReadsIt(t *testing.T) {
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(`
confine: {read: [/etc]}
commands:
  a: {confine: {network: true}}
  b: {}
bare: {confine: {read: [/usr]}}
`), &doc))
	entry := doc.Content[0]
	readWorkingDir(entry, &yaml.Node{Kind: yaml.ScalarNode, Value: "/srv/root"})
	var got struct {
		Confine  map[string][]string `yaml:"confine"`
		Commands map[string]struct {
			Confine map[string]any `yaml:"confine"`
		} `yaml:"commands"`
		Bare struct {
			Confine map[string][]string `yaml:"confine"`
		} `yaml:"bare"`
	}
	require.NoError(t, entry.Decode(&got))
	assert.Equal(t, []string{"/srv/root", "/etc"}, got.Confine["read"])
	assert.Equal(t, []any{"/srv/root"}, got.Commands["a"].Confine["read"], "a command's own confine reads it")
	assert.Nil(t, got.Commands["b"].Confine, "a command without one inherits the tool's")
	assert.Equal(t, []string{"/srv/root", "/usr"}, got.Bare.Confine["read"])
}

// TestFillSite_EgressEntries fills the site values into the egress
// entries of a confine: an entry that holds a mark, such as
// '${hosts}:443', becomes one entry per value, in the tool's confine and
// in a command's own, in the list form and in allow and deny; a mark in
// any other list item still becomes the first value.
func TestFillSite_EgressEntries(t *testing.T) {
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(`
global_args: ['--url=https://${hosts}/']
confine: {network: ['${hosts}:443', 'static.example.net:80', '${hosts}']}
commands:
  a:
    confine:
      network:
        allow: ['${hosts}:443', 'mirror.${hosts}:8000-8999']
        deny: ['admin.${hosts}:*']
  b: {confine: {network: true}}
`), &doc))
	entry := doc.Content[0]
	fillSite(entry, map[string][]string{"hosts": {"api.example.com", "b.example.org"}})
	var got struct {
		GlobalArgs []string `yaml:"global_args"`
		Confine    struct {
			Network []string `yaml:"network"`
		} `yaml:"confine"`
		Commands map[string]struct {
			Confine struct {
				Network any `yaml:"network"`
			} `yaml:"confine"`
		} `yaml:"commands"`
	}
	require.NoError(t, entry.Decode(&got))
	assert.Equal(t, []string{"--url=https://api.example.com/"}, got.GlobalArgs, "a mark in another list's item is the first value")
	assert.Equal(t, []string{"api.example.com:443", "b.example.org:443", "static.example.net:80", "api.example.com", "b.example.org"},
		got.Confine.Network, "an entry holding a mark is one entry per host")
	assert.Equal(t, map[string]any{
		"allow": []any{"api.example.com:443", "b.example.org:443", "mirror.api.example.com:8000-8999", "mirror.b.example.org:8000-8999"},
		"deny":  []any{"admin.api.example.com:*", "admin.b.example.org:*"},
	}, got.Commands["a"].Confine.Network, "so is one of a command's allow and deny lists")
	assert.Equal(t, true, got.Commands["b"].Confine.Network)
}

// TestExpandMarks makes one string per combination of the values of the
// marks a string holds; a mark without values makes none.
func TestExpandMarks(t *testing.T) {
	vals := map[string][]string{"hosts": {"a.example", "b.example"}, "namespaces": {"x", "y"}}
	assert.Equal(t, []string{"plain:443"}, expandMarks("plain:443", vals))
	assert.Equal(t, []string{"a.example:443", "b.example:443"}, expandMarks("${hosts}:443", vals))
	assert.Equal(t, []string{"a.example.a.example", "b.example.b.example"}, expandMarks("${hosts}.${hosts}", vals), "a mark twice is one value twice")
	assert.Equal(t, []string{"x.a.example", "x.b.example", "y.a.example", "y.b.example"}, expandMarks("${namespaces}.${hosts}", vals))
	assert.Empty(t, expandMarks("${kubeconfig}:1", vals))
}
