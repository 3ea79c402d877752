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
		name, input, refused := s.requested(ctx, principal, t, req.Params.Arguments)
		if refused != nil {
			return refused, nil
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
// for, or the refusal of the call. For an ordinary tool that is the
// tool's name and the arguments as sent. For a dispatcher tool ("git") it
// is "git.<subcommand>" and the arguments without the "subcommand" member
// (see DispatchCall), unless the subcommand is not one principal may call
// through t (see subcommandOf): one that has its own tool shown to
// principal ("git.log", listed as "git_log") is refused with a pointer to
// that tool, since its input has another shape; one principal may not
// call at all, with its own tool hidden or none, is refused as a
// subcommand t does not have (see noSubcommand). A refusal made here,
// before the gate, is recorded in the audit trail.
func (s *Server) requested(ctx context.Context, principal string, t tool, args json.RawMessage) (string, json.RawMessage, *mcp.CallToolResult) {
	if !t.dispatch {
		return t.name, args, nil
	}
	name, rest, err := DispatchCall(t.name, args)
	if err != nil {
		s.record(ctx, t.name, execgate.ErrorKindValidation, "the subcommand argument of a dispatcher was refused")
		return "", nil, s.refusal(err)
	}
	sub := name[len(t.name)+1:]
	switch own, found := s.subcommandOf(ctx, principal, t, sub); {
	case own != "":
		s.record(ctx, name, execgate.ErrorKindValidation, "a subcommand with a tool of its own was called through the dispatcher")
		return "", nil, s.refusal(&execgate.ValidationError{Name: t.name, Issues: []execgate.Issue{{
			Field: SubcommandProperty, Message: fmt.Sprintf("%q has its own tool; call the tool %q instead", name, own),
		}}})
	case !found:
		s.record(ctx, name, execgate.ErrorKindNotFound, hiddenReason)
		return "", nil, statusResult(&CallStatus{Status: StatusRefused, Kind: KindNotFound, Name: name, Message: noSubcommand(t, sub)})
	}
	return name, rest, nil
}

// hiddenReason is the reason an audit record gives for a call refused as
// a subcommand its dispatcher does not have, which principal's policy
// allows no call of (or a tool hidden from it).
const hiddenReason = "the command is hidden from this caller: its policy allows no call of it"

// subcommandOf says what the subcommand sub of the dispatcher tool d,
// which is shown to principal, is to principal: a subcommand with its own
// tool shown to principal (own, the name that tool is listed under), one
// that principal may call through d (found), or neither, which d is then
// to answer as a subcommand it does not have: a subcommand whose own tool
// is hidden from principal, or that Options.Visible reports false for,
// asked about the command d serves under that name (see SpecOf). A call
// of a subcommand principal's policy can never allow is thus refused as
// the call of one that does not exist, whether a rule denies it or none
// names it.
func (s *Server) subcommandOf(ctx context.Context, principal string, d tool, sub string) (own string, found bool) {
	name := d.name + "." + sub
	if listed, ok := s.listedAs(name); ok {
		if _, shown := s.shownTool(ctx, principal, listed); shown {
			return listed, true
		}
		return "", false
	}
	return "", s.opts.Visible == nil || s.opts.Visible(ctx, principal, asCommand(d.spec, name))
}

// noSubcommand is the refusal of a call of the dispatcher tool d with the
// subcommand sub, which it does not serve to the caller (see
// subcommandOf): the same words whether the command exists and is hidden
// from the caller or does not exist at all.
func noSubcommand(d tool, sub string) string {
	return fmt.Sprintf("execgate: the tool %q has no subcommand %q that you can call: call it with another %q, or call another tool that tools/list shows; nothing ran.",
		d.listed, sub, SubcommandProperty)
}

// record records a refusal made by this server, before the gate, in the
// Executor's audit trail (Executor.RecordRefusal: route "mcp tools/call"),
// under ctx's principal.
func (s *Server) record(ctx context.Context, name, kind, reason string) {
	ref := execgate.Refusal{Route: unlistedRoute, Name: name, Kind: kind, Reason: reason}
	if err := s.x.RecordRefusal(context.WithoutCancel(ctx), ref); err != nil {
		s.opts.Logger.Error("mcpserver: a refused call could not be recorded in the audit trail", "error", err)
	}
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
