package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/internal/inputrules"
	"github.com/execgate/execgate/internal/strictjson"
	"github.com/execgate/execgate/mcpserver"
	"golang.org/x/time/rate"
)

// maxBody is the largest request body the HTTP API reads: the gate's own
// input cap.
const maxBody = execgate.MaxInputSize

// maxApprovalBody bounds the body of POST /v1/approvals/{id}.
const maxApprovalBody = 4 << 10

// maxTokenBytes bounds a presented bearer token.
const maxTokenBytes = 4 << 10

// busyRetryAfter is the Retry-After, in seconds, of a call refused
// because a concurrency bound was reached: the server cannot know when a
// running command ends, so it names the shortest wait worth making.
const busyRetryAfter = 1

// Bounds of the route an audit record names: a request line is the
// client's to choose.
const (
	maxRouteMethod = 32
	maxRoutePath   = 200
)

// role is what a bearer token may do.
type role int

const (
	roleCaller   role = iota + 1 // lists and calls tools
	roleApprover                 // lists, approves and rejects pending approvals
)

// credential is one accepted token: the SHA-256 of the token, whose
// principal it names and in which role.
type credential struct {
	sum       [sha256.Size]byte
	principal string
	role      role
}

// apiOptions configures the HTTP API.
type apiOptions struct {
	// Executor runs and proposes the calls; its allowlist is listed.
	Executor *execgate.Executor
	// Server holds the tokens of callers and approvers.
	Server *config.Server
	// Pending holds the approvals issued and not yet decided. Nil means a
	// new set.
	Pending approvalBook
	// ApprovalsOnly serves only the approval routes, for a server whose
	// calls arrive another way (MCP on stdio).
	ApprovalsOnly bool
	// Logger receives internal errors. Nil discards them.
	Logger *slog.Logger
	// Visible says which tools a caller is shown: GET /v1/tools lists to
	// a caller only the specs it reports true for with the caller's
	// principal, and POST /v1/tools/{name} refuses a call of any other as
	// it refuses a name no command has. Approvers, who decide the calls
	// of every caller, are shown every tool. Nil shows every tool to
	// everyone; serve passes gate.visible.
	Visible func(ctx context.Context, principal string, spec execgate.CommandSpec) bool
	// Grants makes the grants approvers give with approvals and serves
	// them (see grants.go); serve passes gate.grants. Nil makes none.
	Grants *grantBook
}

// api is the HTTP API's handler.
type api struct {
	x       *execgate.Executor
	creds   atomic.Pointer[[]credential] // replaced whole by setServer
	pending approvalBook
	log     *slog.Logger
	mux     *http.ServeMux
	anon    anonymousRefusals
	names   callNames
	visible func(ctx context.Context, principal string, spec execgate.CommandSpec) bool // nil: all
	grants  *grantBook                                                                  // nil: no grants
}

// Unauthenticated refusals are recorded at most anonRate a second, after a
// burst of anonBurst: anyone who can reach the port can send them, and
// each is a synced write to the audit trail. What is not recorded is
// counted, and the next recorded one says how many were left out.
const (
	anonRate  = 20
	anonBurst = 100
)

// anonymousRefusals bounds the audit records of refusals of requests that
// carry no valid token.
type anonymousRefusals struct {
	once       sync.Once
	limit      *rate.Limiter
	mu         sync.Mutex
	suppressed int64
}

// admit reports whether a refusal of an unauthenticated request may be
// recorded now and, if so, how many were left out since the last one.
func (n *anonymousRefusals) admit() (ok bool, skipped int64) {
	n.once.Do(func() { n.limit = rate.NewLimiter(anonRate, anonBurst) })
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.limit.Allow() {
		n.suppressed++
		return false, 0
	}
	skipped, n.suppressed = n.suppressed, 0
	return true, skipped
}

