package main

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit"
)

// TestHTTP_AHeldCallIsRecordedOnceAsAProposal checks that a call the
// policy holds for approval goes through the gate once over the HTTP API
// (Executor.Submit): one audit record, its proposal, naming the approval
// the response carries, and nothing refused on the way.
func TestHTTP_AHeldCallIsRecordedOnceAsAProposal(t *testing.T) {
	f := newAuditedAPI(t)
	before := len(f.lines(t))

	resp, r := httpCall(t, f, "deploy.prod", ``)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%+v", r.Error)
	require.NotNil(t, r.Approval)
	require.NotNil(t, r.Policy)
	assert.Equal(t, execgate.ActionRequireApproval, r.Policy.Decision)

	lines := f.lines(t)
	require.Len(t, lines, before+1, "one record for one call")
	var e audit.Entry
	require.NoError(t, json.Unmarshal([]byte(lines[before]), &e))
	assert.Equal(t, execgate.OpPropose, e.Op)
	assert.Empty(t, e.Error)
	assert.Equal(t, r.Approval.ID, e.ApprovalID)
	assert.Equal(t, r.TraceID, e.TraceID)
	assert.Zero(t, f.rec.Count(), "nothing ran")
}
