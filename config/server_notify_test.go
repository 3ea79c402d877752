package config_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
)

// TestServer_Notify: server.notify lists webhooks, each with its url, the
// name of the variable holding its key, its events (both unless the
// entry says) and its timeout (10s unless the entry says), in file
// order, each with its line.
func TestServer_Notify(t *testing.T) {
	l := mustLoad(t, `version: 1
tools: []
server:
  notify:
    - url: https://hooks.example.com/execgate
      secret_env: EXECGATE_WEBHOOK_KEY
    - url: http://127.0.0.1:9000/hook
      secret_env: LOCAL_KEY
      events: [decided]
      timeout: 3s
    - {url: "http://localhost/a", secret_env: K, events: [decided, pending]}
    - {url: "http://[::1]:8080/a", secret_env: K}
`)
	require.NotNil(t, l.Server)
	both := []string{config.NotifyPending, config.NotifyDecided}
	assert.Equal(t, []config.Notify{
		{URL: "https://hooks.example.com/execgate", SecretEnv: "EXECGATE_WEBHOOK_KEY", Events: both, Timeout: config.DefaultNotifyTimeout, Line: 5},
		{URL: "http://127.0.0.1:9000/hook", SecretEnv: "LOCAL_KEY", Events: []string{config.NotifyDecided}, Timeout: 3 * time.Second, Line: 7},
		{URL: "http://localhost/a", SecretEnv: "K", Events: both, Timeout: config.DefaultNotifyTimeout, Line: 11},
		{URL: "http://[::1]:8080/a", SecretEnv: "K", Events: both, Timeout: config.DefaultNotifyTimeout, Line: 12},
	}, l.Server.Notify)

	l = mustLoad(t, "version: 1\ntools: []\nserver: {principal: p}\n")
	assert.Empty(t, l.Server.Notify, "no webhook unless the file lists one")
}

// TestServer_NotifyRefused: a webhook the file gets wrong is a load error
// at the line and key of the mistake, saying what to write.
func TestServer_NotifyRefused(t *testing.T) {
	entry := func(body string) string {
		return "version: 1\ntools: []\nserver:\n  notify:\n    - " + body + "\n"
	}
	for _, tc := range []struct {
		why, body, path, message string
	}{
		{"an entry needs its url", `{secret_env: K}`, "server.notify[0].url", "required: where the messages are posted"},
		{"an entry needs the variable of its key", `{url: "https://h.example/x"}`, "server.notify[0].secret_env", "required: the name of the environment variable"},
		{"plain http to another host would cross the network readable", `{url: "http://hooks.example.com/x", secret_env: K}`, "server.notify[0].url", "must be https"},
		{"plain http to an address that is not loopback is refused too", `{url: "http://10.0.0.1/x", secret_env: K}`, "server.notify[0].url", "must be https"},
		{"only http and https are posted to", `{url: "ftp://h.example/x", secret_env: K}`, "server.notify[0].url", "must be an https URL"},
		{"a relative url names no receiver", `{url: "/hook", secret_env: K}`, "server.notify[0].url", "must be an absolute URL"},
		{"a url needs a host", `{url: "https:///x", secret_env: K}`, "server.notify[0].url", "must name a host"},
		{"a password in the url would be a secret in the file", `{url: "https://u:p@h.example/x", secret_env: K}`, "server.notify[0].url", "must not hold a user or a password"},
		{"a fragment is never sent", `{url: "https://h.example/x#y", secret_env: K}`, "server.notify[0].url", "must not hold a fragment"},
		{"a port is a number in range", `{url: "https://h.example:0/x", secret_env: K}`, "server.notify[0].url", "port"},
		{"white space in a url is a mistake", `{url: "https://h.example/a b", secret_env: K}`, "server.notify[0].url", "white space"},
		{"a long url is refused", `{url: "https://h.example/` + strings.Repeat("a", config.MaxNotifyURLBytes) + `", secret_env: K}`, "server.notify[0].url", "longer than 2048 bytes"},
		{"secret_env names a variable, not the key", `{url: "https://h.example/x", secret_env: "s3cr3t-key/+=="}`, "server.notify[0].secret_env", "must be the name of an environment variable"},
		{"a name cannot start with a digit", `{url: "https://h.example/x", secret_env: 1KEY}`, "server.notify[0].secret_env", "must be the name of an environment variable"},
		{"an unknown event is named", `{url: "https://h.example/x", secret_env: K, events: [approved]}`, "server.notify[0].events[0]", "unknown event \"approved\": the events are pending and decided"},
		{"an event is listed once", `{url: "https://h.example/x", secret_env: K, events: [pending, pending]}`, "server.notify[0].events[1]", "listed twice"},
		{"an empty events list sends nothing, which is a mistake", `{url: "https://h.example/x", secret_env: K, events: []}`, "server.notify[0].events", "lists no event"},
		{"a timeout is bounded", `{url: "https://h.example/x", secret_env: K, timeout: 2m}`, "server.notify[0].timeout", "is at most 1m0s"},
		{"a zero timeout is refused", `{url: "https://h.example/x", secret_env: K, timeout: 0s}`, "server.notify[0].timeout", "must be more than zero"},
		{"an unknown key is named", `{url: "https://h.example/x", secret_env: K, secret: abc}`, "server.notify[0].secret", "unknown key \"secret\""},
		{"an entry is a mapping", `https://h.example/x`, "server.notify[0]", "must be a mapping"},
	} {
		t.Run(tc.why, func(t *testing.T) {
			list := loadErrors(t, entry(tc.body))
			require.Len(t, list, 1, describe(list))
			assert.Equal(t, tc.path, list[0].Path)
			assert.Equal(t, 5, list[0].Line)
			assert.Contains(t, list[0].Message, tc.message)
		})
	}
}

