package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/execgate/execgate/audit"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/mcpserver"
)

// shutdownGrace is how long a stopping HTTP server lets running calls
// finish before it closes their connections, which cancels them (their
// process groups are killed).
const shutdownGrace = 10 * time.Second

var serveCmd = &command{
	name:    "serve",
	summary: "serve the allowlist over MCP on stdio or Streamable HTTP, or as an HTTP API",
	usage: `Usage:

	execgate serve --config FILE [--principal P] [--approvals MODE] [--approver-http ADDR] [--logical-names] [--audit FILE] [--otel] [--log-format json|text]
	execgate serve --config FILE --mcp-http ADDR [--tls-cert FILE --tls-key FILE | --insecure] [--logical-names] [--audit FILE] [--otel] [--log-format json|text]
	execgate serve --config FILE --http ADDR [--tls-cert FILE --tls-key FILE | --insecure] [--audit FILE] [--otel] [--log-format json|text]

Without --http or --mcp-http, serve speaks the Model Context Protocol on
stdin and stdout: every command name of the configuration is a tool, and
every call runs as one principal, --principal or else the
configuration's server.principal. A tool is listed under its command
name with each '.' made '_' ("git_log" for "git.log"; "execgate tools"
shows each tool's mcp_name), a name every mainstream MCP client accepts;
the policies, grants and the audit trail still see "git.log". Two
command names that would be listed alike ("a.b" and "a_b") make serve
refuse to start. --logical-names lists the command names themselves,
dots included, for clients that accept them. A call the policy holds for approval is, by
--approvals: elicit (the default) asked of the client's user when the
client supports elicitation, else left pending; pending (the default with
--approver-http, which refuses elicit), always left pending for an
out-of-band approver; refuse, refused. Pending approvals can be decided
only through --approver-http ADDR, which serves the approval routes of the
HTTP API (GET /v1/approvals, POST /v1/approvals/{id}) to the
configuration's server.approvers; without it nothing could decide one,
so a held call that the client's user is not asked about is refused,
saying so, and nothing is left pending. An agent told pending learns
what became of it by calling the tool again with the same arguments
once a person has decided (the Result of an approved call is handed out
once); server.approval_wait makes a held call wait that long for the
decision. Nothing but MCP is written on stdout; logs go to stderr.

With --mcp-http ADDR, serve speaks MCP over Streamable HTTP instead, at
http://ADDR/mcp, to the callers listed with their token hashes in the
configuration's server section: every request carries "Authorization:
Bearer TOKEN", and every call runs as that token's principal. Protocol
2026-07-28 is served without sessions; the versions before it
(2025-11-25 down to 2024-11-05) in sessions, each bound to the token that
opened it. A call the policy holds for approval waits for the
configuration's approvers, who decide it at the same address (GET
/v1/approvals, POST /v1/approvals/{id}); a client's answer to an
elicitation approves it only where the server section sets
mcp_http_elicitation: true, since the client may be the agent itself.
While the server section lists no approvers, a held call that no
client's user is asked about is refused, saying that nothing can approve
it. The agent learns the outcome as over stdio, or with GET
/v1/approvals/{id} and its own token.

With --http ADDR, serve is the HTTP API instead, for the callers and
approvers listed with their token hashes in the configuration's server
section (see "go doc github.com/execgate/execgate/cmd/execgate" for the
routes and responses, and for what --mcp-http supports); while it lists
no approvers, a held call is refused, saying so.

A dispatcher (terraform, with plan and apply as its subcommands) is
called the same way everywhere: by its name, with the subcommand in the
input's "subcommand" ({"subcommand": "plan", "args": [...]}), as the MCP
tool terraform, POST /v1/tools/terraform and execgate run terraform;
each call is decided as the command terraform.plan.

At start, serve warns on stderr about each tool that no call can run on
the transport it serves: one the policy denies to every caller (the
stdio principal, or the principals of the tokens), or whose every call
that is not denied needs an approval nothing can give.

For --mcp-http and --http, ADDR is HOST:PORT; an empty host (":8080")
means 127.0.0.1, and port 0 picks a free port. The address served is
printed on stderr. A host that is not loopback is refused unless
--tls-cert and --tls-key are given, or --insecure says plain HTTP is
meant.

Every address serve listens on (--http, --mcp-http, --approver-http)
answers GET and HEAD of /healthz (200 while the process answers) and
/readyz (200 while it serves and its audit trail takes records, else
503), without a token and without a record, with {"status":"ok"} or
{"status":"unavailable"} and nothing else.

With --otel, every call is exported as an OpenTelemetry span over
OTLP/HTTP, configured by the standard variables (OTEL_EXPORTER_OTLP_ENDPOINT,
OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER, ...);
the spans still held are sent when serve stops. Without it nothing is
exported and the OTEL_ variables are not read.

serve logs on stderr, one JSON object per line (--log-format text for
key=value lines); a problem that stops it is its last line, as plain
text.

serve stops on SIGINT or SIGTERM, letting running calls finish for up to
10 seconds, or, over stdio, when the client closes stdin.

With server.notify, every webhook it lists is posted a signed JSON
message for each approval left pending for approvers and each decision
(with --http, --mcp-http or --approver-http), never with a token, an
environment value or stdin's content; the key of each is read from the
variable its secret_env names, and a missing one refuses the start (see
"go doc github.com/execgate/execgate/cmd/execgate" for the messages and
how a receiver verifies them).

On SIGHUP, serve reloads the configuration file in place: its tools,
policies, grants, tokens and webhooks. A file that does not load changes nothing;
its problems are logged on stderr, each with its line. Calls under way
finish as they were validated; MCP clients are told the tool list
changed. The server section's bounds, principal and
mcp_http_elicitation take effect at the next start.

Wherever the approval routes are served, an approver may approve with a
grant ({"action": "approve", "grant": "30m"}, at most server.max_grant,
1h by default): the call's principal then makes the same call without an
approval until the grant ends. GET /v1/grants lists the grants in force
and DELETE /v1/grants/{id} revokes one made that way; a reload that
removes its command ends it, and so does a restart.

Exit codes: 0 stopped cleanly; 1 the server failed while running (for
example, the address is in use); 2 usage error or a configuration that
does not load or has no tokens for --http or --mcp-http.
`,
	setup: func(fs *flag.FlagSet) func(*cli, context.Context, []string) int {
		var o serveOptions
		fs.StringVar(&o.config, "config", "", "the configuration `FILE` (required)")
		fs.StringVar(&o.principal, "principal", "", "over stdio, the principal `P` of every call (default: the config's server.principal)")
		fs.StringVar(&o.approvals, "approvals", "", "over stdio, what to do with calls that need approval: elicit, pending or refuse (default elicit, or pending with --approver-http)")
		fs.StringVar(&o.approverHTTP, "approver-http", "", "over stdio, also serve the approval routes at `ADDR` (HOST:PORT)")
		fs.StringVar(&o.http, "http", "", "serve the HTTP API at `ADDR` (HOST:PORT) instead of MCP on stdio")
		fs.StringVar(&o.mcpHTTP, "mcp-http", "", "serve MCP over Streamable HTTP at `ADDR` (HOST:PORT), path /mcp, instead of on stdio")
		fs.StringVar(&o.tlsCert, "tls-cert", "", "serve HTTPS with the certificate in `FILE` (PEM); needs --tls-key")
		fs.StringVar(&o.tlsKey, "tls-key", "", "the private key of --tls-cert, in `FILE` (PEM)")
		fs.BoolVar(&o.insecure, "insecure", false, "allow plain HTTP on an address that is not loopback")
		fs.StringVar(&o.audit, "audit", "", "append every call to the hash-chained audit `FILE`")
		fs.BoolVar(&o.logicalNames, "logical-names", false, "over MCP, list the tools under their command names, dots included (default: '.' made '_', as every MCP client accepts)")
		fs.BoolVar(&o.otel, "otel", false, "export every call as an OpenTelemetry span over OTLP/HTTP, configured by the standard OTEL_* variables")
		fs.StringVar(&o.logFormat, "log-format", defaultLogFormat, "the format of the logs on stderr: json or text")
		return func(c *cli, ctx context.Context, args []string) int {
			if len(args) > 0 {
				return c.usageError("unexpected arguments %q", args)
			}
			return c.serve(ctx, &o)
		}
	},
}

