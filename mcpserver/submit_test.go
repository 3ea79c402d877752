package mcpserver_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/mcpserver"
)

// TestCall_AHeldCallIsDecidedOnceAndRecordedOnce checks that a call the
// Policy holds for approval goes through the gate once (Executor.Submit):
// one decision, and one record, a proposal, in the audit trail, in every
// approval mode that proposes; ApprovalsRefuse refuses it with one
// decision and one record, and stores nothing.
func TestCall_AHeldCallIsDecidedOnceAndRecordedOnce(t *testing.T) {
	cases := []struct {
		why    string
		mode   mcpserver.ApprovalMode
		status string
		op     string
		kind   string
	}{
		{"pending proposes the call and records the proposal", mcpserver.ApprovalsPending, mcpserver.StatusPending, execgate.OpPropose, ""},
		{"elicit, with a client that cannot, proposes and records the same", mcpserver.ApprovalsElicit, mcpserver.StatusPending, execgate.OpPropose, ""},
		{"refuse records a refused run and stores nothing", mcpserver.ApprovalsRefuse, mcpserver.StatusRefused, execgate.OpRun, execgate.ErrorKindPolicy},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			tr := &trail{}
			f := start(t, setup{auditor: tr, opts: mcpserver.Options{Approvals: c.mode}})
			st := status(t, f.call(t, "deploy", `{}`))
			assert.Equal(t, c.status, st.Status)
			assert.Equal(t, c.kind, st.Kind)

			reqs := f.policy.requests()
			require.Len(t, reqs, 1, "one decision")
			assert.Equal(t, execgate.OpRun, reqs[0].Op)
			assert.Equal(t, c.mode != mcpserver.ApprovalsRefuse, reqs[0].ProposeIfHeld)

			evs := tr.all()
			require.Len(t, evs, 1, "one record: %+v", evs)
			assert.Equal(t, c.op, evs[0].Op)
			assert.Equal(t, c.kind, evs[0].Error, "the trail and the client name the same kind")
			if c.op == execgate.OpPropose {
				require.NotNil(t, st.Approval)
				assert.Equal(t, st.Approval.ID, evs[0].ApprovalID)
			} else {
				assert.Nil(t, st.Approval)
			}
			assert.Zero(t, f.rec.Count())
		})
	}
}

// notReady is an Auditor that cannot record.
type notReady struct{ trail }

func (*notReady) Ready(context.Context) error { return errors.New("disk full") }

// TestSameTruth_MCPNamesTheGatesKinds checks that a refusal over MCP
// carries the kind the audit trail records for the same call, for every
// kind of refusal the gate makes on this path.
//
// Invariant 14 of DESIGN.md.
func TestSameTruth_MCPNamesTheGatesKinds(t *testing.T) {
	cases := []struct {
		why     string
		tool    string
		args    string
		auditor execgate.Auditor
		kind    string
	}{
		{"refused arguments are validation, not invalid_input", "git_log", `{"flags":{"max-count":"x"}}`, nil, execgate.ErrorKindValidation},
		{"a denied call is policy", "forbidden", `{}`, nil, execgate.ErrorKindPolicy},
		{"an audit trail that cannot record is audit, not unavailable", "echo_hello", `{}`, &notReady{}, execgate.ErrorKindAudit},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			tr := c.auditor
			if tr == nil {
				tr = &trail{}
			}
			f := start(t, setup{auditor: tr})
			st := status(t, f.call(t, c.tool, c.args))
			assert.Equal(t, mcpserver.StatusRefused, st.Status)
			assert.Equal(t, c.kind, st.Kind)
			var evs []execgate.Event
			switch a := tr.(type) {
			case *trail:
				evs = a.all()
			case *notReady:
				evs = a.all()
			}
			require.Len(t, evs, 1)
			assert.Equal(t, st.Kind, evs[0].Error, "the same kind in the trail")
		})
	}
	assert.Equal(t, mcpserver.KindValidation, mcpserver.KindInvalidInput, "the old name still compiles, with the gate's value")
}
