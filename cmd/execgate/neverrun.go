package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
)

// This file finds, when serve starts and after each reload, the tools
// that no call can run on the transport it serves, so that an operator learns it from the log
// rather than from an agent whose every call of the tool is refused.

// audience is who can call and approve over one transport of serve.
type audience struct {
	// callers are the principals calls run as: the stdio principal, or
	// the principals of the server section's tokens.
	callers []string
	// noApproval says why nothing can approve a held call there, or is
	// "" when something may (an approver, or a client's user asked by
	// elicitation).
	noApproval string
}

// stdioAudience is who calls and approves over MCP on stdio: principal,
// and approvers with --approver-http, or the client's user with
// --approvals elicit.
func stdioAudience(principal string, mode string, approverHTTP bool) audience {
	au := audience{callers: []string{principal}}
	switch {
	case mode == "refuse":
		au.noApproval = "--approvals refuse refuses every call that needs an approval"
	case !approverHTTP && mode == "pending":
		au.noApproval = "without --approver-http no approver can decide one, and --approvals pending does not ask the client's user"
	}
	return au
}

// tokenAudience is who calls and approves over HTTP: the principals of
// srv's tokens, and its approvers, and over MCP (mcpHTTP) where
// server.mcp_http_elicitation says so, a client's user asked by
// elicitation.
func tokenAudience(srv *config.Server, mcpHTTP bool) audience {
	var au audience
	for _, t := range srv.Tokens {
		if !slices.Contains(au.callers, t.Principal) {
			au.callers = append(au.callers, t.Principal)
		}
	}
	switch {
	case len(srv.Approvers) > 0 || (mcpHTTP && srv.MCPHTTPElicitation):
	case mcpHTTP:
		au.noApproval = "the server section lists no approvers, and server.mcp_http_elicitation is not true"
	default:
		au.noApproval = "the server section lists no approvers"
	}
	return au
}

// warnNeverRun logs a warning, once for each tool of g, in the
// allowlist's order, that no call can run for au: the policy (with the
// tool's default_action) denies every call of it to every caller, or
// holds every call it does not deny for a person's approval while
// nothing can give one. A tool some call of which may run is not named;
// so is a dispatcher the policy decides subcommand by subcommand, whose
// calls cannot all be judged before they are made.
//
// It judges the allowlist g's Executor serves now, so that after a
// reload it judges the new file's tools under the new rules.
func warnNeverRun(ctx context.Context, logger *slog.Logger, g *gate, au audience) {
	for _, spec := range g.x.Allowlist().Specs() {
		held := false
		runs := false
		for _, p := range au.callers {
			switch g.outlook(ctx, p, spec) {
			case execgate.ActionRequireApproval:
				held = true
				runs = au.noApproval == ""
			case execgate.ActionDeny:
			default:
				runs = true
			}
			if runs {
				break
			}
		}
		if runs || len(au.callers) == 0 {
			continue
		}
		var why string
		switch {
		case held:
			why = "every call of it that the policy does not deny needs a person's approval, and nothing can give one: " + au.noApproval
		case spec.Floor == execgate.ActionDeny:
			why = "its default_action denies every call of it"
		default:
			why = "the policy denies every call of it to every caller (" + quoteAll(au.callers) + ")"
		}
		logger.Warn(fmt.Sprintf("execgate: the tool %q can never run here: %s", spec.Name, why), "tool", spec.Name, "callers", au.callers)
	}
}

// outlook says what becomes of principal's calls of the tool of spec:
// execgate.ActionAllow, ActionRequireApproval or ActionDeny when every
// call of it gets that decision now (the policy's, as a call would get
// it, grants included, and then the spec's Floor), and "" when calls get
// different ones: the policy decides a dispatcher's calls by their
// subcommand, and only a dispatcher it denies every call of, or whose
// Floor holds every call, is judged whole.
func (g *gate) outlook(ctx context.Context, principal string, spec execgate.CommandSpec) string {
	if g.loaded.Policy == nil {
		return spec.Floor
	}
	if spec.Dispatch {
		switch {
		case !g.visible(ctx, principal, spec):
			return execgate.ActionDeny
		case spec.Floor == execgate.ActionRequireApproval:
			return execgate.ActionRequireApproval
		}
		return ""
	}
	d, err := g.loaded.Policy.Decide(ctx, execgate.Request{
		Op: execgate.OpRun, Principal: principal, Name: spec.Name, Spec: spec,
		ProposeIfHeld: true, DryRun: true,
	})
	action := d.Action
	if err != nil || (action != execgate.ActionAllow && action != execgate.ActionRequireApproval) {
		action = execgate.ActionDeny
	}
	// The Floor can only make the decision stricter, as the Executor
	// applies it.
	if spec.Floor == execgate.ActionDeny || (spec.Floor == execgate.ActionRequireApproval && action == execgate.ActionAllow) {
		action = spec.Floor
	}
	return action
}

// quoteAll lists principals for a log line: each quoted, "" as "".
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
