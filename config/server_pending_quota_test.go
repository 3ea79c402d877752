package config_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
)

// TestServer_PendingQuotas: server.max_pending_per_principal and
// server.max_pending_bytes_per_principal are zero (the store's default, a
// quarter of it) unless the file sets them, within the store's own
// bounds, and a bad value is a load error at its own line and key.
func TestServer_PendingQuotas(t *testing.T) {
	for _, tc := range []struct {
		why     string
		section string
		count   int
		bytes   int64
	}{
		{"unset, both are the store's default", "server: {principal: p}", 0, 0},
		{"a count and a size with a unit", "server: {max_pending_per_principal: 20, max_pending_bytes_per_principal: 8MiB}", 20, 8 << 20},
		{"a size in bytes", "server: {max_pending_bytes_per_principal: 4096}", 0, 4096},
		{"the largest of each is the store's whole", "server: {max_pending_per_principal: 1000, max_pending_bytes_per_principal: 64MiB}", config.MaxPendingLimit, config.MaxPendingBytesLimit},
	} {
		l := mustLoad(t, "version: 1\ntools: []\n"+tc.section+"\n")
		require.NotNil(t, l.Server, tc.why)
		assert.Equal(t, tc.count, l.Server.MaxPendingPerPrincipal, tc.why)
		assert.Equal(t, tc.bytes, l.Server.MaxPendingBytesPerPrincipal, tc.why)
	}
	for _, tc := range []struct{ key, value, message string }{
		{"max_pending_per_principal", "0", "must be from 1 to 1000, the capacity of the approval store"},
		{"max_pending_per_principal", "1001", "must be from 1 to 1000"},
		{"max_pending_per_principal", "-1", "must be from 1 to 1000"},
		{"max_pending_per_principal", "ten", "an integer"},
		{"max_pending_bytes_per_principal", "65MiB", "is at most 67108864 bytes (64MiB)"},
		{"max_pending_bytes_per_principal", "0", "must be more than zero"},
		{"max_pending_bytes_per_principal", "-1KiB", "must not be negative"},
		{"max_pending_bytes_per_principal", "1MB", "ambiguous"},
	} {
		list := loadErrors(t, "version: 1\ntools: []\nserver:\n  principal: p\n  "+tc.key+": "+tc.value+"\n")
		require.Len(t, list, 1, describe(list))
		assert.Equal(t, "server."+tc.key, list[0].Path, tc.value)
		assert.Equal(t, 5, list[0].Line, tc.value)
		assert.Contains(t, list[0].Message, tc.message, tc.value)
	}
}
