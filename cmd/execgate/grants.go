package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/policy"
)

// This file lets an approver approve a call and, in the same decision,
// grant its principal the same command for a while (POST
// /v1/approvals/{id} with "grant"), and serves the grants in force to
// approvers (GET /v1/grants, DELETE /v1/grants/{id}). The grants live in
// the configuration's policy.Engine, beside the file's own; grantBook
// keeps those it made, to record in the audit trail when they end.

// Where a grant comes from, as GET /v1/grants says.
const (
	grantFromConfig   = "config"   // the configuration file's grants section
	grantFromApproval = "approval" // an approver's decision
)

// grantBook makes the grants approvers give with approvals, ends them
// (revoked, expired, or their command removed by a reload), and records
// each change in the audit trail (Executor.RecordGrant). Grants it makes
// are exact (policy.Grant.Exact): the approval's principal and its
// command name, a dispatcher's subcommand included, never a pattern.
// They live in memory only, so a restart ends them. A nil *grantBook, or
// one without an Engine, makes no grants and lists none. It is safe for
// concurrent use.
type grantBook struct {
	eng *policy.Engine // nil: the configuration has no policies section
	x   *execgate.Executor
	now func() time.Time // the Engine's clock
	log atomic.Pointer[slog.Logger]
	// max is server.max_grant in force, in nanoseconds.
	max atomic.Int64

	mu      sync.Mutex
	made    map[string]policy.Grant // the grants made here and not ended, by ID
	runs    map[string]grantSpec    // what the command of each of made ran, by ID
	timer   *time.Timer             // fires at the first expiry in made
	stopped bool
}

// newGrantBook returns the grant book of the Engine eng and the Executor
// x, with srv's max_grant and the clock now (nil: time.Now), which must
// be the Engine's.
func newGrantBook(eng *policy.Engine, x *execgate.Executor, srv *config.Server, now func() time.Time) *grantBook {
	if now == nil {
		now = time.Now
	}
	b := &grantBook{eng: eng, x: x, now: now, made: make(map[string]policy.Grant), runs: make(map[string]grantSpec)}
	b.max.Store(int64(srv.MaxGrant))
	b.log.Store(slog.New(slog.DiscardHandler))
	return b
}

// setLogger makes l receive what goes wrong when a grant's end cannot be
// recorded.
func (b *grantBook) setLogger(l *slog.Logger) {
	if b != nil && l != nil {
		b.log.Store(l)
	}
}

// stop ends the timer of expiries; nothing is recorded afterwards.
func (b *grantBook) stop() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	if b.timer != nil {
		b.timer.Stop()
	}
}

// grantSpec is what a grant's command ran when the grant was made: its
// spec fingerprint (Allowlist.Fingerprint) and PolicyVersion. A reload
// that changes either ends the grant.
type grantSpec struct{ fp, version string }

// grantRefusal is why a grant asked for with an approval is not made, or
// a grant route refused: the response's error and the few words of the
// audit record.
type grantRefusal struct {
	info   *errorInfo
	reason string
}

func (e *grantRefusal) Error() string { return e.info.Message }

// grantIssue is a refusal of the decision body's "grant" value (422).
func grantIssue(msg string) *grantRefusal {
	return &grantRefusal{reason: "invalid grant", info: &errorInfo{Kind: execgate.ErrorKindValidation, Status: http.StatusUnprocessableEntity,
		Message: `"grant" ` + msg + `; nothing was decided`, Issues: []execgate.Issue{{Field: "grant", Message: msg}}}}
}

// grantConflict is a refusal of a grant the server cannot make for the
// approval (409).
func grantConflict(msg, reason string) *grantRefusal {
	return &grantRefusal{reason: reason, info: &errorInfo{Kind: execgate.ErrorKindRequest, Status: http.StatusConflict, Message: msg}}
}

// length returns how long the grant asked for in d lasts: 0 when d asks
// for none, or the refusal of a value that cannot be granted: a grant
// with anything but approve, on a server without policies, one that is
// not a duration, not positive, or longer than server.max_grant.
func (b *grantBook) length(d decision) (time.Duration, *grantRefusal) {
	if d.Grant == nil {
		return 0, nil
	}
	maxGrant := time.Duration(0)
	if b != nil {
		maxGrant = time.Duration(b.max.Load())
	}
	switch {
	case d.Action != "approve":
		return 0, grantIssue(`goes with "approve" only: a rejected call grants nothing`)
	case b == nil || b.eng == nil:
		return 0, grantConflict(`execgate: this server makes no grants: its configuration has no policies section, and a grant only waives a policy's require_approval; nothing was decided: approve without "grant"`, "grant without policies")
	case maxGrant == 0:
		return 0, grantIssue(`is refused: server.max_grant is 0s, so approvers make no grants here; approve without "grant"`)
	}
	n, err := time.ParseDuration(*d.Grant)
	switch {
	case err != nil:
		return 0, grantIssue(fmt.Sprintf("must be a duration with its unit, such as 30m or 1h, at most %s (server.max_grant)", maxGrant))
	case n <= 0:
		return 0, grantIssue(fmt.Sprintf("must be longer than 0s, at most %s (server.max_grant)", maxGrant))
	case n > maxGrant:
		return 0, grantIssue(fmt.Sprintf("is %s, longer than server.max_grant, %s", n, maxGrant))
	}
	return n, nil
}

