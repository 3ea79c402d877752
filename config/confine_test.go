package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
)

const confineConfig = `version: 1
tools:
  - name: echo
    bin: /bin/echo
    confine: {read: [/usr, /etc/ssl], write: [/srv/scratch], exec: [/usr/bin], network: false, limits: {cpu: 10s, memory: 512MiB, files: 256, file_size: 64MiB, processes: 64}, require: true}
    commands:
      inherit: {}
      own:
        confine:
          read: [/etc/ssl/, /etc/ssl, /opt]
          network: true
          limits: {memory: 4GiB, cpu: 1500ms}
          require: false
  - name: cat
    bin: /bin/cat
    bare:
      confine: {read: [/var/log]}
  - name: plain
    bin: /bin/true
    commands: {x: {}}
`

func TestConfine(t *testing.T) {
	l, err := loadString(t, confineConfig)
	require.NoError(t, err)
	lookup := func(name string) *execgate.Confinement {
		t.Helper()
		s, ok := l.Allowlist.Lookup(name)
		require.True(t, ok, name)
		return s.Confine
	}

	tool := &execgate.Confinement{
		Read:  []string{"/etc/ssl", "/usr"},
		Write: []string{"/srv/scratch"},
		Exec:  []string{"/usr/bin"},
		Limits: execgate.Limits{CPU: 10 * time.Second, AddressSpace: 512 << 20,
			Files: 256, FileSize: 64 << 20, Processes: 64},
	}
	assert.Equal(t, tool, lookup("echo.inherit"), "a command without confine inherits the tool's")
	assert.Equal(t, tool, lookup("echo.status"), "the dispatcher has the tool's")
	assert.Equal(t, &execgate.Confinement{
		Read:       []string{"/etc/ssl", "/opt"},
		Network:    true,
		Limits:     execgate.Limits{CPU: 2 * time.Second, AddressSpace: 4 << 30},
		BestEffort: true,
	}, lookup("echo.own"), "a command's confine replaces the tool's whole")
	assert.Equal(t, &execgate.Confinement{Read: []string{"/var/log"}}, lookup("cat.run"),
		"require defaults to true, network to false")
	assert.Nil(t, lookup("plain.x"))
	assert.Nil(t, lookup("plain.other"))
}

// TestConfine_AllowlistErrorPlaced: what only execgate.NewAllowlist
// refuses is placed on the list it is about.
func TestConfine_AllowlistErrorPlaced(t *testing.T) {
	long := "/" + strings.Repeat("a", 5000)
	_, err := loadString(t, `version: 1
tools:
  - name: echo
    bin: /bin/echo
    commands:
      hi:
        confine:
          exec: [/usr/bin]
          write: [`+long+`]
`)
	var list config.ErrorList
	require.True(t, errors.As(err, &list), "%v", err)
	require.Len(t, list, 1)
	assert.Equal(t, 9, list[0].Line)
	assert.Equal(t, "tools[0].commands.hi.confine.write", list[0].Path)
	assert.Contains(t, list[0].Message, "at most 4095 bytes")
}

func TestConfine_NullAndWrongTypes(t *testing.T) {
	_, err := loadString(t, `version: 1
tools:
  - name: echo
    bin: /bin/echo
    confine:
  - name: cat
    bin: /bin/cat
    confine: [/usr]
  - name: ls
    bin: /bin/ls
    confine: {network: "false", limits: {files: "256", memory: 1.5GiB}, read: [/usr, /usr], exec: [1]}
`)
	var list config.ErrorList
	require.True(t, errors.As(err, &list), "%v", err)
	var got []string
	for _, e := range list {
		got = append(got, e.Path+": "+e.Message)
	}
	require.Len(t, got, 6, strings.Join(got, "\n"))
	assert.Contains(t, got[0], "tools[0].confine: has no value")
	assert.Contains(t, got[1], "tools[1].confine: must be a mapping")
	assert.Contains(t, got[2], "tools[2].confine.network: must be true, false, or the hosts the command may reach")
	assert.Contains(t, got[3], "tools[2].confine.limits.files: must be an integer")
	assert.Contains(t, got[4], "tools[2].confine.limits.memory: ")
	assert.Contains(t, got[5], "tools[2].confine.exec[0]: must be a string")
}
