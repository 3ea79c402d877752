package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit"
	"github.com/execgate/execgate/config"
)

// gate is an Executor built from a configuration file, with the audit
// chain it writes to, if any.
type gate struct {
	loaded *config.Loaded
	x      *execgate.Executor
	chain  *audit.Chain // nil without --audit
	// notify tells server.notify's webhooks of the approvals of the
	// books made by book; nil tells no one.
	notify *notifier
	// grants makes and ends the grants approvers give with approvals,
	// in the Engine of loaded (see grants.go).
	grants *grantBook
	// pg holds the approvals in PostgreSQL (server.approval_store kind
	// postgres); nil keeps them in memory.
	pg *pgStore
	// pgAudit appends every call to the PostgreSQL table of
	// server.audit_store; nil without one.
	pgAudit *pgAudit
	// trail is what records the calls, the chain and the table, as one
	// ReadyAuditor that is ready when each is; nil with neither.
	trail execgate.ReadyAuditor
}

// openGate loads the configuration at configPath and builds an Executor
// from it. With auditPath, every call is also appended to the hash-chained
// audit file there, and, with the server section's audit_store, to its
// PostgreSQL table; the Executor refuses calls either cannot record.
// Every Event also goes to each of also (serve --otel's spans).
func openGate(configPath, auditPath string, also ...execgate.Auditor) (*gate, error) {
	loaded, err := config.LoadFile(configPath)
	if err != nil {
		return nil, err
	}
	return newGate(loaded, auditPath, nil, also...)
}

// newGate builds the Executor of a loaded configuration; execFn nil means
// the default, which starts real processes. The audit chain of auditPath
// comes first, then the audit table of server.audit_store, then also,
// each handed every Event.
func newGate(loaded *config.Loaded, auditPath string, execFn execgate.ExecFn, also ...execgate.Auditor) (*gate, error) {
	g := &gate{loaded: loaded}
	var trail []execgate.Auditor
	if auditPath != "" {
		var err error
		g.chain, err = audit.OpenChain(auditPath, audit.ChainOptions{})
		if err != nil {
			return nil, fmt.Errorf("audit file %s: %w", auditPath, err)
		}
		trail = append(trail, g.chain)
	}
	srv := g.server()
	pa, err := auditStoreOf(srv)
	if err != nil {
		g.Close()
		return nil, err
	}
	g.pgAudit = pa
	if pa != nil {
		trail = append(trail, pa.auditor)
	}
	if len(trail) > 0 {
		g.trail = audit.Multi(trail...)
	}
	auditors := slices.Concat(trail, also)
	var auditor execgate.Auditor = recorder{}
	if len(auditors) > 0 {
		auditor = audit.Multi(append(auditors, recorder{})...)
	}
	pg, err := approvalStoreOf(srv)
	if err != nil {
		g.Close()
		return nil, err
	}
	g.pg = pg
	// The memory store holds the quotas per principal of the server
	// section; zero is the store's default.
	var store execgate.ApprovalStore = execgate.NewMemoryStore(execgate.MemoryStoreOptions{
		PerPrincipalCapacity: srv.MaxPendingPerPrincipal,
		PerPrincipalMaxBytes: srv.MaxPendingBytesPerPrincipal,
	})
	if pg != nil {
		store = pg.store
	}
	x, err := execgate.NewExecutor(execgate.Config{
		Store:     store,
		Allowlist: loaded.Allowlist,
		Policy:    loaded.Policy,
		Auditor:   auditor,
		ExecFn:    execFn,

		MaxConcurrent:             srv.MaxConcurrent,
		MaxConcurrentPerPrincipal: srv.MaxConcurrentPerPrincipal,
		MaxQueueWait:              srv.MaxQueueWait,
	})
	if err != nil {
		g.Close()
		return nil, err
	}
	g.x = x
	g.grants = newGrantBook(loaded.Engine, x, srv, nil)
	return g, nil
}

// visible reports whether principal is shown the tool of spec, over MCP
// (mcpserver.Options.Visible) and in GET /v1/tools: whether the policy
// could allow, or hold for approval, some call of it (policy.Engine's
// MayServe, with the allowlist in force). The Engine is the same across
// reloads, which swap its rules. Without a policies section every call
// is allowed but for a spec's floor, so only a spec whose floor (a
// dispatcher's default_action) denies every call is hidden.
func (g *gate) visible(_ context.Context, principal string, spec execgate.CommandSpec) bool {
	if g.loaded.Engine == nil {
		return spec.Floor != execgate.ActionDeny
	}
	return g.loaded.Engine.MayServe(principal, spec, g.x.Allowlist())
}

// Close stops recording grants' expiries and closes the audit file and
// the databases' pools, if any.
func (g *gate) Close() error {
	g.grants.stop()
	if g.pg != nil {
		g.pg.Close()
	}
	if g.pgAudit != nil {
		g.pgAudit.Close()
	}
	if g.chain != nil {
		return g.chain.Close()
	}
	return nil
}

// server returns the configuration's server section, or, when it has
// none, an empty one with the default bounds.
func (g *gate) server() *config.Server {
	return serverOf(g.loaded)
}

// serverOf returns l's server section, or an empty one with the default
// bounds.
func serverOf(l *config.Loaded) *config.Server {
	if l.Server == nil {
		return &config.Server{MaxConcurrent: config.DefaultMaxConcurrent, MaxConcurrentPerPrincipal: config.DefaultMaxConcurrentPerPrincipal(config.DefaultMaxConcurrent),
			MaxGrant: config.DefaultMaxGrant}
	}
	return l.Server
}

// recorder is an Auditor that hands each Event to the slot in its
// call's context, if there is one, so that a command can report the
// policy decision and trace ID of the call it made. It records nothing
// itself and is always ready.
type recorder struct{}

