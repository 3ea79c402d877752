package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/mcpserver"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testApproval is an approval by principal, valid for ttl from now.
func testApproval(principal string, now time.Time, ttl time.Duration) execgate.Approval {
	return execgate.Approval{ID: uuid.Must(uuid.NewV7()).String(), Principal: principal, Name: "deploy.prod",
		Command: "/bin/echo", Args: []string{"prod"}, CreatedAt: now, ExpiresAt: now.Add(ttl)}
}

// decided adds an approval by ci-bot to p and settles it as state.
func decided(t *testing.T, p *pendingSet, state mcpserver.ApprovalState, res *execgate.Result, err error) execgate.Approval {
	t.Helper()
	ap := testApproval("ci-bot", p.now(), 15*time.Minute)
	require.NoError(t, p.add(context.Background(), ap))
	_, found, cerr := p.take(ap.ID, state == mcpserver.ApprovalApproved, func(execgate.Approval) error { return nil })
	require.True(t, found)
	require.NoError(t, cerr)
	p.settle(ap.ID, state, res, err)
	return ap
}

func ranResultOf(out string) *execgate.Result {
	return &execgate.Result{ID: uuid.Must(uuid.NewV7()).String(), Name: "deploy.prod", Termination: execgate.TerminationExit, OK: true, Stdout: out}
}

// TestPendingSet_ResultIsHandedOutOnceToItsProposer: of every claim of an
// approved call's outcome, only the proposer's first gets the Result; an
// approver is told the state and never given the Result (nor uses up the
// proposer's claim), another principal's claim and a claim under a
// tampered ID find nothing, and so does every claim after the first.
func TestPendingSet_ResultIsHandedOutOnceToItsProposer(t *testing.T) {
	p := newPendingSet(nil)
	res := ranResultOf("deployed\n")
	ap := decided(t, p, mcpserver.ApprovalApproved, res, nil)
	ctx := context.Background()

	for _, tc := range []struct {
		about, id, principal string
		approver             bool
		found                claimAnswer
		state                mcpserver.ApprovalState
		result               bool
	}{
		{"another principal finds nothing", ap.ID, "reader", false, claimOthers, "", false},
		{"an approver is told the state, without the Result", ap.ID, "alice", true, claimFound, mcpserver.ApprovalApproved, false},
		{"a tampered ID (upper case) finds nothing", strings.ToUpper(ap.ID), "ci-bot", false, claimUnknown, "", false},
		{"a tampered ID (another UUID) finds nothing", uuid.Must(uuid.NewV7()).String(), "ci-bot", false, claimUnknown, "", false},
		{"a tampered ID (one more character) finds nothing", ap.ID + "0", "ci-bot", false, claimUnknown, "", false},
		{"a tampered ID (one less) finds nothing", ap.ID[:len(ap.ID)-1], "ci-bot", false, claimUnknown, "", false},
		{"the proposer's first claim gets the Result", ap.ID, "ci-bot", false, claimFound, mcpserver.ApprovalApproved, true},
		{"its second claim gets none", ap.ID, "ci-bot", false, claimFound, mcpserver.ApprovalClaimed, false},
		{"an approver now reads it as claimed", ap.ID, "alice", true, claimFound, mcpserver.ApprovalClaimed, false},
		{"another principal still finds nothing", ap.ID, "reader", false, claimOthers, "", false},
	} {
		v, found := p.claim(ctx, tc.id, tc.principal, tc.approver, 0)
		assert.Equal(t, tc.found, found, tc.about)
		assert.Equal(t, tc.state, v.state, tc.about)
		if tc.result {
			require.NotNil(t, v.result, tc.about)
			assert.Equal(t, *res, *v.result, tc.about)
		} else {
			assert.Nil(t, v.result, tc.about)
		}
		if found == claimFound {
			assert.Equal(t, res.ID, v.traceID, tc.about)
		}
	}
	assert.Zero(t, p.resultBytes, "a claimed Result is let go of")
	// Over MCP, the same: the proposer's claim gets nothing now.
	assert.Equal(t, mcpserver.ApprovalOutcome{State: mcpserver.ApprovalClaimed}, p.Claim(ctx, ap.ID, "ci-bot", 0))
	assert.Equal(t, mcpserver.ApprovalOutcome{State: mcpserver.ApprovalUnknown}, p.Claim(ctx, ap.ID, "reader", 0))
}

