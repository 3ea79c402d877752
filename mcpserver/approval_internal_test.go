package mcpserver

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// The person asked to approve a call sees the network it may reach: the
// egress lists are part of what the approval digest binds, so they are
// part of what is shown.
func TestQuestion_ShowsTheNetworkTheCallMayReach(t *testing.T) {
	base := execgate.Approval{ID: "a-1", Name: "curl.run", Command: "/usr/bin/curl", Args: []string{"https://example.com/"},
		Reason: "fetch", ExpiresAt: time.Unix(0, 0)}
	for _, tc := range []struct {
		sentence string
		egress   *execgate.Egress
		want     string // "" for no network line
	}{
		{"a spec without an Egress shows no network line", nil, ""},
		{"the allowed hosts are listed", &execgate.Egress{Allow: []string{"api.example.com:443", "example.com:443"}},
			"Network: only through the gate's proxy, to: api.example.com:443 example.com:443\n"},
		{"an empty allowlist says it reaches nothing", &execgate.Egress{},
			"Network: only through the gate's proxy, to: (nothing)\n"},
		{"the deny list follows", &execgate.Egress{Allow: []string{"*:443"}, Deny: []string{"evil.example:*"}},
			"Network: only through the gate's proxy, to: *:443; never to: evil.example:*\n"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			ap := base
			ap.Egress = tc.egress
			q, ok := (&Server{}).question(ap)
			require.True(t, ok)
			if tc.want == "" {
				assert.NotContains(t, q.Message, "Network:")
				return
			}
			assert.Contains(t, q.Message, tc.want)
			assert.Less(t, strings.Index(q.Message, "Arguments:"), strings.Index(q.Message, "Network:"))
		})
	}
}