// Audit implements execgate.Auditor.
func (recorder) Audit(ctx context.Context, ev execgate.Event) error {
	if s, ok := ctx.Value(slotKey{}).(*eventSlot); ok {
		s.mu.Lock()
		s.ev, s.set = ev, true
		s.mu.Unlock()
	}
	return nil
}

type slotKey struct{}

// eventSlot keeps the last Event of the calls made with its context.
type eventSlot struct {
	mu  sync.Mutex
	ev  execgate.Event
	set bool
}

// withSlot returns a context whose calls' Events are kept in the slot.
func withSlot(ctx context.Context) (context.Context, *eventSlot) {
	s := &eventSlot{}
	return context.WithValue(ctx, slotKey{}, s), s
}

// last returns the last Event recorded, if any.
func (s *eventSlot) last() (execgate.Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ev, s.set
}

// policyInfo is the policy's decision on a call, as the HTTP API and
// execgate run report it.
type policyInfo struct {
	// Decision is allow, deny, require_approval or rate_limited, after the
	// spec's floor (a dispatcher's default_action) was applied.
	Decision string `json:"decision"`
	// Rule names the rule that decided, if any.
	Rule string `json:"rule,omitempty"`
	// Grant names the grant that waived an approval, if one did.
	Grant string `json:"grant,omitempty"`
}

// policyOf returns the decision recorded in ev, or nil when the call was
// refused before the policy was asked.
func policyOf(ev execgate.Event) *policyInfo {
	if ev.Decision == "" {
		return nil
	}
	return &policyInfo{Decision: ev.Decision, Rule: ev.Rule, Grant: ev.Grant}
}

// errorInfo is a refusal as JSON: the "error" member of a response.
type errorInfo struct {
	// Kind is the kind of refusal, in the gate's vocabulary
	// (execgate.ErrorKind), as over MCP and in the audit trail.
	Kind string `json:"kind"`
	// Message says what happened; it never repeats stdin or environment
	// values.
	Message string `json:"message"`
	// Name is the command name the refusal is about, if known.
	Name string `json:"name,omitempty"`
	// Issues lists the refused fields (validation).
	Issues []execgate.Issue `json:"issues,omitempty"`
	// Action and Rule are the policy's decision (policy).
	Action string `json:"action,omitempty"`
	Rule   string `json:"rule,omitempty"`
	// Reason is the approval error's reason (approval), the scope of the
	// concurrency bound that was reached (busy): "principal" or
	// "executor", as over MCP, "principal" for a full approval store
	// quota of the caller's (store_full), or, for a refusal made before the gate,
	// the few words the audit trail records with it.
	Reason string `json:"reason,omitempty"`
	// Limit is how many commands the bound that was reached lets run
	// (busy), or the principal's quota of the approval store that is
	// full, in records or bytes (store_full with reason "principal").
	Limit int `json:"limit,omitempty"`
	// Status is the HTTP status the refusal maps to; not sent.
	Status int `json:"-"`
	// retryAfter is the Retry-After of the response in seconds, or 0.
	retryAfter int
}

// refusal turns an error from the Executor into the refusal the HTTP API
// and execgate run show: its kind is execgate.KindOf the error, and its
// status follows from the kind and its details.
func refusal(err error) *errorInfo {
	e := &errorInfo{Kind: string(execgate.KindOf(err)), Message: err.Error()}
	var (
		nf *execgate.NotFoundError
		ve *execgate.ValidationError
		pe *execgate.PolicyError
		ae *execgate.ApprovalError
		be *execgate.BusyError
	)
	switch e.Kind {
	case execgate.ErrorKindNotFound:
		e.Status = http.StatusNotFound
		if errors.As(err, &nf) {
			e.Name = nf.Name
		}
	case execgate.ErrorKindValidation:
		e.Status = http.StatusUnprocessableEntity
		if errors.As(err, &ve) {
			e.Name, e.Issues = ve.Name, ve.Issues
		}
	case execgate.ErrorKindPolicy:
		e.Status = http.StatusForbidden
		if errors.As(err, &pe) {
			e.Name, e.Action, e.Rule = pe.Name, pe.Action, pe.Rule
			if pe.Action == execgate.ActionRateLimited {
				e.Status = http.StatusTooManyRequests
			}
		}
	case execgate.ErrorKindApproval:
		e.Status = http.StatusConflict
		if errors.As(err, &ae) {
			e.Reason = ae.Reason
			switch ae.Reason {
			case execgate.ReasonUnknown:
				e.Status = http.StatusNotFound
			case execgate.ReasonExpired:
				e.Status = http.StatusGone
			}
		}
	case execgate.ErrorKindBusy:
		e.Status, e.retryAfter = http.StatusServiceUnavailable, busyRetryAfter
		if errors.As(err, &be) {
			e.Name, e.Reason, e.Limit = be.Name, be.Scope, be.Limit
			if be.Scope == execgate.BusyPrincipal {
				e.Status = http.StatusTooManyRequests
			}
		}
	case execgate.ErrorKindStoreFull:
		e.Status = http.StatusServiceUnavailable
		var qe *execgate.QuotaError
		if errors.As(err, &qe) {
			// The caller's own quota: others still have room.
			e.Status, e.Reason, e.Limit = http.StatusTooManyRequests, execgate.StoreFullPrincipal, int(qe.Limit)
		}
	case execgate.ErrorKindAudit:
		e.Status = http.StatusServiceUnavailable
	default:
		if se := storeRefusalOf(err); se != nil {
			return se
		}
		e.Status = http.StatusInternalServerError
		e.Message = "execgate: the call failed with an internal error"
	}
	return e
}