// TestPendingSet_ConcurrentClaimsGetTheResultOnce: of many claims racing
// for one approved call's outcome, over both surfaces, exactly one gets
// the Result.
func TestPendingSet_ConcurrentClaimsGetTheResultOnce(t *testing.T) {
	p := newPendingSet(nil)
	ap := testApproval("ci-bot", time.Now(), time.Minute)
	require.NoError(t, p.add(context.Background(), ap))
	const n = 32
	got := make(chan bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				v, _ := p.claim(context.Background(), ap.ID, "ci-bot", false, 10*time.Second)
				got <- v.result != nil
			} else {
				got <- p.Claim(context.Background(), ap.ID, "ci-bot", 10*time.Second).Result != nil
			}
		}()
	}
	_, found, err := p.take(ap.ID, true, func(execgate.Approval) error { return nil })
	require.True(t, found)
	require.NoError(t, err)
	p.settle(ap.ID, mcpserver.ApprovalApproved, ranResultOf("once\n"), nil)
	wg.Wait()
	close(got)
	results := 0
	for g := range got {
		if g {
			results++
		}
	}
	assert.Equal(t, 1, results)
}

// TestPendingSet_States: what a proposer is told of each decision.
func TestPendingSet_States(t *testing.T) {
	changed := &execgate.ApprovalError{Reason: execgate.ReasonPolicyChanged}
	for _, tc := range []struct {
		about string
		state mcpserver.ApprovalState
		err   error
		want  mcpserver.ApprovalState
		kind  string
	}{
		{"rejected", mcpserver.ApprovalRejected, nil, mcpserver.ApprovalRejected, ""},
		{"approved and refused by the gate", mcpserver.ApprovalFailed, changed, mcpserver.ApprovalFailed, execgate.ErrorKindApproval},
		{"approved too late", mcpserver.ApprovalFailed, &execgate.ApprovalError{Reason: execgate.ReasonExpired}, mcpserver.ApprovalExpired, ""},
		{"approved and ran", mcpserver.ApprovalApproved, nil, mcpserver.ApprovalApproved, ""},
	} {
		p := newPendingSet(nil)
		var res *execgate.Result
		if tc.state == mcpserver.ApprovalApproved {
			res = ranResultOf("ok\n")
		}
		ap := decided(t, p, tc.state, res, tc.err)
		v, found := p.claim(context.Background(), ap.ID, "ci-bot", false, 0)
		require.Equal(t, claimFound, found, tc.about)
		assert.Equal(t, tc.want, v.state, tc.about)
		assert.Equal(t, res != nil, v.result != nil, tc.about)
		if tc.kind != "" {
			assert.Equal(t, tc.kind, refusal(v.err).Kind, tc.about)
		} else {
			assert.NoError(t, v.err, tc.about)
		}
		assert.False(t, v.finished.IsZero(), tc.about)
		assert.Equal(t, v.finished.Add(15*time.Minute), v.forget, "kept for the approval's lifetime after the decision: %s", tc.about)
		assert.Empty(t, p.list(), tc.about)
	}
}

