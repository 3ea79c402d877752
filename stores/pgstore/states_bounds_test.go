package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/stores/pgstore"
)

// settler settles approvals of a States table one after another, each
// decided a second after the last.
type settler struct {
	t  *testing.T
	s  *pgstore.States
	t0 time.Time
	n  atomic.Int64
}

// result is the Result the tests settle: 1 KiB of output.
var result = json.RawMessage(`{"stdout":"` + strings.Repeat("x", 1024) + `"}`)

// settle adds an approval of principal's, takes it and settles it as
// approved with res (or rejected, with none), and returns its ID.
func (st *settler) settle(principal string, res json.RawMessage) string {
	st.t.Helper()
	ctx := context.Background()
	n := st.n.Add(1)
	id := fmt.Sprintf("018f0000-0000-7000-8000-%012d", n)
	at := st.t0.Add(time.Duration(n) * time.Second)
	if err := st.s.Add(ctx, stateApproval(id, principal, at, time.Hour), at, 1000); err != nil {
		st.t.Fatalf("Add: %v", err)
	}
	if _, found, err := st.s.Take(ctx, id, at, "running", lease, func(execgate.Approval) error { return nil }); !found || err != nil {
		st.t.Fatalf("Take: %v, %v", found, err)
	}
	set := pgstore.Settlement{State: "rejected", At: at, Owner: lease.Owner}
	if res != nil {
		set = pgstore.Settlement{State: pgstore.StateApproved, Result: res, ResultSize: int64(len(res)), TraceID: id, At: at, Owner: lease.Owner}
	}
	if ok, err := st.s.Settle(ctx, id, set); !ok || err != nil {
		st.t.Fatalf("Settle: %v, %v; want settled", ok, err)
	}
	return id
}

// state is what the table says of the approval with the given ID, ""
// when it is forgotten.
func (st *settler) state(id string) string {
	st.t.Helper()
	e, ok, err := st.s.Get(context.Background(), id, time.Now())
	if err != nil {
		st.t.Fatalf("Get: %v", err)
	}
	if !ok {
		return ""
	}
	return e.State
}

