package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/mcpserver"
)

// maxPollWait bounds the wait of GET /v1/approvals/{id}?wait=DURATION: a
// longer one waits this long.
const maxPollWait = time.Minute

// approvalPath is the path of GET /v1/approvals/{id} for an approval.
func approvalPath(id string) string {
	return "/v1/approvals/" + id
}

// approvalAnswer is the body of a response to GET /v1/approvals/{id}.
type approvalAnswer struct {
	// Status is the approval's state (mcpserver.ApprovalState): pending,
	// running, approved, claimed, dropped, rejected, expired or failed.
	Status string `json:"status"`
	// Approval is the approval.
	Approval execgate.Approval `json:"approval"`
	// Result is the Result of the approved call: to its proposer, in the
	// first answer after it ran (approved), and in no other.
	Result *execgate.Result `json:"result,omitempty"`
	// Error is why the approved call did not run (failed).
	Error *errorInfo `json:"error,omitempty"`
	// TraceID names the approved call's run in the audit trail: its
	// Result's ID (approved, claimed, dropped).
	TraceID string `json:"trace_id,omitempty"`
	// DecidedAt is when it was decided, or expired; absent while it is
	// pending or running.
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	// KeptUntil is when this server forgets it, after which its ID reads
	// as unknown; absent while it is pending or running.
	KeptUntil *time.Time `json:"kept_until,omitempty"`
	// LatencyMS is how long the server spent on the request, the wait
	// included, in milliseconds.
	LatencyMS int64 `json:"latency_ms"`
}

// approvalState serves GET /v1/approvals/{id}: what became of an
// approval, to its proposer, who gets the approved call's Result once,
// and to approvers, who are told its state only. To anyone else the
// approval does not exist: the answer is the 404 of an unknown ID, word
// for word. ?wait=DURATION waits, while the approval is pending or
// running, up to DURATION (at most maxPollWait) for it to be decided or
// to expire, answering as soon as it is, or when the client goes away;
// a principal has at most maxWaitsPerPrincipal waits open at once, and
// one more is refused with the 429 of a busy principal.
func (a *api) approvalState(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	principal, ok := a.authenticate(w, r, 0)
	if !ok {
		return
	}
	wait, ok := a.pollWait(w, r, principal)
	if !ok {
		return
	}
	if wait > 0 {
		end, ok := a.pending.StartWait(principal)
		if !ok {
			w.Header().Set("Retry-After", strconv.Itoa(busyRetryAfter))
			a.deny(w, r, principal, &errorInfo{Kind: execgate.ErrorKindBusy, Reason: execgate.BusyPrincipal, Limit: maxWaitsPerPrincipal,
				Status:  http.StatusTooManyRequests,
				Message: fmt.Sprintf("execgate: this principal has %d waits of GET /v1/approvals/{id}?wait= open already; retry when one has answered, or poll without wait", maxWaitsPerPrincipal)}, "too many waits")
			return
		}
		defer end()
	}
	c, _ := a.lookup(r)
	approver := c != nil && c.role == roleApprover
	v, found, err := a.pending.Look(r.Context(), r.PathValue("id"), principal, approver, wait)
	if err != nil {
		a.deny(w, r, principal, storeRefusal(err, ""), "approval store unavailable")
		return
	}
	if found != claimFound {
		reason := "unknown approval"
		if found == claimOthers {
			// Recorded as such, answered as an unknown ID.
			reason = "approval of another principal"
		}
		a.deny(w, r, principal, &errorInfo{Kind: execgate.ErrorKindApproval, Reason: execgate.ReasonUnknown, Status: http.StatusNotFound,
			Message: "no such approval: it was never issued here for you, or it is no longer kept"}, reason)
		return
	}
	body := approvalAnswer{Status: string(v.state), Approval: v.ap, Result: v.result, TraceID: v.traceID}
	if v.err != nil {
		body.Error = refusal(v.err)
	}
	if !v.finished.IsZero() {
		body.DecidedAt, body.KeptUntil = &v.finished, &v.forget
	}
	body.LatencyMS = time.Since(start).Milliseconds()
	if err := writeAll(w, http.StatusOK, body); err != nil && v.result != nil {
		// The Result did not leave: it was claimed for this answer
		// only, so no other claim got it meanwhile, and the next one
		// gets it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 30*time.Second)
		defer cancel()
		if err := a.pending.Unclaim(ctx, v.ap.ID, v.result); err != nil {
			a.log.Error("execgate: a Result whose answer did not leave could not be put back in the approval store", "approval", v.ap.ID, "error", err)
		}
	}
}

// writeAll writes v as JSON with its Content-Length, so that a client
// never takes a cut body for a whole one, and flushes it, returning the
// error of a response that did not wholly leave.
func writeAll(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		writeJSON(w, status, v)
		return err
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	if _, err := w.Write(b); err != nil {
		return err
	}
	if err := http.NewResponseController(w).Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// pollWait returns the wait of a GET /v1/approvals/{id}: its only query
// parameter, wait, a duration of at least 0s such as 30s, at most
// maxPollWait (a longer one is cut to it); 0 without one. Anything else
// in the query is refused (400) and recorded.
func (a *api) pollWait(w http.ResponseWriter, r *http.Request, principal string) (time.Duration, bool) {
	refuse := func(msg, reason string) (time.Duration, bool) {
		a.deny(w, r, principal, &errorInfo{Kind: execgate.ErrorKindRequest, Status: http.StatusBadRequest, Message: msg}, reason)
		return 0, false
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return refuse("the query string is malformed; the only parameter is wait, such as ?wait=30s", "malformed query")
	}
	for k := range q {
		if k != "wait" {
			return refuse(fmt.Sprintf("unknown query parameter %q; the only parameter is wait, such as ?wait=30s", cut(k, 64)), "unknown query parameter")
		}
	}
	vals := q["wait"]
	switch {
	case len(vals) == 0:
		return 0, true
	case len(vals) > 1:
		return refuse("wait is given more than once", "invalid wait")
	}
	d, err := time.ParseDuration(vals[0])
	if err != nil || d < 0 {
		return refuse(fmt.Sprintf("wait must be a duration of at least 0s with its unit, such as 30s or 1m (at most %s is waited)", maxPollWait), "invalid wait")
	}
	return min(d, maxPollWait), true
}

// Outcomes reads pendingSet as mcpserver.Outcomes.
var _ mcpserver.Outcomes = (*pendingSet)(nil)