// newAPI returns the HTTP API's handler. See the package documentation
// for its routes.
func newAPI(opts apiOptions) (*api, error) {
	if opts.Executor == nil {
		return nil, errors.New("no Executor")
	}
	a := &api{x: opts.Executor, pending: opts.Pending, log: opts.Logger, visible: opts.Visible, grants: opts.Grants}
	if a.pending == nil {
		a.pending = newPendingSet(nil)
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if err := a.setServer(opts.Server); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	if !opts.ApprovalsOnly {
		mux.HandleFunc("GET /v1/tools", a.listTools)
		mux.HandleFunc("POST /v1/tools/{name}", a.callTool)
		mux.HandleFunc("/v1/tools/{name}", a.methodNotAllowed("POST"))
		mux.HandleFunc("/v1/tools", a.methodNotAllowed("GET"))
	}
	mux.HandleFunc("GET /v1/approvals", a.listApprovals)
	mux.HandleFunc("GET /v1/approvals/{id}", a.approvalState)
	mux.HandleFunc("POST /v1/approvals/{id}", a.decideApproval)
	mux.HandleFunc("/v1/approvals/{id}", a.methodNotAllowed("GET, POST"))
	mux.HandleFunc("/v1/approvals", a.methodNotAllowed("GET"))
	a.grantRoutes(mux)
	// GET and HEAD of the probes are answered in front of the API (see
	// probes); any other method is refused here, as on every route.
	mux.HandleFunc(healthzPath, a.methodNotAllowed(probeAllow))
	mux.HandleFunc(readyzPath, a.methodNotAllowed(probeAllow))
	mux.HandleFunc("/", a.noRoute)
	a.mux = mux
	return a, nil
}

// credentials returns the tokens of srv's callers and approvers.
func credentials(srv *config.Server) ([]credential, error) {
	if srv == nil {
		return nil, nil
	}
	var creds []credential
	for _, list := range []struct {
		tokens []config.Token
		role   role
	}{{srv.Tokens, roleCaller}, {srv.Approvers, roleApprover}} {
		for _, t := range list.tokens {
			b, err := hex.DecodeString(t.SHA256)
			if err != nil || len(b) != sha256.Size {
				return nil, fmt.Errorf("server token of %q: sha256 is not 64 hex digits", t.Principal)
			}
			c := credential{principal: t.Principal, role: list.role}
			copy(c.sum[:], b)
			creds = append(creds, c)
		}
	}
	return creds, nil
}

// setServer replaces the accepted tokens with those of srv, for the
// requests that start afterwards. It changes nothing if one of them is
// malformed.
func (a *api) setServer(srv *config.Server) error {
	creds, err := credentials(srv)
	if err != nil {
		return err
	}
	a.creds.Store(&creds)
	return nil
}

// noApprover says what would let someone decide approvals here, or
// returns "" when a token may: the server section in force lists
// approvers. It is the mcpserver.Options.NoApprover of the MCP servers
// whose approvals these routes serve, and decides what the API does with
// a held call.
func (a *api) noApprover() string {
	for _, c := range *a.creds.Load() {
		if c.role == roleApprover {
			return ""
		}
	}
	return "list approvers in the configuration's server section (server.approvers; execgate token makes a token) and reload it"
}

// ServeHTTP implements http.Handler. A path that ServeMux would redirect
// to its clean form ("/v1//tools", "/v1/tools/../approvals", a trailing
// slash), or that is not a path at all (OPTIONS *, CONNECT host:port), is
// no route here: it is answered with JSON like every other, never with
// the mux's redirect or plain text.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if p := r.URL.EscapedPath(); !strings.HasPrefix(p, "/") || path.Clean(p) != p {
		a.noRoute(w, r)
		return
	}
	a.mux.ServeHTTP(w, r)
}

// noRoute answers a request for a path the API does not serve.
func (a *api) noRoute(w http.ResponseWriter, r *http.Request) {
	a.deny(w, r, a.identify(r), &errorInfo{Kind: execgate.ErrorKindRequest, Status: http.StatusNotFound, Message: "no such route; see GET /v1/tools"}, "no such route")
}

func (a *api) methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		a.deny(w, r, a.identify(r), &errorInfo{Kind: execgate.ErrorKindRequest, Status: http.StatusMethodNotAllowed, Message: "method not allowed; use " + allow}, "method not allowed")
	}
}

// deny writes e, a refusal made before the gate was reached, and records
// it in the audit trail (Executor.RecordRefusal) as a refusal of the
// request's method and path, by principal ("" when the request carries
// no valid token), of e's kind, for reason: a few fixed words, never the
// token or the body. The response names the same kind and, unless e has
// a reason of its own, the same reason.
func (a *api) deny(w http.ResponseWriter, r *http.Request, principal string, e *errorInfo, reason string) {
	if e.Reason == "" {
		e.Reason = reason
	}
	ctx := context.WithoutCancel(r.Context())
	if principal != "" {
		ctx = execgate.WithPrincipal(ctx, principal)
	}
	ref := execgate.Refusal{Route: route(r), Name: r.PathValue("name"), Kind: e.Kind, Reason: reason}
	if principal == "" {
		ok, skipped := a.anon.admit()
		if !ok {
			writeError(w, e)
			return
		}
		if skipped > 0 {
			ref.Reason += fmt.Sprintf(" (and %d refusals of requests without a valid token not recorded since the last one: over %d a second)", skipped, anonRate)
		}
	}
	if err := a.x.RecordRefusal(ctx, ref); err != nil {
		a.log.Error("execgate: a refused request could not be recorded in the audit trail", "route", ref.Route, "reason", reason, "error", err)
	}
	writeError(w, e)
}

