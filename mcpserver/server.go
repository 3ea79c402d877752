package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/internal/inputrules"
)

// DefaultName is the server name announced to clients when [Options.Name] is
// empty.
const DefaultName = "execgate"

// DefaultElicitationTimeout is how long the server waits for a person to
// answer an approval request when [Options.ElicitationTimeout] is zero.
const DefaultElicitationTimeout = 5 * time.Minute

// MaxPrincipalBytes is the longest [Options.Principal] accepted: the bound
// the Executor puts on every principal.
const MaxPrincipalBytes = execgate.MaxPrincipalBytes

// maxWaiting bounds the approval requests that wait for a client's answer
// (see Server.requestApproval); a call beyond it is refused and its
// approval rejected.
const maxWaiting = 1000

// defaultInstructions tells a model how to read this server's results.
const defaultInstructions = "Each tool runs one allowlisted command directly, without a shell, " +
	"after its arguments have been checked against the tool's input schema. " +
	"A refused call returns an error result saying why and runs nothing: fix the arguments as the message says. " +
	"Some calls need a person's approval: the user may be asked to confirm, or the result says the approval is pending; " +
	"then do not call the tool again for the same request, tell the user instead."

// retryInstructions are defaultInstructions for a server that tells a
// retry the outcome of its approval (Options.Outcomes).
const retryInstructions = "Each tool runs one allowlisted command directly, without a shell, " +
	"after its arguments have been checked against the tool's input schema. " +
	"A refused call returns an error result saying why and runs nothing: fix the arguments as the message says. " +
	"Some calls need a person's approval: the user may be asked to confirm, or the result says the approval is pending; " +
	"then tell the user, and once a person has decided, call the tool again with exactly the same arguments: " +
	"that call returns the result of the approved command (once) or says why it did not run, and asks for no second approval."

// ApprovalMode says what the server does with a call that the Policy holds
// for a person's approval.
type ApprovalMode int

const (
	// ApprovalsElicit, the zero value, proposes the call and asks the
	// client's user through MCP elicitation when the client declares the
	// elicitation capability, running the call once on accept; with a
	// client that cannot elicit it behaves like [ApprovalsPending].
	ApprovalsElicit ApprovalMode = iota
	// ApprovalsPending proposes the call and returns a pending-approval
	// result for an out-of-band approver (see [Options.OnPending]), without
	// asking the client. Use it when the MCP client is not trusted to speak
	// for a person: an elicitation answer is only as trustworthy as the
	// client that relays it.
	ApprovalsPending
	// ApprovalsRefuse refuses every call that needs an approval; nothing is
	// proposed.
	ApprovalsRefuse
)

// String returns the mode's name.
func (m ApprovalMode) String() string {
	switch m {
	case ApprovalsElicit:
		return "elicit"
	case ApprovalsPending:
		return "pending"
	case ApprovalsRefuse:
		return "refuse"
	}
	return fmt.Sprintf("ApprovalMode(%d)", int(m))
}