// applies returns why a grant for ap's principal and command would not
// let that principal make the same call without an approval, or nil: the
// call has no principal, the command's configuration holds every call of
// it for a person (a floor no grant lifts), or the policy no longer
// holds it. A call the gate would refuse on Execute anyway (a command
// since removed, a deny) is left to Execute, which grants nothing.
func (b *grantBook) applies(ap execgate.Approval) *grantRefusal {
	if ap.Principal == "" {
		return grantConflict(`execgate: the call has no principal, and a grant names the principal it covers; nothing was decided: approve without "grant"`, "grant without principal")
	}
	spec, ok := b.x.Allowlist().Lookup(ap.Name)
	if !ok {
		return nil
	}
	if spec.Floor == execgate.ActionRequireApproval {
		return grantConflict(fmt.Sprintf(`execgate: every call of %q is held for a person by its configuration (human_approval or default_action), which no grant lifts; nothing was decided: approve without "grant"`, ap.Name), "grant under a floor")
	}
	d, _ := b.eng.Decide(context.Background(), execgate.Request{Op: execgate.OpRun, Principal: ap.Principal, Name: ap.Name, Spec: spec, DryRun: true})
	if d.Action == execgate.ActionAllow && d.Grant == "" {
		return grantConflict(fmt.Sprintf(`execgate: the policy now allows %q for this principal without an approval, so a grant would change nothing; nothing was decided: approve without "grant"`, ap.Name), "grant of an allowed call")
	}
	return nil
}

// grant grants ap's principal ap's command for length, on behalf of the
// approver (ctx's principal), once the approved call ran, and returns the
// grant, or the refusal the response carries instead. fp is the
// command's spec fingerprint (Allowlist.Fingerprint) when the approval
// was taken: a grant is not made once a reload removed the command or
// changed what it runs (its fingerprint or PolicyVersion), as the same
// reload ends the grants already made (see reloaded, which holds the
// same lock). The grant is recorded before it is made, so that no call
// it lets through precedes its record: a grant the audit trail cannot
// record is not made, and one the Engine refuses after its record (too
// many grants) is recorded as revoked at once.
func (b *grantBook) grant(ctx context.Context, ap execgate.Approval, fp string, length time.Duration) (*grantView, *errorInfo) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sweep()
	id, err := uuid.NewV7()
	if err != nil || b.stopped {
		return nil, &errorInfo{Kind: execgate.ErrorKindInternal, Status: http.StatusInternalServerError, Message: "execgate: the grant was not made: the server is stopping or could not name it; the approved call ran"}
	}
	// The reload swaps the allowlist before it calls reloaded: either
	// this sees the new one, or reloaded sees this grant.
	if !sameSpec(b.x.Allowlist(), ap.Name, fp, ap.PolicyVersion) {
		return nil, &errorInfo{Kind: execgate.ErrorKindRequest, Status: http.StatusConflict,
			Message: fmt.Sprintf("execgate: the grant was not made: a reload removed %q or changed what it runs since the approval was taken; the approved call ran", ap.Name)}
	}
	now := b.now()
	g := policy.Grant{ID: id.String(), Principal: ap.Principal, Tool: ap.Name, Exact: true, Expires: now.Add(length),
		GrantedBy: execgate.PrincipalFrom(ctx), Approval: ap.ID}
	change := execgate.GrantChange{Op: execgate.OpGrant, Grant: g.ID, Principal: g.Principal, Name: g.Tool, ApprovalID: ap.ID,
		Reason: fmt.Sprintf("for %s, until %s", length, g.Expires.UTC().Format(time.RFC3339))}
	if err := b.x.RecordGrant(ctx, change); err != nil {
		return nil, &errorInfo{Kind: execgate.ErrorKindAudit, Status: http.StatusServiceUnavailable,
			Message: "execgate: the grant was not made: the audit trail could not record it; the approved call ran"}
	}
	if _, err := b.eng.Grant(g); err != nil {
		change.Op, change.Reason = execgate.OpRevoke, "not made: the policy engine refused it"
		b.record(ctx, change)
		msg := "execgate: the grant was not made: " + err.Error() + "; the approved call ran"
		if errors.Is(err, policy.ErrTooManyGrants) {
			msg = "execgate: the grant was not made: too many grants are live; revoke one (DELETE /v1/grants/{id}) or let them expire; the approved call ran"
		}
		return nil, &errorInfo{Kind: execgate.ErrorKindRequest, Status: http.StatusConflict, Message: msg}
	}
	g.Created = now
	b.made[g.ID] = g
	b.runs[g.ID] = grantSpec{fp: fp, version: ap.PolicyVersion}
	b.schedule()
	v := viewOf(g)
	return &v, nil
}