// route names a request for the audit trail: its method and path, each
// cut to a bound, without the query, which is where a client that puts
// a token in a URL puts it. The path is the escaped one, ASCII only.
func route(r *http.Request) string {
	return cut(r.Method, maxRouteMethod) + " " + cut(r.URL.EscapedPath(), maxRoutePath)
}

// cut shortens an ASCII string to at most n bytes, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// lookup returns the credential of the request's bearer token, or nil,
// and whether the request carries a bearer token at all. It compares the
// SHA-256 of the token with every configured one, in constant time, and
// always with all of them.
func (a *api) lookup(r *http.Request) (found *credential, presented bool) {
	token, ok := bearer(r)
	if !ok {
		return nil, false
	}
	sum := sha256.Sum256([]byte(token))
	creds := *a.creds.Load()
	for i := range creds {
		if subtle.ConstantTimeCompare(sum[:], creds[i].sum[:]) == 1 {
			found = &creds[i]
		}
	}
	return found, true
}

// identify returns the principal of the request's bearer token, or ""
// when it has no valid one, for the audit record of a request refused
// whoever made it.
func (a *api) identify(r *http.Request) string {
	if c, _ := a.lookup(r); c != nil {
		return c.principal
	}
	return ""
}

// authenticate returns the principal of the request's bearer token if
// the token may act in role want (any role when want is 0). On failure it
// has written the response and recorded the refusal.
func (a *api) authenticate(w http.ResponseWriter, r *http.Request, want role) (string, bool) {
	found, presented := a.lookup(r)
	switch {
	case !presented:
		w.Header().Set("WWW-Authenticate", `Bearer realm="execgate"`)
		a.deny(w, r, "", &errorInfo{Kind: execgate.ErrorKindUnauthenticated, Status: http.StatusUnauthorized, Message: "a bearer token is required (Authorization: Bearer <token>)"}, "no bearer token")
		return "", false
	case found == nil:
		w.Header().Set("WWW-Authenticate", `Bearer realm="execgate", error="invalid_token"`)
		a.deny(w, r, "", &errorInfo{Kind: execgate.ErrorKindUnauthenticated, Status: http.StatusUnauthorized, Message: "the bearer token is not valid"}, "unknown bearer token")
		return "", false
	case want != 0 && found.role != want:
		msg, reason := "this token belongs to a caller and cannot decide approvals", "caller token on an approver route"
		if found.role == roleApprover {
			msg, reason = "this token belongs to an approver and cannot call tools", "approver token on a caller route"
		}
		a.deny(w, r, found.principal, &errorInfo{Kind: execgate.ErrorKindRequest, Status: http.StatusForbidden, Message: msg}, reason)
		return "", false
	}
	return found.principal, true
}

// bearer returns the request's bearer token.
func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	if token == "" || len(token) > maxTokenBytes {
		return "", false
	}
	return token, true
}

// listTools serves GET /v1/tools, to callers and approvers alike: to a
// caller the tools shown to its principal (see apiOptions.Visible), to
// an approver every tool. Each tool's mcp_name is the name serve lists it
// under over MCP by default.
func (a *api) listTools(w http.ResponseWriter, r *http.Request) {
	principal, ok := a.authenticate(w, r, 0)
	if !ok {
		return
	}
	var shown func(execgate.CommandSpec) bool
	if c, _ := a.lookup(r); c == nil || c.role != roleApprover {
		shown = func(spec execgate.CommandSpec) bool { return a.shows(r.Context(), principal, spec) }
	}
	writeJSON(w, http.StatusOK, listShown(a.x.Allowlist(), false, shown))
}

// shows reports whether the tool of spec is shown to principal.
func (a *api) shows(ctx context.Context, principal string, spec execgate.CommandSpec) bool {
	return a.visible == nil || a.visible(ctx, principal, spec)
}

// showsName reports whether principal is shown the command or
// dispatcher name: a command served by a spec shown to principal (for one
// a dispatcher serves, the dispatcher and the command as
// mcpserver.SpecOf names it), or a dispatcher shown to principal.
func (a *api) showsName(ctx context.Context, principal, name string) bool {
	al := a.x.Allowlist()
	if d, ok := a.names.dispatcherSpec(al, name); ok {
		return a.shows(ctx, principal, d)
	}
	spec, ok := mcpserver.SpecOf(al, name)
	if !ok || !a.shows(ctx, principal, spec) {
		return false
	}
	if d, dispatched := al.Lookup(name); dispatched && d.Dispatch {
		return a.shows(ctx, principal, d)
	}
	return true
}