// TestServer_NotifyErrorsNeverRepeatSecrets: a url, which may hold a
// secret in its path, and a secret_env, which may be a key pasted in
// place of a name, are never repeated by a load error.
func TestServer_NotifyErrorsNeverRepeatSecrets(t *testing.T) {
	const pathSecret, pasted = "T0KEN1N7HEPATH", "sk_live_PASTEDKEY-42=="
	for _, body := range []string{
		`{url: "http://hooks.example.com/services/` + pathSecret + `", secret_env: K}`,
		`{url: "https://user:` + pathSecret + `@hooks.example.com/x", secret_env: K}`,
		`{url: "https://hooks.example.com/` + pathSecret + `#frag", secret_env: K}`,
		`{url: "https://hooks.example.com/x", secret_env: "` + pasted + `"}`,
	} {
		list := loadErrors(t, "version: 1\ntools: []\nserver:\n  notify:\n    - "+body+"\n")
		for _, e := range list {
			assert.NotContains(t, e.Error(), pathSecret)
			assert.NotContains(t, e.Error(), pasted)
		}
	}
}

// TestServer_NotifyKeyNotInherited: the variable that holds a webhook's
// key is refused when a tool inherits it, from the defaults or its own
// inherit_env: every command an agent runs through that tool would hold
// the key.
func TestServer_NotifyKeyNotInherited(t *testing.T) {
	dir := standIns(t, "tool")
	for _, tc := range []struct{ why, defaults, tool, by string }{
		{"inherited by every tool", "defaults: {inherit_env: [HOOK_KEY]}\n", "", "passes to every tool"},
		{"inherited by one tool", "", "    inherit_env: [HOME, HOOK_KEY]\n", `passes to the tool "t"`},
	} {
		t.Run(tc.why, func(t *testing.T) {
			text := fmt.Sprintf("version: 1\n%stools:\n  - name: t\n    bin: %s/tool\n%s    bare: {}\nserver:\n  notify:\n    - {url: \"https://h.example/x\", secret_env: HOOK_KEY}\n",
				tc.defaults, dir, tc.tool)
			list := loadErrors(t, text)
			require.Len(t, list, 1, describe(list))
			assert.Equal(t, "server.notify[0].secret_env", list[0].Path)
			assert.Contains(t, list[0].Message, tc.by)
			assert.Contains(t, list[0].Message, "would hold the webhook's key")
		})
	}
}

// TestServer_NotifyBounds: at most MaxNotify webhooks, and a url is listed
// once.
func TestServer_NotifyBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\ntools: []\nserver:\n  notify:\n")
	for i := range config.MaxNotify + 1 {
		fmt.Fprintf(&b, "    - {url: \"https://h.example/%d\", secret_env: K}\n", i)
	}
	list := loadErrors(t, b.String())
	require.Len(t, list, 1, describe(list))
	assert.Equal(t, "server.notify", list[0].Path)
	assert.Contains(t, list[0].Message, "at most 16")

	list = loadErrors(t, "version: 1\ntools: []\nserver:\n  notify:\n    - {url: \"https://h.example/x\", secret_env: A}\n    - {url: \"https://h.example/x\", secret_env: B}\n")
	require.Len(t, list, 1, describe(list))
	assert.Equal(t, 6, list[0].Line)
	assert.Contains(t, list[0].Message, "already listed at line 5")
}
