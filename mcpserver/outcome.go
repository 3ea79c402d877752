package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execgate/execgate"
)

// ApprovalState says what became of an approval that a server left
// pending for an out-of-band approver, as [Outcomes.Claim] reports it.
// The execgate binary's HTTP API names the same states with the same
// words.
type ApprovalState string

const (
	// ApprovalUnknown: no approval with this ID was proposed by this
	// principal, or it is no longer kept. An approval of another
	// principal's is unknown too, so that a caller cannot tell it exists.
	ApprovalUnknown ApprovalState = "unknown"
	// ApprovalPending: no one has decided it yet, and it has not expired.
	ApprovalPending ApprovalState = "pending"
	// ApprovalRunning: it was approved, and its command is running.
	ApprovalRunning ApprovalState = "running"
	// ApprovalApproved: it was approved and its command ran;
	// [ApprovalOutcome.Result] is the Result, handed out to this claim.
	ApprovalApproved ApprovalState = "approved"
	// ApprovalClaimed: it was approved and its command ran, and its
	// Result was handed out to an earlier claim. A Result is handed out
	// once.
	ApprovalClaimed ApprovalState = "claimed"
	// ApprovalDropped: it was approved and its command ran, and its
	// Result is no longer kept (a bound on the bytes of kept Results); the
	// approver was given it.
	ApprovalDropped ApprovalState = "dropped"
	// ApprovalRejected: an approver rejected it; nothing ran.
	ApprovalRejected ApprovalState = "rejected"
	// ApprovalExpired: no one decided it before it expired, or it was
	// approved too late; nothing ran.
	ApprovalExpired ApprovalState = "expired"
	// ApprovalFailed: it was approved, and the gate refused to run it
	// then (the tool changed, the policy now denies it, ...);
	// [ApprovalOutcome.Err] says why. Nothing ran.
	ApprovalFailed ApprovalState = "failed"
	// ApprovalUnavailable: what became of it cannot be read now (the
	// store that keeps it cannot be reached); nothing changed. The call
	// is refused with a message that says to call again later, and a
	// later identical call asks again about the same approval.
	ApprovalUnavailable ApprovalState = "unavailable"
)

// ApprovalOutcome is what became of an approval, as [Outcomes.Claim]
// reports it.
type ApprovalOutcome struct {
	// State is what became of it.
	State ApprovalState
	// Result is the Result of the approved call, for [ApprovalApproved]
	// only.
	Result *execgate.Result
	// Err is the gate's refusal of the approved call, an error from
	// Executor.Execute, for [ApprovalFailed] only.
	Err error
}

// Outcomes tells a [Server] what became of the approvals it left pending
// for an out-of-band approver (see [Options.Outcomes]): whoever decides
// them, with Executor.Execute or Executor.Reject, records the outcome
// where Claim finds it.
//
// Claim reports what became of the approval with the given ID, which
// principal proposed. While the approval is pending (or running), Claim
// waits up to wait for it to be decided, or to expire, or for ctx to be
// done, and then reports its state as it is; wait 0 reports it at once.
// The Result of an approved call is handed out once: the first Claim
// after the call ran returns [ApprovalApproved] with the Result, and
// every later one [ApprovalClaimed] without it. An ID that no approval
// of principal's has, another principal's included, is
// [ApprovalUnknown], with no Result. A Claim whose ctx is done when it
// would hand the Result out hands out none: its caller has gone, and a
// later Claim gets it. Claim may be called concurrently, also for one
// ID: exactly one caller gets the Result.
type Outcomes interface {
	Claim(ctx context.Context, id, principal string, wait time.Duration) ApprovalOutcome
}

// Bounds of the calls a server remembers as left pending (see heldCall).
const (
	// maxHeld bounds the calls remembered, and maxHeldPerPrincipal those
	// of one principal: a principal at its share forgets its own oldest,
	// and beyond the total the oldest of the principal that holds the
	// most is forgotten; a retry of it asks for a new approval.
	maxHeld             = 1000
	maxHeldPerPrincipal = maxHeld / 4
)

// heldKey names a call left pending across its caller's retries: the
// SHA-256 of its principal, its command name and the proposal digest of
// what it would run (Proposer.Check), so that only the same principal's
// call of the same command that would run exactly the same thing finds
// it.
type heldKey [sha256.Size]byte

// heldCall is a call left pending for an out-of-band approver, remembered
// so that its caller's retry learns its outcome instead of proposing it
// again.
type heldCall struct {
	ap     execgate.Approval
	forget time.Time // when it is no longer remembered
}

// heldKeyOf returns the key of principal's call of name that would run
// what the proposal digest says.
func heldKeyOf(principal, name, digest string) heldKey {
	h := sha256.New()
	for _, s := range []string{principal, name, digest} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	var k heldKey
	h.Sum(k[:0])
	return k
}

