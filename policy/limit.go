package policy

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limits is the [Engine]'s rate-limit state: a token bucket per principal,
// the recent times of each distinct call for loop detection, and a budget
// per policy name. It outlives rule swaps. Every field is guarded by mu,
// which is held only for the few map and bucket operations of one
// decision.
type limits struct {
	mu         sync.Mutex
	principals lru[string, *rate.Limiter]
	loops      lru[uint64, []int64] // unix nanoseconds of the last calls, oldest first
	budgets    map[string]*budget
}

// budget counts the calls of one policy in the current window.
type budget struct {
	start time.Time // zero: no window open
	used  int
}

// admit decides whether a call the rules allow stays within l's limits,
// and counts it if so. It returns the Decision.Rule of the refusal, or ""
// when the call is admitted. A refused call is not counted by any limit.
func (s *limits) admit(l *compiledLimit, policy, principal string, key uint64, now time.Time, caps *Options) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.budgets == nil {
		s.budgets = make(map[string]*budget)
		s.principals.init(caps.maxPrincipals())
		s.loops.init(caps.maxLoopEntries())
	}

	var times *[]int64
	if l.loopMax > 0 {
		times = s.loops.get(key)
		if times != nil && countSince(*times, now.Add(-l.loopWindow).UnixNano()) >= l.loopMax {
			return l.loopRule
		}
	}

	var b *budget
	if l.budget > 0 {
		b = s.budgets[policy]
		if b == nil {
			b = &budget{}
			s.budgets[policy] = b
		}
		if l.budgetSpan > 0 && !b.start.IsZero() && !now.Before(b.start.Add(l.budgetSpan)) {
			*b = budget{}
		}
		if b.used >= l.budget {
			return l.budgetRule
		}
	}

	if l.perMinute > 0 {
		lim := s.principals.get(principal)
		if lim == nil {
			lim = s.principals.add(principal)
			*lim = rate.NewLimiter(l.perMinute, l.burst)
		}
		// A swap may have changed the policy's rate: the bucket keeps its
		// tokens and takes the new rate and size.
		if (*lim).Limit() != l.perMinute {
			(*lim).SetLimitAt(now, l.perMinute)
		}
		if (*lim).Burst() != l.burst {
			(*lim).SetBurstAt(now, l.burst)
		}
		if !(*lim).AllowN(now, 1) {
			return l.perMinuteRule
		}
	}

	if b != nil {
		if b.start.IsZero() {
			b.start = now
		}
		b.used++
	}
	if l.loopMax > 0 {
		if times == nil {
			times = s.loops.add(key)
		}
		t := *times
		if len(t) >= l.loopMax {
			// Keep the newest loopMax-1 and append: loopMax in all.
			t = append(t[:0], t[len(t)-l.loopMax+1:]...)
		}
		*times = append(t, now.UnixNano())
	}
	return ""
}

// countSince counts the times after since.
func countSince(times []int64, since int64) int {
	n := 0
	for _, t := range times {
		if t > since {
			n++
		}
	}
	return n
}

// keepBudgets drops the budgets of policies that no longer have one.
func (s *limits) keepBudgets(rs *ruleSet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range s.budgets {
		c := rs.byName(name)
		if c == nil || c.limit == nil || c.limit.budget == 0 {
			delete(s.budgets, name)
		}
	}
}

// tracked reports how many principals and distinct calls l remembers.
func (s *limits) tracked() (principals, loops int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.principals.len(), s.loops.len()
}

// lru is a map holding at most max entries, which evicts the least
// recently used entry to make room. The zero lru must be init'ed.
type lru[K comparable, V any] struct {
	max  int
	m    map[K]*lruNode[K, V]
	root lruNode[K, V] // root.next is the most recently used entry
}

type lruNode[K comparable, V any] struct {
	key        K
	val        V
	prev, next *lruNode[K, V]
}

func (l *lru[K, V]) init(max int) {
	l.max = max
	l.m = make(map[K]*lruNode[K, V])
	l.root.next, l.root.prev = &l.root, &l.root
}

// get returns the entry for k and marks it used, or nil.
func (l *lru[K, V]) get(k K) *V {
	n := l.m[k]
	if n == nil {
		return nil
	}
	l.unlink(n)
	l.pushFront(n)
	return &n.val
}

// add inserts a zero entry for k, which must not be present, evicting the
// least recently used entry if l is full, and returns it.
func (l *lru[K, V]) add(k K) *V {
	var n *lruNode[K, V]
	if len(l.m) >= l.max {
		// Reuse the evicted node.
		n = l.root.prev
		l.unlink(n)
		delete(l.m, n.key)
		var zero V
		n.val = zero
	} else {
		n = new(lruNode[K, V])
	}
	n.key = k
	l.m[k] = n
	l.pushFront(n)
	return &n.val
}

func (l *lru[K, V]) len() int { return len(l.m) }

func (l *lru[K, V]) unlink(n *lruNode[K, V]) {
	n.prev.next = n.next
	n.next.prev = n.prev
	n.prev, n.next = nil, nil
}

func (l *lru[K, V]) pushFront(n *lruNode[K, V]) {
	n.prev = &l.root
	n.next = l.root.next
	l.root.next.prev = n
	l.root.next = n
}