// serveOptions are the flags of execgate serve.
type serveOptions struct {
	config, principal, approvals, approverHTTP string
	http, mcpHTTP, tlsCert, tlsKey, audit      string
	logFormat                                  string
	insecure, logicalNames, otel               bool
}

// approvalModes are the values of --approvals.
var approvalModes = map[string]mcpserver.ApprovalMode{
	"elicit":  mcpserver.ApprovalsElicit,
	"pending": mcpserver.ApprovalsPending,
	"refuse":  mcpserver.ApprovalsRefuse,
}

// serve runs execgate serve: it checks the flags, opens the gate, then
// serves the HTTP API (--http), MCP over Streamable HTTP (--mcp-http) or
// MCP on stdio.
func (c *cli) serve(ctx context.Context, o *serveOptions) int {
	mode, lc, code := c.serveFlags(o)
	if code != exitOK {
		return code
	}
	logger := newLogger(c.stderr, o.logFormat, slog.LevelInfo)
	tel, err := startTelemetry(ctx, o.otel, os.Getenv, logger)
	if err != nil {
		return c.fail(exitUsage, fmt.Errorf("--otel: %w", err))
	}
	defer tel.shutdown(logger)
	g, err := openGate(o.config, o.audit, tel.auditors()...)
	if err != nil {
		return c.loadError(err)
	}
	defer g.Close()
	if lc != nil {
		lc.ready = g.readiness()
	}
	srv := g.server()
	logRecovery(logger, o.audit, g.chain)
	g.grants.setLogger(logger)
	logWarnings(logger, g.loaded)
	if code := c.startNotify(o, g, srv, logger); code != exitOK {
		return code
	}
	defer g.notify.close(notifyFlushGrace)

	switch {
	case o.http != "":
		return c.serveAPI(ctx, o, g, srv, lc, logger)
	case o.mcpHTTP != "":
		return c.serveMCPHTTP(ctx, o, g, srv, lc, logger)
	}
	return c.serveMCP(ctx, o, g, srv, mode, lc, logger)
}

