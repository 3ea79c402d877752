package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/mcpserver"
)

// mcpPath is the path serve --mcp-http serves MCP at. Every other path
// is the approval routes' or a JSON 404.
const mcpPath = "/mcp"

// maxMCPBody bounds the body of a request to mcpPath: the bound of a line
// over stdio, four times the gate's input cap, so that a call whose
// arguments are over that cap still reaches the gate and gets its typed
// refusal.
const maxMCPBody = mcpserver.MaxFrameBytes

// statelessVersion is the first MCP protocol version served without
// sessions: a request that names it, or a later one, in its
// Mcp-Protocol-Version header stands alone (SEP-2575).
const statelessVersion = "2026-07-28"

// Bounds of the sessions of the protocol versions before
// statelessVersion: a session that receives no request for
// mcpSessionIdle is closed (a client is then told 404 and opens a new
// one), and no more than maxMCPSessions are open at once.
const (
	mcpSessionIdle = time.Hour
	maxMCPSessions = 1000
	// maxMCPSessionsPerToken bounds the sessions one token holds, so
	// that one caller cannot fill maxMCPSessions for every other.
	maxMCPSessionsPerToken = 100
)

// listenMethod is the method of a request that opens a stream of
// notifications (protocol 2026-07-28), which the SDK checks against the
// request's Mcp-Method header.
const listenMethod = "subscriptions/listen"

// principalKey is where the token middleware puts a caller's principal in
// the SDK's auth.TokenInfo, which the SDK hands to each request it
// carries (mcp.RequestExtra.TokenInfo).
const principalKey = "execgate.principal"

// mcpHTTP serves MCP over Streamable HTTP at mcpPath, for the callers of
// the server section's tokens, and the approval routes of api on every
// other path. Each request is checked here before the SDK sees it (see
// admit), and is made as the principal of its own bearer token.
type mcpHTTP struct {
	api *api              // the tokens, the refusals and the approval routes
	ms  *mcpserver.Server // the tools, for reloads
	mcp *mcp.Server       // ms's: counts and closes the sessions

	// sessions serves the protocol versions before statelessVersion, in
	// sessions bound to the token that opened them; stateless serves
	// statelessVersion and later. Both take the caller from the
	// TokenInfo that the SDK's token middleware puts in the request.
	sessions, stateless http.Handler

	// opening serializes the requests that may open a session, from the
	// count to the session's creation, so that requests racing past the
	// bounds cannot open more than they allow; owners maps each session
	// ID such a request opened to the hash of its token.
	opening  sync.Mutex
	ownersMu sync.Mutex
	owners   map[string]string

	// stop is done when serve stops: a stream that only waits for
	// notifications (a GET, a subscriptions/listen), which would otherwise
	// hold its connection open for the whole shutdown grace, ends then.
	stop context.Context
}

// credentialKey is the context key of the caller's credential, from
// admit to the SDK's token middleware.
type credentialKey struct{}

// tokenInfo is what the SDK keeps of a caller that admit let in.
type tokenInfo struct {
	principal string
	userID    string // the hex SHA-256 of the token: a session belongs to it
}

// newMCPHTTP returns the handler of serve --mcp-http for ms, whose
// callers and approval routes are those of a. stop ends the standalone
// streams when serve stops.
func newMCPHTTP(stop context.Context, a *api, ms *mcpserver.Server) *mcpHTTP {
	server := func(*http.Request) *mcp.Server { return ms.MCPServer() }
	// The token was checked by admit, which hands over what it found; the
	// SDK's middleware only puts it where the SDK looks for it. A session
	// is bound to the token's hash (UserID): the SDK refuses a request
	// with another token under it (403).
	withToken := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		c, ok := ctx.Value(credentialKey{}).(tokenInfo)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: c.userID, Extra: map[string]any{principalKey: c.principal}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	opts := func(stateless bool) *mcp.StreamableHTTPOptions {
		return &mcp.StreamableHTTPOptions{
			Stateless:           stateless,
			SessionTimeout:      mcpSessionIdle,
			MaxRequestBodyBytes: maxMCPBody,
			Logger:              a.log,
		}
	}
	return &mcpHTTP{
		api:       a,
		ms:        ms,
		mcp:       ms.MCPServer(),
		sessions:  withToken(mcp.NewStreamableHTTPHandler(server, opts(false))),
		stateless: withToken(mcp.NewStreamableHTTPHandler(server, opts(true))),
		stop:      stop,
	}
}