// Options configures a [Server]. Only Allowlist is required.
type Options struct {
	// Name is the implementation name announced to clients. Empty means
	// [DefaultName].
	Name string

	// Version is the implementation version announced to clients. Empty
	// means the version of the execgate module in the running binary's
	// build information, or "devel".
	Version string

	// Instructions are the server instructions sent to clients. Empty
	// means a short text telling a model how to read refusals and pending
	// approvals.
	Instructions string

	// Principal is the identity every call runs under: the handler wraps
	// each call's context with execgate.WithPrincipal(ctx, Principal), so
	// the Executor's Policy sees it in Request.Principal. A transport such
	// as stdio carries no caller identity, so it is set per server. It
	// follows the Executor's rule for principals (see
	// [execgate.MaxPrincipalBytes]): valid UTF-8 of at most
	// [MaxPrincipalBytes], without white space, control, formatting or
	// invisible characters. Empty means the unknown principal "".
	// It is not used when PrincipalFrom is set.
	Principal string

	// PrincipalFrom, if not nil, names the principal of each request, for
	// a transport that authenticates its callers (Streamable HTTP behind
	// bearer tokens; see Principal in the package documentation): a call
	// runs as what PrincipalFrom returns for its own request, and a
	// refusal of an unlisted tool is recorded under it, instead of
	// Principal. ok false refuses the call as unauthenticated, and
	// nothing runs. PrincipalFrom must read the request it is given (its
	// GetExtra, whose TokenInfo and Header are those of the HTTP request
	// that carried it), never a context: a stateful HTTP session's
	// context is that of the request that opened it, whoever sends the
	// next one. What it returns follows the Executor's rule for
	// principals, which refuses a call under any other. It may be called
	// concurrently.
	PrincipalFrom func(req mcp.Request) (principal string, ok bool)

	// Allowlist is the set of commands listed as tools. It is required and
	// should be the Executor's allowlist: the Executor decides every call
	// with its own current allowlist, so a tool missing from it is refused
	// as not allowlisted, and a name served by the Executor but not listed
	// here is refused as an unknown tool. After Executor.SetAllowlist, call
	// [Server.SetAllowlist] with the same value.
	Allowlist *execgate.Allowlist

	// Approvals says what happens to a call that needs an approval. The
	// zero value is [ApprovalsElicit].
	Approvals ApprovalMode

	// OnPending, if not nil, is called with every approval returned to the
	// client as pending, before the result is sent, so that an out-of-band
	// approver learns about it (a queue, a chat message, an HTTP approval
	// endpoint's list). If it returns an error the approval is rejected and
	// the call fails with nothing run. It is not called for approvals
	// answered through elicitation. It may be called concurrently. Nil
	// means approvals are only reported to the client.
	OnPending func(ctx context.Context, ap execgate.Approval) error

	// ElicitationTimeout bounds how long an approval request waits for the
	// client's answer; when it passes the approval is rejected and nothing
	// runs. Zero means [DefaultElicitationTimeout]; negative is refused.
	ElicitationTimeout time.Duration

	// Logger receives the server's own log records (errors it does not
	// show to clients) and is handed to the MCP SDK. Nil means no logging.
	Logger *slog.Logger

	// LogicalNames lists every tool under its spec's logical name, dots
	// included ("git.log"), for clients that accept such names. False, the
	// default, lists each under [ToolName] of it ("git_log"), a name every
	// mainstream client accepts. Either way the Executor, its Policy and
	// its audit trail see the logical name.
	LogicalNames bool

	// Visible, if not nil, says which tools each caller is shown:
	// tools/list lists to a caller only the tools whose spec Visible
	// reports true for with the caller's principal (Principal, or what
	// PrincipalFrom names), and a call of a tool it reports false for is
	// refused exactly as a call of a name no tool has, so that nothing
	// tells a caller such a tool exists. It should report true for every
	// spec of which the Executor's Policy could allow, or hold for
	// approval, some call by principal, and when unsure: a tool it hides
	// cannot be called by that principal at all. For a policy.Engine,
	//
	//	Visible: func(_ context.Context, principal string, spec execgate.CommandSpec) bool {
	//		return eng.MayServe(principal, spec, x.Allowlist())
	//	},
	//
	// The spec is as Allowlist.Specs reports it; ctx is the request's.
	// A call of a dispatcher tool shown to the caller is asked about
	// again for the one command it asks for: the dispatcher's spec under
	// the requested name, "git.stash", with Dispatch false (see [SpecOf];
	// MayServe then answers with the Engine's MayRun of the name). False
	// refuses it as a subcommand the dispatcher does not have, in the
	// same words as one that does not exist, and without asking the
	// Policy, whose deny would tell a rule names it. Visible is called
	// for every listed tool on each tools/list and on each call, may be
	// called concurrently, and must not block. After a
	// change of what it reports, call [Server.SetAllowlist] (as a reload
	// does) or [Server.NotifyToolsChanged], so that clients list the tools
	// again. Nil shows every tool to every caller.
	Visible func(ctx context.Context, principal string, spec execgate.CommandSpec) bool

	// NoApprover, if not nil, says whether anyone outside the MCP client
	// can decide a pending approval now: it returns "" while OnPending
	// reaches someone who can, and otherwise what would give the server
	// such an approver ("start the server with --approver-http"). It is
	// asked about each call that needs an approval and that the client
	// cannot put to its user (it declares no elicitation, or the mode is
	// [ApprovalsPending]); a non-empty answer refuses the call, with a
	// message that says nothing can approve it and what would, instead
	// of leaving it pending for no one, and its approval is rejected at
	// once. It is asked on each such call, so that approvers added or
	// removed while the server runs (a reload) count from the next call;
	// it may be called concurrently, and must not block. Nil means an
	// approver can decide every pending approval.
	NoApprover func() string

	// Outcomes, if not nil, tells the server what became of the approvals
	// it leaves pending for an out-of-band approver (see [Outcomes]), so
	// that the agent learns it: the pending result tells it to call the
	// tool again with exactly the same arguments once a person has
	// decided, and that retry, by the same principal, of the same tool,
	// with input that would run exactly the same thing (the same proposal
	// digest, see execgate.Proposer.Check), is answered with the approved
	// call's Result, handed out once, or with its rejection, expiry or
	// refusal, instead of proposing the call again; while the approval is
	// still pending, the retry gets the same pending approval. A call that
	// differs in any way, or of another principal, is a call of its own.
	// Once the outcome was told, the next identical call is a new call,
	// which asks for a new approval. Nil leaves a pending approval to be
	// told to the user, and each call proposes anew.
	Outcomes Outcomes

	// ApprovalWait, with Outcomes, is how long a call that the server
	// leaves pending (or its retry) waits for a person's decision before
	// it answers pending: a decision within it is answered at once, as a
	// retry would be. While it waits, a client that sent a progress token
	// gets notifications/progress every second, which keep a client that
	// resets its request timeout on progress waiting. The approval stays
	// pending when the wait ends or the client gives up. Zero, the
	// default, answers pending at once; negative, or set without
	// Outcomes, is refused.
	ApprovalWait time.Duration
}

