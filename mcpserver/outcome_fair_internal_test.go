package mcpserver

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// heldBy is principal's n-th call left pending, proposed at start plus
// n seconds, and its key.
func heldBy(principal string, start time.Time, n int) (heldKey, execgate.Approval) {
	ap := execgate.Approval{ID: fmt.Sprintf("0190b8d5-0000-7000-8000-%012d", n), Principal: principal, Name: "deploy",
		CreatedAt: start.Add(time.Duration(n) * time.Second), ExpiresAt: start.Add(time.Hour)}
	return heldKeyOf(principal, "deploy", fmt.Sprintf("digest-%d", n)), ap
}

// TestBoundedEverything_OnePrincipalCannotEvictAnothersHeldCalls: the
// calls a server remembers as left pending, for their callers' retries,
// are bounded per principal, a quarter of maxHeld: a principal at its
// share forgets its own oldest call, never another's, and once maxHeld
// are remembered the oldest of the principal that remembers the most is
// forgotten, so that one principal's calls cannot make another's retry
// ask for a new approval.
func TestBoundedEverything_OnePrincipalCannotEvictAnothersHeldCalls(t *testing.T) {
	require.Equal(t, maxHeld/4, maxHeldPerPrincipal, "the share is a quarter of the bound")
	start := time.Now()
	t.Run("a flood of calls forgets the flooder's own, not another's", func(t *testing.T) {
		s := &Server{held: map[heldKey]*heldCall{}}
		kb, apb := heldBy("bot-b", start, 0)
		hb := s.hold(kb, apb)
		var ka []heldKey
		for n := 1; n <= 2*maxHeld; n++ {
			k, ap := heldBy("bot-a", start, n)
			s.hold(k, ap)
			ka = append(ka, k)
		}
		assert.Same(t, hb, s.heldCallOf(kb), "bot-b's call is still remembered for its retry")
		assert.Len(t, s.held, maxHeldPerPrincipal+1, "bot-a remembers its share")
		for i, k := range ka {
			if i < len(ka)-maxHeldPerPrincipal {
				assert.Nil(t, s.heldCallOf(k), "bot-a's own oldest call %d was forgotten", i)
			} else {
				assert.NotNil(t, s.heldCallOf(k), "bot-a's newest call %d is remembered", i)
			}
		}
	})
	t.Run("at maxHeld, the oldest of the principal holding the most goes", func(t *testing.T) {
		s := &Server{held: map[heldKey]*heldCall{}}
		first := map[string]heldKey{}
		n := 0
		for _, who := range []string{"bot-b", "bot-c", "bot-d", "bot-e"} {
			for i := range maxHeldPerPrincipal {
				n++
				k, ap := heldBy(who, start, n)
				s.hold(k, ap)
				if i == 0 {
					first[who] = k
				}
			}
		}
		require.Len(t, s.held, maxHeld)
		ka, apa := heldBy("bot-a", start, n+1)
		s.hold(ka, apa)
		assert.NotNil(t, s.heldCallOf(ka), "bot-a, below its share, is remembered")
		assert.Len(t, s.held, maxHeld)
		assert.Nil(t, s.heldCallOf(first["bot-b"]), "of the equals holding the most, bot-b's oldest is the oldest and goes")
		for _, who := range []string{"bot-c", "bot-d", "bot-e"} {
			assert.NotNil(t, s.heldCallOf(first[who]), "%s keeps its oldest", who)
		}
	})
}
