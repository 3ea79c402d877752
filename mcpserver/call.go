package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execgate/execgate"
)

// handler returns the tools/call handler of t. It uses the SDK's raw
// handler form: the arguments reach the gate as the client sent them, and
// the gate alone decodes and validates them. Every outcome is a tool
// result, never a protocol error.
func (s *Server) handler(t tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		principal, ok := s.principalOf(req)
		if !ok {
			return s.unauthenticated(ctx, t.name), nil
		}
		ctx = execgate.WithPrincipal(ctx, principal)
		ctx = withProgress(ctx, req) // heartbeats while the command runs, when the client asked for them
		if req.Params.RequestState != "" || len(req.Params.InputResponses) > 0 {
			if !s.askedOf(req.Params.RequestState, principal) {
				return unknownRequestState(t.name), nil
			}
			return s.resume(ctx, t, req), nil
		}
		name, input, err := s.requested(ctx, principal, t, req.Params.Arguments)
		if err != nil {
			return s.refusal(err), nil
		}
		// The retry of a call left pending learns its outcome, and
		// proposes nothing new (Options.Outcomes).
		if res := s.retried(ctx, req, principal, name, input); res != nil {
			return res, nil
		}
		// One validation and one decision: the gate runs the call, or
		// proposes it when the Policy holds it, unless this server
		// refuses approvals, when nothing is stored.
		reason := s.reason
		if s.opts.PrincipalFrom != nil {
			reason = approvalReason(principal)
		}
		sub, err := s.x.Submit(ctx, name, input, execgate.SubmitOptions{
			Reason:    reason,
			NoPropose: s.opts.Approvals == ApprovalsRefuse,
		})
		switch {
		case err != nil:
			return s.refusal(err), nil
		case sub.Op == execgate.OpPropose:
			return s.approval(ctx, t, req, sub.Approval, name, input), nil
		default:
			return ranResult(sub.Result), nil
		}
	}
}

// requested returns the command name and input a call to t asks the gate
// for. For an ordinary tool that is the tool's name and the arguments as
// sent. For a dispatcher tool ("git") it is "git.<subcommand>" and the
// arguments without the "subcommand" member (see splitSubcommand); a
// subcommand that has its own listed tool ("git.log", listed as
// "git_log") is refused with a pointer to that tool, since its input has
// another shape. When that tool is hidden from principal (see
// Options.Visible), the refusal does not name it.
func (s *Server) requested(ctx context.Context, principal string, t tool, args json.RawMessage) (string, json.RawMessage, error) {
	if !t.dispatch {
		return t.name, args, nil
	}
	sub, rest, err := splitSubcommand(t.name, args)
	if err != nil {
		return "", nil, err
	}
	name := t.name + "." + sub
	if own, ok := s.listedAs(name); ok {
		msg := fmt.Sprintf("%q has its own tool; call the tool %q instead", name, own)
		if _, shown := s.shownTool(ctx, principal, own); !shown {
			msg = fmt.Sprintf("the tool %q does not serve the subcommand %q", t.listed, sub)
		}
		return "", nil, &execgate.ValidationError{Name: t.name, Issues: []execgate.Issue{{
			Field: SubcommandProperty, Message: msg,
		}}}
	}
	return name, rest, nil
}

// principalOf returns the principal req runs as: Options.Principal, or
// what Options.PrincipalFrom names for req, and false when PrincipalFrom
// names none.
func (s *Server) principalOf(req mcp.Request) (string, bool) {
	if s.opts.PrincipalFrom == nil {
		return s.opts.Principal, true
	}
	return s.opts.PrincipalFrom(req)
}

// unauthenticated refuses a call of the tool name whose request
// Options.PrincipalFrom names no principal for, and records the refusal
// (route "mcp tools/call", kind unauthenticated) under no principal.
func (s *Server) unauthenticated(ctx context.Context, name string) *mcp.CallToolResult {
	ctx = execgate.WithPrincipal(context.WithoutCancel(ctx), "")
	ref := execgate.Refusal{Route: unlistedRoute, Name: name, Kind: execgate.ErrorKindUnauthenticated, Reason: "the request names no caller"}
	if err := s.x.RecordRefusal(ctx, ref); err != nil {
		s.opts.Logger.Error("mcpserver: a call without a caller could not be recorded in the audit trail", "error", err)
	}
	return statusResult(&CallStatus{
		Status: StatusRefused, Kind: string(execgate.ErrorKindUnauthenticated), Name: name,
		Message: "execgate: the request names no caller, so no call can run under it; nothing ran. Connect with a valid bearer token.",
	})
}

// askedOf reports whether the approval question with the given request
// state, if one waits, was asked of principal's call: a retry answers
// only a question of its own caller's, so a request state seen by
// another caller approves nothing. An unknown state is left to resume.
func (s *Server) askedOf(state, principal string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.waiting[state]
	return !ok || w.ap.Principal == principal
}

// unknownRequestState answers the retry of a call of the tool name with
// a request state that is not its caller's, as resume answers one it
// does not know: whether the state is another caller's is not told.
func unknownRequestState(name string) *mcp.CallToolResult {
	return statusResult(&CallStatus{
		Status: StatusNotApproved, Name: name,
		Message: "execgate: this approval request is unknown, already answered or timed out; nothing ran. Call the tool again to ask anew.",
	})
}
