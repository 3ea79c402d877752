package config_test

import (
	"strings"
	"testing"

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
		Line:      3,
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
