package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
)

// TestServer_MaxGrant: server.max_grant is an hour unless the file sets
// it, from 0s (approvers make no grants) to the longest grant the policy
// engine holds, and a bad value is a load error at its own line and key.
func TestServer_MaxGrant(t *testing.T) {
	for _, tc := range []struct {
		section string
		want    time.Duration
	}{
		{"server: {principal: p}", config.DefaultMaxGrant},
		{"server: {max_grant: 0s}", 0},
		{"server: {max_grant: 30m}", 30 * time.Minute},
		{"server: {max_grant: 24h}", config.MaxGrantLimit},
	} {
		l := mustLoad(t, "version: 1\ntools: []\n"+tc.section+"\n")
		require.NotNil(t, l.Server)
		assert.Equal(t, tc.want, l.Server.MaxGrant, tc.section)
	}
	assert.Equal(t, time.Hour, config.DefaultMaxGrant)
	for _, tc := range []struct{ value, message string }{
		{"30", "needs a unit"},
		{"-1m", "must not be negative"},
		{"25h", "is at most 24h0m0s, the longest grant the policy engine holds"},
		{"forever", "is not a duration"},
		{"true", "a duration such as 30s"},
	} {
		list := loadErrors(t, "version: 1\ntools: []\nserver:\n  principal: p\n  max_grant: "+tc.value+"\n")
		require.Len(t, list, 1, describe(list))
		assert.Equal(t, "server.max_grant", list[0].Path, tc.value)
		assert.Equal(t, 5, list[0].Line, tc.value)
		assert.Contains(t, list[0].Message, tc.message, tc.value)
	}
}