// Server exposes an Executor as MCP tools: one tool per spec of
// [Options.Allowlist]. Every call goes through the Executor: Submit runs a
// call the Policy allows and proposes one it holds for approval, and
// Execute runs an approved one.
// A Server is safe for concurrent use and may serve many sessions.
type Server struct {
	x      *execgate.Executor
	opts   Options
	reason string
	srv    *mcp.Server

	update sync.Mutex // serializes SetAllowlist

	mu      sync.Mutex
	tools   map[string]tool       // listed tools, by the name they are listed under
	listed  map[string]string     // the name each spec is listed under, by logical name
	waiting map[string]*waiting   // approval requests awaiting a client's retry, by request state
	held    map[heldKey]*heldCall // calls left pending, awaiting their caller's retry (Options.Outcomes)
}

// New returns a [Server] that serves x with the tools of opts.Allowlist. It
// returns an error if x or opts.Allowlist is nil, an option is invalid, or
// a spec cannot be listed as a tool (its JSONSchema is not a JSON object
// of type "object", or a dispatcher's schema already has a "subcommand"
// property), or two specs would be listed under one name (a
// [*ToolNameCollisionError]; see [ToolName]).
func New(x *execgate.Executor, opts Options) (*Server, error) {
	if x == nil {
		return nil, errors.New("mcpserver: nil Executor")
	}
	if opts.Allowlist == nil {
		return nil, errors.New("mcpserver: Options.Allowlist is required (pass the Executor's allowlist)")
	}
	if err := checkPrincipal(opts.Principal); err != nil {
		return nil, err
	}
	if opts.Approvals < ApprovalsElicit || opts.Approvals > ApprovalsRefuse {
		return nil, fmt.Errorf("mcpserver: unknown Options.Approvals %v", opts.Approvals)
	}
	if opts.ElicitationTimeout < 0 {
		return nil, errors.New("mcpserver: Options.ElicitationTimeout must not be negative")
	}
	if opts.ApprovalWait < 0 {
		return nil, errors.New("mcpserver: Options.ApprovalWait must not be negative")
	}
	if opts.ApprovalWait > 0 && opts.Outcomes == nil {
		return nil, errors.New("mcpserver: Options.ApprovalWait needs Options.Outcomes, which tells the server the decision it waits for")
	}
	if opts.ElicitationTimeout == 0 {
		opts.ElicitationTimeout = DefaultElicitationTimeout
	}
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	if opts.Version == "" {
		opts.Version = moduleVersion()
	}
	if opts.Instructions == "" {
		opts.Instructions = defaultInstructions
		if opts.Outcomes != nil {
			opts.Instructions = retryInstructions
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		x:       x,
		opts:    opts,
		reason:  approvalReason(opts.Principal),
		tools:   make(map[string]tool),
		listed:  make(map[string]string),
		waiting: make(map[string]*waiting),
		held:    make(map[heldKey]*heldCall),
	}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: opts.Name, Version: opts.Version}, &mcp.ServerOptions{
		Instructions: opts.Instructions,
		Logger:       opts.Logger,
		// Tools only: no logging capability, nothing else.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	s.srv.AddReceivingMiddleware(s.unknownTools)
	s.srv.AddReceivingMiddleware(s.visibleTools)
	if err := s.SetAllowlist(opts.Allowlist); err != nil {
		return nil, err
	}
	return s, nil
}

// MCPServer returns the underlying MCP server, to connect it to a transport
// with Run or Connect, or to serve it over HTTP with the SDK's handlers.
// Adding or removing tools on it directly bypasses this package: such
// tools are not gated.
func (s *Server) MCPServer() *mcp.Server {
	return s.srv
}

// Run serves one session over t until the client disconnects or ctx is
// done. For stdio, t is StdioTransport(os.Stdin, os.Stdout), which
// answers a client's malformed lines instead of ending the session.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.srv.Run(ctx, t)
}