// TestPendingSet_LifetimeOfAnOutcome: a pending approval expires at its
// ExpiresAt, can no longer be decided, and reads as expired; an outcome
// is kept for the approval's lifetime after it was decided or expired,
// and then forgotten: its ID reads as unknown.
func TestPendingSet_LifetimeOfAnOutcome(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	p := newPendingSet(clock.now)
	ctx := context.Background()
	expiring := testApproval("ci-bot", clock.now(), 10*time.Minute)
	require.NoError(t, p.add(ctx, expiring))
	approved := testApproval("ci-bot", clock.now(), 10*time.Minute)
	require.NoError(t, p.add(ctx, approved))

	v, _ := p.claim(ctx, expiring.ID, "ci-bot", false, 0)
	assert.Equal(t, mcpserver.ApprovalPending, v.state)
	assert.True(t, v.finished.IsZero())

	clock.advance(9 * time.Minute)
	_, _, err := p.take(approved.ID, true, func(execgate.Approval) error { return nil })
	require.NoError(t, err)
	assert.Equal(t, mcpserver.ApprovalRunning, p.Claim(ctx, approved.ID, "ci-bot", 0).State)
	p.settle(approved.ID, mcpserver.ApprovalApproved, ranResultOf("ok\n"), nil)
	decidedAt := clock.now()

	clock.advance(time.Minute) // expiring's ExpiresAt
	v, _ = p.claim(ctx, expiring.ID, "ci-bot", false, 0)
	assert.Equal(t, mcpserver.ApprovalExpired, v.state)
	assert.Equal(t, expiring.ExpiresAt, v.finished)
	assert.Equal(t, expiring.ExpiresAt.Add(10*time.Minute), v.forget)
	_, found, _ := p.take(expiring.ID, true, func(execgate.Approval) error { return nil })
	assert.False(t, found, "an expired approval cannot be decided")
	assert.Empty(t, p.list())

	clock.t = decidedAt.Add(10*time.Minute - time.Nanosecond)
	v, found2 := p.claim(ctx, approved.ID, "alice", true, 0)
	assert.Equal(t, claimFound, found2, "kept for its lifetime after the decision")
	assert.Equal(t, mcpserver.ApprovalApproved, v.state)
	clock.t = decidedAt.Add(10 * time.Minute)
	_, found2 = p.claim(ctx, approved.ID, "ci-bot", false, 0)
	assert.Equal(t, claimUnknown, found2, "forgotten after its lifetime, Result and all")
	assert.Zero(t, p.resultBytes)

	clock.t = expiring.ExpiresAt.Add(10 * time.Minute)
	_, found2 = p.claim(ctx, expiring.ID, "ci-bot", false, 0)
	assert.Equal(t, claimUnknown, found2)
	assert.Empty(t, p.m)
}

// TestPendingSet_Bounds: at most maxFinished outcomes are kept, the
// oldest forgotten first; at most maxResultBytes of Results, the oldest
// dropped first (their approvals then read as dropped); a Result larger
// than the bound alone is not kept.
func TestPendingSet_Bounds(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	ctx := context.Background()
	t.Run("count", func(t *testing.T) {
		p := newPendingSet(clock.now)
		p.maxFinished = 2
		var ids []string
		for range 3 {
			clock.advance(time.Second)
			ids = append(ids, decided(t, p, mcpserver.ApprovalRejected, nil, nil).ID)
		}
		_, found := p.claim(ctx, ids[0], "ci-bot", false, 0)
		assert.Equal(t, claimUnknown, found, "the oldest outcome was forgotten")
		for _, id := range ids[1:] {
			v, _ := p.claim(ctx, id, "ci-bot", false, 0)
			assert.Equal(t, mcpserver.ApprovalRejected, v.state)
		}
		pending := testApproval("ci-bot", clock.now(), time.Minute)
		require.NoError(t, p.add(ctx, pending), "pending approvals are bounded apart")
	})
	t.Run("bytes", func(t *testing.T) {
		p := newPendingSet(clock.now)
		one, err := json.Marshal(ranResultOf(strings.Repeat("x", 1000)))
		require.NoError(t, err)
		p.maxResultBytes = int64(2*len(one) + 10)
		var ids []string
		for range 3 {
			clock.advance(time.Second)
			ids = append(ids, decided(t, p, mcpserver.ApprovalApproved, ranResultOf(strings.Repeat("x", 1000)), nil).ID)
		}
		assert.LessOrEqual(t, p.resultBytes, p.maxResultBytes)
		v, _ := p.claim(ctx, ids[0], "ci-bot", false, 0)
		assert.Equal(t, mcpserver.ApprovalDropped, v.state, "the oldest Result was dropped")
		assert.Nil(t, v.result)
		assert.NotEmpty(t, v.traceID)
		for _, id := range ids[1:] {
			v, _ := p.claim(ctx, id, "ci-bot", false, 0)
			assert.Equal(t, mcpserver.ApprovalApproved, v.state)
			assert.NotNil(t, v.result)
		}
		big := decided(t, p, mcpserver.ApprovalApproved, ranResultOf(strings.Repeat("y", 4000)), nil)
		v, _ = p.claim(ctx, big.ID, "ci-bot", false, 0)
		assert.Equal(t, mcpserver.ApprovalDropped, v.state, "a Result over the bound alone is not kept")
		assert.Zero(t, p.resultBytes)
	})
}