// tokenPrincipal is the Options.PrincipalFrom of serve --mcp-http: the
// principal of the token of the HTTP request that carried req, which
// admit found.
func tokenPrincipal(req mcp.Request) (string, bool) {
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return "", false
	}
	p, ok := extra.TokenInfo.Extra[principalKey].(string)
	return p, ok && p != ""
}

// ServeHTTP implements http.Handler.
func (h *mcpHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.EscapedPath() != mcpPath {
		h.api.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	info, ok := h.admit(w, r)
	if !ok {
		return
	}
	ctx := context.WithValue(r.Context(), credentialKey{}, info)
	if r.Method == http.MethodGet || r.Header.Get("Mcp-Method") == listenMethod {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(h.stop, cancel)()
	}
	next := h.sessions
	if r.Header.Get("Mcp-Protocol-Version") >= statelessVersion {
		next = h.stateless
	}
	rw := &statusWriter{ResponseWriter: w}
	if opensSession(r) {
		// Counted and created under one lock (see admitSession).
		h.opening.Lock()
		if !h.admitSession(w, r, info) {
			h.opening.Unlock()
			return
		}
		next.ServeHTTP(rw, r.WithContext(ctx))
		if id := w.Header().Get("Mcp-Session-Id"); id != "" {
			h.ownersMu.Lock()
			if h.owners == nil {
				h.owners = make(map[string]string)
			}
			h.owners[id] = info.userID
			h.ownersMu.Unlock()
		}
		h.opening.Unlock()
	} else {
		next.ServeHTTP(rw, r.WithContext(ctx))
	}
	if rw.status >= 400 {
		h.recordTransportRefusal(r, info.principal, rw.status)
	}
}

// admit checks a request to mcpPath before the SDK reads it, and returns
// its caller. A request is refused, with a JSON error recorded in the
// audit trail as the HTTP API records its refusals, when its method is
// not one of Streamable HTTP's (405); when its URL has a query, where a
// client that puts a token in a URL puts it (400); when a browser sends
// it from a web page (403: this server serves none, so any Origin is
// another's); when it reaches a loopback address under a Host that is
// not loopback, as a page does through DNS rebinding (403); without a
// caller's valid bearer token (401 with WWW-Authenticate, or 403 for an
// approver's); with a body over maxMCPBody (413); and when it would open
// a session while maxMCPSessions are open (503).
func (h *mcpHTTP) admit(w http.ResponseWriter, r *http.Request) (tokenInfo, bool) {
	refuse := func(status int, kind, message, reason string) (tokenInfo, bool) {
		h.api.deny(w, r, h.api.identify(r), &errorInfo{Kind: kind, Status: status, Message: message}, reason)
		return tokenInfo{}, false
	}
	switch r.Method {
	case http.MethodGet, http.MethodPost, http.MethodDelete:
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		return refuse(http.StatusMethodNotAllowed, execgate.ErrorKindRequest,
			"method not allowed; MCP over Streamable HTTP uses POST (and GET and DELETE for a session)", "method not allowed")
	}
	if r.URL.RawQuery != "" || r.URL.ForceQuery {
		return refuse(http.StatusBadRequest, execgate.ErrorKindRequest,
			"the MCP endpoint takes no query string; send the token in the Authorization header (Authorization: Bearer <token>), never in a URL", "query string")
	}
	if r.Header.Get("Origin") != "" || !secFetchSiteOK(r.Header.Get("Sec-Fetch-Site")) {
		return refuse(http.StatusForbidden, execgate.ErrorKindRequest,
			"a request from a web page (it carries Origin, or Sec-Fetch-Site) is refused: this server serves no pages, so no page may call it; connect with an MCP client", "request from a web page")
	}
	if rebound(r) {
		return refuse(http.StatusForbidden, execgate.ErrorKindRequest,
			fmt.Sprintf("the Host header %q does not name this machine, which this loopback server answers only as 127.0.0.1, ::1 or localhost (a web page reaches it under another name through DNS rebinding); connect to a loopback address", cut(r.Host, maxRoutePath)),
			"host is not loopback")
	}
	principal, ok := h.api.authenticate(w, r, roleCaller)
	if !ok {
		return tokenInfo{}, false
	}
	// authenticate found the token the request presents.
	token, _ := bearer(r)
	sum := sha256.Sum256([]byte(token))
	info := tokenInfo{principal: principal, userID: hex.EncodeToString(sum[:])}
	if r.ContentLength > maxMCPBody {
		h.api.deny(w, r, principal, &errorInfo{Kind: execgate.ErrorKindRequest, Status: http.StatusRequestEntityTooLarge,
			Message: fmt.Sprintf("the body is larger than %d bytes", maxMCPBody)}, "body too large")
		return tokenInfo{}, false
	}
	return info, true
}

// opensSession reports whether r may open a session: a POST without a
// session ID, of a protocol version served in sessions.
func opensSession(r *http.Request) bool {
	return r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" &&
		r.Header.Get("Mcp-Protocol-Version") < statelessVersion
}

// admitSession refuses (503, recorded) a request that would open a
// session while maxMCPSessions are open, or while its token holds
// maxMCPSessionsPerToken. The caller holds h.opening.
func (h *mcpHTTP) admitSession(w http.ResponseWriter, r *http.Request, info tokenInfo) bool {
	all, mine := h.openSessions(info.userID)
	var msg string
	switch {
	case all >= maxMCPSessions:
		msg = fmt.Sprintf("%d MCP sessions are open, as many as this server holds", maxMCPSessions)
	case mine >= maxMCPSessionsPerToken:
		msg = fmt.Sprintf("this token holds %d MCP sessions, as many as one token may", maxMCPSessionsPerToken)
	default:
		return true
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(mcpSessionIdle/time.Second)))
	h.api.deny(w, r, info.principal, &errorInfo{Kind: execgate.ErrorKindRequest, Status: http.StatusServiceUnavailable,
		Message: fmt.Sprintf("%s; close one (DELETE with its Mcp-Session-Id), or wait: a session unused for %s is closed", msg, mcpSessionIdle)},
		"too many sessions")
	return false
}