// keyOf returns the key of principal's call of name with input, or false
// when the gate refuses the call (Submit then refuses it too).
func (s *Server) keyOf(principal, name string, input json.RawMessage) (heldKey, bool) {
	p, err := s.x.Proposer().Check(name, input)
	if err != nil {
		return heldKey{}, false
	}
	return heldKeyOf(principal, name, p.Digest), true
}

// hold remembers a call left pending under k, until its approval has
// expired and as long again after, when its outcome is no longer kept
// anyway. Its principal (the approval's) at maxHeldPerPrincipal forgets
// its own oldest call; otherwise, when maxHeld are remembered, the
// oldest of the principal that remembers the most is forgotten, so that
// one principal's calls never push out another's.
func (s *Server) hold(k heldKey, ap execgate.Approval) *heldCall {
	life := ap.ExpiresAt.Sub(ap.CreatedAt)
	h := &heldCall{ap: ap, forget: ap.ExpiresAt.Add(max(life, 0))}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneHeld(time.Now())
	delete(s.held, k)
	if old, ok := s.heldToForget(ap.Principal, maxHeld, maxHeldPerPrincipal); ok {
		delete(s.held, old)
	}
	s.held[k] = h
	return h
}

// heldToForget returns the key of the call to forget so that principal
// may hold one more, within per of its own and total in all: its own
// oldest when it holds per, or else, when total are held, the oldest of
// the principal that holds the most (of equals, the one whose oldest is
// older); false when there is room. s.mu must be held.
func (s *Server) heldToForget(principal string, total, per int) (heldKey, bool) {
	type holding struct {
		n      int
		oldest heldKey
	}
	held := make(map[string]*holding)
	for k, c := range s.held {
		who := held[c.ap.Principal]
		if who == nil {
			who = &holding{oldest: k}
			held[c.ap.Principal] = who
		}
		who.n++
		if heldBefore(k, c, who.oldest, s.held[who.oldest]) {
			who.oldest = k
		}
	}
	if own := held[principal]; own != nil && own.n >= per {
		return own.oldest, true
	}
	if len(s.held) < total {
		return heldKey{}, false
	}
	var most *holding
	for _, who := range held {
		if most == nil || who.n > most.n || who.n == most.n && heldBefore(who.oldest, s.held[who.oldest], most.oldest, s.held[most.oldest]) {
			most = who
		}
	}
	if most == nil {
		return heldKey{}, false
	}
	return most.oldest, true
}

// heldBefore reports whether the call a, under key ka, was proposed
// before b, under kb; of equal times, the one of the lower key.
func heldBefore(ka heldKey, a *heldCall, kb heldKey, b *heldCall) bool {
	if c := a.ap.CreatedAt.Compare(b.ap.CreatedAt); c != 0 {
		return c < 0
	}
	return bytes.Compare(ka[:], kb[:]) < 0
}

// heldCallOf returns the call left pending under k, or nil.
func (s *Server) heldCallOf(k heldKey) *heldCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneHeld(time.Now())
	return s.held[k]
}

// forgetHeld forgets h, if it is still the call remembered under k.
func (s *Server) forgetHeld(k heldKey, h *heldCall) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[k] == h {
		delete(s.held, k)
	}
}

// pruneHeld forgets the calls whose time has passed; s.mu must be held.
// It runs on the wall clock, as the approvals' times are the Executor's
// clock's: a call remembered too long is asked about and found unknown,
// and one forgotten too early asks for a new approval.
func (s *Server) pruneHeld(now time.Time) {
	for k, h := range s.held {
		if !now.Before(h.forget) {
			delete(s.held, k)
		}
	}
}

// retried answers principal's call of name with input if it is the
// retry of a call left pending (the same principal, the same command,
// the same proposal digest): with its Result if it was approved and ran
// (once), with its rejection, expiry or refusal, or, while it is still
// pending, with the same pending approval, proposing nothing new. It
// returns nil for a call that is no such retry, or whose approval is
// unknown (forgotten): the call is then made as any other.
func (s *Server) retried(ctx context.Context, req *mcp.CallToolRequest, principal, name string, input json.RawMessage) *mcp.CallToolResult {
	if !s.holding() {
		return nil
	}
	k, ok := s.keyOf(principal, name, input)
	if !ok {
		return nil
	}
	h := s.heldCallOf(k)
	if h == nil {
		return nil
	}
	return s.outcome(ctx, req, k, h, true)
}

// holding reports whether any call is remembered as left pending.
func (s *Server) holding() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held) > 0
}