// callResponse is the body of a response to a call: 200 with Result, 202
// with Approval, or an error status with Error.
type callResponse struct {
	// Result is the record of the process (200 only).
	Result *execgate.Result `json:"result,omitempty"`
	// Status is "pending_approval" (202 only).
	Status string `json:"status,omitempty"`
	// Approval is the pending approval (202), or the approval that was
	// decided (responses to POST /v1/approvals/{id}).
	Approval *execgate.Approval `json:"approval,omitempty"`
	// Grant is the grant made with the approval, when the decision asked
	// for one; GrantError is why it was not made although the approved
	// call ran (responses to POST /v1/approvals/{id} only).
	Grant      *grantView `json:"grant,omitempty"`
	GrantError *errorInfo `json:"grant_error,omitempty"`
	// Location is where the caller learns the pending approval's outcome,
	// GET /v1/approvals/{id} (202 only); the Location header says the
	// same.
	Location string `json:"location,omitempty"`
	// Error is the refusal (4xx and 5xx).
	Error *errorInfo `json:"error,omitempty"`
	// TraceID names the call in the audit trail: the Result's ID when a
	// process ran. It is absent when the gate was not reached.
	TraceID string `json:"trace_id,omitempty"`
	// Policy is the policy's decision, when it was asked.
	Policy *policyInfo `json:"policy,omitempty"`
	// LatencyMS is how long the server spent on the call, in
	// milliseconds.
	LatencyMS int64 `json:"latency_ms"`
}

// callTool serves POST /v1/tools/{name}: the gate runs the call, or
// proposes it when the policy holds it for approval (Executor.Submit).
// The name is a command's own name or its MCP spelling, or a
// dispatcher's, whose subcommand is then the body's "subcommand" (see
// callNames and requested); the gate, the policy and the audit trail see
// the command's own name. While the server section lists no approvers, a
// call the policy holds is refused, as nothing could approve it.
func (a *api) callTool(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	principal, ok := a.authenticate(w, r, roleCaller)
	if !ok {
		return
	}
	input, ok := a.readBody(w, r, principal, maxBody)
	if !ok {
		return
	}
	requested := r.PathValue("name")
	ctx, slot := withSlot(execgate.WithPrincipal(r.Context(), principal))
	name, input, early := a.requested(ctx, principal, requested, input)
	switch {
	case early != nil && early.ambiguous:
		a.deny(w, r, principal, early.e, early.reason)
		return
	case early != nil:
		a.refuseEarly(ctx, w, r, early, slot, start)
		return
	}
	if wantsEventStream(r) {
		stream := &eventStream{w: w}
		ctx = execgate.WithWatch(ctx, stream.watch())
		w = &streamEnd{ResponseWriter: w, stream: stream}
	}
	noApprover := a.noApprover()
	sub, err := a.x.Submit(ctx, name, input, execgate.SubmitOptions{
		Reason: fmt.Sprintf("requested by %q via the HTTP API", principal),
		// With no approver, a held call is refused: nothing is stored
		// that no one could decide.
		NoPropose: noApprover != "",
	})
	var (
		nf *execgate.NotFoundError
		pe *execgate.PolicyError
	)
	switch {
	case errors.As(err, &nf):
		a.respond(w, http.StatusNotFound, callResponse{Error: a.noSuchTool(ctx, principal, requested)}, slot, start)
	case noApprover != "" && errors.As(err, &pe) && pe.Action == execgate.ActionRequireApproval:
		e := refusal(err)
		e.Message = mcpserver.NoApproverMessage(pe.Name, false, noApprover)
		a.respond(w, e.Status, callResponse{Error: e}, slot, start)
	case err != nil:
		a.refuse(w, err, slot, start)
	case sub.Op == execgate.OpPropose:
		ap := sub.Approval
		if err := a.pending.Add(ctx, ap); err != nil {
			a.reject(ctx, ap.ID)
			var su *storeUnavailableError
			if errors.As(err, &su) {
				a.respond(w, http.StatusServiceUnavailable, callResponse{Error: storeRefusal(err, name)}, slot, start)
				return
			}
			a.respond(w, http.StatusServiceUnavailable, callResponse{Error: &errorInfo{
				Kind: execgate.ErrorKindStoreFull, Name: name, Status: http.StatusServiceUnavailable,
				Message: fmt.Sprintf("execgate: %q needs a person's approval, and too many approvals are pending; nothing ran", name),
			}}, slot, start)
			return
		}
		loc := approvalPath(ap.ID)
		w.Header().Set("Location", loc)
		a.respond(w, http.StatusAccepted, callResponse{Status: "pending_approval", Approval: &ap, Location: loc}, slot, start)
	default:
		a.respond(w, http.StatusOK, callResponse{Result: &sub.Result}, slot, start)
	}
}