// SetAllowlist replaces the listed tools with the specs of a, notifying
// connected clients that the tool list changed, also when a holds the
// same specs: a client then lists again what [Options.Visible] shows it,
// under the policy in force (a reload swaps the policy first). Call it
// after Executor.SetAllowlist with the same allowlist. It returns an
// error, and changes nothing, if a is nil or a spec cannot be listed (see
// [New]).
func (s *Server) SetAllowlist(a *execgate.Allowlist) error {
	if a == nil {
		return errors.New("mcpserver: nil Allowlist")
	}
	s.update.Lock()
	defer s.update.Unlock()
	specs := a.Specs()
	listed, err := listedNames(specs, s.opts.LogicalNames)
	if err != nil {
		return err
	}
	next := make(map[string]tool, len(specs))
	defs := make([]*mcp.Tool, 0, len(specs))
	for _, spec := range specs {
		def, err := ToolOf(spec, listed[spec.Name])
		if err != nil {
			return err
		}
		next[def.Name] = tool{name: spec.Name, listed: def.Name, dispatch: spec.Dispatch, spec: spec, def: def}
		defs = append(defs, def)
	}
	if err := probeTools(defs); err != nil {
		return err
	}
	// Register first, then list, then unregister: a call that races with
	// the change is answered by a registered handler or refused as an
	// unknown tool, never run by a tool that is no longer listed.
	for _, def := range defs {
		s.srv.AddTool(def, s.handler(next[def.Name]))
	}
	s.mu.Lock()
	var gone []string
	for name := range s.tools {
		if _, ok := next[name]; !ok {
			gone = append(gone, name)
		}
	}
	s.tools, s.listed = next, listed
	s.mu.Unlock()
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
	}
	return nil
}

// lookupTool reports whether name is the name of a listed tool, and
// which.
func (s *Server) lookupTool(name string) (tool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tools[name]
	return t, ok
}

// listedAs returns the name the spec whose logical name is name is listed
// under, and whether there is such a spec.
func (s *Server) listedAs(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.listed[name]
	return n, ok
}

// unknownTools answers tools/call for a name that is not listed with an
// error result, as for any other refusal, instead of the SDK's protocol
// error, so that a model can read it (see unlisted).
func (s *Server) unknownTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/call" {
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
				if _, listed := s.lookupTool(p.Name); !listed {
					principal, ok := s.principalOf(req)
					if !ok {
						return s.unauthenticated(ctx, p.Name), nil
					}
					return s.unlisted(ctx, principal, p.Name), nil
				}
			}
		}
		return next(ctx, method, req)
	}
}

