package main

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/mcpserver"
)

// maxPending bounds the approvals a server keeps for its approvers; it is
// the default capacity of the Executor's approval store, which refuses
// proposals beyond it anyway.
const maxPending = 1000

// Bounds of the outcomes a server keeps, beside the pending approvals,
// for their proposers to learn (GET /v1/approvals/{id}, an MCP retry).
const (
	// maxFinished bounds the approvals kept once decided or expired,
	// and maxFinishedPerPrincipal those of one proposer: a proposer at
	// its share forgets its own oldest (by when it was decided or
	// expired), and beyond the total the oldest of the proposer that
	// holds the most is forgotten; its ID reads as unknown.
	maxFinished             = 1000
	maxFinishedPerPrincipal = maxFinished / 4
	// maxResultBytes bounds the bytes of the Results kept (each measured
	// as its JSON), and maxResultBytesPerPrincipal those of one
	// proposer's: beyond its share a proposer's own oldest Results are
	// dropped, and beyond the total the oldest of the proposer that holds
	// the most bytes; their approvals read as "dropped".
	maxResultBytes             = 64 << 20
	maxResultBytesPerPrincipal = maxResultBytes / 4
	// maxWaitsPerPrincipal bounds the GET /v1/approvals/{id}?wait= that
	// one principal has waiting at once; one beyond it is refused (429).
	maxWaitsPerPrincipal = 8
)

// errPendingFull is returned by pendingSet.add when it holds maxPending
// unexpired approvals.
var errPendingFull = errors.New("execgate: too many approvals are pending")

// pendingSet holds the approvals a server issued: those not yet
// approved, rejected or expired, so that an approver can name one by its
// ID, and, for their proposers, what became of them (see claim). An
// approval's outcome is kept from its decision, or its expiry, for the
// approval's lifetime again (ExpiresAt - CreatedAt), and at most
// maxFinished outcomes and maxResultBytes of Results are kept, a quarter
// of each for one proposer (see bound), so that one principal's outcomes
// never push out another's. It is safe for concurrent use.
type pendingSet struct {
	mu          sync.Mutex
	m           map[string]*approvalEntry
	now         func() time.Time
	resultBytes int64
	// waits counts the claims waiting now, by principal (see startWait).
	waits map[string]int

	// The bounds, maxFinished, maxResultBytes and their shares per
	// principal but in tests.
	maxFinished, maxFinishedPer       int
	maxResultBytes, maxResultBytesPer int64

	// notify is told of each approval added and of each decision
	// (server.notify); nil tells no one.
	notify *notifier
}

// approvalEntry is one approval of a pendingSet and what became of it.
type approvalEntry struct {
	ap    execgate.Approval
	state mcpserver.ApprovalState
	// taken is set once an approver took it to decide (see take): it is
	// no longer listed, and no one else can take it.
	taken bool
	// result is the Result of an approved call, until it is claimed or
	// dropped; size is its size in bytes, counted in resultBytes.
	result *execgate.Result
	size   int64
	// traceID is the Result's ID, kept after the Result is claimed.
	traceID string
	// err is the refusal of an approved call that did not run (failed).
	err error
	// finished is when it was decided or expired, forget when it is
	// forgotten; both are zero while it is open.
	finished, forget time.Time
	// done is closed when it is decided or expires.
	done chan struct{}
}

// open reports whether e is still to be decided: pending, or taken by
// an approver and not yet settled.
func (e *approvalEntry) open() bool {
	return e.finished.IsZero()
}

func newPendingSet(now func() time.Time) *pendingSet {
	if now == nil {
		now = time.Now
	}
	return &pendingSet{
		m:                 make(map[string]*approvalEntry),
		waits:             make(map[string]int),
		now:               now,
		maxFinished:       maxFinished,
		maxFinishedPer:    maxFinishedPerPrincipal,
		maxResultBytes:    maxResultBytes,
		maxResultBytesPer: maxResultBytesPerPrincipal,
	}
}