// earlyRefusal is the refusal of a call made before the gate is asked,
// with the few words its audit record gives.
type earlyRefusal struct {
	e      *errorInfo
	reason string
	// ambiguous marks the refusal of a name that spells two commands,
	// answered as a refusal of the request (see api.deny).
	ambiguous bool
}

// hiddenReason is the reason of the audit record of a call of a command
// hidden from its caller, refused as one that does not exist.
const hiddenReason = "the tool is hidden from this caller: its policy allows no call of it"

// requested returns the command name and input that principal's POST
// /v1/tools/{requested} with body asks the gate for, or the refusal of
// the call, made before the gate. requested names a command or a
// dispatcher (see resolve). A dispatcher is called as over MCP: body is
// a JSON object whose "subcommand" names the subcommand, and the rest is
// the input (mcpserver.DispatchCall); a subcommand with its own command
// shown to principal is refused with a pointer to it, since its input has
// another shape. A command or dispatcher hidden from principal (see
// apiOptions.Visible), and a subcommand of a dispatcher that principal's
// policy never allows, under either spelling, is refused as one that does
// not exist, word for word, and the gate, whose refusal would tell its
// policy's deny, is not asked.
func (a *api) requested(ctx context.Context, principal, requested string, body json.RawMessage) (string, json.RawMessage, *earlyRefusal) {
	name, dispatcher, ambiguous := a.resolve(ctx, principal, requested)
	if ambiguous != nil {
		return "", nil, &earlyRefusal{ambiguous: true, reason: "ambiguous tool name", e: &errorInfo{Kind: execgate.ErrorKindNotFound, Status: http.StatusNotFound, Name: requested,
			Message: fmt.Sprintf("execgate: %q could mean the command %q or %q; nothing ran: call it by the command's own name (POST /v1/tools/%s)",
				requested, ambiguous[0], ambiguous[1], ambiguous[0])}}
	}
	hidden := func() *earlyRefusal {
		return &earlyRefusal{reason: hiddenReason, e: a.noSuchTool(ctx, principal, requested)}
	}
	if !dispatcher {
		if _, ok := a.x.Allowlist().Lookup(name); ok && !a.showsName(ctx, principal, name) {
			return "", nil, hidden()
		}
		return name, body, nil
	}
	d, _ := a.names.dispatcherSpec(a.x.Allowlist(), name)
	if !a.shows(ctx, principal, d) {
		return "", nil, hidden()
	}
	name, input, err := mcpserver.DispatchCall(d.Name, body)
	if err != nil {
		return "", nil, &earlyRefusal{e: refusal(err), reason: "the subcommand argument of a dispatcher was refused"}
	}
	sub := name[len(d.Name)+1:]
	if own, ok := a.x.Allowlist().Lookup(name); ok && !own.Dispatch {
		if !a.shows(ctx, principal, own) {
			return "", nil, &earlyRefusal{reason: hiddenReason, e: noSubcommand(d.Name, name, sub)}
		}
		return "", nil, &earlyRefusal{reason: "a subcommand with a tool of its own was called through the dispatcher", e: refusal(&execgate.ValidationError{
			Name: d.Name, Issues: []execgate.Issue{{Field: mcpserver.SubcommandProperty, Message: fmt.Sprintf("%q has its own tool; call POST /v1/tools/%s instead", name, name)}},
		})}
	}
	if !a.showsName(ctx, principal, name) {
		return "", nil, &earlyRefusal{reason: hiddenReason, e: noSubcommand(d.Name, name, sub)}
	}
	return name, input, nil
}

// refuseEarly writes refused, a refusal of principal's call made before
// the gate, and records it under the command name it is about, with the
// call's context, so that the response names the record's trace ID as a
// refusal of the gate would.
func (a *api) refuseEarly(ctx context.Context, w http.ResponseWriter, r *http.Request, refused *earlyRefusal, slot *eventSlot, start time.Time) {
	ref := execgate.Refusal{Route: route(r), Name: cmp.Or(refused.e.Name, r.PathValue("name")), Kind: refused.e.Kind, Reason: refused.reason}
	if err := a.x.RecordRefusal(ctx, ref); err != nil {
		a.log.Error("execgate: a refused request could not be recorded in the audit trail", "route", ref.Route, "reason", ref.Reason, "error", err)
	}
	a.respond(w, refused.e.Status, callResponse{Error: refused.e}, slot, start)
}

