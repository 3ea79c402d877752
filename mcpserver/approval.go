package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execgate/execgate"
)

// approvalInput is the key of the approval question in a multi-round-trip
// input request, and of its answer in the client's retry.
const approvalInput = "approval"

// multiRoundTripVersion is the first MCP protocol version in which a
// server asks for input by returning an input-required result (SEP-2322)
// rather than by sending a request to the client while it handles a call.
const multiRoundTripVersion = "2026-07-28"

// maxQuestionBytes bounds the approval question shown to a person. A call
// whose argv does not fit is not elicited: it is left pending for an
// out-of-band approver, who can see the whole envelope, rather than shown
// shortened to someone asked to approve it.
const maxQuestionBytes = 16 << 10

// rejectTimeout bounds a Reject made on the way out of a call.
const rejectTimeout = 30 * time.Second

// confirmSchema is the form of the approval question: no fields, the
// answer is the action (accept, decline, cancel).
var confirmSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// waiting is an approval question sent to a client that answers by
// retrying the call (multi-round-trip), until that retry arrives.
type waiting struct {
	ap    execgate.Approval
	tool  string
	args  [sha256.Size]byte // argsDigest of the call's arguments
	timer *time.Timer       // rejects the approval when the answer is late
}

// approval handles a call the gate has proposed because the Policy holds
// it for approval (Executor.Submit; with ApprovalsRefuse the gate refused
// it instead). With ApprovalsElicit and a client that declares the
// elicitation capability, it asks the client's user (see elicit and
// requestApproval), and otherwise it hands the approval to
// Options.OnPending and returns it as pending. With Options.Outcomes, a
// call left pending is remembered for its caller's retry (see
// Server.retried), and waits Options.ApprovalWait for the decision; name
// and input are the command and input the call asked the gate for.
func (s *Server) approval(ctx context.Context, t tool, req *mcp.CallToolRequest, ap execgate.Approval, name string, input json.RawMessage) *mcp.CallToolResult {
	if s.opts.Approvals == ApprovalsElicit && canElicit(req) {
		if q, ok := s.question(ap); ok {
			if multiRoundTrip(req) {
				return s.requestApproval(ctx, t, req, ap, q)
			}
			return s.elicit(ctx, req, ap, q)
		}
	}
	if hint := s.noApprover(); hint != "" {
		s.reject(ctx, ap.ID)
		return statusResult(&CallStatus{
			Status: StatusRefused, Kind: KindPolicy, Action: string(execgate.ActionRequireApproval), Name: ap.Name,
			Message: NoApproverMessage(ap.Name, s.opts.Approvals == ApprovalsElicit, hint),
		})
	}
	if s.opts.OnPending != nil {
		if err := s.opts.OnPending(ctx, ap); err != nil {
			s.opts.Logger.Error("mcpserver: OnPending failed; approval rejected", "approval", ap.ID, "name", ap.Name, "error", err)
			s.reject(ctx, ap.ID)
			return statusResult(&CallStatus{
				Status: StatusRefused, Kind: KindInternal, Name: ap.Name, Approval: &ap,
				Message: fmt.Sprintf("execgate: %q needs a person's approval, and the approval could not be handed to an approver; nothing ran.", ap.Name),
			})
		}
	}
	if s.opts.Outcomes != nil {
		if k, ok := s.keyOf(execgate.PrincipalFrom(ctx), name, input); ok {
			h := s.hold(k, ap)
			if s.opts.ApprovalWait > 0 {
				return s.outcome(ctx, req, k, h, false)
			}
		}
	}
	return s.pendingResult(ap, false, false)
}

// noApprover returns what Options.NoApprover says would give this server
// an approver, or "" when it has one.
func (s *Server) noApprover() string {
	if s.opts.NoApprover == nil {
		return ""
	}
	return s.opts.NoApprover()
}

// NoApproverMessage is the message of the refusal of a call of the
// command name that needs a person's approval when nothing can give one
// (see [Options.NoApprover]), for every transport that refuses such a
// call: elicits says whether the transport asks a client that can elicit
// (the caller's cannot), and hint what would give it an approver.
func NoApproverMessage(name string, elicits bool, hint string) string {
	how := "this server does not ask the client's user"
	if elicits {
		how = "this client cannot ask its user (it declares no MCP elicitation)"
		hint += ", or use a client that supports elicitation"
	}
	return fmt.Sprintf("execgate: %q needs a person's approval, and nothing here can give one: %s, and no approver can decide it; nothing ran. Tell the user; to run it, %s.", name, how, hint)
}

// canElicit reports whether the client declared that it can answer a
// form elicitation. An elicitation capability with neither "form" nor
// "url" means form, as in the protocol versions before modes existed.
func canElicit(req *mcp.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	return caps.Elicitation.Form != nil || caps.Elicitation.URL == nil
}

// multiRoundTrip reports whether the session speaks a protocol version in
// which input is requested with an input-required result, judged as the
// SDK judges it when it marks results.
func multiRoundTrip(req *mcp.CallToolRequest) bool {
	if req.Session == nil {
		return true
	}
	ip := req.Session.InitializeParams()
	return ip == nil || ip.ProtocolVersion >= multiRoundTripVersion
}