// sameSpec reports whether al still serves name with the spec
// fingerprint fp and the PolicyVersion version.
func sameSpec(al *execgate.Allowlist, name, fp, version string) bool {
	spec, ok := al.Lookup(name)
	cur, _ := al.Fingerprint(name)
	return ok && fp != "" && cur == fp && spec.PolicyVersion == version
}

// revoke ends the grant with the given ID, made with an approval, on
// behalf of ctx's principal. A grant of the configuration file is not
// revoked (409): the file says which of them are in force, and a reload
// would bring it back. Any other ID, one never made, already ended or
// expired, is the same 404.
func (b *grantBook) revoke(ctx context.Context, id string) (*grantView, *grantRefusal) {
	unknown := &grantRefusal{reason: "unknown grant", info: &errorInfo{Kind: execgate.ErrorKindRequest, Status: http.StatusNotFound,
		Message: "no such grant: it was never made here, was revoked, or expired; GET /v1/grants lists the grants in force here. With several serve replicas on one approval store, a grant lives in the replica that decided its approval: list and revoke it there"}}
	if b == nil || b.eng == nil {
		return nil, unknown
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sweep()
	g, ok := b.made[id]
	if !ok {
		if slices.ContainsFunc(b.eng.Grants(), func(g policy.Grant) bool { return g.ID == id }) {
			return nil, grantConflict("execgate: this grant comes from the configuration file's grants section, which says what is in force; nothing was revoked: remove it from the file and reload serve (SIGHUP)", "grant of the configuration file")
		}
		return nil, unknown
	}
	b.end(ctx, g, execgate.OpRevoke, "revoked by an approver")
	b.schedule()
	v := viewOf(g)
	return &v, nil
}

// reloaded applies a reloaded configuration: its server.max_grant, and
// the end of every grant made here whose command next no longer serves,
// or serves with another spec fingerprint or PolicyVersion than the
// grant was made for (what the command runs changed). A grant of a
// command next serves unchanged, under a dispatcher or not, stays.
func (b *grantBook) reloaded(next *config.Loaded) {
	if b == nil {
		return
	}
	b.max.Store(int64(serverOf(next).MaxGrant))
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sweep()
	for _, g := range b.sorted() {
		run := b.runs[g.ID]
		switch _, ok := next.Allowlist.Lookup(g.Tool); {
		case !ok:
			b.end(context.Background(), g, execgate.OpRevoke, "ended: a reload removed its command")
		case !sameSpec(next.Allowlist, g.Tool, run.fp, run.version):
			b.end(context.Background(), g, execgate.OpRevoke, "ended: a reload changed what its command runs")
		}
	}
	b.schedule()
}

// list returns the grants in force, the configuration file's and those
// made with approvals, oldest first.
func (b *grantBook) list() []grantView {
	out := []grantView{}
	if b == nil || b.eng == nil {
		return out
	}
	b.mu.Lock()
	b.sweep()
	b.schedule()
	b.mu.Unlock()
	for _, g := range b.eng.Grants() {
		out = append(out, viewOf(g))
	}
	return out
}

// sweep records the expiry of every grant made here whose time has
// passed, and forgets it; the Engine already ignores it. b.mu is held.
func (b *grantBook) sweep() {
	now := b.now()
	for _, g := range b.sorted() {
		if !now.Before(g.Expires) {
			delete(b.made, g.ID)
			delete(b.runs, g.ID)
			b.record(context.Background(), execgate.GrantChange{Op: execgate.OpExpire, Grant: g.ID, Principal: g.Principal, Name: g.Tool,
				ApprovalID: g.Approval, Reason: "expired at " + g.Expires.UTC().Format(time.RFC3339)})
		}
	}
}

// end revokes g in the Engine, forgets it and records op with reason.
// b.mu is held.
func (b *grantBook) end(ctx context.Context, g policy.Grant, op, reason string) {
	b.eng.Revoke(g.ID)
	delete(b.made, g.ID)
	delete(b.runs, g.ID)
	b.record(ctx, execgate.GrantChange{Op: op, Grant: g.ID, Principal: g.Principal, Name: g.Tool, ApprovalID: g.Approval, Reason: reason})
}

// record hands change to the audit trail, logging a failure: the change
// has happened, and an end is never undone for want of its record.
func (b *grantBook) record(ctx context.Context, change execgate.GrantChange) {
	if err := b.x.RecordGrant(ctx, change); err != nil {
		b.log.Load().Error("execgate: a change to a grant could not be recorded in the audit trail", "op", change.Op, "grant", change.Grant, "error", err)
	}
}

// sorted returns the grants made here, oldest first. b.mu is held.
func (b *grantBook) sorted() []policy.Grant {
	out := make([]policy.Grant, 0, len(b.made))
	for _, g := range b.made {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, c policy.Grant) int {
		if n := a.Created.Compare(c.Created); n != 0 {
			return n
		}
		if a.ID < c.ID {
			return -1
		}
		return 1
	})
	return out
}

