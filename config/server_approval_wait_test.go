package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
)

// TestServer_ApprovalWait: server.approval_wait is 0s unless the file
// sets it, from 0s to the lifetime of an approval, and a bad value is a
// load error at its own line and key.
func TestServer_ApprovalWait(t *testing.T) {
	for _, tc := range []struct {
		section string
		want    time.Duration
	}{
		{"server: {principal: p}", 0},
		{"server: {approval_wait: 0s}", 0},
		{"server: {approval_wait: 2m}", 2 * time.Minute},
		{"server: {approval_wait: 15m}", config.MaxApprovalWaitLimit},
	} {
		l := mustLoad(t, "version: 1\ntools: []\n"+tc.section+"\n")
		require.NotNil(t, l.Server)
		assert.Equal(t, tc.want, l.Server.ApprovalWait, tc.section)
	}
	for _, tc := range []struct{ value, message string }{
		{"30", "needs a unit"},
		{"-1s", "must not be negative"},
		{"16m", "is at most 15m0s, the lifetime of an approval"},
		{"soon", "is not a duration"},
		{"true", "a duration such as 30s"},
	} {
		list := loadErrors(t, "version: 1\ntools: []\nserver:\n  approval_wait: "+tc.value+"\n")
		require.Len(t, list, 1, describe(list))
		assert.Equal(t, "server.approval_wait", list[0].Path, tc.value)
		assert.Equal(t, 4, list[0].Line, tc.value)
		assert.Contains(t, list[0].Message, tc.message, tc.value)
	}
}