// TestPendingSet_Wait: a claim with a wait answers as soon as the
// approval is decided, when it expires, when its caller goes away, or
// when the wait ends; one whose caller has gone hands out no Result.
func TestPendingSet_Wait(t *testing.T) {
	ctx := context.Background()
	t.Run("decided", func(t *testing.T) {
		p := newPendingSet(nil)
		ap := testApproval("ci-bot", time.Now(), time.Minute)
		require.NoError(t, p.add(ctx, ap))
		go func() {
			time.Sleep(50 * time.Millisecond)
			_, _, _ = p.take(ap.ID, false, func(execgate.Approval) error { return nil })
			p.settle(ap.ID, mcpserver.ApprovalRejected, nil, nil)
		}()
		start := time.Now()
		v, _ := p.claim(ctx, ap.ID, "ci-bot", false, 20*time.Second)
		assert.Equal(t, mcpserver.ApprovalRejected, v.state)
		assert.Less(t, time.Since(start), 10*time.Second)
	})
	t.Run("expires", func(t *testing.T) {
		p := newPendingSet(nil)
		ap := testApproval("ci-bot", time.Now(), 100*time.Millisecond)
		require.NoError(t, p.add(ctx, ap))
		v, _ := p.claim(ctx, ap.ID, "ci-bot", false, 20*time.Second)
		assert.Equal(t, mcpserver.ApprovalExpired, v.state)
	})
	t.Run("the wait ends", func(t *testing.T) {
		p := newPendingSet(nil)
		ap := testApproval("ci-bot", time.Now(), time.Minute)
		require.NoError(t, p.add(ctx, ap))
		start := time.Now()
		v, _ := p.claim(ctx, ap.ID, "ci-bot", false, 100*time.Millisecond)
		assert.Equal(t, mcpserver.ApprovalPending, v.state)
		assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
	})
	t.Run("the caller goes away", func(t *testing.T) {
		p := newPendingSet(nil)
		ap := testApproval("ci-bot", time.Now(), time.Minute)
		require.NoError(t, p.add(ctx, ap))
		gone, cancel := context.WithCancel(ctx)
		time.AfterFunc(50*time.Millisecond, cancel)
		v, _ := p.claim(gone, ap.ID, "ci-bot", false, 20*time.Second)
		assert.Equal(t, mcpserver.ApprovalPending, v.state)
		// Decided now, a claim whose caller has gone gets no Result, and
		// the next one does.
		_, _, _ = p.take(ap.ID, true, func(execgate.Approval) error { return nil })
		p.settle(ap.ID, mcpserver.ApprovalApproved, ranResultOf("ok\n"), nil)
		v, _ = p.claim(gone, ap.ID, "ci-bot", false, 0)
		assert.Nil(t, v.result)
		v, _ = p.claim(ctx, ap.ID, "ci-bot", false, 0)
		assert.NotNil(t, v.result)
	})
	t.Run("another principal does not wait", func(t *testing.T) {
		p := newPendingSet(nil)
		ap := testApproval("ci-bot", time.Now(), time.Minute)
		require.NoError(t, p.add(ctx, ap))
		start := time.Now()
		_, found := p.claim(ctx, ap.ID, "reader", false, 20*time.Second)
		assert.Equal(t, claimOthers, found)
		assert.Less(t, time.Since(start), time.Second)
	})
}

