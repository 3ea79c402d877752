package main

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/execgate/execgate"
)

// The paths of the probes every HTTP listener of serve answers.
const (
	healthzPath = "/healthz"
	readyzPath  = "/readyz"
)

// probeAllow is what the probes' paths serve: any other method is
// refused by the API as every route refuses one it does not serve (405).
const probeAllow = "GET, HEAD"

// States of a listener, as /readyz reports them.
const (
	listenerStarting int32 = iota // not serving yet
	listenerServing               // serving requests
	listenerStopping              // shutting down: no new requests
)

// probeStatus is the whole body of a probe's answer.
type probeStatus struct {
	Status string `json:"status"` // "ok" or "unavailable"
}

// probes answers GET and HEAD of /healthz and /readyz in front of a
// listener's handler, before anything else looks at the request: no
// token is asked for, nothing is recorded in the audit trail, no bound
// of a caller is spent, and the answer says nothing but ok or
// unavailable. Every other request, and any other method on those paths,
// goes to next.
type probes struct {
	next  http.Handler
	state atomic.Int32 // listenerStarting, listenerServing, listenerStopping
	// ready reports whether the gate behind the listener can take calls
	// (nil: it can); see auditProbe.
	ready func(*http.Request) error
}

// newProbes returns the probes in front of next, in state
// listenerStarting; ready is what /readyz asks beyond the listener's
// state, and may be nil.
func newProbes(next http.Handler, ready func(*http.Request) error) *probes {
	return &probes{next: next, ready: ready}
}

// serving marks the listener as serving requests.
func (p *probes) serving() { p.state.Store(listenerServing) }

// stopping marks the listener as shutting down.
func (p *probes) stopping() { p.state.Store(listenerStopping) }

// ServeHTTP implements http.Handler. /healthz is 200 whenever the
// process answers; /readyz is 200 only while the listener serves and
// the gate can take calls, and 503 otherwise.
func (p *probes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.EscapedPath()
	if (path != healthzPath && path != readyzPath) || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		p.next.ServeHTTP(w, r)
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if path == readyzPath && !p.isReady(r) {
		writeJSON(w, http.StatusServiceUnavailable, probeStatus{Status: "unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, probeStatus{Status: "ok"})
}

// isReady reports whether the listener serves and the gate can take
// calls.
func (p *probes) isReady(r *http.Request) bool {
	if p.state.Load() != listenerServing {
		return false
	}
	return p.ready == nil || p.ready(r) == nil
}

// auditRetryEvery bounds how often /readyz tries to record while the
// audit trail refuses records; anyone who can reach the port can ask.
const auditRetryEvery = time.Second

// auditProbe is what /readyz asks of a gate with an audit trail: whether
// the trail takes records. A trail that failed to write refuses every
// call (an *execgate.AuditError) until a record succeeds again, and only
// a record can tell: a load balancer that stops sending calls to a
// listener that is not ready would leave it so for good. So while the
// trail refuses, a probe makes the attempt itself, at most once every
// auditRetryEvery: it records the probe as a refusal of kind audit
// (execgate.Executor.RecordRefusal), which, once the trail takes it,
// marks in the trail where recording resumed, and the gate is ready
// again. A trail that takes records gets nothing from a probe.
type auditProbe struct {
	// trail is the audit file's chain, the audit table's Auditor, or
	// both as one.
	trail execgate.ReadyAuditor
	x     *execgate.Executor
	now   func() time.Time // nil: time.Now
	mu    sync.Mutex
	last  time.Time // of the last attempt
}

// ready implements probes.ready.
func (a *auditProbe) ready(r *http.Request) error {
	ctx := r.Context()
	now := time.Now
	if a.now != nil {
		now = a.now
	}
	if err := a.trail.Ready(ctx); err == nil || !a.due(now()) {
		return err
	}
	ref := execgate.Refusal{Route: route(r), Kind: execgate.ErrorKindAudit, Reason: "readiness probe while the audit trail refused records: an attempt to record again"}
	_ = a.x.RecordRefusal(context.WithoutCancel(ctx), ref)
	return a.trail.Ready(ctx)
}

// due reports whether an attempt may be made at now, and if so counts
// it as made.
func (a *auditProbe) due(now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.last.IsZero() && now.Sub(a.last) < auditRetryEvery {
		return false
	}
	a.last = now
	return true
}

// readiness returns what /readyz asks of g beyond its listener's state:
// nil without an audit trail (neither --audit nor server.audit_store).
func (g *gate) readiness() func(*http.Request) error {
	if g.trail == nil {
		return nil
	}
	return (&auditProbe{trail: g.trail, x: g.x}).ready
}
