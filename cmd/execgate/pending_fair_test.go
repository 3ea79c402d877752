package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/mcpserver"
)

// decidedBy adds an approval by principal to p, a second after the last,
// and settles it as state.
func decidedBy(t *testing.T, p *pendingSet, clock *fakeClock, principal string, state mcpserver.ApprovalState, res *execgate.Result) execgate.Approval {
	t.Helper()
	clock.advance(time.Second)
	ap := testApproval(principal, p.now(), 15*time.Minute)
	require.NoError(t, p.add(context.Background(), ap))
	_, found, err := p.take(ap.ID, state == mcpserver.ApprovalApproved, func(execgate.Approval) error { return nil })
	require.True(t, found)
	require.NoError(t, err)
	p.settle(ap.ID, state, res, nil)
	return ap
}

// TestBoundedEverything_OnePrincipalCannotEvictAnothersResults: the
// outcomes and Results a server keeps for their proposers are bounded per
// principal, a quarter of each total by default: a principal at its share
// makes room with its own oldest, never with another's, and once the
// total is reached the oldest of the principal holding the most goes.
func TestBoundedEverything_OnePrincipalCannotEvictAnothersResults(t *testing.T) {
	one, err := json.Marshal(ranResultOf(strings.Repeat("x", 1000)))
	require.NoError(t, err)
	size := int64(len(one))
	ctx := context.Background()
	claim := func(p *pendingSet, ap execgate.Approval) approvalView {
		v, found := p.claim(ctx, ap.ID, ap.Principal, false, 0)
		if found != claimFound {
			return approvalView{state: mcpserver.ApprovalUnknown}
		}
		return v
	}

	t.Run("a flood of large Results drops the flooder's own, not another's", func(t *testing.T) {
		clock := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
		p := newPendingSet(clock.now)
		p.maxResultBytes, p.maxResultBytesPer = 8*size+10, 2*size+10
		b := decidedBy(t, p, clock, "bot-b", mcpserver.ApprovalApproved, ranResultOf(strings.Repeat("x", 1000)))
		var a []execgate.Approval
		for range 20 {
			a = append(a, decidedBy(t, p, clock, "bot-a", mcpserver.ApprovalApproved, ranResultOf(strings.Repeat("x", 1000))))
		}
		assert.LessOrEqual(t, p.resultBytes, 3*size, "bot-a holds its share, bot-b its one Result")
		v := claim(p, b)
		assert.Equal(t, mcpserver.ApprovalApproved, v.state, "bot-b's Result survived the flood")
		assert.NotNil(t, v.result)
		for i, ap := range a {
			v := claim(p, ap)
			if i < len(a)-2 {
				assert.Equal(t, mcpserver.ApprovalDropped, v.state, "bot-a's own oldest Result %d was dropped", i)
				assert.Nil(t, v.result)
			} else {
				assert.Equal(t, mcpserver.ApprovalApproved, v.state, "bot-a's newest Result %d is kept", i)
				assert.NotNil(t, v.result)
			}
		}
	})

	t.Run("a flood of outcomes forgets the flooder's own, not another's", func(t *testing.T) {
		clock := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
		p := newPendingSet(clock.now)
		p.maxFinished, p.maxFinishedPer = 8, 2
		b := decidedBy(t, p, clock, "bot-b", mcpserver.ApprovalRejected, nil)
		var a []execgate.Approval
		for range 20 {
			a = append(a, decidedBy(t, p, clock, "bot-a", mcpserver.ApprovalRejected, nil))
		}
		assert.Len(t, p.m, 3, "bot-a holds its share, bot-b its one outcome")
		assert.Equal(t, mcpserver.ApprovalRejected, claim(p, b).state, "bot-b's outcome survived the flood")
		for i, ap := range a {
			want := mcpserver.ApprovalRejected
			if i < len(a)-2 {
				want = mcpserver.ApprovalUnknown
			}
			assert.Equal(t, want, claim(p, ap).state, "bot-a's outcome %d", i)
		}
	})

	t.Run("at the total, the oldest of the principal holding the most goes", func(t *testing.T) {
		clock := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
		p := newPendingSet(clock.now)
		p.maxFinished, p.maxFinishedPer = 5, 3
		var b, c []execgate.Approval
		for range 3 {
			b = append(b, decidedBy(t, p, clock, "bot-b", mcpserver.ApprovalRejected, nil))
		}
		for range 2 {
			c = append(c, decidedBy(t, p, clock, "bot-c", mcpserver.ApprovalRejected, nil))
		}
		a := decidedBy(t, p, clock, "bot-a", mcpserver.ApprovalRejected, nil)
		assert.Equal(t, mcpserver.ApprovalRejected, claim(p, a).state, "bot-a, below its share, keeps what it added")
		assert.Equal(t, mcpserver.ApprovalUnknown, claim(p, b[0]).state, "bot-b, holding the most, lost its oldest")
		for _, ap := range append(b[1:], c...) {
			assert.Equal(t, mcpserver.ApprovalRejected, claim(p, ap).state)
		}
	})

	t.Run("the default share is a quarter of each bound", func(t *testing.T) {
		p := newPendingSet(nil)
		assert.Equal(t, int(execgate.DefaultPerPrincipalQuota(maxFinished)), p.maxFinishedPer)
		assert.Equal(t, execgate.DefaultPerPrincipalQuota(maxResultBytes), p.maxResultBytesPer)
	})
}