// secFetchSiteOK reports whether a Sec-Fetch-Site value, which browsers
// send, leaves the request to the other checks: absent (not a browser),
// or "none" (a person typed the URL).
func secFetchSiteOK(v string) bool {
	return v == "" || v == "none"
}

// rebound reports whether r reached a loopback address under a Host that
// is not loopback.
func rebound(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return false
	}
	lhost, _, err := net.SplitHostPort(local.String())
	if err != nil || !config.IsLoopbackHost(lhost) {
		return false
	}
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = strings.TrimSuffix(strings.TrimPrefix(r.Host, "["), "]")
	}
	// As the SDK judges it, which refuses the same requests after this.
	if host == "localhost" {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err != nil || !ip.IsLoopback()
}

// openSessions counts the MCP sessions open now, and those of them that
// the token with hash userID opened; it forgets the owners of sessions
// that have closed.
func (h *mcpHTTP) openSessions(userID string) (all, mine int) {
	open := map[string]bool{}
	for ss := range h.mcp.Sessions() {
		open[ss.ID()] = true
	}
	h.ownersMu.Lock()
	defer h.ownersMu.Unlock()
	for id, owner := range h.owners {
		switch {
		case !open[id]:
			delete(h.owners, id)
		case owner == userID:
			mine++
		}
	}
	return len(open), mine
}

// recordTransportRefusal records a request that the SDK refused with an
// HTTP error status (a session that is unknown or another token's, a
// malformed message, a missing Accept), under the caller's principal, as
// the HTTP API records its refusals. The reason names the status only:
// the SDK's text is not the audit trail's vocabulary.
func (h *mcpHTTP) recordTransportRefusal(r *http.Request, principal string, status int) {
	kind := execgate.ErrorKindRequest
	if status >= 500 {
		kind = execgate.ErrorKindInternal
	}
	reason := "refused by the MCP transport (HTTP " + strconv.Itoa(status) + ")"
	if status == http.StatusForbidden {
		reason = "session of another token"
	}
	ctx := execgate.WithPrincipal(context.WithoutCancel(r.Context()), principal)
	if err := h.api.x.RecordRefusal(ctx, execgate.Refusal{Route: route(r), Kind: kind, Reason: reason}); err != nil {
		h.api.log.Error("execgate: a refused request could not be recorded in the audit trail", "route", route(r), "reason", reason, "error", err)
	}
}

