package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/mcpserver"
)

// reloader applies a changed configuration file to a running serve: the
// allowlist of its Executor and of its MCP server, the policies and
// grants (config.Loaded.Reload), the tokens of its HTTP handlers (for
// --http, --approver-http and --mcp-http alike) and the webhooks told of
// approvals (server.notify). What is fixed when serve starts (the
// concurrency bounds, the approval and audit stores, the pending quotas,
// the principal of calls over stdio, whether clients over --mcp-http
// approve by elicitation, how long a held MCP call waits for its
// decision) is reported as waiting for a restart (see restartNeeded).
type reloader struct {
	path string
	log  *slog.Logger
	x    *execgate.Executor
	// mcp is the MCP server whose tools follow the file; nil when serve
	// serves only the HTTP API.
	mcp *mcpserver.Server
	// logicalNames is serve's --logical-names: the MCP server lists the
	// command names as they are, so a reload is checked the same way.
	logicalNames bool
	// apis are the HTTP handlers whose tokens follow the file.
	apis []*api
	// needTokens and needApprovers refuse a file without callers (for
	// --http and --mcp-http) or without approvers (for --approver-http),
	// as a start would.
	needTokens, needApprovers bool
	// mcpHTTP reports that mcp is served over Streamable HTTP, where each
	// call runs as its token's principal, not as the file's principal.
	mcpHTTP bool
	// fixedPrincipal reports that --principal, not the file, names the
	// principal of calls over stdio.
	fixedPrincipal bool
	// notify is told the webhooks of the file (server.notify); nil
	// when serve tells none.
	notify *notifier
	// gate and audience, when gate is set, are serve's gate and who can
	// call and approve on its transport given a file's server section:
	// after a reload, the tools that can never run there are logged, as
	// at the start (see warnNeverRun).
	gate     *gate
	audience func(*config.Server) audience
	// reloadBytes is config.Loaded.ReloadBytes, or in tests what stands
	// for it.
	reloadBytes func(cur *config.Loaded, name string, data []byte) (*config.Loaded, error)

	mu  sync.Mutex
	cur *config.Loaded // guarded by mu
}

// reloadOnHangup starts reloading r on every SIGHUP until ctx is done or
// the returned function is called, which waits for a reload under way to
// finish. From the moment it returns until stop is called, SIGHUP does not
// stop the process; once ctx is done, a SIGHUP is dropped.
func reloadOnHangup(ctx context.Context, r *reloader) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				r.reloadAndLog()
			}
		}
	}()
	return func() {
		cancel()
		<-done
		signal.Stop(hup)
	}
}

// reloadAndLog reloads the file and logs the outcome: on failure every
// problem, each with its line as execgate check prints it.
func (r *reloader) reloadAndLog() {
	n, err := r.reload()
	var partial *partialReload
	if errors.As(err, &partial) {
		r.log.Warn("execgate: reloaded the configuration, but for what it could not put in force", "file", r.path, "commands", n)
		var list config.ErrorList
		if errors.As(err, &list) {
			for _, e := range list {
				r.log.Error("execgate: reload: a grant of the configuration was not made", "problem", e.Error())
			}
		} else {
			r.log.Error("execgate: reload: a grant of the configuration was not made", "problem", err.Error())
		}
		err = nil
	}
	if err == nil {
		if partial == nil {
			r.log.Info("execgate: reloaded the configuration", "file", r.path, "commands", n)
		}
		// What a start says of a file that loads, a reload says of it.
		logWarnings(r.log, r.cur)
		if r.gate != nil && r.audience != nil {
			warnNeverRun(context.Background(), r.log, r.gate, r.audience(serverOf(r.cur)))
		}
		return
	}
	var list config.ErrorList
	if errors.As(err, &list) {
		for _, e := range list {
			r.log.Error("execgate: reload: the configuration does not load", "problem", e.Error())
		}
	} else {
		r.log.Error("execgate: reload: the configuration does not load", "problem", err.Error())
	}
	r.log.Error("execgate: reload refused; still serving the configuration loaded before", "file", r.path)
}

