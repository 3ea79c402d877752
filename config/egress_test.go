package config_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// egressConfig is a configuration whose one tool has confine: {network:
// <network>}, the value written on line 5.
func egressConfig(network string) string {
	return "version: 1\ntools:\n  - name: echo\n    bin: /bin/echo\n    confine: {network: " + network + "}\n    commands: {hi: {}}\n"
}

// TestConfineNetwork_Forms decodes each form the network key of a confine
// takes into the Confinement it declares.
func TestConfineNetwork_Forms(t *testing.T) {
	for _, c := range []struct {
		why     string
		network string
		want    *execgate.Confinement
	}{
		{"true leaves the command on this host's network, as it always did",
			"true", &execgate.Confinement{Network: true}},
		{"false gives it no network and no proxy, as it always did",
			"false", &execgate.Confinement{}},
		{"a list is the allow list: no network of its own, the listed hosts through the proxy",
			"[api.github.com:443]", &execgate.Confinement{Egress: &execgate.Egress{Allow: []string{"api.github.com:443"}}}},
		{"the entries of a list are normalized, sorted and deduplicated",
			"[API.GitHub.com.:443, '*.Example.com:1-65535', api.github.com:443, '[::1]:8080', 10.0.0.0/8:5432]",
			&execgate.Confinement{Egress: &execgate.Egress{Allow: []string{"*.example.com:*", "10.0.0.0/8:5432", "[::1]:8080", "api.github.com:443"}}}},
		{"a mapping holds an allow list and a deny list",
			"{allow: ['*.example.com:443'], deny: [internal.example.com:443, 10.0.0.0/8:*]}",
			&execgate.Confinement{Egress: &execgate.Egress{Allow: []string{"*.example.com:443"}, Deny: []string{"10.0.0.0/8:*", "internal.example.com:443"}}}},
		{"a mapping may hold a deny list alone: nothing is allowed, every attempt is reported",
			"{deny: ['*:25']}", &execgate.Confinement{Egress: &execgate.Egress{Deny: []string{"*:25"}}}},
		{"a mapping may hold an allow list alone",
			"{allow: [github.com:443]}", &execgate.Confinement{Egress: &execgate.Egress{Allow: []string{"github.com:443"}}}},
		{"the list of the package documentation",
			"[api.github.com:443, '*.githubusercontent.com:443']",
			&execgate.Confinement{Egress: &execgate.Egress{Allow: []string{"*.githubusercontent.com:443", "api.github.com:443"}}}},
		{"and its mapping",
			"{allow: ['*.example.com:443', 10.1.0.0/16:5432, '[fd00::1]:8000-8999'], deny: [internal.example.com:443]}",
			&execgate.Confinement{Egress: &execgate.Egress{Allow: []string{"*.example.com:443", "10.1.0.0/16:5432", "[fd00::1]:8000-8999"}, Deny: []string{"internal.example.com:443"}}}},
		{"an empty list allows nothing, as false does, but runs the proxy that reports every attempt",
			"[]", &execgate.Confinement{Egress: &execgate.Egress{}}},
		{"so does an empty mapping",
			"{}", &execgate.Confinement{Egress: &execgate.Egress{}}},
	} {
		t.Run(c.why, func(t *testing.T) {
			l := mustLoad(t, egressConfig(c.network))
			s, ok := l.Allowlist.Lookup("echo.hi")
			require.True(t, ok)
			assert.Equal(t, c.want, s.Confine)
		})
	}
}

// TestConfineNetwork_CommandReplacesTool: a command's own confine, host
// list included, replaces the tool's whole, as for every other key.
func TestConfineNetwork_CommandReplacesTool(t *testing.T) {
	l := mustLoad(t, `version: 1
tools:
  - name: echo
    bin: /bin/echo
    confine: {network: [example.com:443]}
    commands:
      inherit: {}
      open: {confine: {network: true}}
      closed: {confine: {}}
`)
	want := map[string]*execgate.Confinement{
		"echo.inherit": {Egress: &execgate.Egress{Allow: []string{"example.com:443"}}},
		"echo.open":    {Network: true},
		"echo.closed":  {},
	}
	for name, c := range want {
		s, ok := l.Allowlist.Lookup(name)
		require.True(t, ok, name)
		assert.Equal(t, c, s.Confine, name)
	}
}