// serveFlags checks the flags of execgate serve that need no file: it
// returns the approval mode and the address to listen on (nil for none),
// or reports a usage error and returns its exit code.
func (c *cli) serveFlags(o *serveOptions) (mcpserver.ApprovalMode, *listenConfig, int) {
	var lc *listenConfig
	if o.config == "" {
		return 0, nil, c.usageError("--config is required")
	}
	if err := checkLogFormat(o.logFormat); err != nil {
		return 0, nil, c.usageError("%v", err)
	}
	if o.http != "" && o.mcpHTTP != "" {
		return 0, nil, c.usageError("--http and --mcp-http are two servers; run serve once for each, with the same --config")
	}
	if o.mcpHTTP != "" && (o.principal != "" || o.approvals != "" || o.approverHTTP != "") {
		return 0, nil, c.usageError("--principal, --approvals and --approver-http are for MCP on stdio; with --mcp-http, each token names its principal, and a held call waits for the approvers at the same address (server.mcp_http_elicitation: true lets clients approve by elicitation)")
	}
	if o.http != "" && (o.principal != "" || o.approvals != "" || o.approverHTTP != "") {
		return 0, nil, c.usageError("--principal, --approvals and --approver-http are for MCP on stdio; with --http, each token names its principal and approvals are always pending")
	}
	if o.http != "" && o.logicalNames {
		return 0, nil, c.usageError("--logical-names names the tools served over MCP, and --http serves no MCP; POST /v1/tools/{name} takes a command's name and its MCP name alike")
	}
	// With out-of-band approvers, the MCP client must not be able to
	// approve by answering an elicitation: that would let the proposer
	// approve its own call and bypass the configured approvers.
	switch {
	case o.approvals == "" && o.approverHTTP != "":
		o.approvals = "pending"
	case o.approvals == "":
		o.approvals = "elicit"
	case o.approvals == "elicit" && o.approverHTTP != "":
		return 0, nil, c.usageError("--approvals elicit cannot go with --approver-http: the MCP client could approve its own calls past the configured approvers")
	}
	mode, ok := approvalModes[o.approvals]
	if !ok {
		return 0, nil, c.usageError("--approvals must be elicit, pending or refuse, not %q", o.approvals)
	}
	addr := cmp.Or(o.http, o.mcpHTTP, o.approverHTTP)
	if (o.tlsCert != "" || o.tlsKey != "" || o.insecure) && addr == "" {
		return 0, nil, c.usageError("--tls-cert, --tls-key and --insecure need --http, --mcp-http or --approver-http")
	}
	if addr != "" {
		var err error
		if lc, err = checkListen(addr, o.tlsCert, o.tlsKey, o.insecure); err != nil {
			return 0, nil, c.usageError("%v", err)
		}
	}
	return mode, lc, exitOK
}