// outcome claims the outcome of the held call h (see Outcomes), waiting
// for up to Options.ApprovalWait while it is pending, with progress
// notifications if the client asked for them, and answers the call with
// it. A final outcome forgets h: a later call is a new one. retry says
// that the call is a retry, not the call that proposed h; a retry whose
// approval is unknown gets nil.
func (s *Server) outcome(ctx context.Context, req *mcp.CallToolRequest, k heldKey, h *heldCall, retry bool) *mcp.CallToolResult {
	wait := s.opts.ApprovalWait
	if wait > 0 {
		defer waitProgress(ctx, req, h.ap, wait)()
	}
	o := s.opts.Outcomes.Claim(ctx, h.ap.ID, execgate.PrincipalFrom(ctx), wait)
	ap := h.ap
	if o.State == ApprovalApproved && o.Result != nil {
		// Claimed: the Result is this answer's, whether or not the
		// client is still there, as no later claim gets it. Answering
		// pending instead would lose it, and have the call proposed
		// again.
		s.forgetHeld(k, h)
		return ranResult(*o.Result)
	}
	if ctx.Err() != nil {
		// The client has gone: no one reads the answer, and the held
		// call stays for its retry.
		return s.pendingResult(ap, true, false)
	}
	switch o.State {
	case ApprovalPending, ApprovalRunning:
		return s.pendingResult(ap, retry || wait > 0, o.State == ApprovalRunning)
	case ApprovalUnknown:
		s.forgetHeld(k, h)
		if retry {
			return nil
		}
		return s.pendingResult(ap, false, false)
	case ApprovalUnavailable:
		// Not pending: no one may be able to decide it now. The held
		// call stays, so that a later identical call asks again.
		return statusResult(&CallStatus{Status: StatusRefused, Kind: KindInternal, Name: ap.Name, Approval: &ap,
			Message: fmt.Sprintf("execgate: what became of approval %s of %q cannot be read now: the server's approval store cannot be reached, and nothing changed. Call the tool again later with the same arguments to learn the outcome.", ap.ID, ap.Name)})
	}
	s.forgetHeld(k, h)
	switch o.State {
	case ApprovalApproved:
		if o.Result != nil {
			return ranResult(*o.Result)
		}
		return claimedResult(ap, StatusClaimed)
	case ApprovalClaimed, ApprovalDropped:
		return claimedResult(ap, string(o.State))
	case ApprovalRejected:
		return statusResult(&CallStatus{Status: StatusRejected, Name: ap.Name, Approval: &ap,
			Message: fmt.Sprintf("execgate: %q was not approved: an approver rejected approval %s; nothing ran. Do not call the tool again for this request unless the user asks you to.", ap.Name, ap.ID)})
	case ApprovalExpired:
		return statusResult(&CallStatus{Status: StatusExpired, Name: ap.Name, Approval: &ap,
			Message: fmt.Sprintf("execgate: %q was not approved: approval %s expired before anyone decided it; nothing ran. Calling the tool again asks for a new approval.", ap.Name, ap.ID)})
	case ApprovalFailed:
		if o.Err != nil {
			return s.refusal(o.Err)
		}
	}
	s.opts.Logger.Error("mcpserver: Outcomes.Claim reported a state it does not describe", "approval", ap.ID, "state", string(o.State))
	return s.refusal(fmt.Errorf("approval %s: outcome %q", ap.ID, o.State))
}

// claimedResult reports an approved call that ran, whose Result this
// call does not get: it was handed out before (StatusClaimed) or is no
// longer kept (StatusDropped).
func claimedResult(ap execgate.Approval, status string) *mcp.CallToolResult {
	why := "its result was already handed out, and a result is handed out once"
	if status == StatusDropped {
		why = "its result is no longer kept here; the approver was shown it"
	}
	return statusResult(&CallStatus{Status: status, Name: ap.Name, Approval: &ap,
		Message: fmt.Sprintf("execgate: %q was approved (approval %s) and ran, and %s; nothing ran again. Calling the tool again asks for a new approval.", ap.Name, ap.ID, why)})
}

// waitProgress sends notifications/progress while a call waits for a
// person's decision on ap, if the client asked for progress: one at once
// and one every execgate.DefaultWatchInterval, with the seconds waited
// as the progress, which always increases, so that a client that resets
// its request timeout on progress keeps waiting. It returns the function
// that stops them, which waits until none is being sent.
func waitProgress(ctx context.Context, req *mcp.CallToolRequest, ap execgate.Approval, wait time.Duration) (stop func()) {
	if req == nil || req.Params == nil || req.Session == nil || req.Params.GetProgressToken() == nil {
		return func() {}
	}
	token := req.Params.GetProgressToken()
	done := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(finished)
		tick := time.NewTicker(execgate.DefaultWatchInterval)
		defer tick.Stop()
		last := -1.0
		for {
			waited := time.Since(start)
			if v := waited.Seconds(); v > last {
				last = v
				msg := fmt.Sprintf("waiting for a person to decide approval %s of %q: %s of at most %s so far", ap.ID, ap.Name, waited.Round(time.Second), wait)
				nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), progressSendTimeout)
				_ = req.Session.NotifyProgress(nctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: v, Message: msg})
				cancel()
			}
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