// TestConfineNetwork_Errors refuses what the network key may not hold, on
// the line and key path of the offending value.
func TestConfineNetwork_Errors(t *testing.T) {
	many := make([]string, 1025)
	for i := range many {
		many[i] = "h" + strings.Repeat("x", i%50) + ".example.com:" + "443"
	}
	for _, c := range []struct {
		why     string
		network string
		path    string
		msg     string
	}{
		{"an entry without a port is refused on its own line, by its index",
			"[api.github.com:443, api.github.com]", "tools[0].confine.network[1]", `"api.github.com" has no port; write HOST:PORT`},
		{"an entry of the allow list",
			"{allow: [example.com:0]}", "tools[0].confine.network.allow[0]", `the port "0" must be a number from 1 to 65535`},
		{"an entry of the deny list",
			"{allow: [example.com:443], deny: ['http://example.com:443']}", "tools[0].confine.network.deny[0]", `"http://example.com:443" is a URL; write the host and port alone, HOST:PORT, such as api.github.com:443`},
		{"an IPv6 address out of brackets",
			"['::1:443']", "tools[0].confine.network[0]", `"::1:443": an IPv6 address is written in brackets, such as [fd00::1]:443`},
		{"an IPv6 address in brackets without a port",
			"['[::1]']", "tools[0].confine.network[0]", `"[::1]" has no port`},
		{"a host name that is not one",
			"['exa mple.com:443']", "tools[0].confine.network[0]", `"exa mple.com" is not a host name`},
		{"an entry longer than any is not repeated whole",
			"['" + strings.Repeat("a", 300) + ".com:443']", "tools[0].confine.network[0]", `"... is longer than any HOST:PORT entry`},
		{"an entry that is not a string",
			"[443]", "tools[0].confine.network[0]", "must be a string, not an integer"},
		{"a mapping takes allow and deny and no other key",
			"{allow: [example.com:443], ports: [443]}", "tools[0].confine.network.ports", `unknown key "ports" (known keys: allow, deny)`},
		{"a list of the mapping must be a list",
			"{allow: example.com:443}", "tools[0].confine.network.allow", "must be a list, not a string"},
		{"a quoted boolean is a string",
			`"false"`, "tools[0].confine.network", "must be true, false, or the hosts the command may reach: a list of HOST:PORT entries such as [api.github.com:443], or a mapping {allow: [...], deny: [...]}, not a string"},
		{"a number is neither",
			"1", "tools[0].confine.network", "must be true, false, or the hosts the command may reach"},
		{"a list longer than the gate takes is refused on the list, by NewAllowlist",
			"[" + strings.Join(many, ", ") + "]", "tools[0].confine.network", "at most 1024 entries"},
		{"and so is a deny list, on the deny list",
			"{deny: [" + strings.Join(many, ", ") + "]}", "tools[0].confine.network.deny", "at most 1024 entries"},
	} {
		t.Run(c.why, func(t *testing.T) {
			list := loadErrors(t, egressConfig(c.network))
			require.Len(t, list, 1, describe(list))
			assert.Equal(t, 5, list[0].Line, "the confine's line")
			assert.Equal(t, c.path, list[0].Path)
			assert.Contains(t, list[0].Message, c.msg)
		})
	}
}

// TestConfineNetwork_ErrorLines places a bad entry of a block list on the
// entry's own line.
func TestConfineNetwork_ErrorLines(t *testing.T) {
	list := loadErrors(t, `version: 1
tools:
  - name: echo
    bin: /bin/echo
    confine:
      network:
        allow:
          - api.github.com:443
          - github.com:https
        deny:
          - '*.internal:443'
          - internal.example.com
    commands: {hi: {}}
`)
	require.Len(t, list, 2, describe(list))
	assert.Equal(t, 9, list[0].Line)
	assert.Equal(t, "tools[0].confine.network.allow[1]", list[0].Path)
	assert.Contains(t, list[0].Message, `the port "https" must be a number`)
	assert.Equal(t, 12, list[1].Line)
	assert.Equal(t, "tools[0].confine.network.deny[1]", list[1].Path)
	assert.Contains(t, list[1].Message, `has no port`)
}

// TestProfileEgress: the curl profile reaches each host a site lists on
// port 443, and gh reaches GitHub's, both through the egress proxy, with
// no network of their own.
func TestProfileEgress(t *testing.T) {
	bin := standIns(t, "curl", "gh")
	l := mustLoad(t, `version: 1
tools:
  - profile: curl
    bin: `+bin+`/curl
    working_dir: `+t.TempDir()+`
    hosts: [example.com, api.example.org]
  - profile: gh
    bin: `+bin+`/gh
    working_dir: `+t.TempDir()+`
`)
	for name, allow := range map[string][]string{
		"curl.run":    {"api.example.org:443", "example.com:443"},
		"gh.pr-list":  {"api.github.com:443", "github.com:443"},
		"gh.run-view": {"api.github.com:443", "github.com:443"},
	} {
		s, ok := l.Allowlist.Lookup(name)
		require.True(t, ok, name)
		require.NotNil(t, s.Confine, name)
		assert.False(t, s.Confine.Network, name)
		assert.Equal(t, &execgate.Egress{Allow: allow}, s.Confine.Egress, name)
		assert.NotContains(t, s.Confine.Read, "/etc/resolv.conf", "%s resolves no name itself: the proxy does", name)
	}
	assert.Empty(t, l.Warnings())
}