// resolve returns the command or dispatcher that the name of POST
// /v1/tools/{name} asks principal's call for, and whether it is a
// dispatcher (see callNames), with those hidden from principal left out
// of an ambiguous spelling: a spelling of one shown and one hidden is
// the shown one's, and a refusal never names a hidden one.
func (a *api) resolve(ctx context.Context, principal, requested string) (string, bool, []string) {
	al := a.x.Allowlist()
	name, dispatcher, ambiguous := a.names.resolve(al, requested)
	if ambiguous == nil {
		return name, dispatcher, nil
	}
	var shown []string
	for _, n := range ambiguous {
		if a.showsName(ctx, principal, n) {
			shown = append(shown, n)
		}
	}
	switch len(shown) {
	case 0:
		return requested, false, nil
	case 1:
		_, dispatcher = a.names.dispatcherSpec(al, shown[0])
		return shown[0], dispatcher, nil
	}
	return "", false, shown
}

// maxNamesShown bounds the commands a refusal names as what to call
// instead.
const maxNamesShown = 10

// noSuchTool is the refusal of a call of requested, a name that no
// command shown to principal has (nor its MCP spelling). It names only
// commands shown to principal: the dispatcher whose subcommand requested
// would be, when the subcommand is not one it serves to principal
// ("deploy_Prod", which is no subcommand, or "deploy.prod" when
// principal's policy never allows it), else the other commands of the
// tool it looks like one of ("terraform.nope" when terraform.plan is
// shown), and otherwise none.
func (a *api) noSuchTool(ctx context.Context, principal, requested string) *errorInfo {
	e := &errorInfo{Kind: execgate.ErrorKindNotFound, Status: http.StatusNotFound, Name: requested,
		Message: fmt.Sprintf("execgate: no such tool %q; nothing ran: GET /v1/tools lists the tools you can call", requested)}
	fam, sub := requested, ""
	_, members := a.family(ctx, principal, fam)
	if len(members) > 0 {
		e.Message = fmt.Sprintf("execgate: there is no tool %q, and its commands are called by their own names; nothing ran: call %s", fam, quoteNames(members))
		return e
	}
	i := strings.LastIndexAny(requested, "._")
	if i <= 0 {
		return e
	}
	fam, sub = requested[:i], requested[i+1:]
	disp, members := a.family(ctx, principal, fam)
	switch {
	case disp != "" && !inputrules.ValidSubcommand(sub):
		e.Message = fmt.Sprintf("execgate: the tool %q has no subcommand %q (a subcommand matches %s); nothing ran: call it as POST /v1/tools/%s with {%q: \"<subcommand>\", ...}",
			disp, sub, inputrules.SubcommandPattern, disp, mcpserver.SubcommandProperty)
	case disp != "":
		e.Message = noSubcommand(disp, requested, sub).Message
	case len(members) > 0:
		e.Message = fmt.Sprintf("execgate: the tool %q has no subcommand %q; nothing ran: call %s", fam, sub, quoteNames(members))
	}
	return e
}

// noSubcommand is the refusal of a call of the command name, the
// subcommand sub of the dispatcher disp, which disp does not serve to its
// caller: the same words whether the command exists and is hidden from
// the caller or does not exist at all.
func noSubcommand(disp, name, sub string) *errorInfo {
	return &errorInfo{Kind: execgate.ErrorKindNotFound, Status: http.StatusNotFound, Name: name,
		Message: fmt.Sprintf("execgate: the tool %q has no subcommand %q that you can call; nothing ran: call it with another %q, or call another tool that GET /v1/tools lists",
			disp, sub, mcpserver.SubcommandProperty)}
}

// family returns the dispatcher shown to principal that fam names, by
// its name or its MCP name, or "", and the commands shown to principal
// whose name is fam's, or fam's MCP spelling, followed by '.' and one
// more segment, sorted.
func (a *api) family(ctx context.Context, principal, fam string) (disp string, members []string) {
	for _, s := range a.x.Allowlist().Specs() {
		if s.Dispatch {
			if (s.Name == fam || mcpserver.ToolName(s.Name) == fam) && a.shows(ctx, principal, s) {
				disp = s.Name
			}
			continue
		}
		j := strings.LastIndexByte(s.Name, '.')
		if j <= 0 {
			continue
		}
		if head := s.Name[:j]; (head == fam || mcpserver.ToolName(head) == fam) && a.shows(ctx, principal, s) {
			members = append(members, s.Name)
		}
	}
	return disp, members
}