// outcomeBody is the body of a response to GET /v1/approvals/{id}, or
// of a refusal.
type outcomeBody struct {
	Status    string             `json:"status"`
	Approval  *execgate.Approval `json:"approval"`
	Result    *execgate.Result   `json:"result"`
	Error     *errorInfo         `json:"error"`
	TraceID   string             `json:"trace_id"`
	DecidedAt *time.Time         `json:"decided_at"`
	KeptUntil *time.Time         `json:"kept_until"`
}

// poll sends GET /v1/approvals/{id}, with query, and returns the status,
// the raw body and the decoded one.
func (f *apiFixture) poll(t *testing.T, ctx context.Context, idAndQuery, token string) (int, []byte, outcomeBody) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/v1/approvals/"+idAndQuery, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := f.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var b outcomeBody
	require.NoError(t, json.Unmarshal(raw, &b), "%s", raw)
	return resp.StatusCode, raw, b
}

// TestHTTP_ProposerLearnsTheOutcome: end to end over the HTTP API, the
// caller that was answered 202 follows its Location: pending while no
// one decided, then, once an approver approved, the Result, once, and
// "claimed" after. An approver is told the state without the Result;
// another caller, and a tampered ID, get the 404 of an unknown ID, byte
// for byte.
func TestHTTP_ProposerLearnsTheOutcome(t *testing.T) {
	f := newAPIFixture(t, visibleConfig)
	ctx := context.Background()
	resp, r := f.call(t, "deploy.prod", ``)
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	id := r.Approval.ID
	assert.Equal(t, "/v1/approvals/"+id, resp.Header.Get("Location"))
	var accepted struct {
		Location string `json:"location"`
	}
	resp2, raw := f.rawCall(t, "deploy.staging")
	require.Equal(t, http.StatusAccepted, resp2.StatusCode)
	require.NoError(t, json.Unmarshal(raw, &accepted))
	assert.Equal(t, resp2.Header.Get("Location"), accepted.Location)
	assert.True(t, strings.HasPrefix(accepted.Location, "/v1/approvals/"))

	status, _, b := f.poll(t, ctx, id, callerToken)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "pending", b.Status)
	assert.Equal(t, id, b.Approval.ID)
	assert.Nil(t, b.Result)
	assert.Nil(t, b.DecidedAt)

	_, unknownRaw, unknown := f.poll(t, ctx, uuid.Must(uuid.NewV7()).String(), readerToken)
	assert.Equal(t, execgate.ErrorKindApproval, unknown.Error.Kind)
	assert.Equal(t, execgate.ReasonUnknown, unknown.Error.Reason)
	refusedAsUnknown := func(about, idAndQuery, token string) {
		t.Helper()
		status, raw, _ := f.poll(t, ctx, idAndQuery, token)
		assert.Equal(t, http.StatusNotFound, status, about)
		assert.Equal(t, string(unknownRaw), string(raw), "%s: answered as an unknown ID, byte for byte", about)
	}
	refusedAsUnknown("another caller, while pending", id, readerToken)
	refusedAsUnknown("another caller, waiting", id+"?wait=5s", readerToken)

	resp, r = f.decide(t, id, approverToken, "approve")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%+v", r.Error)
	assert.NotNil(t, r.Result, "the approver is answered with the Result, as before")
	require.Equal(t, 1, f.rec.Count())

	_, _, b = f.poll(t, ctx, id, approverToken)
	assert.Equal(t, "approved", b.Status, "an approver is told the state")
	assert.Nil(t, b.Result, "and is not given the Result")
	refusedAsUnknown("another caller, once approved", id, readerToken)
	refusedAsUnknown("another caller, denied everything", id, guestToken)
	for _, tampered := range []string{strings.ToUpper(id), id[:len(id)-1] + "f", id + "0", uuid.Must(uuid.NewV7()).String()} {
		if tampered == id {
			continue
		}
		refusedAsUnknown("a tampered ID "+tampered, tampered, callerToken)
	}

	status, _, b = f.poll(t, ctx, id, callerToken)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "approved", b.Status)
	require.NotNil(t, b.Result, "the proposer's first claim gets the Result")
	assert.Equal(t, id, b.Result.ApprovalID)
	assert.Equal(t, []string{"prod"}, b.Result.Args)
	assert.Equal(t, b.Result.ID, b.TraceID)
	require.NotNil(t, b.DecidedAt)
	require.NotNil(t, b.KeptUntil)
	assert.Equal(t, b.DecidedAt.Add(execgate.DefaultApprovalTTL), *b.KeptUntil)

	status, _, b = f.poll(t, ctx, id, callerToken)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "claimed", b.Status, "the second claim gets nothing")
	assert.Nil(t, b.Result)
	assert.NotEmpty(t, b.TraceID)
	refusedAsUnknown("another caller, once claimed", id, readerToken)
	assert.Equal(t, 1, f.rec.Count(), "nothing ran again")
}