// statusWriter remembers the status of the response it writes. It lets
// the SDK flush its event streams (http.ResponseController finds the
// connection's writer through Unwrap).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap returns the ResponseWriter it wraps, for http.ResponseController.
func (w *statusWriter) Unwrap() http.ResponseWriter {
	return w.ResponseWriter
}

// serveMCPHTTP serves g over MCP on Streamable HTTP at lc, with the
// approval routes beside it, until ctx is done.
func (c *cli) serveMCPHTTP(ctx context.Context, o *serveOptions, g *gate, srv *config.Server, lc *listenConfig, logger *slog.Logger) int {
	if len(srv.Tokens) == 0 {
		return c.fail(exitUsage, fmt.Errorf("%s: the server section lists no tokens, so no MCP client could connect over HTTP; add server.tokens (execgate token makes one)", o.config))
	}
	h, err := newMCPHTTPServer(ctx, g, srv, o.logicalNames, logger, newLogger(c.stderr, o.logFormat, slog.LevelWarn))
	if err != nil {
		return c.mcpServerFailed(o, err)
	}
	warnNeverRun(ctx, logger, g, tokenAudience(srv, true))
	defer reloadOnHangup(ctx, &reloader{path: o.config, log: logger, x: g.x, cur: g.loaded, mcp: h.ms, apis: []*api{h.api},
		needTokens: true, logicalNames: o.logicalNames, mcpHTTP: true, notify: g.notify,
		gate: g, audience: mcpHTTPAudience(srv.MCPHTTPElicitation)})()
	err = c.serveHTTP(ctx, lc, h, "MCP over Streamable HTTP (path "+mcpPath+") and the approval routes", logger)
	h.closeSessions()
	if err != nil {
		return c.fail(exitFailed, err)
	}
	return exitOK
}

// newMCPHTTPServer returns what serve --mcp-http serves for g with the
// server section srv: the MCP server of g's allowlist, whose every call
// runs as its token's principal, which is shown only the tools its policy
// could allow or hold (gate.visible), and whose held calls go to a pending
// set that the approval routes serve, or, with srv.MCPHTTPElicitation, to
// the client's user first. stop ends the standalone streams; logger gets
// the HTTP side's records, mcpLogger the MCP server's.
func newMCPHTTPServer(stop context.Context, g *gate, srv *config.Server, logicalNames bool, logger, mcpLogger *slog.Logger) (*mcpHTTP, error) {
	pending := g.book()
	a, err := newAPI(apiOptions{Executor: g.x, Server: srv, Pending: pending, ApprovalsOnly: true, Logger: logger, Grants: g.grants})
	if err != nil {
		return nil, err
	}
	mode := mcpserver.ApprovalsPending
	if srv.MCPHTTPElicitation {
		mode = mcpserver.ApprovalsElicit
	}
	ms, err := mcpserver.New(g.x, mcpserver.Options{
		Allowlist:     g.loaded.Allowlist,
		PrincipalFrom: tokenPrincipal,
		Visible:       g.visible,
		Approvals:     mode,
		OnPending:     pending.Add,
		// A held call waits for the approvers of the server section in
		// force; while it lists none, one the client cannot put to its
		// user is refused, not left pending for no one.
		NoApprover:   a.noApprover,
		Outcomes:     pending,
		ApprovalWait: srv.ApprovalWait,
		Logger:       mcpLogger,

		LogicalNames: logicalNames,
	})
	if err != nil {
		return nil, err
	}
	return newMCPHTTP(stop, a, ms), nil
}

// closeSessions closes every MCP session, once the HTTP server is down:
// a call still running in one, whose answer no one can receive now, is
// canceled with it.
func (h *mcpHTTP) closeSessions() {
	for ss := range h.mcp.Sessions() {
		_ = ss.Close()
	}
}

// mcpHTTPAudience returns who calls and approves over MCP on Streamable
// HTTP after a reload, given the new file's server section: its tokens
// and approvers, which a reload applies, and the mcp_http_elicitation
// serve started with (elicitation), which it does not.
func mcpHTTPAudience(elicitation bool) func(*config.Server) audience {
	return func(srv *config.Server) audience {
		inForce := *srv
		inForce.MCPHTTPElicitation = elicitation
		return tokenAudience(&inForce, true)
	}
}
