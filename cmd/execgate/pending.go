package main

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/execgate/execgate"
)

// maxPending bounds the approvals a server keeps for its approvers; it is
// the default capacity of the Executor's approval store, which refuses
// proposals beyond it anyway.
const maxPending = 1000

// errPendingFull is returned by pendingSet.add when it holds maxPending
// unexpired approvals.
var errPendingFull = errors.New("execgate: too many approvals are pending")

// pendingSet holds the approvals a server issued and has not yet seen
// approved, rejected or expired, so that an approver can name one by its
// ID. It is safe for concurrent use.
type pendingSet struct {
	mu  sync.Mutex
	m   map[string]execgate.Approval
	now func() time.Time
}

func newPendingSet(now func() time.Time) *pendingSet {
	if now == nil {
		now = time.Now
	}
	return &pendingSet{m: make(map[string]execgate.Approval), now: now}
}

// add keeps ap for the approvers. Its signature is that of
// mcpserver.Options.OnPending.
func (p *pendingSet) add(_ context.Context, ap execgate.Approval) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prune()
	if len(p.m) >= maxPending {
		return errPendingFull
	}
	p.m[ap.ID] = ap
	return nil
}

// list returns the unexpired approvals, oldest first.
func (p *pendingSet) list() []execgate.Approval {
	p.mu.Lock()
	p.prune()
	out := make([]execgate.Approval, 0, len(p.m))
	for _, ap := range p.m {
		out = append(out, ap)
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

// take removes and returns the approval with the given ID if check
// accepts it; exactly one caller gets it. It reports false when no such
// approval is pending. An error from check leaves the approval pending
// and is returned.
func (p *pendingSet) take(id string, check func(execgate.Approval) error) (execgate.Approval, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ap, ok := p.m[id]
	if !ok {
		return execgate.Approval{}, false, nil
	}
	if err := check(ap); err != nil {
		return execgate.Approval{}, true, err
	}
	delete(p.m, id)
	return ap, true, nil
}

// prune drops expired approvals; p.mu must be held.
func (p *pendingSet) prune() {
	now := p.now()
	for id, ap := range p.m {
		if !now.Before(ap.ExpiresAt) {
			delete(p.m, id)
		}
	}
}