// quoteNames lists command names for a refusal, at most maxNamesShown
// of them.
func quoteNames(names []string) string {
	var b strings.Builder
	if len(names) > 1 {
		b.WriteString("one of ")
	}
	for i, n := range names {
		if i == maxNamesShown {
			fmt.Fprintf(&b, " and %d more in GET /v1/tools", len(names)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "POST /v1/tools/%s", n)
	}
	return b.String()
}

// listApprovals serves GET /v1/approvals, to approvers.
func (a *api) listApprovals(w http.ResponseWriter, r *http.Request) {
	approver, ok := a.authenticate(w, r, roleApprover)
	if !ok {
		return
	}
	list, err := a.pending.List(r.Context())
	if err != nil {
		a.deny(w, r, approver, storeRefusal(err, ""), "approval store unavailable")
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Approvals []execgate.Approval `json:"approvals"`
	}{list})
}

// decision is the body of POST /v1/approvals/{id}.
type decision struct {
	Action string `json:"action"`
	// Grant, with approve, also grants the approval's principal its
	// command for that long, a duration such as "30m" (see grants.go).
	Grant *string `json:"grant"`
}

// decideApproval serves POST /v1/approvals/{id}, to approvers: approve
// executes the pending approval once, reject withdraws it. What became of
// it is kept for its proposer (see approvalState). Approve with a grant
// also grants the approval's principal its command for a while, once the
// call ran, before its proposer can learn of it; a grant that cannot
// apply is refused with the approval still pending (see grantBook).
func (a *api) decideApproval(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	approver, ok := a.authenticate(w, r, roleApprover)
	if !ok {
		return
	}
	body, ok := a.readBody(w, r, approver, maxApprovalBody)
	if !ok {
		return
	}
	// The gate's own strict decoder (invariant 4): a duplicate key, a
	// key that matches only case-insensitively ({"action": "reject",
	// "ACTION": "approve"}), an unknown one or trailing data is refused,
	// never read as one of the spellings.
	var d decision
	if err := strictjson.Decode(body, &d); err != nil {
		a.deny(w, r, approver, &errorInfo{Kind: execgate.ErrorKindRequest, Status: http.StatusBadRequest, Message: `the body must be {"action": "approve"}, {"action": "approve", "grant": "30m"} or {"action": "reject"}`}, "malformed body")
		return
	}
	if d.Action != "approve" && d.Action != "reject" {
		a.deny(w, r, approver, &errorInfo{Kind: execgate.ErrorKindValidation, Status: http.StatusUnprocessableEntity, Message: `action must be "approve" or "reject"`,
			Issues: []execgate.Issue{{Field: "action", Message: `must be "approve" or "reject"`}}}, "unknown action")
		return
	}
	length, refused := a.grants.length(d)
	if refused != nil {
		a.deny(w, r, approver, refused.info, refused.reason)
		return
	}
	id := r.PathValue("id")
	errSelf := errors.New("self")
	var fp string // the spec's fingerprint when taken, for the grant
	ap, found, err := a.pending.Take(r.Context(), id, d.Action == "approve", func(ap execgate.Approval) error {
		if ap.Principal == approver {
			return errSelf
		}
		if length == 0 {
			return nil
		}
		fp, _ = a.x.Allowlist().Fingerprint(ap.Name)
		if refused := a.grants.applies(ap); refused != nil {
			return refused
		}
		return nil
	})
	var su *storeUnavailableError
	switch {
	case errors.As(err, &su):
		a.deny(w, r, approver, storeRefusal(err, ""), "approval store unavailable")
		return
	case !found:
		a.deny(w, r, approver, &errorInfo{Kind: execgate.ErrorKindApproval, Reason: execgate.ReasonUnknown, Status: http.StatusNotFound,
			Message: "no such pending approval: it was never issued here, was already decided, or expired"}, execgate.ReasonUnknown)
		return
	case errors.As(err, &refused):
		a.deny(w, r, approver, refused.info, refused.reason)
		return
	case err != nil:
		a.deny(w, r, approver, &errorInfo{Kind: execgate.ErrorKindRequest, Status: http.StatusForbidden,
			Message: "an approver cannot decide an approval of its own call"}, "self-approval")
		return
	}
	// Taken, it must be settled, whatever happens.
	settled := false
	settle := func(state mcpserver.ApprovalState, res *execgate.Result, err error) {
		settled = true
		// The decision is recorded even when the request has gone, and
		// again until the store takes it (see settleLater).
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 30*time.Second)
		defer cancel()
		if serr := a.pending.Settle(ctx, ap.ID, approver, state, res, err); serr != nil {
			a.log.Error("execgate: the decision on an approval could not be recorded in the approval store; retrying", "approval", ap.ID, "state", string(state), "error", serr)
			go a.settleLater(ap.ID, approver, state, res, err)
		}
	}
	defer func() {
		if !settled {
			settle(mcpserver.ApprovalFailed, nil, errors.New("the decision did not finish"))
		}
	}()
	ctx, slot := withSlot(execgate.WithPrincipal(r.Context(), approver))
	if d.Action == "reject" {
		removed, err := a.x.Reject(ctx, ap.ID)
		if err == nil && !removed {
			err = &execgate.ApprovalError{ID: ap.ID, Reason: execgate.ReasonUnknown}
		}
		if err != nil {
			settle(mcpserver.ApprovalFailed, nil, err)
			a.refuse(w, err, slot, start)
			return
		}
		settle(mcpserver.ApprovalRejected, nil, nil)
		a.respond(w, http.StatusOK, callResponse{Status: "rejected", Approval: &ap}, slot, start)
		return
	}
	res, err := a.x.Execute(ctx, ap)
	if err != nil {
		if recordLeftPending(err) {
			// The store never took the record: the approval is put back
			// for the approvers rather than burnt.
			settled = true
			a.release(ap.ID)
		} else {
			settle(mcpserver.ApprovalFailed, nil, err)
		}
		a.refuse(w, err, slot, start)
		return
	}
	resp := callResponse{Result: &res, Approval: &ap}
	if length > 0 {
		resp.Grant, resp.GrantError = a.grants.grant(execgate.WithPrincipal(context.WithoutCancel(r.Context()), approver), ap, fp, length)
	}
	settle(mcpserver.ApprovalApproved, &res, nil)
	a.respond(w, http.StatusOK, resp, slot, start)
}

