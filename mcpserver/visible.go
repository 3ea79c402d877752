package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execgate/execgate/internal/inputrules"
)

// This file shows each caller only the tools Options.Visible lets it
// see, and says what a caller may call instead of a name it has no tool
// of. A hidden tool is answered exactly as a name no tool has: neither a
// listing nor a refusal tells a caller that a tool it cannot use exists.

// maxNamesShown bounds the tools a refusal names as what to call instead.
const maxNamesShown = 10

// visibleTools filters tools/list by Options.Visible for the caller of
// each request, and refuses a tools/call of a listed tool hidden from its
// caller as unlisted refuses a name no tool has. Without Visible it
// changes nothing. The principal is the request's (principalOf): a
// request that names none is shown no tools, and its calls are refused
// as unauthenticated where they are handled.
func (s *Server) visibleTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if s.opts.Visible == nil {
			return next(ctx, method, req)
		}
		switch method {
		case "tools/call":
			p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
			if !ok || p == nil {
				break
			}
			t, listed := s.lookupTool(p.Name)
			principal, known := s.principalOf(req)
			if listed && known && !s.shows(ctx, principal, t) {
				return s.unlisted(ctx, principal, p.Name), nil
			}
		case "tools/list":
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && lr != nil && err == nil {
				principal, known := s.principalOf(req)
				lr.Tools = s.shownTools(ctx, principal, known, lr.Tools)
				// The list is this caller's: no one else may be served it
				// from a cache.
				lr.CacheScope = "private"
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// shows reports whether the tool t is shown to principal: always without
// Options.Visible, else what Visible reports for t's spec.
func (s *Server) shows(ctx context.Context, principal string, t tool) bool {
	return s.opts.Visible == nil || s.opts.Visible(ctx, principal, t.spec)
}

// shownTools returns the tools of defs that are shown to principal, in
// their order; none when the request names no principal (known false). A
// tool the server no longer lists, or does not list yet (SetAllowlist
// registers new tools before it lists them), is left out too: a call of
// it would be refused as unlisted.
func (s *Server) shownTools(ctx context.Context, principal string, known bool, defs []*mcp.Tool) []*mcp.Tool {
	out := []*mcp.Tool{} // an empty list, never JSON null
	if !known {
		return out
	}
	for _, def := range defs {
		if t, ok := s.lookupTool(def.Name); ok && s.shows(ctx, principal, t) {
			out = append(out, def)
		}
	}
	return out
}

// shownTool returns the listed tool called name if it is shown to
// principal.
func (s *Server) shownTool(ctx context.Context, principal, name string) (tool, bool) {
	t, ok := s.lookupTool(name)
	if !ok || !s.shows(ctx, principal, t) {
		return tool{}, false
	}
	return t, true
}

// NotifyToolsChanged tells every connected client that the tool list
// changed, so that it lists the tools again. Call it when what
// [Options.Visible] reports changes without [Server.SetAllowlist], which
// notifies clients itself: after a policy.Engine's Swap on its own, for
// example. A policy.Engine's grants never change what its MayServe
// reports. It does nothing while the server lists no tool.
func (s *Server) NotifyToolsChanged() {
	s.update.Lock()
	defer s.update.Unlock()
	s.mu.Lock()
	var t tool
	for _, cur := range s.tools {
		if t.def == nil || cur.listed < t.listed {
			t = cur
		}
	}
	s.mu.Unlock()
	if t.def != nil {
		// The SDK tells sessions about every tool added, also one added
		// again unchanged; it has no other way to send the notification.
		s.srv.AddTool(t.def, s.handler(t))
	}
}

// noSuchTool refuses a call of name, which no tool shown to principal
// has. The refusal names only tools shown to principal: the dispatcher
// tool when name is the dispatcher's with a subcommand it does not serve
// to principal ("git_Status", which is no subcommand, or "git_push", which
// principal's policy never allows: see subcommandOf), or the tools of the
// same family when name looks like one of theirs ("terraform_nope" when
// terraform_plan and terraform_apply are shown), and otherwise nothing.
func (s *Server) noSuchTool(ctx context.Context, principal, name string) *mcp.CallToolResult {
	msg := fmt.Sprintf("execgate: no such tool %q: tools/list shows the tools you can call; nothing ran.", name)
	fam, sub, disp, members := s.familyOf(ctx, principal, name)
	switch {
	case disp != nil && !inputrules.ValidSubcommand(sub):
		msg = fmt.Sprintf("execgate: the tool %q has no subcommand %q (a subcommand matches %s): call the tool %q with %q set to the subcommand; nothing ran.",
			fam, sub, inputrules.SubcommandPattern, disp.listed, SubcommandProperty)
	case disp != nil:
		msg = noSubcommand(*disp, sub)
	case len(members) > 0 && sub == "":
		msg = fmt.Sprintf("execgate: there is no tool %q, and its tools are called by their own names: call it as %s; nothing ran.", fam, quoteNames(members))
	case len(members) > 0:
		msg = fmt.Sprintf("execgate: the tool %q has no subcommand %q: call it as %s; nothing ran.", fam, sub, quoteNames(members))
	}
	return statusResult(&CallStatus{Status: StatusRefused, Kind: KindNotFound, Name: name, Message: msg})
}

// familyOf finds the tools shown to principal that name belongs with.
// It tries name itself as a family ("terraform", whose tools are
// terraform_plan and terraform_apply, with sub ""), then name cut at its
// last '.' or '_' into a family and a subcommand ("terraform" and "nope"
// for "terraform_nope"). It returns the family and subcommand found, the
// dispatcher of the family if one is shown (a subcommand it serves to
// principal is a call of it: see callInstead), and else the listed names
// of the family's other tools, sorted.
func (s *Server) familyOf(ctx context.Context, principal, name string) (fam, sub string, disp *tool, members []string) {
	if members := s.family(ctx, principal, name, nil); len(members) > 0 {
		return name, "", nil, members
	}
	i := strings.LastIndexAny(name, "._")
	if i <= 0 {
		return "", "", nil, nil
	}
	fam, sub = name[:i], name[i+1:]
	var d tool
	members = s.family(ctx, principal, fam, &d)
	if d.def != nil {
		return fam, sub, &d, nil
	}
	return fam, sub, nil, members
}

// family returns the listed names of the ordinary tools shown to
// principal whose logical name is fam, or the logical or listed name of
// fam, followed by '.' and one more segment, sorted. If disp is not nil,
// it is set to the dispatcher tool shown to principal that fam names.
func (s *Server) family(ctx context.Context, principal, fam string, disp *tool) []string {
	s.mu.Lock()
	tools := make([]tool, 0, len(s.tools))
	for _, t := range s.tools {
		tools = append(tools, t)
	}
	s.mu.Unlock()
	var out []string
	for _, t := range tools {
		if t.dispatch {
			if disp != nil && (t.name == fam || t.listed == fam) && s.shows(ctx, principal, t) {
				*disp = t
			}
			continue
		}
		j := strings.LastIndexByte(t.name, '.')
		if j <= 0 {
			continue
		}
		if head := t.name[:j]; (head == fam || ToolName(head) == fam) && s.shows(ctx, principal, t) {
			out = append(out, t.listed)
		}
	}
	slices.Sort(out)
	return out
}

// quoteNames lists tool names for a refusal, at most maxNamesShown of
// them.
func quoteNames(names []string) string {
	var b strings.Builder
	for i, n := range names {
		if i == maxNamesShown {
			fmt.Fprintf(&b, " or one of %d more in tools/list", len(names)-i)
			break
		}
		switch {
		case i == 0:
		case i == len(names)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", n)
	}
	return b.String()
}