// hold makes ci-bot's deploy.prod pending and returns its approval.
func (f *apiFixture) hold(t *testing.T) execgate.Approval {
	t.Helper()
	resp, r := f.call(t, "deploy.prod", ``)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%+v", r.Error)
	require.NotNil(t, r.Approval)
	return *r.Approval
}

// rawCall calls name as ci-bot and returns the raw body.
func (f *apiFixture) rawCall(t *testing.T, name string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", f.srv.URL+"/v1/tools/"+name, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+callerToken)
	resp, err := f.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, raw
}

// TestHTTP_PollWaits: ?wait=DURATION answers as soon as the approval is
// decided, and pending when the wait ends first; a wait over the cap is
// cut to it; a wait that is not a duration, and any other query, is a
// typed 400 that claims nothing.
func TestHTTP_PollWaits(t *testing.T) {
	f := newAPIFixture(t, visibleConfig)
	ctx := context.Background()
	ap := f.hold(t)

	start := time.Now()
	status, _, b := f.poll(t, ctx, ap.ID+"?wait=200ms", callerToken)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "pending", b.Status)
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)

	for _, q := range []string{"?wait=abc", "?wait=-1s", "?wait=5", "?wait=1s&wait=2s", "?wait=", "?other=1", "?wait=1s&token=x", "?wait=%zz"} {
		status, _, b := f.poll(t, ctx, ap.ID+q, callerToken)
		assert.Equal(t, http.StatusBadRequest, status, q)
		require.NotNil(t, b.Error, q)
		assert.Equal(t, execgate.ErrorKindRequest, b.Error.Kind, q)
		assert.Nil(t, b.Result, q)
	}

	type answer struct {
		b       outcomeBody
		elapsed time.Duration
	}
	got := make(chan answer, 1)
	go func() {
		start := time.Now()
		_, _, b := f.poll(t, ctx, ap.ID+"?wait=30s", callerToken)
		got <- answer{b, time.Since(start)}
	}()
	time.Sleep(100 * time.Millisecond)
	resp, r := f.decide(t, ap.ID, approverToken, "approve")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%+v", r.Error)
	a := <-got
	assert.Equal(t, "approved", a.b.Status)
	assert.NotNil(t, a.b.Result, "the waiting proposer gets the Result")
	assert.Less(t, a.elapsed, 20*time.Second, "answered at the decision")

	start = time.Now()
	_, _, b = f.poll(t, ctx, ap.ID+"?wait=10m", callerToken)
	assert.Equal(t, "claimed", b.Status)
	assert.Less(t, time.Since(start), 5*time.Second, "a decided approval is answered at once")
	assert.Equal(t, time.Minute, maxPollWait)
}

