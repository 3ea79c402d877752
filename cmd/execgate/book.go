package main

import (
	"context"
	"time"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/mcpserver"
)

// approvalBook is where a server keeps the approvals it issued, for its
// approvers to list and decide and for their proposers to learn what
// became of them: in memory (pendingSet, server.approval_store kind
// memory, the default) or in PostgreSQL (pgBook, kind postgres), shared
// by every replica on the database and kept across restarts. The
// Executor's ApprovalStore holds the records that Execute takes; the
// book holds what is shown of them. Any method may be called
// concurrently. A method that returns an error did nothing it reports:
// a database it could not reach, say.
type approvalBook interface {
	// Add keeps ap, just proposed, for the approvers, unless too many
	// approvals are pending. Its signature is that of
	// mcpserver.Options.OnPending.
	Add(ctx context.Context, ap execgate.Approval) error
	// List returns the approvals that wait for a decision, oldest first.
	List(ctx context.Context) ([]execgate.Approval, error)
	// Take hands the pending approval with the given ID to one approver,
	// to decide, if check accepts it: of every caller, in every replica,
	// exactly one gets it (see pendingSet.take). It must be settled.
	Take(ctx context.Context, id string, approving bool, check func(execgate.Approval) error) (execgate.Approval, bool, error)
	// Settle records the decision of approver on an approval it took
	// (see pendingSet.settleBy).
	Settle(ctx context.Context, id, approver string, state mcpserver.ApprovalState, res *execgate.Result, err error) error
	// Look reports what became of an approval, to its proposer, who
	// gets an approved call's Result once, or to an approver, waiting
	// up to wait while it is open (see pendingSet.claim).
	Look(ctx context.Context, id, principal string, approver bool, wait time.Duration) (approvalView, claimAnswer, error)
	// Release puts an approval an approver took back for the approvers,
	// pending and listed again, when the Executor could not take its
	// record (see recordLeftPending); it does nothing to a settled one.
	Release(ctx context.Context, id string) error
	// Unclaim puts back a Result whose answer did not leave.
	Unclaim(ctx context.Context, id string, res *execgate.Result) error
	// StartWait counts a waiting look of principal's in this process
	// (see pendingSet.startWait).
	StartWait(principal string) (end func(), ok bool)
	// Claim is mcpserver.Outcomes's.
	mcpserver.Outcomes
}

// The memory book is the pendingSet of this process.
var _ approvalBook = (*pendingSet)(nil)

// Add implements approvalBook.
func (p *pendingSet) Add(ctx context.Context, ap execgate.Approval) error { return p.add(ctx, ap) }

// List implements approvalBook.
func (p *pendingSet) List(context.Context) ([]execgate.Approval, error) { return p.list(), nil }

// Take implements approvalBook.
func (p *pendingSet) Take(_ context.Context, id string, approving bool, check func(execgate.Approval) error) (execgate.Approval, bool, error) {
	return p.take(id, approving, check)
}

// Settle implements approvalBook.
func (p *pendingSet) Settle(_ context.Context, id, approver string, state mcpserver.ApprovalState, res *execgate.Result, err error) error {
	p.settleBy(id, approver, state, res, err)
	return nil
}

// Look implements approvalBook.
func (p *pendingSet) Look(ctx context.Context, id, principal string, approver bool, wait time.Duration) (approvalView, claimAnswer, error) {
	v, found := p.claim(ctx, id, principal, approver, wait)
	return v, found, nil
}

// Unclaim implements approvalBook.
func (p *pendingSet) Unclaim(_ context.Context, id string, res *execgate.Result) error {
	p.unclaim(id, res)
	return nil
}

// StartWait implements approvalBook.
func (p *pendingSet) StartWait(principal string) (func(), bool) { return p.startWait(principal) }

// Release implements approvalBook.
func (p *pendingSet) Release(_ context.Context, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.m[id]; ok && e.open() && e.taken {
		e.taken, e.state = false, mcpserver.ApprovalPending
	}
	return nil
}