// serveAPI serves the HTTP API of g, with the server section srv, on lc
// until ctx is done.
func (c *cli) serveAPI(ctx context.Context, o *serveOptions, g *gate, srv *config.Server, lc *listenConfig, logger *slog.Logger) int {
	if len(srv.Tokens) == 0 {
		return c.fail(exitUsage, fmt.Errorf("%s: the server section lists no tokens, so no one could call the HTTP API; add server.tokens (execgate token makes one)", o.config))
	}
	warnNeverRun(ctx, logger, g, tokenAudience(srv, false))
	h, err := newAPI(apiOptions{Executor: g.x, Server: srv, Pending: g.book(), Logger: logger, Visible: g.visible, Grants: g.grants})
	if err != nil {
		return c.fail(exitUsage, err)
	}
	defer reloadOnHangup(ctx, &reloader{path: o.config, log: logger, x: g.x, cur: g.loaded, apis: []*api{h}, needTokens: true, notify: g.notify,
		gate: g, audience: func(srv *config.Server) audience { return tokenAudience(srv, false) }})()
	if err := c.serveHTTP(ctx, lc, h, "the HTTP API", logger); err != nil {
		return c.fail(exitFailed, err)
	}
	return exitOK
}

// serveMCP serves g over MCP on stdio, and the approval routes on lc when
// --approver-http is given, until ctx is done or the client closes stdin.
func (c *cli) serveMCP(ctx context.Context, o *serveOptions, g *gate, srv *config.Server, mode mcpserver.ApprovalMode, lc *listenConfig, logger *slog.Logger) int {
	principal := o.principal
	if principal == "" {
		principal = srv.Principal
	}
	opts := mcpserver.Options{
		Principal: principal,
		Allowlist: g.loaded.Allowlist,
		Approvals: mode,
		Logger:    newLogger(c.stderr, o.logFormat, slog.LevelWarn),

		LogicalNames: o.logicalNames,
		// The tools this principal's policy could allow or hold, as
		// --http and --mcp-http list them.
		Visible: g.visible,
		// Without --approver-http, only the client's user can approve: a
		// held call the client cannot put to its user is refused, not
		// left pending for no one.
		NoApprover: func() string {
			return "start execgate serve with --approver-http ADDR, for the approvers of the configuration's server section"
		},
	}
	var approver *api
	if o.approverHTTP != "" {
		if len(srv.Approvers) == 0 {
			return c.fail(exitUsage, fmt.Errorf("%s: --approver-http needs approvers in the server section (execgate token makes a token)", o.config))
		}
		pending := g.book()
		opts.OnPending = pending.Add
		// A retry of a held call learns its outcome (and waits for it
		// up to server.approval_wait).
		opts.Outcomes, opts.ApprovalWait = pending, srv.ApprovalWait
		var err error
		if approver, err = newAPI(apiOptions{Executor: g.x, Server: srv, Pending: pending, ApprovalsOnly: true, Logger: logger, Grants: g.grants}); err != nil {
			return c.fail(exitUsage, err)
		}
		opts.NoApprover = approver.noApprover
	}
	ms, err := mcpserver.New(g.x, opts)
	if err != nil {
		return c.mcpServerFailed(o, err)
	}
	warnNeverRun(ctx, logger, g, stdioAudience(principal, o.approvals, o.approverHTTP != ""))
	reload := &reloader{path: o.config, log: logger, x: g.x, cur: g.loaded, mcp: ms, logicalNames: o.logicalNames, fixedPrincipal: o.principal != "", notify: g.notify,
		gate: g, audience: func(*config.Server) audience { return stdioAudience(principal, o.approvals, o.approverHTTP != "") }}
	if approver != nil {
		reload.apis, reload.needApprovers = []*api{approver}, true
	}
	defer reloadOnHangup(ctx, reload)()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	httpDone := make(chan error, 1)
	if approver != nil {
		// Listen before serving MCP, so that a bad address fails the start.
		ln, err := lc.listen()
		if err != nil {
			return c.fail(exitFailed, err)
		}
		go func() { httpDone <- c.serveOn(ctx, ln, lc, approver, "the approval routes", logger) }()
	} else {
		httpDone <- nil
	}
	logger.Info(fmt.Sprintf("execgate: serving %d tools over MCP on stdio", len(g.loaded.Allowlist.Specs())), "principal", principal)
	err = ms.Run(ctx, ms.StdioTransport(pollableStdin(c.stdin), c.stdout))
	cancel()
	herr := <-httpDone
	switch {
	case err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF):
		return c.fail(exitFailed, err)
	case herr != nil:
		return c.fail(exitFailed, herr)
	}
	return exitOK
}

