// Package mcpserver serves an execgate Executor to AI agents as Model
// Context Protocol tools, with the official MCP Go SDK.
//
// Every spec of an allowlist becomes one tool: its name is the spec's
// name made client-safe ("git.log" is listed as "git_log"; see Tool
// names below), its description the spec's Description, its input schema
// the spec's JSONSchema, and its annotations come from the spec's Hints. A
// tool call goes to Executor.Submit with the arguments exactly as the
// client sent them: the SDK does not decode them, the gate does,
// strictly, once, and decides once whether the call runs now or waits
// for an approval. To
// serve an Executor over stdio:
//
//	a, err := execgate.NewAllowlist(specs...)
//	if err != nil { ... }
//	x, err := execgate.NewExecutor(execgate.Config{Allowlist: a, Policy: p})
//	if err != nil { ... }
//	srv, err := mcpserver.New(x, mcpserver.Options{
//		Allowlist: a,              // what to list; the same allowlist as x
//		Principal: "local-agent",  // who every call runs as, for the Policy
//	})
//	if err != nil { ... }
//	if err := srv.Run(ctx, mcpserver.StdioTransport(os.Stdin, os.Stdout)); err != nil { ... }
//
// For other transports, hand [Server.MCPServer] to the SDK (for example to
// mcp.NewStreamableHTTPHandler); a transport that authenticates its
// callers names each call's principal (see Principal below).
//
// # Tool names
//
// A spec's name may hold dots ("git.log"), which the MCP specification
// allows in tool names, but Claude Desktop and the Anthropic API, GitHub
// Copilot CLI, Windsurf and OpenAI-backed clients accept only names
// matching ^[a-zA-Z0-9_-]{1,64}$, and refuse a whole server that lists
// one other name. So by default every tool is listed under [ToolName] of
// its spec's name: letters, digits, '_' and '-' are kept, each '.'
// becomes '_', and a name still longer than 64 bytes is cut to 55 bytes
// followed by '-' and 8 hex digits of its SHA-256. The mapping is used
// only at this surface, in tools/list and to find the tool of a
// tools/call: the Executor, its Policy, grants, approvals, Results and
// the audit trail see the logical name ("git.log"), and so does every
// message about the command.
//
// Two specs that map to one tool name ("a.b" and "a_b") cannot be told
// apart by a client: [New] and [Server.SetAllowlist] refuse them with a
// [*ToolNameCollisionError] naming both. Rename one, or set
// [Options.LogicalNames], which lists every tool under its logical name,
// for clients that accept dots.
//
// A call of a name that is not listed but names a listed tool, such as
// the logical name "git.log" or a dispatcher's "git.status" (or
// "git_status"), is refused as not found with the call to make instead.
//
// # Stdio
//
// [StdioTransport] speaks MCP's stdio framing, one JSON-RPC message per
// line, and answers what is not a message itself, so that one bad line
// neither ends the session nor cancels the calls in progress (the SDK's
// own stdio transports end the session on the first line they cannot
// decode). A line that is not JSON gets a parse error (-32700), JSON that
// is not one valid JSON-RPC 2.0 message gets an invalid request error
// (-32600), with the message's id when it has a string or number id and
// null otherwise. A line over [MaxFrameBytes] (4 MiB) is read in bounded
// pieces, dropped and refused the same way. Batches (JSON arrays) are
// refused with one invalid request error: MCP 2025-06-18 removed JSON-RPC
// batching, and no protocol version is served with it.
//
// # Results
//
// Every outcome of a call is a tool result, never a protocol error, so
// that a model can read it and correct itself:
//
//   - A command that ran returns a text summary (how it ended, stdout,
//     stderr, and how many bytes of each were dropped beyond the spec's
//     MaxOutput) and the execgate.Result as structured content. IsError
//     is set unless the process exited with status 0: a non-zero exit, a
//     signal, a timeout and a spawn error are errors.
//   - A call that did not run returns IsError with the reason as text and
//     a CallStatus as structured content: refused (an unknown tool, bad
//     arguments, a policy deny; the message is the gate's typed error,
//     which never repeats stdin or environment values), pending approval,
//     declined, or not approved.
//
// A call of a tool that is not listed is refused as not allowlisted, and
// the refusal is recorded in the Executor's audit trail with
// Executor.RecordRefusal: an Event with Op "request", Route
// "mcp tools/call", Error "not_found" and the requested name, cut as the
// Executor cuts every requested name. The name is not handed to the
// Executor: a name the Executor would serve but this server does not
// list (a dispatcher's "git.status") is refused too, and must be called
// through the listed tool. [Server.StdioTransport] records each line it
// refuses the same way, with Route "mcp stdio" and Error "request".
//
// # Dispatcher tools
//
// MCP needs a finite tool list, while a dispatcher spec ("git" with
// Dispatch set) serves any "git.<sub>". A dispatcher is therefore listed
// as one tool named after the spec, whose input schema is the
// dispatcher's schema plus a required "subcommand" string. The server
// removes "subcommand" from the arguments and asks the gate for
// "git.<subcommand>", so the gate and the Policy decide on the full name,
// as for any dispatched call. The removal is strict: the arguments must be
// one JSON object with exactly one "subcommand" member, a string matching
// ^[a-z][a-z0-9-]*$ (so it can never add a '.' and reach another spec);
// every other member is forwarded byte for byte, so the gate still
// refuses duplicate keys, unknown fields and bad values in them. A
// subcommand that has its own listed tool ("git.log") is refused with a
// pointer to that tool ("git_log"). A dispatcher's tool name is mapped
// like any other ("cloud.tf" is listed as "cloud_tf"); the subcommand is
// joined to the logical name with a dot ("cloud.tf.apply"). [ToolOf]
// describes a tool as it is listed, and [DispatchCall] takes a
// dispatcher call apart as the server does, for another surface that
// should list and call dispatchers the same way.
//
// With [Options.Visible], a call of a dispatcher shown to the caller is
// judged again for the one command it asks for ([SpecOf]): a subcommand
// whose own tool is hidden from the caller, or that Visible reports
// false for, is refused as one the dispatcher does not have, "the tool
// "git" has no subcommand "push" that you can call", in the same words
// whether a rule denies it or none names it, and without asking the
// Policy; the refusal is recorded as a not_found of the command. The
// same words answer a call of its name ("git.push", "git_push").
//
// # Approvals
//
// A call that the Policy holds for approval is proposed by the same
// Executor.Submit that would have run it (with the reason "requested by
// <principal> via MCP"), and then, by Options.Approvals:
//
//   - ApprovalsElicit (the default): if the client declares the
//     elicitation capability, its user is asked to accept or decline,
//     with the command, its arguments and the reason shown. Accept
//     executes the approval once and returns its result; decline, dismiss,
//     an error or a timeout rejects it, and nothing runs. With protocol
//     versions before 2026-07-28 the server sends elicitation/create while
//     it handles the call; from 2026-07-28 it returns an input-required
//     result and the client retries the call with the answer, bound to
//     the original call by a random request state kept on the server.
//     A client that cannot elicit gets a pending approval, as below, and
//     so does a call whose arguments are too long to show whole (over
//     16 KiB): a person is never asked to approve a shortened argv.
//   - ApprovalsPending: the approval is passed to Options.OnPending, for
//     an out-of-band approver, and returned as pending: IsError, with the
//     Approval (ID, name, argv, expiry, digest) in CallStatus.Approval.
//     Whoever holds it approves by handing it to Executor.Execute on the
//     same Executor (or store), which runs it at most once.
//   - ApprovalsRefuse: the call is refused (SubmitOptions.NoPropose): a
//     refusal of kind policy, action require_approval, and nothing is
//     stored.
//
// A call left pending is honest only if someone can decide it. Where
// [Options.NoApprover] says no one outside the client can (now: it is
// asked on each such call), a call that would be left pending is
// refused instead, kind policy, action require_approval, with a message
// ([NoApproverMessage]) that says nothing can approve it and what would;
// its approval is rejected at once.
//
// # Outcomes of pending approvals
//
// An agent that was told "pending" must learn what became of it. With
// [Options.Outcomes], which whoever decides the approvals keeps (the
// execgate binary keeps one for its approval routes), the pending result
// tells the model to call the tool again with exactly the same arguments
// once a person has decided, and that retry is answered with the outcome
// instead of proposing the call again: the Result of the approved call,
// handed out once; its rejection ([StatusRejected]), expiry
// ([StatusExpired]) or refusal (the gate's, as for any call); or, while
// no one has decided, the same pending approval. A retry is bound to the
// call it retries by its principal, its command and the proposal digest
// of what it would run (execgate.Proposer.Check): another principal's
// identical call, a call with other arguments, or the same arguments once
// the tool would run something else, are calls of their own and are held
// for their own approval. Once an outcome was told, the next identical
// call is a new call. A retry whose Result was handed out to another
// claim (a retry that raced it, or its proposer's poll of the execgate
// binary's GET /v1/approvals/{id}) gets none ([StatusClaimed]). The
// server remembers at most 1000 calls left pending, and at most a
// quarter of them (250) of one principal, each until its approval has
// expired and as long again: a principal at its share forgets its own
// oldest call, and beyond 1000 the oldest of the principal that holds
// the most is forgotten, so that one principal's calls never push out
// another's; a forgotten call's retry asks for a new approval.
//
// The retry was chosen over a tool of its own for asking: it needs no
// tool beside the command's, which every client already may call, shows
// nothing a caller's tools/list would not, and is what a model does
// anyway after "call again once it is decided".
//
// [Options.ApprovalWait] makes a held call (and its retry) wait for the
// decision, up to that long, and answer with it at once, which suits a
// client that holds a call open: while it waits, a client that sent a
// progress token gets notifications/progress every second, the seconds
// waited as progress, so that a client that resets its request timeout
// on progress keeps waiting. A wait that ends undecided, or whose client
// gives up, answers pending and leaves the approval pending for the
// retry.
//
// A refused call's [CallStatus.Kind] is execgate.KindOf the gate's error:
// the same vocabulary (execgate.ErrorKind) as the audit trail's
// Event.Error and the execgate binary's HTTP API.
//
// An elicitation answer is only as trustworthy as the MCP client that
// relays it: the client, not the model, answers elicitation requests.
// Where the client cannot be trusted to speak for a person, use
// [ApprovalsPending].
//
// # Principal
//
// Stdio carries no caller identity, so by default the principal is set
// per server ([Options.Principal]) and every call runs under
// execgate.WithPrincipal(ctx, Options.Principal).
//
// A transport that authenticates its callers names the principal of each
// request with [Options.PrincipalFrom] instead. Behind the SDK's
// Streamable HTTP handler, the SDK's auth.RequireBearerToken middleware
// puts the TokenInfo its verifier returns in every request it carries
// (mcp.RequestExtra.TokenInfo). A verifier that sets TokenInfo.UserID to
// something only its token has, such as the token's hash, binds each
// session to that token: the SDK refuses a request with another token in
// it (403). One that puts the principal in TokenInfo.Extra lets
// PrincipalFrom read it:
//
//	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
//		principal, sum, ok := lookUp(token) // its SHA-256, compared in constant time
//		if !ok {
//			return nil, auth.ErrInvalidToken
//		}
//		return &auth.TokenInfo{UserID: sum, Extra: map[string]any{"principal": principal}}, nil
//	}
//	srv, err := mcpserver.New(x, mcpserver.Options{
//		Allowlist: a,
//		Approvals: mcpserver.ApprovalsPending, // the client may be the agent itself
//		PrincipalFrom: func(req mcp.Request) (string, bool) {
//			if e := req.GetExtra(); e != nil && e.TokenInfo != nil {
//				p, ok := e.TokenInfo.Extra["principal"].(string)
//				return p, ok
//			}
//			return "", false
//		},
//	})
//	if err != nil { ... }
//	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.MCPServer() }, nil)
//	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h))
//
// Each call then runs as the principal its own request names: the
// Policy, grants, the proposer and reason of an approval, and the audit
// trail see it, and so does the record of a call of an unlisted tool. A
// request PrincipalFrom names none for is refused as unauthenticated,
// recorded under no principal, and nothing runs. A retry that answers an
// approval question with its request state (protocol 2026-07-28) answers
// only a question asked of its own principal's call; another's state
// reads as an unknown one. Never take the principal from a context: in a
// stateful session, the context a handler gets is that of the request
// that opened the session, whoever sent the call.
package mcpserver
