package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
)

// TestProfile_EntryUsesTheProfileWithSiteOverrides loads an entry that
// names a profile and sets only what is site-specific.
func TestProfile_EntryUsesTheProfileWithSiteOverrides(t *testing.T) {
	dir := t.TempDir()
	l, err := config.LoadBytes("tools.yaml", []byte(`version: 1
tools:
  - profile: git
    working_dir: `+dir+`
    timeout: 5s
  - profile: rg
    name: search
`))
	require.NoError(t, err)
	require.Len(t, l.Tools, 2)
	assert.Equal(t, "git", l.Tools[0].Name)
	assert.Contains(t, l.Tools[0].Specs, "git.diff")
	assert.Equal(t, "search", l.Tools[1].Name)
	var found bool
	for _, s := range l.Allowlist.Specs() {
		if s.Name == "git.log" {
			found = true
			assert.Equal(t, dir, s.Dir)
			require.NotNil(t, s.Confine)
			assert.Contains(t, s.Confine.Read, dir, "the working directory is readable")
			assert.Empty(t, s.Confine.Write[1:])
		}
	}
	assert.True(t, found)
}

func TestProfile_RefusesKeysAProfileOwnsAndUnknownProfiles(t *testing.T) {
	for _, c := range []struct{ entry, want string }{
		{"profile: git\n    global_args: [-c, core.pager=sh]", `4:5: tools[0].global_args: profile "git" sets "global_args"; an entry naming a profile may set only name, bin`},
		{"profile: git\n    commands: {push: {}}", `tools[0].commands: profile "git" sets "commands"`},
		{"profile: git\n    confine: {network: true}", `tools[0].confine: profile "git" sets "confine"`},
		{"profile: gti", `3:14: tools[0].profile: no profile "gti"; the profiles are `},
		{"profile: [git]", `tools[0].profile: must be a profile's name`},
	} {
		_, err := config.LoadBytes("tools.yaml", []byte("version: 1\ntools:\n  - "+c.entry+"\n"))
		require.Error(t, err, c.entry)
		assert.Contains(t, err.Error(), c.want)
		assert.True(t, strings.HasPrefix(err.Error(), "tools.yaml:"), err.Error())
	}
}

// TestProfile_ExampleThatDoesNotHoldHereIsAWarning loads the tar profile in
// a working directory without the archive its examples name: the file
// loads, and each such example is a warning that names the profile, its
// line there and why, while the same example written in the file itself
// would be an error.
func TestProfile_ExampleThatDoesNotHoldHereIsAWarning(t *testing.T) {
	dir := t.TempDir()
	l, err := config.LoadBytes("tools.yaml", []byte("version: 1\ntools:\n  - profile: tar\n    working_dir: "+dir+"\n"))
	require.NoError(t, err, "a profile's examples never stop a site's file from loading")
	var msgs []string
	for _, w := range l.Warnings() {
		msgs = append(msgs, w.String())
	}
	require.NotEmpty(t, msgs)
	assert.Contains(t, strings.Join(msgs, "\n"), `tools.yaml:3:14: tools[0].bare.examples.allow[0]: in profile "tar", line `)
	assert.Contains(t, strings.Join(msgs, "\n"), `does not exist`)
}

// TestProfile_DefaultsDoNotReachItsEnvironment loads a file whose defaults
// set an environment and inherit a variable, beside a profile entry and a
// tool written out: the written tool gets both, the profile's environment
// stays the profile's, and the defaults' limits reach both.
func TestProfile_DefaultsDoNotReachItsEnvironment(t *testing.T) {
	t.Setenv("EXECGATE_TEST_INHERITED", "from the process")
	l, err := config.LoadBytes("tools.yaml", []byte(`version: 1
defaults:
  timeout: 7s
  env: {PATH: /opt/evil/bin, LANG: C}
  inherit_env: [EXECGATE_TEST_INHERITED]
tools:
  - profile: jq
    working_dir: `+t.TempDir()+`
  - name: echo
    bin: /bin/echo
    description: Print the arguments.
    bare: {}
`))
	require.NoError(t, err)
	for _, s := range l.Allowlist.Specs() {
		switch s.Name {
		case "jq.run":
			assert.NotContains(t, s.Env, "PATH", "the defaults' env does not reach a profile")
			assert.NotContains(t, s.Env, "EXECGATE_TEST_INHERITED", "nor do the variables they inherit")
			assert.Equal(t, "/nonexistent", s.Env["HOME"], "the profile's own environment")
			assert.Equal(t, 7*time.Second, s.Timeout, "the defaults' limits do")
		case "echo.run":
			assert.Equal(t, "/opt/evil/bin", s.Env["PATH"])
			assert.Equal(t, "from the process", s.Env["EXECGATE_TEST_INHERITED"])
		}
	}
}