// TestHTTP_PollAfterRejectOrRefusal: a rejected approval reads as
// rejected; one approved and then refused by the gate (its tool changed
// since) reads as failed, with the gate's refusal; neither has a Result.
func TestHTTP_PollAfterRejectOrRefusal(t *testing.T) {
	f := newAPIFixture(t, visibleConfig)
	ctx := context.Background()
	rejected := f.hold(t)
	resp, _ := f.decide(t, rejected.ID, approverToken, "reject")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, _, b := f.poll(t, ctx, rejected.ID, callerToken)
	assert.Equal(t, "rejected", b.Status)
	assert.Nil(t, b.Result)
	assert.Nil(t, b.Error)
	assert.NotNil(t, b.DecidedAt)

	changed := f.hold(t)
	loaded, err := config.LoadBytes("test.yaml", []byte(strings.Replace(visibleConfig,
		"{name: deploy, bin: /bin/echo, default_action: human_approval}",
		"{name: deploy, bin: /bin/echo, default_action: human_approval, timeout: 7s}", 1)))
	require.NoError(t, err)
	f.gate.x.SetAllowlist(loaded.Allowlist)
	resp, r := f.decide(t, changed.ID, approverToken, "approve")
	require.Equal(t, http.StatusConflict, resp.StatusCode, "%+v", r.Error)
	_, _, b = f.poll(t, ctx, changed.ID, callerToken)
	assert.Equal(t, "failed", b.Status)
	require.NotNil(t, b.Error)
	assert.Equal(t, execgate.ErrorKindApproval, b.Error.Kind)
	assert.Equal(t, execgate.ReasonPolicyChanged, b.Error.Reason)
	assert.Nil(t, b.Result)
	assert.Zero(t, f.rec.Count())
}

// TestHTTP_PollRefusalsAreRecorded: a poll for an unknown approval, for
// another principal's and with a bad wait is recorded as a refusal, with
// the route and never the query; another principal's is recorded as
// such, though it is answered as an unknown one.
func TestHTTP_PollRefusalsAreRecorded(t *testing.T) {
	loaded, err := config.LoadBytes("test.yaml", []byte(visibleConfig))
	require.NoError(t, err)
	tr := &trailOf{}
	f := &apiFixture{rec: execgatetest.NewRecorder(), pending: newPendingSet(nil)}
	f.gate, err = newGate(loaded, "", f.rec.Exec)
	require.NoError(t, err)
	f.gate.x, err = execgate.NewExecutor(execgate.Config{Allowlist: loaded.Allowlist, Policy: loaded.Policy, ExecFn: f.rec.Exec, Auditor: audited{tr}})
	require.NoError(t, err)
	h, err := newAPI(apiOptions{Executor: f.gate.x, Server: f.gate.server(), Pending: f.pending, Visible: f.gate.visible})
	require.NoError(t, err)
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close)
	ap := f.hold(t)
	ctx := context.Background()
	f.poll(t, ctx, ap.ID, readerToken)
	f.poll(t, ctx, uuid.Must(uuid.NewV7()).String(), callerToken)
	f.poll(t, ctx, ap.ID+"?wait=soon", callerToken)
	var reasons []string
	for _, ev := range tr.all() {
		if ev.Op == execgate.OpRequest {
			reasons = append(reasons, ev.Reason)
			assert.Equal(t, "GET /v1/approvals/", ev.Route[:len("GET /v1/approvals/")])
			assert.NotContains(t, ev.Route, "?")
		}
	}
	assert.Equal(t, []string{"approval of another principal", "unknown approval", "invalid wait"}, reasons)
}

// brokenWriter is a ResponseWriter whose client has gone: every write
// fails.
type brokenWriter struct{ h http.Header }

func (w *brokenWriter) Header() http.Header { return w.h }
func (w *brokenWriter) WriteHeader(int)     {}
func (w *brokenWriter) Write([]byte) (int, error) {
	return 0, io.ErrClosedPipe
}