// schedule sets the timer to record the next expiry when it comes. b.mu
// is held.
func (b *grantBook) schedule() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	if b.stopped || len(b.made) == 0 {
		return
	}
	var first time.Time
	for _, g := range b.made {
		if first.IsZero() || g.Expires.Before(first) {
			first = g.Expires
		}
	}
	b.timer = time.AfterFunc(max(0, first.Sub(b.now())), func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.stopped {
			return
		}
		b.sweep()
		b.schedule()
	})
}

// grantView is a grant as the API shows it.
type grantView struct {
	// ID names the grant for DELETE /v1/grants/{id}.
	ID string `json:"id"`
	// Principal and Tool are what it covers: a principal and a command
	// name when Exact is set (every grant made with an approval), else
	// the patterns of the configuration file.
	Principal string `json:"principal"`
	Tool      string `json:"tool"`
	Exact     bool   `json:"exact"`
	// GrantedBy is the approver who made it, for a grant made with an
	// approval.
	GrantedBy string `json:"granted_by,omitempty"`
	// GrantedAt is when it was made (for the file's, when the file was
	// loaded); Expires is when it stops applying.
	GrantedAt time.Time `json:"granted_at"`
	Expires   time.Time `json:"expires"`
	// Source is "config" for a grant of the configuration file's grants
	// section, "approval" for one an approver made with an approval.
	Source string `json:"source"`
	// Approval is the ID of the approval it was made with.
	Approval string `json:"approval,omitempty"`
	// Reason is the file's reason for it, if any.
	Reason string `json:"reason,omitempty"`
}

func viewOf(g policy.Grant) grantView {
	v := grantView{ID: g.ID, Principal: g.Principal, Tool: g.Tool, Exact: g.Exact, GrantedBy: g.GrantedBy,
		GrantedAt: g.Created, Expires: g.Expires, Source: grantFromConfig, Approval: g.Approval, Reason: g.Reason}
	if g.Approval != "" {
		v.Source = grantFromApproval
	}
	return v
}

// grantRoutes adds the grant routes to mux: GET /v1/grants and DELETE
// /v1/grants/{id}, to approvers.
func (a *api) grantRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/grants", a.listGrants)
	mux.HandleFunc("DELETE /v1/grants/{id}", a.revokeGrant)
	mux.HandleFunc("/v1/grants/{id}", a.methodNotAllowed("DELETE"))
	mux.HandleFunc("/v1/grants", a.methodNotAllowed("GET"))
}

// listGrants serves GET /v1/grants, to approvers: the grants in force,
// the configuration file's and those made with approvals, oldest first.
func (a *api) listGrants(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.authenticate(w, r, roleApprover); !ok {
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Grants []grantView `json:"grants"`
	}{a.grants.list()})
}

// revokeGrant serves DELETE /v1/grants/{id}, to approvers: it ends a
// grant made with an approval, with effect on the next call (see
// grantBook.revoke).
func (a *api) revokeGrant(w http.ResponseWriter, r *http.Request) {
	approver, ok := a.authenticate(w, r, roleApprover)
	if !ok {
		return
	}
	ctx := execgate.WithPrincipal(context.WithoutCancel(r.Context()), approver)
	g, refused := a.grants.revoke(ctx, r.PathValue("id"))
	if refused != nil {
		a.deny(w, r, approver, refused.info, refused.reason)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Status string     `json:"status"`
		Grant  *grantView `json:"grant"`
	}{"revoked", g})
}
