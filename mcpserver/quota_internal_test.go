package mcpserver

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// TestRefusal_FullQuotaSaysWhose: a Propose refused for the caller's own
// quota of the approval store reaches an MCP client as store_full with
// reason "principal" and the message naming the principal; a store full
// for everyone has no reason.
func TestRefusal_FullQuotaSaysWhose(t *testing.T) {
	a, err := execgate.NewAllowlist()
	require.NoError(t, err)
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: a})
	require.NoError(t, err)
	s, err := New(x, Options{Allowlist: a})
	require.NoError(t, err)
	for _, tc := range []struct {
		why    string
		err    error
		reason string
		says   string
	}{
		{"the caller's quota", fmt.Errorf("propose: %w", &execgate.QuotaError{Principal: "bot-1", Quota: execgate.QuotaBytes, Limit: 1024}),
			execgate.StoreFullPrincipal, `principal "bot-1"`},
		{"the whole store", execgate.ErrStoreFull, "", "approval store is full"},
	} {
		res := s.refusal(tc.err)
		st, ok := res.StructuredContent.(*CallStatus)
		require.True(t, ok, tc.why)
		assert.True(t, res.IsError, tc.why)
		assert.Equal(t, KindStoreFull, st.Kind, tc.why)
		assert.Equal(t, tc.reason, st.Reason, tc.why)
		assert.Contains(t, st.Message, tc.says, tc.why)
		assert.Contains(t, st.Message, "nothing ran", tc.why)
	}
}
