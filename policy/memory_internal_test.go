package policy

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/internal/fakeclock"
)

func limitedEngine(t testing.TB, opts Options) *Engine {
	t.Helper()
	e, err := New([]Policy{{
		Name: "agents", Principal: "*",
		Rules:     []Rule{{Tools: []string{"*"}, Action: execgate.ActionAllow}},
		RateLimit: RateLimit{PerMinute: 10, Budget: 1 << 30, Loop: Loop{Max: 5, Window: time.Hour}},
	}}, opts)
	require.NoError(t, err)
	return e
}

func TestMemory_ManyPrincipalsStayBounded(t *testing.T) {
	now := time.Date(2030, 1, 2, 15, 4, 5, 0, time.UTC)
	e := limitedEngine(t, Options{Now: func() time.Time { return now }, MaxPrincipals: 1000, MaxLoopEntries: 2000})
	ctx := context.Background()
	call := func(i int) {
		p := "principal-" + strconv.Itoa(i)
		for j := range 3 { // three distinct calls each
			d, err := e.Decide(ctx, execgate.Request{Principal: p, Name: "git.log", Argv: execgate.Argv{Args: []string{"-n", strconv.Itoa(j)}}})
			require.NoError(t, err)
			require.Equal(t, execgate.ActionAllow, d.Action)
		}
	}
	for i := range 10_000 {
		call(i)
		if i%1000 == 999 {
			principals, loops := e.limits.tracked()
			assert.LessOrEqual(t, principals, 1000)
			assert.LessOrEqual(t, loops, 2000)
		}
	}
	principals, loops := e.limits.tracked()
	assert.Equal(t, 1000, principals, "full, not over")
	assert.Equal(t, 2000, loops)

	// The heap does not grow with another 40,000 principals.
	before := heapInUse()
	for i := 10_000; i < 50_000; i++ {
		call(i)
	}
	after := heapInUse()
	assert.Less(t, int64(after)-int64(before), int64(1<<20), "heap grew from %d to %d bytes", before, after)
	runtime.KeepAlive(e)
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func TestMemory_DefaultCaps(t *testing.T) {
	now := time.Date(2030, 1, 2, 15, 4, 5, 0, time.UTC)
	e := limitedEngine(t, Options{Now: func() time.Time { return now }})
	for i := range 10_000 {
		_, err := e.Decide(context.Background(), execgate.Request{Principal: strconv.Itoa(i), Name: "git.log"})
		require.NoError(t, err)
	}
	principals, loops := e.limits.tracked()
	assert.Equal(t, DefaultMaxPrincipals, principals)
	assert.Equal(t, DefaultMaxLoopEntries, loops)
}

func TestMemory_EvictionForgetsTheLeastRecentlyUsed(t *testing.T) {
	now := time.Date(2030, 1, 2, 15, 4, 5, 0, time.UTC)
	e, err := New([]Policy{{
		Name: "agents", Principal: "*",
		Rules:     []Rule{{Tools: []string{"*"}, Action: execgate.ActionAllow}},
		RateLimit: RateLimit{PerMinute: 1},
	}}, Options{Now: func() time.Time { return now }, MaxPrincipals: 2})
	require.NoError(t, err)
	ask := func(p string) string {
		d, err := e.Decide(context.Background(), execgate.Request{Principal: p, Name: "x"})
		require.NoError(t, err)
		return d.Action
	}
	require.Equal(t, execgate.ActionAllow, ask("a"))
	require.Equal(t, execgate.ActionAllow, ask("b"))
	require.Equal(t, execgate.ActionRateLimited, ask("a"), "touches a: b is now the least recently used")
	require.Equal(t, execgate.ActionAllow, ask("c"), "evicts b")
	assert.Equal(t, execgate.ActionRateLimited, ask("a"), "a is still tracked")
	assert.Equal(t, execgate.ActionAllow, ask("b"), "b was forgotten and starts with a full bucket")
}

func TestLRU(t *testing.T) {
	var l lru[int, string]
	l.init(3)
	for i := range 5 {
		*l.add(i) = strconv.Itoa(i)
		if i == 2 {
			require.NotNil(t, l.get(0)) // 0 becomes the most recent
		}
	}
	assert.Equal(t, 3, l.len())
	assert.Nil(t, l.get(1))
	assert.Nil(t, l.get(2))
	for _, k := range []int{0, 3, 4} {
		v := l.get(k)
		require.NotNil(t, v, "key %d", k)
		assert.Equal(t, strconv.Itoa(k), *v)
	}
	*l.add(5) = "5" // 0 is the least recently used now
	assert.Nil(t, l.get(0))
	assert.Equal(t, "5", *l.get(5))
}

func TestGrants_ExpiredArePrunedByDecisions(t *testing.T) {
	now := time.Date(2030, 1, 2, 15, 4, 5, 0, time.UTC)
	e, err := New([]Policy{{Name: "p", Principal: "*", Rules: []Rule{{Tools: []string{"*"}, Action: execgate.ActionRequireApproval}}}},
		Options{Now: func() time.Time { return now }})
	require.NoError(t, err)
	for i := range 5 {
		_, err := e.Grant(Grant{Principal: "p" + strconv.Itoa(i), Tool: "*", Expires: now.Add(time.Minute + time.Duration(i)*time.Second)})
		require.NoError(t, err)
	}
	require.Len(t, *e.grants.Load(), 5)
	now = now.Add(time.Minute + 2*time.Second)
	d, err := e.Decide(context.Background(), execgate.Request{Principal: "p4", Name: "x"})
	require.NoError(t, err)
	assert.Equal(t, execgate.ActionAllow, d.Action)
	assert.Len(t, *e.grants.Load(), 2, "the three expired grants are gone")
}

func TestCallKey(t *testing.T) {
	var e Engine
	key := func(p, n string, args []string, stdin string) uint64 {
		return e.callKey(&execgate.Request{Principal: p, Name: n, Argv: execgate.Argv{Args: args, Stdin: []byte(stdin)}})
	}
	base := key("a", "git.log", []string{"-n", "1"}, "")
	assert.Equal(t, base, key("a", "git.log", []string{"-n", "1"}, ""))
	for _, other := range []uint64{
		key("b", "git.log", []string{"-n", "1"}, ""),
		key("a", "git.diff", []string{"-n", "1"}, ""),
		key("a", "git.log", []string{"-n1"}, ""),
		key("a", "git.log", []string{"-n", "1", ""}, ""),
		key("a", "git.log", []string{"-n", "1"}, "x"),
		key("a", "git.lo", []string{"g", "-n", "1"}, ""),
		key("agit.log", "", []string{"-n", "1"}, ""),
	} {
		assert.NotEqual(t, base, other)
	}
}

func TestDecide_RateLimitedPathAllocatesLittle(t *testing.T) {
	clk := fakeclock.NewTicking(time.Date(2030, 1, 2, 15, 4, 5, 0, time.UTC), time.Millisecond)
	e, err := New([]Policy{{
		Name: "agents", Principal: "*",
		Rules:     []Rule{{Tools: []string{"*"}, Action: execgate.ActionAllow}},
		RateLimit: RateLimit{PerMinute: 1 << 20, Budget: 1 << 30, Loop: Loop{Max: 100, Window: time.Nanosecond}},
	}}, Options{Now: clk.Now})
	require.NoError(t, err)
	req := execgate.Request{Principal: "a", Name: "git.log", Argv: execgate.Argv{Args: []string{"-n", "1"}}}
	_, _ = e.Decide(context.Background(), req)
	allocs := testing.AllocsPerRun(200, func() {
		d, _ := e.Decide(context.Background(), req)
		if d.Action != execgate.ActionAllow {
			panic(d)
		}
	})
	assert.LessOrEqual(t, allocs, 0.1, "a known principal and call cost no allocation once its history is full")
}