// TestSingleUse_AResultWhoseAnswerFailsIsKeptForTheNextClaim: a
// proposer's GET /v1/approvals/{id} whose answer cannot be written does
// not use the Result up: the next poll gets it, once, and the one after
// reads it as claimed.
func TestSingleUse_AResultWhoseAnswerFailsIsKeptForTheNextClaim(t *testing.T) {
	f := newAPIFixture(t, testConfig)
	ap := f.propose(t)
	resp, r := f.decide(t, ap.ID, approverToken, "approve")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%+v", r.Error)

	req := httptest.NewRequest("GET", "/v1/approvals/"+ap.ID, nil)
	req.Header.Set("Authorization", "Bearer "+callerToken)
	f.srv.Config.Handler.ServeHTTP(&brokenWriter{h: http.Header{}}, req)

	status, raw, b := f.poll(t, context.Background(), ap.ID, callerToken)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	assert.Equal(t, "approved", b.Status)
	require.NotNil(t, b.Result, "%s", raw)
	assert.Equal(t, "ran\n", b.Result.Stdout)
	_, raw, b = f.poll(t, context.Background(), ap.ID, callerToken)
	assert.Equal(t, "claimed", b.Status, "%s", raw)
	assert.Nil(t, b.Result)
}

// TestSingleUse_AResultIsNeverPutBackTwice: a Result put back once is
// handed out again once; putting back a Result of an approval that is
// not claimed, or whose Result is kept, changes nothing.
func TestSingleUse_AResultIsNeverPutBackTwice(t *testing.T) {
	p := newPendingSet(nil)
	res := ranResultOf("deployed\n")
	ap := decided(t, p, mcpserver.ApprovalApproved, res, nil)
	ctx := context.Background()
	p.unclaim(ap.ID, res) // not claimed yet: nothing changes
	v, _ := p.claim(ctx, ap.ID, "ci-bot", false, 0)
	require.NotNil(t, v.result)
	p.unclaim(ap.ID, v.result)
	p.unclaim(ap.ID, v.result)
	v, _ = p.claim(ctx, ap.ID, "ci-bot", false, 0)
	require.NotNil(t, v.result)
	v, _ = p.claim(ctx, ap.ID, "ci-bot", false, 0)
	assert.Nil(t, v.result)
	assert.Equal(t, mcpserver.ApprovalClaimed, v.state)
	assert.Zero(t, p.resultBytes)
}

// TestPollWait_BoundedPerPrincipal: a principal with
// maxWaitsPerPrincipal waits open is refused one more, with the 429 of a
// busy principal, recorded; a poll without wait, and another principal's
// wait, are not, and a wait that ends makes room for another.
func TestPollWait_BoundedPerPrincipal(t *testing.T) {
	f := newAPIFixture(t, testConfig)
	ap := f.propose(t)
	var ends []func()
	for range maxWaitsPerPrincipal {
		end, ok := f.pending.startWait("ci-bot")
		require.True(t, ok)
		ends = append(ends, end)
	}

	req, err := http.NewRequest("GET", f.srv.URL+"/v1/approvals/"+ap.ID+"?wait=30s", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+callerToken)
	resp, err := f.srv.Client().Do(req)
	require.NoError(t, err)
	var b struct{ Error *errorInfo }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&b))
	resp.Body.Close()
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	require.NotNil(t, b.Error)
	assert.Equal(t, execgate.ErrorKindBusy, b.Error.Kind)
	assert.Equal(t, execgate.BusyPrincipal, b.Error.Reason)
	assert.Equal(t, maxWaitsPerPrincipal, b.Error.Limit)

	status, raw, o := f.poll(t, context.Background(), ap.ID, callerToken)
	assert.Equal(t, http.StatusOK, status, "%s", raw)
	assert.Equal(t, "pending", o.Status)

	resp2, r := f.decide(t, ap.ID, approverToken, "approve")
	require.Equal(t, http.StatusOK, resp2.StatusCode, "%+v", r.Error)
	status, raw, o = f.poll(t, context.Background(), ap.ID+"?wait=30s", approverToken)
	assert.Equal(t, http.StatusOK, status, "another principal's wait: %s", raw)
	assert.Equal(t, "approved", o.Status)

	ends[0]()
	status, raw, o = f.poll(t, context.Background(), ap.ID+"?wait=30s", callerToken)
	assert.Equal(t, http.StatusOK, status, "%s", raw)
	require.NotNil(t, o.Result, "%s", raw)
}