// add keeps ap for the approvers. Its signature is that of
// mcpserver.Options.OnPending.
func (p *pendingSet) add(_ context.Context, ap execgate.Approval) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prune()
	open := 0
	for _, e := range p.m {
		if e.open() {
			open++
		}
	}
	if open >= maxPending {
		return errPendingFull
	}
	p.m[ap.ID] = &approvalEntry{ap: ap, state: mcpserver.ApprovalPending, done: make(chan struct{})}
	// Under p.mu, so that no decision on it is told before it is.
	p.notify.pending(ap)
	return nil
}

// list returns the approvals that wait for a decision, oldest first.
func (p *pendingSet) list() []execgate.Approval {
	p.mu.Lock()
	p.prune()
	out := make([]execgate.Approval, 0, len(p.m))
	for _, e := range p.m {
		if e.open() && !e.taken {
			out = append(out, e.ap)
		}
	}
	p.mu.Unlock()
	slices.SortFunc(out, func(a, b execgate.Approval) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	return out
}

// take hands the pending approval with the given ID to one approver, to
// decide, if check accepts it; exactly one caller gets it. It reports
// false when no such approval is pending. An error from check leaves the
// approval pending and is returned. The approval is then no longer
// listed, and reads as running while approving says it is being
// approved; the caller must settle it.
func (p *pendingSet) take(id string, approving bool, check func(execgate.Approval) error) (execgate.Approval, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prune()
	e, ok := p.m[id]
	if !ok || !e.open() || e.taken {
		return execgate.Approval{}, false, nil
	}
	if err := check(e.ap); err != nil {
		return execgate.Approval{}, true, err
	}
	e.taken = true
	if approving {
		e.state = mcpserver.ApprovalRunning
	}
	return e.ap, true, nil
}

// settle records the decision on an approval an approver took: state is
// approved with its Result res, rejected, or, for an approved call the
// gate refused, failed with the refusal err (expired when err is an
// expiry). Waiting claims then answer.
func (p *pendingSet) settle(id string, state mcpserver.ApprovalState, res *execgate.Result, err error) {
	p.settleBy(id, "", state, res, err)
}

// settleBy is settle of a decision by the approver with that principal,
// which the webhooks are told of (notifier.decided).
func (p *pendingSet) settleBy(id, approver string, state mcpserver.ApprovalState, res *execgate.Result, err error) {
	var ae *execgate.ApprovalError
	if state == mcpserver.ApprovalFailed && errors.As(err, &ae) && ae.Reason == execgate.ReasonExpired {
		state, err = mcpserver.ApprovalExpired, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.m[id]
	if !ok || !e.open() {
		return
	}
	note := decisionNote{approver: approver, approve: e.state == mcpserver.ApprovalRunning, state: state, at: p.now(), res: res, err: err}
	e.state, e.err = state, err
	if state == mcpserver.ApprovalApproved {
		e.state = mcpserver.ApprovalDropped
		if res != nil {
			e.traceID = res.ID
			if b, merr := json.Marshal(res); merr == nil {
				kept := *res
				e.result, e.size, e.state = &kept, int64(len(b)), state
				p.resultBytes += e.size
			}
		}
	}
	p.finish(e, note.at)
	p.notify.decided(e.ap, note)
	p.bound()
}

// finish marks e decided or expired at t; p.mu must be held.
func (p *pendingSet) finish(e *approvalEntry, t time.Time) {
	e.finished = t
	e.forget = t.Add(lifetime(e.ap))
	close(e.done)
}

// lifetime is how long an approval's outcome is kept once decided or
// expired: as long as the approval itself was valid.
func lifetime(ap execgate.Approval) time.Duration {
	if d := ap.ExpiresAt.Sub(ap.CreatedAt); d > 0 {
		return d
	}
	return execgate.DefaultApprovalTTL
}

// prune marks the pending approvals whose time has passed expired, and
// forgets the outcomes whose time has passed; p.mu must be held. An
// approval an approver took is not expired here: the gate judges it.
func (p *pendingSet) prune() {
	now := p.now()
	for id, e := range p.m {
		switch {
		case e.open() && !e.taken && !now.Before(e.ap.ExpiresAt):
			e.state = mcpserver.ApprovalExpired
			p.finish(e, e.ap.ExpiresAt)
		case !e.open() && !now.Before(e.forget):
			p.dropResult(e)
			delete(p.m, id)
		}
	}
	p.bound()
}

// bound keeps the outcomes within maxFinished and maxResultBytes, and
// each proposer's within its share of them (see fairEvict): it forgets
// outcomes beyond the first bounds, then drops Results beyond the second
// (their approvals then read as dropped); p.mu must be held.
func (p *pendingSet) bound() {
	var done, kept []*approvalEntry
	count := make(map[string]int64)
	bytes := make(map[string]int64)
	over := false
	for _, e := range p.m {
		if e.open() {
			continue
		}
		done = append(done, e)
		who := e.ap.Principal
		count[who]++
		bytes[who] += e.size
		over = over || count[who] > int64(p.maxFinishedPer) || bytes[who] > p.maxResultBytesPer
	}
	if !over && len(done) <= p.maxFinished && p.resultBytes <= p.maxResultBytes {
		return
	}
	slices.SortFunc(done, func(a, b *approvalEntry) int {
		if older(a, b) {
			return -1
		}
		return 1
	})
	fairEvict(done, func(*approvalEntry) int64 { return 1 }, int64(p.maxFinished), int64(p.maxFinishedPer), func(e *approvalEntry) {
		p.dropResult(e)
		delete(p.m, e.ap.ID)
	})
	for _, e := range done {
		if p.m[e.ap.ID] == e && e.result != nil {
			kept = append(kept, e)
		}
	}
	fairEvict(kept, func(e *approvalEntry) int64 { return e.size }, p.maxResultBytes, p.maxResultBytesPer, func(e *approvalEntry) {
		p.dropResult(e)
		e.state = mcpserver.ApprovalDropped
	})
}

// older reports whether a was decided or expired before b, of equal
// times the one of the lower ID.
func older(a, b *approvalEntry) bool {
	if c := a.finished.Compare(b.finished); c != 0 {
		return c < 0
	}
	return a.ap.ID < b.ap.ID
}

// fairEvict evicts entries, oldest first, until those of each principal
// weigh at most per and all of them at most total: first the oldest of
// each principal beyond its share, so that one at its share makes room
// with its own, then, while the total is over, the oldest of the
// principal whose entries weigh the most (of equals, the one whose
// oldest is older). No one's entry is evicted for another principal
// while that one is over its share. entries are sorted oldest first.
func fairEvict(entries []*approvalEntry, weight func(*approvalEntry) int64, total, per int64, evict func(*approvalEntry)) {
	type holding struct {
		queue  []*approvalEntry
		weight int64
	}
	held := make(map[string]*holding)
	var sum int64
	for _, e := range entries {
		h := held[e.ap.Principal]
		if h == nil {
			h = &holding{}
			held[e.ap.Principal] = h
		}
		h.queue = append(h.queue, e)
		h.weight += weight(e)
		sum += weight(e)
	}
	pop := func(h *holding) {
		e := h.queue[0]
		h.queue = h.queue[1:]
		h.weight -= weight(e)
		sum -= weight(e)
		evict(e)
	}
	for _, h := range held {
		for h.weight > per && len(h.queue) > 0 {
			pop(h)
		}
	}
	for sum > total {
		var most *holding
		for _, h := range held {
			if len(h.queue) == 0 {
				continue
			}
			if most == nil || h.weight > most.weight || h.weight == most.weight && older(h.queue[0], most.queue[0]) {
				most = h
			}
		}
		if most == nil {
			return
		}
		pop(most)
	}
}

// dropResult lets go of e's Result; p.mu must be held.
func (p *pendingSet) dropResult(e *approvalEntry) {
	if e.result != nil {
		p.resultBytes -= e.size
		e.result, e.size = nil, 0
	}
}

// approvalView is what a claim reports of an approval.
type approvalView struct {
	ap    execgate.Approval
	state mcpserver.ApprovalState
	// result is the Result of the approved call, handed out to this
	// claim: set once per approval.
	result  *execgate.Result
	traceID string
	err     error
	// finished and forget are zero while it is open.
	finished, forget time.Time
}

// claimAnswer says whether a claim found its approval.
type claimAnswer int

const (
	claimFound   claimAnswer = iota + 1
	claimUnknown             // no approval has the ID, or it is no longer kept
	claimOthers              // the approval is another principal's
)

// claim reports what became of the approval with the given ID to
// principal: to its proposer, whose claim is the one that gets the
// Result of the approved call, once (every later claim reads it as
// claimed), and, when approver is set, to an approver, who is told its
// state and never given the Result. Another principal's approval is
// claimOthers, which its callers must answer as they answer
// claimUnknown. While the approval is open, claim waits up to wait for
// it to be decided or to expire, or until ctx is done; a claim whose ctx
// is done hands out no Result.
func (p *pendingSet) claim(ctx context.Context, id, principal string, approver bool, wait time.Duration) (approvalView, claimAnswer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prune()
	e, ok := p.m[id]
	switch {
	case !ok:
		return approvalView{}, claimUnknown
	case e.ap.Principal != principal && !approver:
		return approvalView{}, claimOthers
	}
	for deadline := time.Now().Add(wait); e.open() && ctx.Err() == nil; {
		d := time.Until(deadline)
		if !e.taken {
			// Nothing is told when an approval expires: wake up then.
			d = min(d, e.ap.ExpiresAt.Sub(p.now()))
		}
		if d <= 0 {
			break
		}
		p.mu.Unlock()
		await(ctx, e.done, d)
		p.mu.Lock()
		p.prune()
		if p.m[id] != e {
			return approvalView{}, claimUnknown // forgotten while it was waited for
		}
	}
	v := approvalView{ap: e.ap, state: e.state, traceID: e.traceID, err: e.err, finished: e.finished, forget: e.forget}
	// A claimer that has gone would receive nothing: the Result stays
	// for the next claim.
	if e.ap.Principal == principal && e.state == mcpserver.ApprovalApproved && ctx.Err() == nil {
		if e.result != nil {
			v.result = e.result
			p.dropResult(e)
		}
		e.state = mcpserver.ApprovalClaimed
	}
	return v, claimFound
}

// unclaim puts back res, the Result a claim of the approval with the
// given ID got, when the claimer could not be handed it (its answer did
// not leave): the next claim gets it. While the claim held it, the
// approval read as claimed, so no other claim got it. It does nothing
// once the approval is forgotten.
func (p *pendingSet) unclaim(id string, res *execgate.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.m[id]
	if !ok || res == nil || e.state != mcpserver.ApprovalClaimed || e.result != nil {
		return
	}
	b, err := json.Marshal(res)
	if err != nil {
		return
	}
	e.result, e.size, e.state = res, int64(len(b)), mcpserver.ApprovalApproved
	p.resultBytes += e.size
	p.bound()
}

// startWait counts a waiting claim of principal's, and returns the
// function that ends it, or false when principal already has
// maxWaitsPerPrincipal waiting: each holds a request and a goroutine
// for up to maxPollWait, which one token must not be able to spend
// without bound.
func (p *pendingSet) startWait(principal string) (end func(), ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waits[principal] >= maxWaitsPerPrincipal {
		return nil, false
	}
	p.waits[principal]++
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.waits[principal]--; p.waits[principal] <= 0 {
			delete(p.waits, principal)
		}
	}, true
}

// await waits up to d for done to be closed, or for ctx to be done.
func await(ctx context.Context, done <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
}

// Claim implements mcpserver.Outcomes: what became of the approval with
// the given ID, to principal, its proposer.
func (p *pendingSet) Claim(ctx context.Context, id, principal string, wait time.Duration) mcpserver.ApprovalOutcome {
	v, found := p.claim(ctx, id, principal, false, wait)
	if found != claimFound {
		return mcpserver.ApprovalOutcome{State: mcpserver.ApprovalUnknown}
	}
	return mcpserver.ApprovalOutcome{State: v.state, Result: v.result, Err: v.err}
}
