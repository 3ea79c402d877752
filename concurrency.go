package execgate

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// Scopes of a [BusyError].
const (
	// BusyExecutor: the [Executor] as a whole runs [Config.MaxConcurrent]
	// processes.
	BusyExecutor = "executor"
	// BusyPrincipal: the calling principal runs
	// [Config.MaxConcurrentPerPrincipal] processes.
	BusyPrincipal = "principal"
)

// BusyError reports that a call was refused, before anything started,
// because a concurrency bound of the [Executor] was reached and no slot came
// free within [Config.MaxQueueWait] or the call's context. Nothing was
// recorded as started; the same call may be made again later.
type BusyError struct {
	// Name is the command name of the refused call.
	Name string
	// Scope is [BusyExecutor] or [BusyPrincipal].
	Scope string
	// Limit is the bound that was reached.
	Limit int
}

// Error implements error.
func (e *BusyError) Error() string {
	who := "this executor runs"
	if e.Scope == BusyPrincipal {
		who = "this principal runs"
	}
	return "execgate: " + quoteName(e.Name) + " was not started: " + who + " " +
		strconv.Itoa(e.Limit) + " commands at once already; retry when one has finished"
}

// slots bounds how many processes an [Executor] runs at once, in all and
// per principal. The zero slots is unbounded.
type slots struct {
	total        chan struct{} // nil: no bound in all
	perPrincipal int           // 0: no bound per principal
	wait         time.Duration

	mu      sync.Mutex
	running map[string]int // principal -> processes running
	freed   chan struct{}  // closed and replaced whenever a principal's slot is freed
}

func newSlots(total, perPrincipal int, wait time.Duration) *slots {
	s := &slots{perPrincipal: perPrincipal, wait: wait}
	if total > 0 {
		s.total = make(chan struct{}, total)
	}
	if perPrincipal > 0 {
		s.running = make(map[string]int)
		s.freed = make(chan struct{})
	}
	return s
}

// acquire takes a slot for one process of principal, waiting at most
// s.wait and as long as ctx allows. It returns the function that frees the
// slot, or a *BusyError.
func (s *slots) acquire(ctx context.Context, name, principal string) (release func(), err error) {
	if s == nil || (s.total == nil && s.perPrincipal == 0) {
		return func() {}, nil
	}
	var deadline <-chan time.Time
	if s.wait > 0 {
		t := time.NewTimer(s.wait)
		defer t.Stop()
		deadline = t.C
	}
	// The principal's slot first, so that one principal's queue cannot
	// hold slots of the Executor that others could use.
	if s.perPrincipal > 0 {
		for {
			s.mu.Lock()
			if s.running[principal] < s.perPrincipal {
				s.running[principal]++
				s.mu.Unlock()
				break
			}
			freed := s.freed
			s.mu.Unlock()
			if !waitFor(ctx, deadline, freed) {
				return nil, &BusyError{Name: name, Scope: BusyPrincipal, Limit: s.perPrincipal}
			}
		}
	}
	if s.total != nil {
		select {
		case s.total <- struct{}{}:
		default:
			ok := false
			if deadline != nil {
				select {
				case s.total <- struct{}{}:
					ok = true
				case <-deadline:
				case <-ctx.Done():
				}
			}
			if !ok {
				s.releasePrincipal(principal)
				return nil, &BusyError{Name: name, Scope: BusyExecutor, Limit: cap(s.total)}
			}
		}
	}
	return sync.OnceFunc(func() {
		if s.total != nil {
			<-s.total
		}
		s.releasePrincipal(principal)
	}), nil
}

// waitFor waits until freed is closed (true), or until ctx is done or the
// deadline passes (false). A nil deadline means no waiting at all.
func waitFor(ctx context.Context, deadline <-chan time.Time, freed <-chan struct{}) bool {
	if deadline == nil {
		return false
	}
	select {
	case <-freed:
		return true
	case <-deadline:
	case <-ctx.Done():
	}
	return false
}

func (s *slots) releasePrincipal(principal string) {
	if s.perPrincipal == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.running[principal] - 1; n > 0 {
		s.running[principal] = n
	} else {
		delete(s.running, principal)
	}
	close(s.freed)
	s.freed = make(chan struct{})
}
