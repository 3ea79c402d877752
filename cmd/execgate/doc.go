// Command execgate serves an allowlist of commands to AI agents with no Go
// code: a YAML configuration in (see package config), a governed MCP
// server or HTTP API out. Every call is looked up (unknown names are
// refused), validated into an exact argv, decided by the configuration's
// policies, held for a person's approval where they say so, run directly
// without a shell, and audited. The binary itself never starts a process:
// every command runs through the Executor.
//
// Install it with
//
//	go install github.com/execgate/execgate/cmd/execgate@latest
//
// or, from a clone of the repository, go install ./cmd/execgate.
//
// # Commands
//
//	execgate serve --config FILE [--principal P] [--approvals elicit|pending|refuse] [--approver-http ADDR] [--logical-names] [--audit FILE] [--otel] [--log-format json|text]
//	execgate serve --config FILE --mcp-http ADDR [--tls-cert FILE --tls-key FILE | --insecure] [--logical-names] [--audit FILE] [--otel] [--log-format json|text]
//	execgate serve --config FILE --http ADDR [--tls-cert FILE --tls-key FILE | --insecure] [--audit FILE] [--otel] [--log-format json|text]
//	execgate check --config FILE
//	execgate explain --config FILE [--principal P] [--json] NAME [INPUT]
//	execgate test  --config FILE CASES.yaml
//	execgate run   --config FILE [--principal P] [--audit FILE] NAME [INPUT]
//	execgate tools --config FILE [--logical-names]
//	execgate profiles
//	execgate init --profile NAME[,NAME...] --root DIR [-o FILE]
//	execgate import flux7 [-o FILE [--force]] [--kind KIND]... FILE
//	execgate audit verify FILE
//	execgate token [--principal P] [--stdin]
//	execgate version
//	execgate help [COMMAND]
//
// serve speaks MCP on stdin and stdout (every command name is a tool, under
// a client-safe name, and every call runs as one principal), with
// --mcp-http speaks MCP over Streamable HTTP to the callers of the
// configuration's tokens (see "MCP over Streamable HTTP"), or with --http
// serves the HTTP API below.
// profiles lists the vetted tool profiles (git, jq, rg, ...) a tools entry
// can name with profile: NAME; init --profile git,rg --root DIR prints a
// starter configuration built from them (-o FILE writes it, and refuses a
// FILE that exists).
// check validates a configuration and prints every problem as
// FILE:LINE:COLUMN: KEY.PATH: MESSAGE, or a summary with what this
// kernel supports for confine (warning about tools whose required
// confinement it cannot give). run makes one call and
// prints its Result as JSON. tools prints the tools with their input
// schemas and their MCP names as JSON. explain shows, step by step and without running
// anything, what the gate does with one call: lookup (the spec and its
// mode), validation (the argv, or each refused token with the rule that
// refused it), the policy's rule and grant, the floor (default_action)
// and the verdict (run, approval, refused); --json prints it as
// {name, principal, steps: [{step, outcome, detail, ...}], argv, verdict,
// kind, error}. test runs a table of calls (CASES.yaml; see "execgate
// help test") and compares each with its expected outcome: allow with
// exact args, approval, or refuse with an error kind (not_found,
// validation, policy); it prints a line per case and, for a mismatch,
// the expectation and the outcome, for operators' CI. A configuration's
// own examples (see package config) are checked by every command that
// loads it. audit verify checks a hash-chained audit file written
// with --audit. token makes a bearer token and the sha256 entry for the
// configuration's server section. "execgate help COMMAND" and
// "execgate COMMAND -h" print a command's flags. Flags come before
// arguments.
//
// # Exit codes
//
//	0  done: the configuration loads, the command ran and exited 0, the
//	   audit chain is intact, the server stopped cleanly, explain's call
//	   would run or needs an approval, every case of test passes
//	1  refused or failed: run's call was refused (the error is printed on
//	   stderr as JSON, nothing ran) or its command ran and did not exit 0
//	   (the Result is still printed on stdout, with the child's exitCode);
//	   an audit file is broken; a server failed while running; explain's
//	   call is refused; a case of test does not pass
//	2  usage error, or a configuration that does not load (every problem
//	   printed on stderr, one per line, with its line and column, failing
//	   examples included), or a cases file test cannot use
//
// # MCP on stdio
//
// serve reads one JSON-RPC message per line on stdin and writes one per
// line on stdout; its own messages go to stderr. A line that is not a
// message is answered on stdout, and the session goes on; calls in
// progress are not disturbed:
//
//	-32700  parse error      the line is not JSON: a syntax error, a NUL
//	                         byte, bytes that are not UTF-8
//	-32600  invalid request  JSON that is not one JSON-RPC 2.0 message:
//	                         [], {}, a number, no "jsonrpc": "2.0", a
//	                         message without method that is no response,
//	                         a null id, a batch
//	-32600  invalid request  a line over 4 MiB: read to its end in 64 KiB
//	                         pieces and dropped, never held whole
//
// The error's id is the message's when it has a string or integer id
// (for a line over 4 MiB, a top-level "id" found while it is read), and
// null otherwise. A batch is refused whole with one error and none of its
// messages is handled: MCP 2025-06-18 removed JSON-RPC batching. A blank
// line is skipped. The bound is four times the 1 MiB the gate accepts as
// a tool's input, so that a call with a larger input still reaches the
// gate, which refuses it as invalid input that is too large. serve exits
// 0 when stdin ends.
//
// # Tool names over MCP
//
// Claude Desktop and the Anthropic API, GitHub Copilot CLI, Windsurf and
// OpenAI-backed clients take only tool names matching
// ^[a-zA-Z0-9_-]{1,64}$, and refuse a whole server that lists another. So
// serve lists each command under its client-safe name
// (mcpserver.ToolName): letters, digits, '_' and '-' are kept, each '.'
// becomes '_' ("git.log" is the tool "git_log"), and a name still longer
// than 64 bytes is cut to 55 bytes followed by '-' and 8 hex digits of
// its SHA-256. A dispatcher keeps its name ("terraform") and is called
// with its subcommand in its input (see "Dispatchers"). The policies, grants,
// approvals, Results and the audit trail see the command's own name
// ("git.log", "terraform.apply"), whatever name the client called. Two
// commands listed alike ("a.b" and "a_b") make serve refuse to start,
// naming both: rename one, or serve with --logical-names, which lists
// the command names themselves, dots included, for clients that accept
// them. execgate tools shows each tool's "mcp_name" (with
// --logical-names, as serve --logical-names lists it) and names the
// commands that would be listed alike. An MCP client that calls a name
// that is not listed but names a listed tool ("git.log", "git.status") is
// told, as not_found, which tool to call instead.
//
// # Dispatchers
//
// A dispatcher is a tool whose subcommands are not declared one by one
// (a tools entry without strict, such as terraform, with plan, show and
// apply among its subcommands). On every surface it is one tool, called
// one way: by its name, with the subcommand in the input's "subcommand"
// and the subcommand's own input beside it:
//
//	MCP, stdio and Streamable HTTP  tools/call of terraform with {"subcommand": "plan", "args": ["-lock=false"]}
//	the HTTP API                    POST /v1/tools/terraform with {"subcommand": "plan", "args": ["-lock=false"]}
//	execgate run                    execgate run --config FILE terraform '{"subcommand": "plan", "args": ["-lock=false"]}'
//
// tools/list, GET /v1/tools and execgate tools describe it alike: the
// same description, which says how to call it, and the same input
// schema, the dispatcher's with "subcommand" required (a string of 1 to
// 64 bytes matching ^[a-z][a-z0-9-]*$). "subcommand" is taken out of the
// input, every other member is passed on as sent, and the call is
// checked and decided as the command terraform.plan, the name the
// policies, grants, approvals, Results and the audit trail see. The HTTP
// API and execgate run also take that name, with the rest of the input:
// POST /v1/tools/terraform.plan (or terraform_plan) with {"args":
// ["-lock=false"]}, as before this convention.
//
// A subcommand that has a command of its own (validate, if the tool's
// commands declare it) is a tool of its own, terraform_validate, whose
// input has another shape: called through the dispatcher, it is refused
// as invalid input on "subcommand", naming the tool to call. Each refusal
// says what is wrong:
//
//	not_found   no such tool: no tool shown to the caller has the name
//	            ("no such tool "terraformx"")
//	not_found   the tool has no such subcommand: "the tool "terraform"
//	            has no subcommand "destroy" that you can call"
//	validation  no "subcommand", or one that is no subcommand (field
//	            subcommand)
//	validation  a subcommand with a tool of its own, named (field
//	            subcommand)
//
// A caller is shown only the tools its policy could allow or hold for
// approval, and the same holds for a dispatcher's subcommands: one that
// its policy never allows (a rule denies it, no rule names it, or its own
// tool is hidden from the caller) is refused as a subcommand the tool
// does not have, in the same words whichever it is, and the policy, whose
// deny would name its rule, is not asked. Neither a listing nor a refusal
// tells a caller that a command it cannot run exists. The refusal is
// recorded in the audit trail as a not_found of the command asked for.
//
// # Principals and tokens
//
// Over MCP on stdio, every call is made as the principal of --principal,
// else of the configuration's server.principal. Over HTTP (the HTTP API
// and MCP over Streamable HTTP alike), each request
// carries "Authorization: Bearer TOKEN"; the server compares the SHA-256
// of TOKEN, in constant time, with every entry of server.tokens (callers,
// who list and call tools) and server.approvers (who list and decide
// pending approvals), and the request is made as that entry's principal.
// The configuration holds only hashes; a caller's token cannot approve and
// an approver's cannot call, no principal is both, and an approver can
// never decide an approval of its own call.
//
// # MCP over Streamable HTTP
//
// serve --mcp-http ADDR serves MCP at http://ADDR/mcp (https with
// --tls-cert), with the same address rules as --http (see "HTTP API") and
// the same bearer tokens: a request carries "Authorization: Bearer
// TOKEN" of an entry of server.tokens, and every call it makes runs as
// that entry's principal, which the policies, grants, approvals and the
// audit trail see; server.principal and --principal are not used. The
// token is read on every request, so a reload that removes it refuses
// its next one. tools/list shows a caller only the tools its policy
// could allow or hold for approval, and a call of another is refused as
// a name no tool has, as GET /v1/tools and POST /v1/tools/{name} do.
//
// The protocol is that of the official Go SDK (v1.8.0): MCP 2026-07-28,
// its newest revision, and the four before it (2025-11-25, 2025-06-18,
// 2025-03-26, 2024-11-05). A request whose Mcp-Protocol-Version header
// names 2026-07-28 stands alone, without a session (SEP-2575): server/discover
// instead of initialize, the client's capabilities in each request, a held
// call's question as an input-required result answered by a retry
// (SEP-2322), and notifications on a subscriptions/listen stream. The
// versions before it are served in sessions: initialize opens one and its
// answer carries Mcp-Session-Id; a GET with it opens the stream of
// notifications (notifications/tools/list_changed after a reload), a
// DELETE closes it. A session belongs to the token that opened it: a
// request with another token under its Mcp-Session-Id is refused (403),
// and so is one for a session that is unknown or closed (404; the client
// opens a new one). A session no request reaches for an hour is closed,
// and at most 1000 are open at once (503 beyond, with Retry-After).
// Streams are not resumable: a client that loses one, with the answer it
// was waiting for, calls again (Last-Event-ID is refused, 400). Responses
// to calls are event streams (text/event-stream), as the SDK writes them;
// JSON-RPC batches are refused from 2025-06-18 on.
//
// Before the SDK reads a request, serve refuses, with a JSON error like
// the HTTP API's and an audit record: a method other than GET, POST and
// DELETE (405); a URL with a query string, where a token has no place
// (400: send it in the Authorization header); a request a browser sends
// from a web page, which carries Origin or a Sec-Fetch-Site other than
// none (403: serve serves no pages, so no page may call it); a request to
// a loopback address whose Host is not 127.0.0.1, ::1 or localhost, which
// is what DNS rebinding sends (403); no token or an unknown one (401,
// with WWW-Authenticate: Bearer); an approver's token (403); a body over
// 4 MiB (413). The bound is the stdio line bound, so a call whose input is
// over the gate's 1 MiB still reaches the gate and gets its validation
// refusal. A request the SDK then refuses with an HTTP error (a session of
// another token, an unknown session, a malformed message, a missing
// Accept) is recorded too, under its caller, with reason "session of
// another token" or "refused by the MCP transport (HTTP N)". Other paths
// are the approval routes and JSON 404s.
//
// A call the policy holds for approval waits for the configuration's
// approvers, who list and decide it at the same address, with the routes
// of the HTTP API (GET /v1/approvals, POST /v1/approvals/{id}); the
// client gets it as pending, and learns the outcome as over stdio (see
// "Approvals over MCP"), or with GET /v1/approvals/{id} and its own
// token. The client is not asked: over HTTP it may
// be the agent itself, which would answer its own question. Where the
// server section sets mcp_http_elicitation: true, a client that can
// elicit is asked, and its accept runs the call once (a decline rejects
// it); one that cannot still leaves it to the approvers. Set it only when
// every token belongs to a client that puts the question to a person.
// While the server section lists no approvers, a held call that no
// client's user is asked about is refused as over stdio, saying that
// nothing can approve it (see "Approvals over MCP"); a reload that lists
// approvers counts from the next call.
//
// # HTTP API
//
// serve --http listens on loopback by default: an empty host (":8080")
// means 127.0.0.1, and a host that is not loopback is refused unless
// --tls-cert and --tls-key are given (HTTPS) or --insecure. Bodies are
// JSON, sent with Content-Type: application/json or none, and at most
// 1 MiB (413 otherwise). Every response the API writes is JSON, its
// refusals included: an unknown route (404), a path that is not in clean
// form ("/v1//tools", "/v1/tools/../x" or a trailing slash: 404, never a
// redirect), OPTIONS * and CONNECT (404), a method a route does not
// serve (405, with Allow). See "Connections" for the few answers net/http
// writes itself.
//
// GET /v1/tools, for callers and approvers, lists the tools: to a caller,
// only those its policy could allow or hold for approval (a call of
// another is refused as a name no command has, 404), to an approver
// every one:
//
//	{"tools": [{"name": "git.log", "mcp_name": "git_log", "description": "...",
//	            "input_schema": {...}, "annotations": {"read_only": true}},
//	           {"name": "terraform", "mcp_name": "terraform", "dispatch": true,
//	            "call_as": "terraform.<subcommand>", "default_action": "require_approval",
//	            "input_schema": {...}}]}
//
// mcp_name is the name serve lists the tool under over MCP (see "Tool
// names over MCP"); description and input_schema are those tools/list
// shows, a dispatcher's with its "subcommand" (see "Dispatchers"), and
// call_as the command name each call of a dispatcher is decided as.
//
// POST /v1/tools/{name}, for callers, makes a call with the body as the
// tool's input (an empty body is no input). A dispatcher is called by its
// name, with the subcommand in the body's "subcommand", or by the
// command's name, "terraform.apply" (see "Dispatchers"). The name may be
// spelled as over MCP too: a tool's mcp_name ("git_log"), or a
// dispatcher's mcp_name, '_' and the subcommand ("terraform_apply"); a
// command's own name wins, and a name that spells two commands alike is
// refused (404, not_found) with both named. The policies and the audit
// trail see the command's own name. While the server section lists no
// approvers, a call the policy holds is refused (403, policy, action
// require_approval), saying that nothing can approve it, and no approval
// is stored. The answers:
//
//	200  the command ran: {"result": Result, "trace_id", "policy", "latency_ms"}.
//	     result is execgate.Result (exitCode, ok, termination, stdout,
//	     stderr, stdoutDropped, ...); a command that exited non-zero or
//	     timed out is still 200, with "ok": false.
//	202  the policy holds the call for approval: {"status": "pending_approval",
//	     "approval": Approval, "location", "trace_id", "policy", "latency_ms"}.
//	     Nothing ran; an approver decides it by approval.id, and the caller
//	     learns the outcome at location, /v1/approvals/{id} (the Location
//	     header too).
//	4xx, 5xx  refused, nothing ran: {"error": {"kind", "message", ...}, "trace_id",
//	     "policy", "latency_ms"}.
//
// trace_id names the call in the audit trail (the Result's id when a
// process ran); policy is {"decision", "rule", "grant"}, the policy's
// answer after a dispatcher's default_action, present once the policy was
// asked; latency_ms is the server's time on the request.
//
// GET /v1/approvals, for approvers, lists the pending approvals this server
// issued, oldest first: {"approvals": [Approval, ...]}. An Approval shows
// its id, principal (who asked), name, command, args, reason, digest,
// createdAt and expiresAt, and what the command will read and may touch:
// stdin, when the call has any, as {"bytes", "sha256", "preview",
// "previewCut"}, where preview is its first 4 KiB with control and
// invisible characters escaped when all of it is UTF-8 text (only its
// size and SHA-256 otherwise) and previewCut says it shows only the
// start; confine, when the tool has a confine key, as {"read", "write",
// "exec", "network", "unixSockets", "limits": {"cpuSeconds",
// "addressSpace", "files", "fileSize", "processes"}, "bestEffort"}; and
// egress, when its network lists hosts, as {"Allow", "Deny"}. Never the
// environment. All of it is bound into the approval's digest.
//
// POST /v1/approvals/{id}, for approvers, decides one, with the body
// {"action": "approve"} or {"action": "reject"}. approve executes it, once:
// 200 {"result", "approval", "trace_id", "policy", "latency_ms"}; the
// gate checks it again against the current configuration, so a changed
// tool (409), a policy that now denies (403) or an expired approval (410)
// refuses it, and it stays consumed. reject withdraws it: 200
// {"status": "rejected", "approval"}. An approval that is unknown, already
// decided or expired is 404; an approver deciding its own call is 403 and
// the approval stays pending. {"action": "approve", "grant": "30m"} also
// grants the call's principal the same command for that long (see
// "Grants").
//
// GET /v1/approvals/{id}, for the caller whose call proposed it (the
// principal of the token that got the 202, or of an MCP call) and for
// approvers, says what became of an approval: 200 {"status", "approval",
// "result", "error", "trace_id", "decided_at", "kept_until",
// "latency_ms"}, where status is
//
//	pending   no one has decided it, and it has not expired
//	running   an approver approved it, and its command is running
//	approved  it ran: "result" is its Result, in the proposer's first
//	          answer after it ran and in no other
//	claimed   it ran, and its Result was handed out to the proposer before
//	          (over HTTP or to an MCP retry); no "result"
//	dropped   it ran, and its Result is no longer kept (see below); no
//	          "result"
//	rejected  an approver rejected it; nothing ran
//	expired   no one decided it in time, or it was approved too late;
//	          nothing ran
//	failed    it was approved and the gate refused to run it then (the
//	          tool changed, the policy now denies it): "error" is the
//	          refusal, as POST /v1/approvals/{id} answered it; nothing ran
//
// trace_id is the Result's id once it ran; decided_at and kept_until are
// set once it is decided or expired. An approver is told the state and
// never given the Result (POST /v1/approvals/{id} answered it with the
// Result), and its poll does not use up the proposer's. To any other
// caller an approval does not exist: its answer is the 404 of an unknown
// id, byte for byte ({"error": {"kind": "approval", "reason":
// "unknown"}}), and so is the answer to an id never issued here, or no
// longer kept. ?wait=DURATION (such as ?wait=30s; at most 1m, a longer
// one waits 1m) waits while the approval is pending or running, and
// answers as soon as it is decided or expires, or pending when the wait
// ends; a client that goes away ends the wait, and a poll whose client
// has gone hands out no Result. A wait that is not a duration of at least
// 0s with its unit, a second wait, and any other query parameter are
// refused (400, request). One principal has at most 8 waits open at once;
// the next is refused (429, busy, Retry-After: 1). A Result whose answer
// could not be written is put back for the proposer's next poll, so it is
// handed out once and never lost to a failed write; over MCP, a retry
// that claimed a Result always answers with it.
//
// The outcome of every approval the server issued is kept from its
// decision, or its expiry, for the approval's lifetime again (15
// minutes), then forgotten: its id reads as unknown. At most 1000
// outcomes are kept besides the pending approvals, and at most 64 MiB of
// Results (each counted as its JSON), and of each a quarter (250
// outcomes, 16 MiB) for one proposer, so that one principal's outcomes
// cannot push out another's: a proposer at its share forgets its own
// oldest outcome, or drops its own oldest Result (its approval then
// reads as dropped), and once a total is reached the oldest of the
// proposer holding the most goes. A Result larger than a share alone is
// not kept. A restart forgets them all,
// with the pending approvals, unless they are in PostgreSQL (see
// "Approvals on PostgreSQL").
//
// Error kinds and their statuses. The kinds are the gate's
// (execgate.ErrorKind): an MCP client, execgate run, explain and the audit
// trail name a refusal with the same kind.
//
//	unauthenticated  401  no bearer token, or one that matches no entry
//	request          400, 403, 404, 405, 409, 413, 415  the request itself was
//	                      refused before the gate: a malformed body, a token
//	                      whose role cannot do this, self-approval, no such
//	                      route, a method the route does not serve, a body
//	                      over 1 MiB, a body that is not JSON, a poll's query
//	                      other than one wait, a grant that cannot apply or
//	                      cannot be revoked (409), an unknown grant (404);
//	                      reason says which, in the words the audit trail
//	                      records
//	not_found        404  no such tool
//	validation       422  the input (or a decision's action or grant) was
//	                      refused; issues names each field
//	policy           403  denied by a rule (action, rule), or held for an
//	                      approval no approver could give (action
//	                      require_approval); 429 when rate_limited
//	approval         404, 409, 410  the approval cannot be executed (reason);
//	                      404 for a poll of an approval that is unknown
//	                      (reason unknown)
//	busy             429, 503  a concurrency bound was reached (reason, limit);
//	                      nothing ran
//	audit            503  the audit file cannot record
//	store_full       429, 503  too many approvals are pending: 429 with
//	                      reason principal and the limit when the caller
//	                      holds its own quota of the approval store
//	                      (server.max_pending_per_principal,
//	                      server.max_pending_bytes_per_principal)
//	internal         500  anything else; logged on stderr
//
// serve runs at most server.max_concurrent commands at once, and at most
// server.max_concurrent_per_principal for one principal (see package
// config: 64 and 64 unless the file says otherwise). A call over a bound
// waits for a slot for server.max_queue_wait (no wait by default) and is
// then refused before anything starts: 429 when the caller's own bound
// is reached, 503 when the server's is, both with Retry-After: 1 and
// {"error": {"kind": "busy", "reason": "principal" or "executor",
// "limit": N, "name", "message"}}, the kind and reason an MCP client gets
// too. The same call may be made again.
//
// A call's context is the request's: a client that disconnects cancels
// its call, and the command's process group is killed. On SIGINT or
// SIGTERM the server stops accepting requests and gives running calls 10
// seconds before canceling them.
//
// MCP progress and cancellation: a tools/call that carries a progress
// token gets notifications/progress about once a second while its
// command runs, with the seconds it has run as the progress and, in the
// message, the bytes of output so far and the latest line; a
// notifications/cancelled for the call (the TypeScript SDK sends one
// when the call's AbortSignal is aborted) kills the command's process
// group, and the trail records the call as canceled. Calls do not run as
// MCP tasks (the experimental tasks of protocol 2025-11-25): the Go SDK
// serve is built on (github.com/modelcontextprotocol/go-sdk v1.8.0) has
// no server-side support for them, so serve declares no tasks capability
// and answers a call when its command ends, with progress meanwhile.
// Tasks are to be reconsidered when the SDK implements them.
//
// # Approvals on PostgreSQL
//
// By default the approvals serve issues, the decisions and the Results
// of approved calls are in its memory: a restart loses them, and another
// serve cannot see them. With
//
//	server:
//	  approval_store: {kind: postgres, dsn_env: EXECGATE_PG_DSN, table: execgate_approvals}
//
// they are in PostgreSQL, in the database whose connection string is in
// the variable dsn_env names (never in the file), and every serve on the
// same database and table shares them: an approval proposed through one
// is listed, approved or rejected through any, and its Result is fetched
// by its proposer through any, once. serve creates the tables at start
// (table, table_spent and table_states; stores/pgstore's Migrate and
// MigrateStates) and does not start when the variable is unset or the
// database cannot be reached. While it cannot reach the database, a call
// held for approval, a decision, GET /v1/approvals and a proposer's poll
// are refused with 503 and a message that says the approval store cannot
// be reached and what is true meanwhile (for a proposal or a decision,
// that nothing ran; for a read, that the state cannot be read now);
// calls the policy allows run as usual. A
// wait (?wait=) reads the approval again every 100 ms.
//
// The outcomes and Results kept there have the bounds they have in
// memory, for all the replicas together (1000 outcomes and 64 MiB of
// Results, a quarter of each for one proposer): a replica that records a
// Result keeps its proposer's Results within the share in the same
// transaction, dropping that proposer's oldest (they read dropped), and
// never refuses to record a call that ran.
//
// The approval store judges expiry, leases and forgetting by the
// database's clock; the Executor of the replica that runs an approved
// call checks its expiry by its own, so keep the replicas' clocks
// synchronized.
//
// Per replica, not shared: rate limits and loop detection (N replicas
// give a principal up to N times per_minute, burst and budget; divide
// them by N to hold a principal to a total), the concurrency bounds, the
// 8 waits per principal, the grants given with approvals (GET /v1/grants
// lists, and DELETE /v1/grants/{id} revokes, only those of the replica
// that decided the approval; another replica answers 404), and the
// webhooks' queues (each replica tells of what it saw). The replica that
// takes an approval to run it holds it under a lease it renews every 30
// s while the call runs, however long that is: no other replica marks
// it failed or settles it meanwhile. An approval whose replica was
// killed while it ran the call reads running, and failed once the lease
// has lapsed (3 minutes after its last renewal): it ran at most once,
// and the audit trail says whether. A decision that comes after its
// lease lapsed changes nothing and is logged at warn. A reload does not change the
// store; a changed approval_store waits for a restart.
//
// # The audit trail on PostgreSQL
//
// With
//
//	server:
//	  audit_store: {kind: postgres, dsn_env: EXECGATE_PG_DSN, table: execgate_audit}
//
// serve (and run) append every call's entries to the table, in the
// database whose connection string is in the variable dsn_env names
// (never in the file; it may be the approval store's variable), through
// stores/pgstore's Auditor: every replica on the same table appends to
// one hash-chained trail, ordered by a lock the database holds for each
// entry, with each row the line an audit file would hold. With --audit
// FILE too, each call is recorded in both, and refused when either
// cannot record it. The intent of a call is in the table before its
// process starts; while the database cannot record, calls are refused
// (503, kind audit), /readyz answers 503, and a probe of /readyz tries to
// record again at most once a second, so that the replica is ready again
// once the database is back. serve does not start when the variable is
// unset or the database cannot be reached. execgate audit verify
// --dsn-env EXECGATE_PG_DSN --table execgate_audit checks the table.
//
// At start, serve uses the table as it is when it exists with its
// triggers, and otherwise creates or completes it (stores/pgstore's
// MigrateAudit). In production, create it once as the role that is to own
// it (start serve once with that role's connection string), and give the
// role serve connects as only SELECT and INSERT on it (and USAGE on its
// schema): the triggers that keep the table append-only hold against
// every role but its owner and superusers. A reload does not change the
// table; a changed audit_store waits for a restart.
//
// A password in a URL connection string must be percent-encoded (@ as
// %40, / as %2F): PostgreSQL's drivers end the user and password at the
// first @, and the rest of the password would become the host, which a
// connection error prints. serve, run and audit verify refuse a
// connection string whose host or database name reads so, naming the
// variable and never repeating its value, and cut the password out of
// any connection error they print.
//
// # Grants
//
// An approver who approves a call may, in the same decision, let its
// principal make the same call again without an approval for a while:
// POST /v1/approvals/{id} with {"action": "approve", "grant": "30m"}. The
// grant covers exactly the approval's principal and its command name (for
// a dispatcher, the subcommand's, such as terraform.plan), never a
// pattern, and, like every grant, it only turns the policy's
// require_approval into allow: it never overturns a deny, does not lift
// rate limits, and cannot lift a floor (human_approval, a dispatcher's
// default_action: human_approval). The grant lasts from more than 0s up
// to server.max_grant (1h unless the file says otherwise; 0s lets
// approvers make no grants).
//
// Before the approval is taken, a grant that cannot be made is refused
// and the approval stays pending: a value that is not a duration, not
// positive or over server.max_grant, a grant with reject (422,
// validation, issue "grant"); a configuration without policies, a call
// without a principal, a command whose every call a floor holds, a call
// the policy now allows anyway (409, request). The grant is made only if
// the approval really executes: after Execute has run the call (whatever
// its exit status) and before its proposer can learn the outcome, so that
// the proposer's next identical call finds it; an approval the gate
// refuses (expired, changed, denied) grants nothing. Its time counts from
// then. The response is that of an approve with "grant": the grant as
// GET /v1/grants shows it, or, if it could not be made although the call
// ran (too many grants are live, the audit file cannot record it, or a
// reload while the call ran removed its command or changed what it runs),
// "grant_error" saying why. A grant made with an approval is for the
// command as it was approved: a reload that removes it, or changes what
// it runs (its spec's fingerprint, or its policy_version), ends the grant,
// recorded as a revoke.
//
// GET /v1/grants, for approvers, lists the grants in force, oldest first:
// {"grants": [{"id", "principal", "tool", "exact", "granted_by",
// "granted_at", "expires", "source", "approval", "reason"}, ...]}, where
// source is "approval" for a grant made with an approval (granted_by and
// approval name the approver and the approval) and "config" for one of
// the configuration file's grants section (principal and tool are then
// the file's patterns).
//
// DELETE /v1/grants/{id}, for approvers, revokes a grant made with an
// approval, with effect on the next call: 200 {"status": "revoked",
// "grant"}. A grant of the configuration file is not revoked (409): the
// file says which of them are in force, and a reload would bring it back;
// remove it from the file and reload. An id never made, already revoked
// or expired is the same 404. A caller's token is refused (403) on both
// routes, whatever the id, so a caller learns nothing of grants.
//
// These routes are served wherever the approval routes are: by --http,
// --approver-http and --mcp-http.
//
// Grants made with approvals live in the server's memory, up to the
// policy engine's bound (1000 grants, the file's included): a restart
// ends them. A reload (see "Reloading") that removes a grant's command
// ends the grant, and one that keeps it keeps the grant; a grant never
// changes which tools a principal is shown, so no MCP client is told of
// one. Every grant made, revoked, ended by a reload or expired is an
// audit entry (see "Audit").
//
// # Connections
//
// A request's header must arrive within 10 seconds of its first byte, and
// the whole request within a minute; the header may be 64 KiB (net/http
// allows 4 KiB more). A kept-alive connection waits 2 minutes for its
// next request. net/http answers some requests itself, before any handler
// runs, and nothing in this program changes those bytes or records them
// in the audit trail: a ConnState hook sees connections, not responses,
// and a listener could only rewrite net/http's own, unversioned response
// text. They are, each followed by closing the connection:
//
//	400 text/plain  a request line or header that is not HTTP, an HTTP/1.1
//	                request without Host, a malformed Content-Length, and
//	                a request line still incomplete when the header timeout
//	                passes ("400 Bad Request", sometimes with the reason)
//	431 text/plain  a header over the bound
//	501 text/plain  a Transfer-Encoding other than chunked
//	505 text/plain  an HTTP version other than 1.0 and 1.1
//	417, no body    an Expect header other than 100-continue
//
// A connection that sends nothing, or stops within its header after a
// complete request line, is closed without a byte when the header timeout
// passes. With --tls-cert, a client speaking plain HTTP gets net/http's
// plain-text 400 ("Client sent an HTTP request to an HTTPS server"), and
// a failed TLS handshake is logged on stderr. Every other request,
// OPTIONS * included, reaches the API and is answered with JSON.
//
// # Health probes
//
// Every address serve listens on, --http, --mcp-http and --approver-http
// alike, answers GET and HEAD of two paths before anything else looks
// at the request: no token is asked for (a wrong one is ignored),
// nothing is recorded in the audit trail, no caller's bound or rate is
// spent, and the body is only the status, never a version, a tool or a
// count:
//
//	/healthz  200 {"status":"ok"} whenever the process answers (liveness)
//	/readyz   200 {"status":"ok"} while the address serves and the gate
//	          can take calls; 503 {"status":"unavailable"} before it
//	          serves, once it is shutting down, and while the audit
//	          trail (--audit, server.audit_store) refuses records
//	          (readiness)
//
// Any other method on those paths is refused like a method any route
// does not serve (405, Allow: GET, HEAD, recorded); "/healthz/" and
// other spellings are no route (404). While serve shuts down it accepts
// no new connection, which a probe sees as not ready too.
//
// An audit trail that failed to write (a full disk) refuses every call
// until a record succeeds again (see package audit), and only a record
// can tell that it would: a balancer that sends no calls to an address
// that is not ready would leave it so. So while the trail refuses,
// /readyz tries to record itself, at most once a second, as a refusal
// (op "request", route "GET /readyz", error "audit"); once the disk has
// room again, that entry is where the trail resumes, and /readyz is 200
// from it on.
//
// # Reloading
//
// On SIGHUP, serve (MCP on stdio, MCP over Streamable HTTP and the HTTP
// API alike) reads its --config file again and checks it as a start
// would: the file must load, with its examples; with --http or
// --mcp-http it must list tokens, with --approver-http approvers; over
// MCP, its tools must be listable. A file that
// passes is put in force in place (config.Loaded.Reload): the new
// policies and grants (grants made otherwise, rate-limit state and
// pending approvals survive), then the new tools, for MCP clients too,
// which get notifications/tools/list_changed, then the tokens of callers
// and approvers, for the requests that follow, and the webhooks of
// server.notify (see "Webhooks"). A call already validated
// finishes with the spec it was validated against, even if the reload
// removed its tool; a pending approval is checked against the new file
// when it is approved. A file that does not pass changes nothing: every
// problem is logged on stderr with its line, as execgate check prints it,
// then "reload refused; still serving the configuration loaded before".
// A file whose rules went into force but some of whose grants could not
// be made (one expired meanwhile, or grants made through the API took the
// places) is put in force whole but for those grants, which are logged
// after "reloaded the configuration, but for what it could not put in
// force".
// A success is logged as "reloaded the configuration", followed, as at a
// start, by the new file's warnings and the tools it serves that can
// never run on this transport. A reload also ends
// the grants made with approvals of a command the new file no longer
// serves, and its server.max_grant applies to the grants made next (see
// "Grants").
//
// A reload cannot add or remove the policies section (restart serve for
// that), and the server section's bounds (max_concurrent,
// max_concurrent_per_principal, max_queue_wait), over MCP its
// approval_wait, over stdio without --principal its principal, and with
// --mcp-http its mcp_http_elicitation take effect at the next start; a reload that changes them logs a
// warning naming each. SIGINT and SIGTERM still stop
// serve gracefully, and a SIGHUP during that shutdown is dropped.
//
// # Approvals over MCP
//
// Over stdio, a call the policy holds for approval is, with --approvals
// elicit (the default), put to the MCP client's user when the client
// supports elicitation (the question shows what an approver reads in GET
// /v1/approvals: the call, its arguments, stdin's size, SHA-256 and
// preview, the confinement and the network, every value escaped; a call
// too long to be shown whole is not put to the user); otherwise, and
// always with --approvals pending,
// it is returned to the agent as pending. With --approver-http ADDR the
// server also serves GET /v1/approvals and POST /v1/approvals/{id} on
// ADDR, for the configuration's approvers, and pending approvals wait
// there; without it nothing could approve them, so such a call is refused
// instead, with a message that says why and what to do (the policy kind,
// action require_approval), and no approval is left behind. Over
// Streamable HTTP, see "MCP over Streamable HTTP".
//
// An agent left pending learns the outcome by calling the tool again
// with exactly the same arguments, as the pending answer tells it
// (mcpserver.Options.Outcomes): the retry of the same principal, for the
// same tool, with input that would run exactly the same thing (the same
// proposal digest), proposes nothing new. It is told the same pending
// approval while no one has decided; once the approvers decided, the
// command's Result, handed out once, or that it was rejected, expired or
// refused. Another principal's identical call, a call with other
// arguments, or the same arguments once a reload changed what the tool
// runs, are calls of their own, held for their own approval; so is the
// next identical call once the outcome was told. The Result a retry gets
// is the one GET /v1/approvals/{id} would hand out: the proposer gets it
// once, by either way. With server.approval_wait (such as 2m; at most
// 15m), a held call (and its retry) waits that long for the decision and
// is answered with it as soon as it comes, sending notifications/progress
// every second to a client that gave a progress token, so that a client
// that resets its request timeout on progress keeps waiting; a wait that
// ends undecided answers pending, and the approval stays pending.
//
// # Webhooks
//
// With server.notify in the configuration (see package config), serve
// --http, --mcp-http and --approver-http post a JSON message to each
// webhook when an approval is pending (type approval.pending) and when an
// approver decides it (approval.decided), so that approvers need not
// poll. Over stdio alone no approval waits for approvers, and no webhook
// is started.
//
//	POST <url>
//	Content-Type: application/json
//	User-Agent: execgate
//	Execgate-Delivery: <the body's delivery_id>
//	Execgate-Event: approval.decided
//	Execgate-Timestamp: 1767225600
//	Execgate-Signature: sha256=<64 hex digits>
//
//	{"delivery_id": "<UUIDv7>", "type": "approval.decided",
//	 "occurred_at": "2030-01-02T03:05:05Z",
//	 "approval": {"id", "principal", "name", "command", "args", "digest",
//	              "reason", "policyVersion", "confine", "egress",
//	              "stdin": {"bytes", "sha256"}, "createdAt", "expiresAt"},
//	 "decision": {"action": "approve", "approver": "alice", "state": "approved",
//	              "result": {"id", "exitCode", "ok", "termination", "signal", "duration"}}}
//
// The approval is the one GET /v1/approvals shows, under the same names,
// but for stdin: of stdin a message carries its size and SHA-256 only,
// never its preview, which is stdin's content. occurred_at is when the
// approval was proposed (pending) or decided. The decision
// (approval.decided only) has the action, approve or reject; the
// approver's principal; and the state, what became of the approval:
// approved (it ran; result says how it ended, with its trace ID, exit
// code, termination, signal and duration in nanoseconds, never its
// output or its spawn error), rejected, expired (it expired as it was
// approved) or failed (the gate refused to run it; error has the
// refusal's kind and reason, never its message). No message carries a
// bearer token, an environment value, stdin or what a command wrote: a
// webhook's receiver may keep what it is sent where an approver's chat
// or ticket system keeps it. An approval that expires without a decision
// is not told; its expiresAt says when it does.
//
// Execgate-Signature is "sha256=" and the lowercase hex HMAC-SHA256,
// keyed with the bytes of the webhook's secret_env variable, of the
// Execgate-Timestamp value, a dot and the body as sent:
// HMAC(key, timestamp + "." + body). Each attempt is signed anew, with
// the time it is sent; the body and its delivery ID are the same on every
// attempt. A receiver reads the raw body before decoding it, computes the
// HMAC and compares it with the header's in constant time, refuses a
// timestamp more than five minutes from its clock (a replay), and drops a
// delivery ID it has already taken (a retry of a message that reached
// it):
//
//	func verify(key []byte, r *http.Request, body []byte, now time.Time) bool {
//		ts := r.Header.Get("Execgate-Timestamp")
//		mac := hmac.New(sha256.New, key)
//		mac.Write([]byte(ts + "."))
//		mac.Write(body)
//		want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
//		sec, err := strconv.ParseInt(ts, 10, 64)
//		return err == nil && hmac.Equal([]byte(r.Header.Get("Execgate-Signature")), []byte(want)) &&
//			now.Sub(time.Unix(sec, 0)).Abs() <= 5*time.Minute
//	}
//
// Messages never hold up a call or a decision. Each webhook has a queue
// of 256 messages, posted in order by a sender of its own, so a slow
// webhook delays only itself; when its queue is full, the oldest message
// is dropped and logged with its delivery ID, event, approval and the
// count dropped so far. An attempt is bounded by the webhook's timeout
// (10s unless its entry says), from connecting to reading the answer, of
// which at most 64 KiB is read and discarded. A 2xx answer is a
// delivery. A network error, 408, 429 or 5xx is tried again after 1s,
// 2s, 4s and 8s, each wait jittered to between half of it and all of it
// (a longer Retry-After is waited instead, up to 30s), for 5 attempts at
// most, and no attempt starts more than 2 minutes after the first. Any
// other answer is final: a redirect is not followed, since a message goes
// to the url of the file and nowhere else, and another 4xx would be
// refused again. Every delivery, retry, drop and failure is logged on
// stderr (not in the audit trail), naming the webhook by its scheme and
// host only: the path of many webhooks holds a secret. Proxies are taken
// from HTTPS_PROXY and NO_PROXY. When serve stops, it gives the webhooks
// up to 5 seconds to take what their queues hold, then logs how many
// messages each was not sent.
//
// The keys are read from serve's environment at its start: a variable
// that is unset, empty or shorter than 16 bytes refuses the start, named
// at its entry's line (execgate check does not read them). On SIGHUP the
// webhooks follow the file, their keys read again from the same
// environment (a variable serve was not started with needs a restart): a
// webhook added is told from then on; one removed, or whose url, key,
// events or timeout changed, is sent nothing more of what its queue held
// (the count is logged), and a changed one starts anew.
//
// # Audit
//
// With --audit FILE, serve and run append every call (refused, proposed,
// executed, rejected) to a hash-chained JSON-lines file (package audit),
// and refuse calls when it cannot record them. Over MCP, a call of a tool
// that is not listed is recorded as a refusal too (op "request", route
// "mcp tools/call", error "not_found"). execgate audit verify FILE
// checks it and prints its head, to keep elsewhere. With the server
// section's audit_store (see "The audit trail on PostgreSQL"), every
// call is also appended to a PostgreSQL table, which execgate audit
// verify --dsn-env NAME --table T checks alike.
//
// A request the HTTP API refuses before the gate (a missing or unknown
// token, a token of the wrong role, a body too large, not JSON or
// malformed, a wrong method, an unknown route, a decision on an approval
// that is not pending, self-approval, a poll of an unknown approval or of
// another principal's, which is recorded as "approval of another
// principal" though it is answered as an unknown one, a poll's bad query)
// is an entry too, with op
// "request": principal is the principal of the request's token, absent
// when it has no valid one; route is the method and path
// ("POST /v1/tools/git.log", the path cut to 200 bytes, the query left
// out); name is the tool the path names, if any; error is
// "unauthenticated", "request" or "approval"; reason is a few fixed words
// ("no bearer token", "body too large"). It never holds the token or the
// body. The answers net/http writes itself (see "Connections") are not
// recorded. Refusals of requests without a valid token, which anyone who
// can reach the port can send, are recorded at most 20 a second after a
// burst of 100; the next one recorded says how many were left out, and
// every refused request is still answered. A stdio line that is not a
// JSON-RPC message is recorded with route "mcp stdio". serve --mcp-http
// records its refusals the same way, with route "POST /mcp" (or GET,
// DELETE), and its calls under each token's principal.
//
// Each change to a grant made with an approval is an entry too: op
// "grant" when it is made (principal is the principal it covers, approver
// who made it, name the command, grant its id, approvalId the approval,
// reason how long it lasts), "revoke" when an approver revokes it
// (approver is who did) or a reload ends it (no approver), and "expire"
// when it reaches its expiry. The making is recorded before the grant
// applies, and a grant the file cannot record is not made.
//
// Each call that starts a process is two entries: its intent, written
// before the process starts, and its outcome. audit verify also lists,
// as "FILE: unfinished: seq N: ...", every intent no outcome follows:
// what serve leaves when it is killed while a command runs.
//
// # OpenTelemetry
//
// serve --otel exports every call, run or refused (a refusal before the
// gate included), as an OpenTelemetry span, as package audit/otelaudit
// makes them: named "execgate." and the operation, with the name,
// principal, policy decision, executable, exit code and termination as
// attributes, never the argv, stdin or an environment value. Spans are
// batched and sent over OTLP/HTTP (protobuf, or JSON with
// OTEL_EXPORTER_OTLP_PROTOCOL=http/json) by the OpenTelemetry Go SDK,
// configured only by the standard variables, as the SDK reads them:
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the
// SDK's default is https://localhost:4318; a collector without TLS takes
// an http:// URL), _HEADERS, _TIMEOUT, _COMPRESSION and _CERTIFICATE,
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the
// service is "execgate" unless they name another; service.version is
// the binary's), OTEL_TRACES_SAMPLER and _ARG, and the batch's
// OTEL_BSP_ variables. OTEL_TRACES_EXPORTER=none or
// OTEL_SDK_DISABLED=true export nothing; another exporter, or the grpc
// protocol, stops serve at start (exit 2): this binary has only
// OTLP/HTTP, whose port is 4318 where gRPC's is 4317. The probes make
// no span, but for the record /readyz tries while the audit trail
// refuses records (see "Health probes"). When serve stops, the spans still held are sent, for up to
// 5 seconds. The SDK's own errors (a collector that cannot be reached)
// are logged on stderr as warnings. Without --otel, nothing is
// exported, no exporter is made and the OTEL_ variables are not read.
// The audit trail of --audit stays the record: a span is not a
// substitute for it.
//
// # Logs
//
// serve logs on stderr with log/slog, one JSON object per line by
// default, with "time", "level", "msg" and fields ("url" of an address
// served, "principal" over stdio, "file" and "problem" of a reload,
// "error"); --log-format text writes slog's key=value lines
// instead. The messages say what happened in words ("execgate: serving
// the HTTP API on http://127.0.0.1:8080"), and never hold a token, a
// request's body, a command's stdin or an environment value. Usage
// errors and a configuration that does not load, and the error that
// ends serve, are printed as plain text, one line, as by every
// execgate command; MCP over stdio writes only MCP on stdout.
//
// At start, serve warns, once per tool (fields "tool" and "callers"),
// about each tool that no call can run on the transport it serves,
// judged for its callers (the stdio principal, or the principals of the
// server section's tokens) with the grants in force: one that the policy
// or the tool's default_action denies to every caller, and one whose
// every call that is not denied needs an approval that nothing there
// can give (stdio with --approvals pending and no --approver-http, or
// --approvals refuse; --mcp-http without approvers and without
// mcp_http_elicitation: true; --http without approvers). A dispatcher
// whose policy decides its subcommands one by one is not judged. Such a
// tool is listed to no caller, or every call of it is refused.
//
// # Importing from flux7-mesh
//
// execgate import flux7 FILE converts the cli_tools and policies sections
// of a flux7-mesh configuration into this format (package config/flux7
// has the mapping), on stdout or, with -o, into a new file; an existing
// file is refused unless --force, which replaces it whole. It carries
// over each tool's name, bin, working_dir, env and mode (simple,
// fine-tuned, strict, bare), a dispatcher's default_action, commands and
// their timeouts, and the policies, with agent as principal and
// human_approval as require_approval. It declares an allowed_args flag
// only when --kind gives its value kind ([TOOL[.COMMAND]:]FLAG=none,
// string or int).
//
// What it does not carry over is a TODO(flux7) comment in the output and
// a FILE:LINE:COLUMN line on stderr: flags without a kind, the positional
// arguments every flux7 command accepts, the "any flag" of a command
// without allowed_args, names this format cannot spell, policies whose
// agent holds '*' or '?' or has several policies, rule patterns this
// format might match differently. The output never allows more than FILE
// did: a tool with a TODO is held at human_approval (its dispatcher's
// default_action, and floor-N rules before the allow rules that match
// its commands) until a person finishes it, and a file without policies
// becomes policies: [], which denies every call, as flux7 does. A file
// that is not a flux7 file is refused with every problem and its line.
// The output is then loaded as check would on this machine: import exits
// 0 when it loads, 1 when it does not (a bin missing here, say; the file
// is written all the same), and 2 when FILE cannot be converted.
package main
