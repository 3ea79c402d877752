package policy_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/policy"
)

// Decisions, swaps and grant changes run concurrently; run with -race.
// Every decision must come whole from one of the two rule sets.
func TestConcurrentDecideAndSwap(t *testing.T) {
	clk := newClock()
	v1 := []policy.Policy{{Name: "v1", Principal: "agent-*", Rules: []policy.Rule{rule(allow, "git.*")},
		RateLimit: policy.RateLimit{PerMinute: 1 << 20, Loop: policy.Loop{Max: 100, Window: time.Second}}}}
	v2 := []policy.Policy{{Name: "v2", Principal: "*", Rules: []policy.Rule{rule(approval, "git.*")},
		RateLimit: policy.RateLimit{PerMinute: 1 << 19, Budget: 1 << 30}}}
	e := newEngine(t, policy.Options{Now: clk.Now, MaxPrincipals: 16, MaxLoopEntries: 16}, v1...)
	valid := map[execgate.Decision]bool{
		{Action: allow, Rule: "v1/1"}:    true,
		{Action: approval, Rule: "v2/1"}: true,
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var bad sync.Map
	for g := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				d, err := e.Decide(context.Background(), execgate.Request{
					Principal: fmt.Sprint("agent-", (g*7+i)%40),
					Name:      "git.log",
					Argv:      execgate.Argv{Args: []string{fmt.Sprint(i % 5)}},
				})
				ok := valid[d]
				if d.Grant != "" { // agent-1 while a grant lives, under v2 only
					ok = d.Action == allow && d.Rule == "v2/1"
				}
				if err != nil || !ok {
					bad.Store(fmt.Sprintf("%+v %v", d, err), true)
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 500 {
			if i%2 == 0 {
				assert.NoError(t, e.Swap(v2))
			} else {
				assert.NoError(t, e.Swap(v1))
			}
			id, err := e.Grant(policy.Grant{Principal: "agent-1", Tool: "git.*", Expires: clk.Now().Add(time.Minute)})
			assert.NoError(t, err)
			e.Grants()
			e.Revoke(id)
			clk.Advance(time.Millisecond)
		}
	})
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	bad.Range(func(k, _ any) bool {
		t.Errorf("unexpected decision: %s", k)
		return true
	})
	require.NoError(t, e.Swap(v2))
	assert.Equal(t, approval, decide(t, e, "agent-3", "git.log").Action)
}