// reject withdraws an approval that could not be handed to approvers.
func (a *api) reject(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := a.x.Reject(ctx, id); err != nil {
		a.log.Error("execgate: reject failed", "approval", id, "error", err)
	}
}

// respond writes body with the trace ID, decision and latency of the
// call recorded in slot.
func (a *api) respond(w http.ResponseWriter, status int, body callResponse, slot *eventSlot, start time.Time) {
	if ev, ok := slot.last(); ok {
		body.TraceID, body.Policy = ev.TraceID, policyOf(ev)
	}
	body.LatencyMS = time.Since(start).Milliseconds()
	if se, ok := w.(*streamEnd); ok && se.stream.end(body) {
		return
	}
	if se, ok := w.(*streamEnd); ok {
		w = se.ResponseWriter
	}
	if body.Error != nil {
		setRetryAfter(w, body.Error)
	}
	writeJSON(w, status, body)
}

// streamEnd is the ResponseWriter of a call that streams its events: the
// response, once the call is over, is the stream's result event if the
// stream has started, or the plain response if it has not.
type streamEnd struct {
	http.ResponseWriter
	stream *eventStream
}

// refuse writes the refusal err. The gate has recorded it.
func (a *api) refuse(w http.ResponseWriter, err error, slot *eventSlot, start time.Time) {
	e := refusal(err)
	if e.Kind == execgate.ErrorKindInternal {
		a.log.Error("execgate: call failed", "error", err)
	}
	a.respond(w, e.Status, callResponse{Error: e}, slot, start)
}

// readBody reads the body of principal's request, of at most limit
// bytes, refusing a body that is larger (413), not JSON by its
// Content-Type (415) or cut short (400). An empty body reads as nil.
func (a *api) readBody(w http.ResponseWriter, r *http.Request, principal string, limit int64) ([]byte, bool) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			a.deny(w, r, principal, &errorInfo{Kind: execgate.ErrorKindRequest, Status: http.StatusUnsupportedMediaType, Message: "the body must be JSON, sent with Content-Type: application/json (or no Content-Type)"}, "content type is not JSON")
			return nil, false
		}
	}
	tooLarge := &errorInfo{Kind: execgate.ErrorKindRequest, Status: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf("the body is larger than %d bytes", limit)}
	if r.ContentLength > limit {
		a.deny(w, r, principal, tooLarge, "body too large")
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		a.deny(w, r, principal, tooLarge, "body too large")
		return nil, false
	case err != nil:
		a.deny(w, r, principal, &errorInfo{Kind: execgate.ErrorKindRequest, Status: http.StatusBadRequest, Message: "the body could not be read"}, "body cut short")
		return nil, false
	}
	if len(body) == 0 {
		return nil, true
	}
	return body, true
}

// writeError writes a refusal made before the gate was reached.
func writeError(w http.ResponseWriter, e *errorInfo) {
	setRetryAfter(w, e)
	writeJSON(w, e.Status, struct {
		Error *errorInfo `json:"error"`
	}{e})
}

// setRetryAfter says, on a refusal that gives one, when to try again.
func setRetryAfter(w http.ResponseWriter, e *errorInfo) {
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"kind":"internal","message":"the response could not be encoded"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
