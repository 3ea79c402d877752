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
		ctx = execgate.WithPrincipal(ctx, s.opts.Principal)
		if req.Params.RequestState != "" || len(req.Params.InputResponses) > 0 {
			return s.resume(ctx, t, req), nil
		}
		name, input, err := s.requested(t, req.Params.Arguments)
		if err != nil {
			return s.refusal(err), nil
		}
		// One validation and one decision: the gate runs the call, or
		// proposes it when the Policy holds it, unless this server
		// refuses approvals, when nothing is stored.
		sub, err := s.x.Submit(ctx, name, input, execgate.SubmitOptions{
			Reason:    s.reason,
			NoPropose: s.opts.Approvals == ApprovalsRefuse,
		})
		switch {
		case err != nil:
			return s.refusal(err), nil
		case sub.Op == execgate.OpPropose:
			return s.approval(ctx, t, req, sub.Approval), nil
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
// another shape.
func (s *Server) requested(t tool, args json.RawMessage) (string, json.RawMessage, error) {
	if !t.dispatch {
		return t.name, args, nil
	}
	sub, rest, err := splitSubcommand(t.name, args)
	if err != nil {
		return "", nil, err
	}
	name := t.name + "." + sub
	if own, ok := s.listedAs(name); ok {
		return "", nil, &execgate.ValidationError{Name: t.name, Issues: []execgate.Issue{{
			Field:   SubcommandProperty,
			Message: fmt.Sprintf("%q has its own tool; call the tool %q instead", name, own),
		}}}
	}
	return name, rest, nil
}