// reload reads the file and, if it passes every check of a start, puts it
// in force and returns how many command names it serves. Otherwise it
// changes nothing and returns the problems, but for a file whose rules
// went into force while some of its grants could not be made: that one
// is put in force whole, and the grants not made come back as a
// *partialReload. Calls already validated
// finish with the spec they were validated against (see
// Executor.SetAllowlist); pending approvals are checked against the new
// file when they are executed.
func (r *reloader) reload() (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	data, err := readConfig(r.path)
	if err != nil {
		return 0, err
	}
	// Check all of it before anything changes: Reload applies the
	// policies as soon as the file loads, and would leave them in force
	// beside the old tools and tokens if serve then refused the rest.
	scratch, err := config.LoadBytes(r.path, data)
	if err != nil {
		return 0, err
	}
	if err := r.check(scratch); err != nil {
		return 0, err
	}
	reloadBytes := (*config.Loaded).ReloadBytes
	if r.reloadBytes != nil {
		reloadBytes = r.reloadBytes
	}
	next, err := reloadBytes(r.cur, r.path, data)
	if next == nil {
		return 0, err
	}
	// With an error, next's rules are in force all the same (some of its
	// grants could not be made): its tools and tokens are put in force
	// beside them, and the error is reported as what the reload left out.
	var partial error
	if err != nil {
		partial = &partialReload{err: err}
	}
	r.x.SetAllowlist(next.Allowlist)
	if r.mcp != nil {
		if err := r.mcp.SetAllowlist(next.Allowlist); err != nil {
			// check listed the same specs; this does not happen.
			r.log.Error("execgate: reload: the MCP tools could not be replaced; the MCP server lists the tools loaded before", "error", err)
		}
	}
	for _, a := range r.apis {
		// check parsed the same tokens, so this does not fail.
		_ = a.setServer(next.Server)
		// The grants made with approvals of a command next no longer
		// serves end; the others stay.
		a.grants.reloaded(next)
	}
	if r.notify != nil {
		// check read the same keys, so this does not fail.
		targets, _ := notifyTargets(r.path, serverOf(next), r.notify.getenv)
		r.notify.configure(targets)
	}
	r.restartNeeded(serverOf(r.cur), serverOf(next))
	if r.needTokens && len(serverOf(next).Approvers) == 0 {
		r.log.Warn("execgate: the server section lists no approvers: calls that need approval will stay pending until they expire")
	}
	r.cur = next
	return len(next.Allowlist.Specs()), partial
}

// partialReload is the error of a reload that put the new file in force
// but for what err says (grants of the file that could not be made).
type partialReload struct{ err error }

func (p *partialReload) Error() string { return p.err.Error() }
func (p *partialReload) Unwrap() error { return p.err }

// check refuses what serve would refuse at its start in a file that
// loads: no tokens for --http or --mcp-http, no approvers for
// --approver-http, tools that cannot be listed over MCP.
func (r *reloader) check(l *config.Loaded) error {
	srv := serverOf(l)
	switch {
	case r.needTokens && len(srv.Tokens) == 0 && r.mcpHTTP:
		return fmt.Errorf("%s: the server section lists no tokens, so no MCP client could connect over HTTP; add server.tokens (execgate token makes one)", r.path)
	case r.needTokens && len(srv.Tokens) == 0:
		return fmt.Errorf("%s: the server section lists no tokens, so no one could call the HTTP API; add server.tokens (execgate token makes one)", r.path)
	case r.needApprovers && len(srv.Approvers) == 0:
		return fmt.Errorf("%s: --approver-http needs approvers in the server section (execgate token makes a token)", r.path)
	}
	if _, err := credentials(srv); err != nil {
		return fmt.Errorf("%s: %w", r.path, err)
	}
	if r.notify != nil {
		if _, err := notifyTargets(r.path, srv, r.notify.getenv); err != nil {
			return err
		}
	}
	if r.mcp != nil {
		if _, err := mcpserver.New(r.x, mcpserver.Options{Allowlist: l.Allowlist, LogicalNames: r.logicalNames}); err != nil {
			return fmt.Errorf("%s: %w", r.path, err)
		}
	}
	return nil
}

// restartNeeded warns about the settings of the file that a reload does
// not apply.
func (r *reloader) restartNeeded(old, next *config.Server) {
	var keys []string
	if old.MaxConcurrent != next.MaxConcurrent {
		keys = append(keys, "max_concurrent")
	}
	if old.MaxConcurrentPerPrincipal != next.MaxConcurrentPerPrincipal {
		keys = append(keys, "max_concurrent_per_principal")
	}
	if old.MaxQueueWait != next.MaxQueueWait {
		keys = append(keys, "max_queue_wait")
	}
	if a, b := old.ApprovalStore, next.ApprovalStore; a.Kind != b.Kind || a.DSNEnv != b.DSNEnv || a.Table != b.Table {
		keys = append(keys, "approval_store")
	}
	if a, b := old.AuditStore, next.AuditStore; a.Kind != b.Kind || a.DSNEnv != b.DSNEnv || a.Table != b.Table {
		keys = append(keys, "audit_store")
	}
	if old.MaxPendingPerPrincipal != next.MaxPendingPerPrincipal {
		keys = append(keys, "max_pending_per_principal")
	}
	if old.MaxPendingBytesPerPrincipal != next.MaxPendingBytesPerPrincipal {
		keys = append(keys, "max_pending_bytes_per_principal")
	}
	if r.mcp != nil && !r.fixedPrincipal && !r.mcpHTTP && old.Principal != next.Principal {
		keys = append(keys, "principal")
	}
	if r.mcpHTTP && old.MCPHTTPElicitation != next.MCPHTTPElicitation {
		keys = append(keys, "mcp_http_elicitation")
	}
	if r.mcp != nil && old.ApprovalWait != next.ApprovalWait {
		keys = append(keys, "approval_wait")
	}
	for _, k := range keys {
		r.log.Warn("execgate: reload: a changed setting takes effect when serve is restarted; the one serve started with stays in force", "key", "server."+k)
	}
}

// readConfig reads the configuration at path, at most one byte more than
// config.MaxFileSize, which the load then refuses.
func readConfig(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, config.MaxFileSize+1))
}

// logWarnings logs the warnings of the configuration l, which loads.
func logWarnings(logger *slog.Logger, l *config.Loaded) {
	for _, w := range l.Warnings() {
		logger.Warn("execgate: the configuration loads, with a warning", "warning", w.String())
	}
}
