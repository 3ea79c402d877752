package mcpserver_test

import (
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/mcpserver"
)

// With no approver beyond the client, a held call that the client cannot
// put to its user is refused, saying that nothing can approve it, and
// leaves no approval behind; a client that can elicit is still asked.
func TestNoApprover_AHeldCallNoOneCanApproveIsRefused(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		mode     mcpserver.ApprovalMode
		client   *mcp.ClientOptions
		refused  bool
		says     string
	}{
		{"a client without elicitation", mcpserver.ApprovalsElicit, nil, true, "this client cannot ask its user"},
		{"a server that does not elicit", mcpserver.ApprovalsPending, nil, true, "this server does not ask the client's user"},
		{"a client that can elicit is asked", mcpserver.ApprovalsElicit, &mcp.ClientOptions{ElicitationHandler: (&person{answer: "accept"}).handle}, false, ""},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			f := start(t, setup{client: tc.client, opts: mcpserver.Options{Approvals: tc.mode, NoApprover: func() string { return "start the server with approvers" }}})
			res := f.call(t, "deploy", `{}`)
			if !tc.refused {
				require.False(t, res.IsError, text(t, res))
				assert.Equal(t, 1, f.rec.Count())
				return
			}
			require.True(t, res.IsError)
			st := status(t, res)
			assert.Equal(t, mcpserver.StatusRefused, st.Status)
			assert.Equal(t, mcpserver.KindPolicy, st.Kind)
			assert.Equal(t, string(execgate.ActionRequireApproval), st.Action)
			assert.Contains(t, st.Message, "nothing here can give one")
			assert.Contains(t, st.Message, tc.says)
			assert.Contains(t, st.Message, "nothing ran")
			assert.Nil(t, st.Approval, "no approval is offered that no one can decide")
			assert.Zero(t, f.rec.Count())
		})
	}
}

// NoApprover is asked on each held call, so that an approver added while
// the server runs counts from the next call, and its hint is told.
func TestNoApprover_IsAskedOnEachCall(t *testing.T) {
	var hint atomic.Value
	hint.Store("list approvers")
	f := start(t, setup{opts: mcpserver.Options{Approvals: mcpserver.ApprovalsPending, NoApprover: func() string { return hint.Load().(string) }}})
	st := status(t, f.call(t, "deploy", `{}`))
	assert.Equal(t, mcpserver.StatusRefused, st.Status)
	assert.Contains(t, st.Message, "to run it, list approvers.")
	hint.Store("")
	st = status(t, f.call(t, "deploy", `{}`))
	assert.Equal(t, mcpserver.StatusPending, st.Status, "an approver now exists")
	require.NotNil(t, st.Approval)
}