// unlisted refuses a call of the tool name, which this server does not
// list or hides from principal (see Options.Visible), as a name no tool
// has (see noSuchTool), and records the refusal in the Executor's
// audit trail with Executor.RecordRefusal (route "mcp tools/call", kind
// not_found), under the request's principal and the requested name, which
// the Executor cuts as it cuts every caller-chosen string. The name is never
// handed to Executor.Submit: a name that it would serve but this server does
// not list (a dispatcher's "git.status") must go through the listed tool.
func (s *Server) unlisted(ctx context.Context, principal, name string) *mcp.CallToolResult {
	ctx = execgate.WithPrincipal(context.WithoutCancel(ctx), principal)
	ref := execgate.Refusal{Route: unlistedRoute, Name: name, Kind: execgate.ErrorKindNotFound, Reason: "no listed tool has this name"}
	if err := s.x.RecordRefusal(ctx, ref); err != nil {
		s.opts.Logger.Error("mcpserver: a call of an unlisted tool could not be recorded in the audit trail", "error", err)
	}
	if hint := s.callInstead(ctx, principal, name); hint != "" {
		return statusResult(&CallStatus{
			Status:  StatusRefused,
			Kind:    KindNotFound,
			Name:    name,
			Message: fmt.Sprintf("execgate: no tool is listed as %q; %s; nothing ran.", name, hint),
		})
	}
	return s.noSuchTool(ctx, principal, name)
}

// callInstead says which tool shown to principal serves name, which is
// not listed itself, or returns "": the tool a spec's logical name is
// listed under ("git.log" is listed as "git_log"), or the dispatcher tool
// and the subcommand of a dispatched name, in its logical spelling
// ("git.status") or in that of tool names ("git_status"), when principal
// may call that subcommand (see subcommandOf). A tool hidden from
// principal (see Options.Visible) is never named, and neither is a
// subcommand principal may not call: noSuchTool answers those as it
// answers a subcommand that does not exist.
func (s *Server) callInstead(ctx context.Context, principal, name string) string {
	if listed, ok := s.listedAs(name); ok {
		if _, shown := s.shownTool(ctx, principal, listed); shown {
			return fmt.Sprintf("the command %q is listed as the tool %q: call that", name, listed)
		}
		// Hidden: answered below as a name without a tool of its own.
	}
	i := strings.LastIndexAny(name, "._")
	if i <= 0 || !inputrules.ValidSubcommand(name[i+1:]) {
		return ""
	}
	prefix, sub := name[:i], name[i+1:]
	t, ok := s.shownTool(ctx, principal, prefix)
	if !ok && name[i] == '.' {
		if listed, found := s.listedAs(prefix); found {
			t, ok = s.shownTool(ctx, principal, listed)
		}
	}
	if !ok || !t.dispatch {
		return ""
	}
	switch own, found := s.subcommandOf(ctx, principal, t, sub); {
	case own != "":
		return fmt.Sprintf("the command %q is listed as the tool %q: call that", t.name+"."+sub, own)
	case found:
		return fmt.Sprintf("call the tool %q with %q set to %q", t.listed, SubcommandProperty, sub)
	}
	return ""
}

// unlistedRoute is the Route of the audit record of a call of an unlisted
// tool.
const unlistedRoute = "mcp tools/call"

// checkPrincipal applies the Executor's rule for principals to
// Options.Principal, so that a server whose every call would be refused
// is refused when it is made.
func checkPrincipal(p string) error {
	if msg := inputrules.PrincipalProblem(p); msg != "" {
		return errors.New("mcpserver: Options.Principal: " + msg)
	}
	return nil
}

// approvalReason is the Reason of every approval this server proposes.
func approvalReason(principal string) string {
	if principal == "" {
		return "requested via MCP (no principal set)"
	}
	return fmt.Sprintf("requested by %q via MCP", principal)
}

// moduleVersion returns the version of the execgate module in the running
// binary, or "devel".
func moduleVersion() string {
	const path = "github.com/execgate/execgate"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path == path && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			return bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Path == path && d.Version != "" {
				return d.Version
			}
		}
	}
	return "devel"
}
