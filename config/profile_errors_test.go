package config_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
)

// TestProfile_OverrideProblemsNameTheProfileTheKeyAndTheLine loads tools
// entries that name a profile and set one of its site-specific keys
// wrongly: the one problem reported is at the key's line in the file,
// under the key the file wrote, and names the profile the key overrides.
func TestProfile_OverrideProblemsNameTheProfileTheKeyAndTheLine(t *testing.T) {
	for _, c := range []struct {
		why, entry string
		line       int
		path, want string
	}{
		{"A host given as a URL is not a host name.",
			"profile: curl\n    hosts: ['https://x.com']", 4, "tools[0].hosts",
			`profile "curl": "https://x.com" must be a host name`},
		{"A list of hosts holds strings only.",
			"profile: curl\n    hosts: [[a.com]]", 4, "tools[0].hosts",
			`profile "curl": must be a list of strings`},
		{"An empty list of hosts lets nothing through and says so.",
			"profile: curl\n    hosts: []", 4, "tools[0].hosts",
			`profile "curl": must list at least one`},
		{"A namespace is a lower-case DNS label.",
			"profile: kubectl\n    kubeconfig: /etc/kc\n    namespaces: [Team_A]", 5, "tools[0].namespaces",
			`profile "kubectl": "Team_A" must be a namespace name`},
		{"The kubeconfig is an absolute path.",
			"profile: kubectl\n    namespaces: [default]\n    kubeconfig: etc/kc", 5, "tools[0].kubeconfig",
			`profile "kubectl": "etc/kc" must be an absolute, clean path`},
		{"A timeout is a duration.",
			"profile: git\n    timeout: banana", 4, "tools[0].timeout",
			`profile "git": "banana" is not a duration`},
		{"A relative bin is refused.",
			"profile: git\n    bin: rel/git", 4, "tools[0].bin",
			`profile "git": "rel/git" is a relative path`},
		{"A bin that does not exist is refused.",
			"profile: git\n    bin: /nonexistent/git", 4, "tools[0].bin",
			`profile "git": "/nonexistent/git"`},
		{"A relative working_dir is reported once, under working_dir and not under the confinement's read paths.",
			"profile: git\n    working_dir: relative/dir", 4, "tools[0].working_dir",
			`profile "git": must be an absolute path`},
		{"A working_dir that is not a string is reported once.",
			"profile: git\n    working_dir: [a]", 4, "tools[0].working_dir",
			`profile "git": `},
		{"A size is a number of bytes.",
			"profile: git\n    max_output: lots", 4, "tools[0].max_output",
			`profile "git": "lots" is not a size`},
		{"A SHA-256 is 64 hex digits.",
			"profile: git\n    sha256: xyz", 4, "tools[0].sha256",
			`profile "git": must be 64 hex digits`},
		{"A tool name holds no space.",
			"profile: git\n    name: 'Bad Name'", 4, "tools[0].name",
			`profile "git": "Bad Name": a tool name is`},
		{"A site value the profile does not mark is refused.",
			"profile: git\n    hosts: [a.com]", 4, "tools[0].hosts",
			`profile "git" takes no hosts`},
	} {
		t.Run(c.why, func(t *testing.T) {
			_, err := config.LoadBytes("tools.yaml", []byte("version: 1\ntools:\n  - "+c.entry+"\n"))
			require.Error(t, err)
			var list config.ErrorList
			require.True(t, errors.As(err, &list), err.Error())
			require.Len(t, list, 1, "one problem, under the key the file wrote: %v", err)
			e := list[0]
			assert.Equal(t, "tools.yaml", e.File)
			assert.Equal(t, c.line, e.Line, err.Error())
			assert.Equal(t, c.path, e.Path, err.Error())
			assert.Contains(t, e.Message, c.want)
		})
	}
}