// mcpServerFailed reports why the MCP server of o's configuration could
// not be made, and returns the exit code.
func (c *cli) mcpServerFailed(o *serveOptions, err error) int {
	var collision *mcpserver.ToolNameCollisionError
	if errors.As(err, &collision) {
		return c.fail(exitUsage, fmt.Errorf("%s: the commands %q and %q would both be listed as the MCP tool %q, since many MCP clients take no dots in tool names; rename one of them, or serve with --logical-names for clients that accept dots",
			o.config, collision.Names[0], collision.Names[1], collision.Tool))
	}
	return c.fail(exitUsage, err)
}

// listenConfig is a checked address to serve HTTP on.
type listenConfig struct {
	addr string      // HOST:PORT, with an empty host made 127.0.0.1
	tls  *tls.Config // nil for plain HTTP
	// ready is what /readyz asks of the gate behind the address (see
	// probes); nil: nothing.
	ready func(*http.Request) error
}

// checkListen checks a HOST:PORT to serve HTTP on: an empty host means
// 127.0.0.1; a host that is not loopback (an IP address that is not a
// loopback address, or a name other than localhost) needs certFile and
// keyFile, or insecure. The certificate and key are loaded now, so that a
// bad file fails the start.
func checkListen(addr, certFile, keyFile string, insecure bool) (*listenConfig, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("address %q: want HOST:PORT, such as 127.0.0.1:8080 or :8080", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return nil, fmt.Errorf("address %q: the port must be a number from 0 to 65535", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	lc := &listenConfig{addr: net.JoinHostPort(host, port)}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("loading the TLS certificate: %w", err)
		}
		lc.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if !config.IsLoopbackHost(host) && lc.tls == nil && !insecure {
		return nil, fmt.Errorf("%s is not a loopback address: bearer tokens would cross the network in plain text; give --tls-cert and --tls-key, or --insecure if something else encrypts the traffic", host)
	}
	return lc, nil
}

// listen opens the listener, with TLS if configured.
func (lc *listenConfig) listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", lc.addr)
	if err != nil {
		return nil, err
	}
	if lc.tls != nil {
		ln = tls.NewListener(ln, lc.tls)
	}
	return ln, nil
}

// serveHTTP serves h at lc until ctx is done.
func (c *cli) serveHTTP(ctx context.Context, lc *listenConfig, h http.Handler, what string, logger *slog.Logger) error {
	ln, err := lc.listen()
	if err != nil {
		return err
	}
	return c.serveOn(ctx, ln, lc, h, what, logger)
}

// serveOn serves h on ln until ctx is done, then shuts down gracefully:
// running calls get shutdownGrace to finish, after which their
// connections are closed and their contexts canceled.
func (c *cli) serveOn(ctx context.Context, ln net.Listener, lc *listenConfig, h http.Handler, what string, logger *slog.Logger) error {
	scheme := "http"
	if lc.tls != nil {
		scheme = "https"
	}
	p := newProbes(h, lc.ready)
	hs := newHTTPServer(p, logger)
	p.serving()
	url := scheme + "://" + ln.Addr().String()
	logger.Info("execgate: serving "+what+" on "+url, "url", url)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	p.stopping()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	err := hs.Shutdown(sctx)
	if err != nil {
		err = hs.Close()
	}
	if serr := <-done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	logger.Info("execgate: " + what + " stopped")
	return err
}

// logRecovery says what opening the audit chain found at its end: a torn
// last line it cut, and the calls a previous gate started and did not
// record the end of (which, on Linux, ended with that gate).
func logRecovery(logger *slog.Logger, path string, chain *audit.Chain) {
	if chain == nil {
		return
	}
	rec := chain.Recovery()
	if rec.TornBytes > 0 {
		logger.Warn("execgate: the audit trail ended in a torn line, the trace of a crash or a full disk; it was cut and the chain goes on from its last whole entry",
			"file", path, "bytes", rec.TornBytes)
	}
	for _, u := range rec.Unfinished {
		logger.Warn("execgate: the audit trail holds a call that started and has no outcome: the gate that ran it stopped first",
			"file", path, "call", u.String())
	}
}