// TestBoundedEverything_OnePrincipalCannotEvictAnothersResults: the
// Results a States table keeps for their proposers are bounded per
// principal (ResultBounds, a quarter of the total by default) in the
// transaction that stores them, and so are the outcomes Bound keeps: a
// principal at its share loses its own oldest, never another's, and at
// the total the principal holding the most loses its oldest. A call
// that ran is always settled; its dropped Result reads dropped.
func TestBoundedEverything_OnePrincipalCannotEvictAnothersResults(t *testing.T) {
	size := int64(len(result))
	ctx := context.Background()
	var mu sync.Mutex

	t.Run("a flood of Results drops the flooder's own, not another's", func(t *testing.T) {
		st := &settler{t: t, s: newStates(t).WithResultBounds(pgstore.ResultBounds{MaxBytes: 8 * size, PerPrincipalMaxBytes: 2 * size}), t0: time.Now().UTC().Truncate(time.Microsecond)}
		b := st.settle("bot-b", result)
		var a []string
		for range 10 {
			a = append(a, st.settle("bot-a", result))
		}
		for i, id := range a {
			want := pgstore.StateApproved
			if i < len(a)-2 {
				want = pgstore.StateDropped
			}
			if got := st.state(id); got != want {
				t.Errorf("bot-a's approval %d reads %q; want %q: bot-a holds its share, its newest", i, got, want)
			}
		}
		if res, ok, err := st.s.Claim(ctx, b, "bot-b"); err != nil || !ok || string(res) != string(result) {
			t.Errorf("bot-b's claim after bot-a's flood: %v, %v; want its Result", ok, err)
		}
	})

	t.Run("a Result put back past its principal's share drops that principal's oldest", func(t *testing.T) {
		st := &settler{t: t, s: newStates(t).WithResultBounds(pgstore.ResultBounds{MaxBytes: 8 * size, PerPrincipalMaxBytes: 2 * size}), t0: time.Now().UTC().Truncate(time.Microsecond)}
		b := st.settle("bot-b", result)
		first := st.settle("bot-a", result)
		res, ok, err := st.s.Claim(ctx, first, "bot-a")
		if err != nil || !ok {
			t.Fatalf("Claim: %v, %v", ok, err)
		}
		second, third := st.settle("bot-a", result), st.settle("bot-a", result)
		if err := st.s.Unclaim(ctx, first, res); err != nil {
			t.Fatalf("Unclaim: %v", err)
		}
		for id, want := range map[string]string{first: pgstore.StateDropped, second: pgstore.StateApproved, third: pgstore.StateApproved, b: pgstore.StateApproved} {
			if got := st.state(id); got != want {
				t.Errorf("%s reads %q; want %q", id, got, want)
			}
		}
	})

	t.Run("at the total, the oldest of the principal holding the most goes", func(t *testing.T) {
		st := &settler{t: t, s: newStates(t).WithResultBounds(pgstore.ResultBounds{MaxBytes: 5 * size, PerPrincipalMaxBytes: 3 * size}), t0: time.Now().UTC().Truncate(time.Microsecond)}
		var b, c []string
		for range 3 {
			b = append(b, st.settle("bot-b", result))
		}
		for range 2 {
			c = append(c, st.settle("bot-c", result))
		}
		a := st.settle("bot-a", result)
		want := map[string]string{a: pgstore.StateApproved, b[0]: pgstore.StateDropped, b[1]: pgstore.StateApproved,
			b[2]: pgstore.StateApproved, c[0]: pgstore.StateApproved, c[1]: pgstore.StateApproved}
		for id, w := range want {
			if got := st.state(id); got != w {
				t.Errorf("%s reads %q; want %q: bot-a was below its share, bot-b held the most", id, got, w)
			}
		}
	})

	t.Run("a Result larger than the share alone is dropped, and the call is settled", func(t *testing.T) {
		st := &settler{t: t, s: newStates(t).WithResultBounds(pgstore.ResultBounds{MaxBytes: 8 * size, PerPrincipalMaxBytes: size - 1}), t0: time.Now().UTC().Truncate(time.Microsecond)}
		if got := st.state(st.settle("bot-a", result)); got != pgstore.StateDropped {
			t.Errorf("reads %q; want %q", got, pgstore.StateDropped)
		}
	})

	t.Run("concurrent settles of many principals keep every bound", func(t *testing.T) {
		st := &settler{t: t, s: newStates(t).WithResultBounds(pgstore.ResultBounds{MaxBytes: 6 * size, PerPrincipalMaxBytes: 2 * size}), t0: time.Now().UTC().Truncate(time.Microsecond)}
		ids := make([][]string, 4)
		var wg sync.WaitGroup
		for p := range ids {
			for range 3 {
				wg.Go(func() {
					for range 4 {
						id := st.settle(fmt.Sprintf("bot-%d", p), result)
						mu.Lock()
						ids[p] = append(ids[p], id)
						mu.Unlock()
					}
				})
			}
		}
		wg.Wait()
		kept := 0
		for p, of := range ids {
			mine := 0
			for _, id := range of {
				if st.state(id) == pgstore.StateApproved {
					mine++
				}
			}
			if mine > 2 {
				t.Errorf("bot-%d keeps %d Results; want at most its share, 2", p, mine)
			}
			kept += mine
		}
		if kept > 6 {
			t.Errorf("%d Results are kept; want at most 6", kept)
		}
	})

	t.Run("Bound forgets the flooder's own outcomes, not another's", func(t *testing.T) {
		st := &settler{t: t, s: newStates(t), t0: time.Now().UTC().Truncate(time.Microsecond)}
		b := st.settle("bot-b", nil)
		var a []string
		for range 20 {
			a = append(a, st.settle("bot-a", nil))
			if err := st.s.Bound(ctx, 8, 1<<20); err != nil {
				t.Fatalf("Bound: %v", err)
			}
		}
		if got := st.state(b); got != "rejected" {
			t.Errorf("bot-b's outcome reads %q after bot-a's flood; want rejected", got)
		}
		for i, id := range a {
			want := "rejected"
			if i < len(a)-2 {
				want = ""
			}
			if got := st.state(id); got != want {
				t.Errorf("bot-a's outcome %d reads %q; want %q (a quarter of 8 is kept, the newest)", i, got, want)
			}
		}
	})
}