// elicit asks the client's user now, with an elicitation/create request
// sent while the call is being handled (protocol versions before
// multiRoundTripVersion). An error or timeout rejects the approval.
func (s *Server) elicit(ctx context.Context, req *mcp.CallToolRequest, ap execgate.Approval, q *mcp.ElicitParams) *mcp.CallToolResult {
	ectx, cancel := context.WithTimeout(ctx, s.opts.ElicitationTimeout)
	res, err := req.Session.Elicit(ectx, q)
	cancel()
	if err != nil {
		s.reject(ctx, ap.ID)
		why := "the approval request failed"
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			why = "no answer within " + s.opts.ElicitationTimeout.String()
		} else {
			s.opts.Logger.Warn("mcpserver: elicitation failed; approval rejected", "approval", ap.ID, "name", ap.Name, "error", err)
		}
		return unanswered(StatusNotApproved, ap, why)
	}
	return s.answer(ctx, ap, res)
}

// requestApproval asks the client's user by returning an input-required
// result (multi-round-trip, SEP-2322): the client asks its user and
// retries the call with the answer and the request state, which resume
// handles. The request state is a random key to the approval kept here;
// the approval itself never leaves the server on this path. If no retry
// comes within Options.ElicitationTimeout, the approval is rejected.
func (s *Server) requestApproval(ctx context.Context, t tool, req *mcp.CallToolRequest, ap execgate.Approval, q *mcp.ElicitParams) *mcp.CallToolResult {
	state := rand.Text()
	w := &waiting{ap: ap, tool: t.name, args: argsDigest(req.Params.Arguments)}
	s.mu.Lock()
	if len(s.waiting) >= maxWaiting {
		s.mu.Unlock()
		s.reject(ctx, ap.ID)
		return statusResult(&CallStatus{
			Status: StatusRefused, Kind: KindStoreFull, Name: ap.Name, Approval: &ap,
			Message: fmt.Sprintf("execgate: %q needs a person's approval, and too many approval requests are waiting; nothing ran.", ap.Name),
		})
	}
	s.waiting[state] = w
	principal := execgate.PrincipalFrom(ctx)
	w.timer = time.AfterFunc(s.opts.ElicitationTimeout, func() {
		if late := s.take(state); late != nil {
			s.reject(execgate.WithPrincipal(context.Background(), principal), late.ap.ID)
		}
	})
	s.mu.Unlock()
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{approvalInput: q},
		RequestState:  state,
	}
}

// take removes and returns the waiting approval question with the given
// request state, or nil. Exactly one caller gets it.
func (s *Server) take(state string) *waiting {
	s.mu.Lock()
	w := s.waiting[state]
	delete(s.waiting, state)
	s.mu.Unlock()
	if w != nil && w.timer != nil {
		w.timer.Stop()
	}
	return w
}

// resume handles the retry of a call that asked for approval with an
// input-required result. The retry must carry a request state this server
// issued and has not seen answered, for the same tool with the same
// arguments, and an elicitation answer; anything else rejects the
// approval (if there is one) and runs nothing. On accept the stored
// approval is executed, once; what runs is what was proposed, never the
// retry's arguments.
func (s *Server) resume(ctx context.Context, t tool, req *mcp.CallToolRequest) *mcp.CallToolResult {
	w := s.take(req.Params.RequestState)
	if w == nil {
		return statusResult(&CallStatus{
			Status: StatusNotApproved, Name: t.name,
			Message: "execgate: this approval request is unknown, already answered or timed out; nothing ran. Call the tool again to ask anew.",
		})
	}
	if w.tool != t.name || w.args != argsDigest(req.Params.Arguments) {
		s.reject(ctx, w.ap.ID)
		return unanswered(StatusNotApproved, w.ap, "the retried call is not the call that asked for approval")
	}
	res, _ := req.Params.InputResponses[approvalInput].(*mcp.ElicitResult)
	if res == nil {
		s.reject(ctx, w.ap.ID)
		return unanswered(StatusNotApproved, w.ap, "the client sent no answer")
	}
	return s.answer(ctx, w.ap, res)
}

// answer acts on the user's answer: accept executes the approval once;
// any other answer rejects it.
func (s *Server) answer(ctx context.Context, ap execgate.Approval, res *mcp.ElicitResult) *mcp.CallToolResult {
	if res != nil && res.Action == "accept" {
		r, err := s.x.Execute(ctx, ap)
		if err != nil {
			return s.refusal(err)
		}
		return ranResult(r)
	}
	s.reject(ctx, ap.ID)
	why := "the user did not accept"
	if res != nil {
		switch res.Action {
		case "decline":
			why = "the user declined"
		case "cancel":
			why = "the user dismissed the request"
		}
	}
	return unanswered(StatusDeclined, ap, why)
}

// reject withdraws an approval, even when ctx is already canceled: a call
// that ends without an answer must leave nothing executable behind.
func (s *Server) reject(ctx context.Context, id string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rejectTimeout)
	defer cancel()
	if _, err := s.x.Reject(rctx, id); err != nil {
		s.opts.Logger.Error("mcpserver: reject failed", "approval", id, "error", err)
	}
}

// The approval question is what execgate.Approval.Describe writes,
// between questionHead and questionTail.
const (
	questionHead = "Allow this command to run once?\n\n"
	questionTail = "Approve only what you have read."
)

// question builds the approval question for ap, and reports false when it
// would be too long to show whole.
func (s *Server) question(ap execgate.Approval) (*mcp.ElicitParams, bool) {
	text, ok := ap.Describe(execgate.DescribeOptions{MaxBytes: maxQuestionBytes - len(questionHead) - len(questionTail)})
	if !ok {
		return nil, false
	}
	return &mcp.ElicitParams{Mode: "form", Message: questionHead + text + questionTail, RequestedSchema: confirmSchema}, true
}

// argsDigest identifies a call's arguments across a client's retry,
// ignoring insignificant white space.
func argsDigest(args json.RawMessage) [sha256.Size]byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, args); err != nil {
		return sha256.Sum256(args)
	}
	return sha256.Sum256(buf.Bytes())
}
