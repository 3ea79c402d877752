package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
)

func TestServer_Loaded(t *testing.T) {
	upper := strings.Repeat("AB", 32)
	l := mustLoad(t, `version: 1
tools: [{name: echo, bin: /bin/echo}]
server:
  principal: local-agent
  tokens:
    - {principal: ci-bot, sha256: `+upper+`}
  approvers:
    - principal: alice@example.com
      sha256: "`+strings.Repeat("0", 64)+`"
`)
	require.NotNil(t, l.Server)
	assert.Equal(t, &config.Server{
		Principal: "local-agent",
		Tokens:    []config.Token{{Principal: "ci-bot", SHA256: strings.ToLower(upper), Line: 6}},
		Approvers: []config.Token{{Principal: "alice@example.com", SHA256: strings.Repeat("0", 64), Line: 8}},

		MaxConcurrent:             config.DefaultMaxConcurrent,
		MaxConcurrentPerPrincipal: config.DefaultMaxConcurrent / 2,
		MaxGrant:                  config.DefaultMaxGrant,
		Line:                      3,
	}, l.Server)
}

func TestServer_Absent(t *testing.T) {
	l := mustLoad(t, "version: 1\ntools: []\n")
	assert.Nil(t, l.Server)
}

func TestServer_EmptyLists(t *testing.T) {
	l := mustLoad(t, "version: 1\ntools: []\nserver: {tokens: [], approvers: []}\n")
	require.NotNil(t, l.Server)
	assert.Empty(t, l.Server.Principal)
	assert.Empty(t, l.Server.Tokens)
	assert.Empty(t, l.Server.Approvers)
}

// TestServer_ErrorsNeverRepeatTheValue: a token pasted where its hash
// belongs is not echoed into logs by the error.
func TestServer_ErrorsNeverRepeatTheValue(t *testing.T) {
	const secret = "s3cr3t-token-value-do-not-print"
	list := loadErrors(t, "version: 1\ntools: []\nserver:\n  tokens: [{principal: a, sha256: "+secret+"}]\n  approvers: [{principal: b, sha256: '"+secret+"'}]\n")
	require.Len(t, list, 2)
	for _, e := range list {
		assert.NotContains(t, e.Error(), secret)
	}
}

// TestServer_ConcurrencyBounds: the bounds of the server section, with
// their defaults.
func TestServer_ConcurrencyBounds(t *testing.T) {
	for _, tc := range []struct {
		name, section string
		total, per    int
		wait          time.Duration
	}{
		{"a server section without bounds has the defaults, half of them for one principal so that one caller cannot take every slot, and no wait",
			"server: {principal: p}", config.DefaultMaxConcurrent, config.DefaultMaxConcurrent / 2, 0},
		{"max_concurrent alone bounds each principal by half of it",
			"server: {max_concurrent: 4}", 4, 2, 0},
		{"max_concurrent 1 leaves one principal its one slot",
			"server: {max_concurrent: 1}", 1, 1, 0},
		{"max_concurrent_per_principal alone is checked against the default max_concurrent",
			"server: {max_concurrent_per_principal: 3}", config.DefaultMaxConcurrent, 3, 0},
		{"all three keys are taken as written",
			"server: {max_concurrent: 8, max_concurrent_per_principal: 2, max_queue_wait: 1500ms}", 8, 2, 1500 * time.Millisecond},
		{"a per-principal bound equal to the total is allowed",
			"server: {max_concurrent: 4, max_concurrent_per_principal: 4}", 4, 4, 0},
		{"a queue wait of zero means refuse at once, as when the key is absent",
			"server: {max_queue_wait: 0s}", config.DefaultMaxConcurrent, config.DefaultMaxConcurrent / 2, 0},
		{"the largest bounds and wait are accepted",
			"server: {max_concurrent: 10000, max_concurrent_per_principal: 10000, max_queue_wait: 1m}", config.MaxConcurrentLimit, config.MaxConcurrentLimit, config.MaxQueueWaitLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustLoad(t, "version: 1\ntools: []\n"+tc.section+"\n")
			require.NotNil(t, l.Server)
			assert.Equal(t, tc.total, l.Server.MaxConcurrent)
			assert.Equal(t, tc.per, l.Server.MaxConcurrentPerPrincipal)
			assert.Equal(t, tc.wait, l.Server.MaxQueueWait)
		})
	}
}

// TestServer_ConcurrencyBoundErrors: a bound that is not a sane number
// is a load error at its own line and key.
func TestServer_ConcurrencyBoundErrors(t *testing.T) {
	for _, tc := range []struct {
		name, section, path, message string
	}{
		{"zero would mean no bound, which a server does not have",
			"  max_concurrent: 0", "server.max_concurrent", "must be at least 1"},
		{"a negative bound is refused",
			"  max_concurrent_per_principal: -1", "server.max_concurrent_per_principal", "must be at least 1"},
		{"a bound over the limit is refused",
			"  max_concurrent: 10001", "server.max_concurrent", "is at most 10000"},
		{"a bound must be an integer",
			"  max_concurrent: many", "server.max_concurrent", "must be an integer"},
		{"a principal cannot run more than the server",
			"  max_concurrent: 2\n  max_concurrent_per_principal: 3", "server.max_concurrent_per_principal", "3 is more than max_concurrent, 2"},
		{"nor more than the default bound of the server",
			"  max_concurrent_per_principal: 65", "server.max_concurrent_per_principal", "65 is more than the default max_concurrent, 64"},
		{"a queue wait needs a unit",
			"  max_queue_wait: 5", "server.max_queue_wait", "needs a unit"},
		{"a negative queue wait is refused",
			"  max_queue_wait: -1s", "server.max_queue_wait", "must not be negative"},
		{"a queue wait over a minute is refused",
			"  max_queue_wait: 61s", "server.max_queue_wait", "is at most 1m0s"},
		{"an unknown key names the known ones",
			"  max_concurent: 2", "server.max_concurent", "max_concurrent_per_principal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list := loadErrors(t, "version: 1\ntools: []\nserver:\n"+tc.section+"\n")
			require.Len(t, list, 1, describe(list))
			e := list[0]
			assert.Equal(t, tc.path, e.Path)
			assert.Equal(t, 4+strings.Count(tc.section, "\n"), e.Line, "the line of the last key of the section")
			assert.Contains(t, e.Message, tc.message)
		})
	}
}

// TestServer_MCPHTTPElicitation: server.mcp_http_elicitation is off
// unless the file turns it on, and takes only a boolean.
func TestServer_MCPHTTPElicitation(t *testing.T) {
	for _, tc := range []struct {
		section string
		want    bool
	}{
		{"server: {principal: p}", false},
		{"server: {mcp_http_elicitation: false}", false},
		{"server: {mcp_http_elicitation: true}", true},
	} {
		l := mustLoad(t, "version: 1\ntools: []\n"+tc.section+"\n")
		require.NotNil(t, l.Server)
		assert.Equal(t, tc.want, l.Server.MCPHTTPElicitation, tc.section)
	}
	for _, value := range []string{`"true"`, "yes", "1"} {
		list := loadErrors(t, "version: 1\ntools: []\nserver:\n  mcp_http_elicitation: "+value+"\n")
		require.Len(t, list, 1, describe(list))
		assert.Equal(t, "server.mcp_http_elicitation", list[0].Path)
		assert.Equal(t, 4, list[0].Line)
		assert.Contains(t, list[0].Message, "must be true or false")
	}
}
