package mcpserver_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/mcpserver"
)

// desk is an out-of-band approver with the Outcomes it records, as the
// execgate binary keeps them: OnPending hands it each approval, approve
// executes one through the Executor and keeps its Result, reject rejects
// one; Claim hands a Result out once, to the approval's proposer only.
type desk struct {
	x     *execgate.Executor
	added chan execgate.Approval

	mu      sync.Mutex
	m       map[string]*deskEntry
	waiters int // claims waiting now
}

type deskEntry struct {
	ap     execgate.Approval
	state  mcpserver.ApprovalState
	result *execgate.Result
	done   chan struct{}
}

func newDesk() *desk {
	return &desk{added: make(chan execgate.Approval, 16), m: map[string]*deskEntry{}}
}

func (d *desk) onPending(_ context.Context, ap execgate.Approval) error {
	d.mu.Lock()
	d.m[ap.ID] = &deskEntry{ap: ap, state: mcpserver.ApprovalPending, done: make(chan struct{})}
	d.mu.Unlock()
	d.added <- ap
	return nil
}

// idle waits until no claim waits.
func (d *desk) idle(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.waiters == 0
	}, 5*time.Second, 5*time.Millisecond)
}

// count is how many approvals were handed to the desk.
func (d *desk) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.m)
}

func (d *desk) approve(t *testing.T, id string) execgate.Result {
	t.Helper()
	d.mu.Lock()
	e := d.m[id]
	d.mu.Unlock()
	require.NotNil(t, e, "no approval %s was handed to the desk", id)
	r, err := d.x.Execute(execgate.WithPrincipal(context.Background(), "approver"), e.ap)
	require.NoError(t, err)
	d.mu.Lock()
	e.state, e.result = mcpserver.ApprovalApproved, &r
	close(e.done)
	d.mu.Unlock()
	return r
}

func (d *desk) reject(t *testing.T, id string) {
	t.Helper()
	d.mu.Lock()
	e := d.m[id]
	d.mu.Unlock()
	removed, err := d.x.Reject(context.Background(), id)
	require.NoError(t, err)
	require.True(t, removed)
	d.mu.Lock()
	e.state = mcpserver.ApprovalRejected
	close(e.done)
	d.mu.Unlock()
}

func (d *desk) Claim(ctx context.Context, id, principal string, wait time.Duration) mcpserver.ApprovalOutcome {
	d.mu.Lock()
	e := d.m[id]
	d.mu.Unlock()
	if e == nil || e.ap.Principal != principal {
		return mcpserver.ApprovalOutcome{State: mcpserver.ApprovalUnknown}
	}
	if wait > 0 {
		d.mu.Lock()
		d.waiters++
		d.mu.Unlock()
		tm := time.NewTimer(wait)
		select {
		case <-e.done:
		case <-tm.C:
		case <-ctx.Done():
		}
		tm.Stop()
		d.mu.Lock()
		d.waiters--
		d.mu.Unlock()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	o := mcpserver.ApprovalOutcome{State: e.state}
	if e.state == mcpserver.ApprovalApproved && ctx.Err() != nil {
		return o // no one would receive the Result: it stays to be claimed
	}
	if e.state == mcpserver.ApprovalApproved {
		o.Result = e.result
		e.state, e.result = mcpserver.ApprovalClaimed, nil
	}
	return o
}

// heldSpecs are testSpecs with a deploy that takes one argument, so that
// two calls of it can differ.
func heldSpecs() []execgate.CommandSpec {
	specs := testSpecs()
	for i := range specs {
		if specs[i].Name == "deploy" {
			specs[i].Args = execgate.Flags(execgate.FlagSpec{Leading: []string{"deploy"}, Positionals: execgate.Positionals{Max: 1}})
		}
	}
	return specs
}

// startDesk serves heldSpecs with a desk as OnPending and Outcomes.
func startDesk(t *testing.T, opts mcpserver.Options, client *mcp.ClientOptions) (*fixture, *desk) {
	t.Helper()
	d := newDesk()
	opts.OnPending, opts.Outcomes = d.onPending, d
	f := start(t, setup{specs: heldSpecs(), opts: opts, client: client})
	d.x = f.x
	return f, d
}

// pendingID returns the ID of the pending approval res reports.
func pendingID(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	st := status(t, res)
	require.Equal(t, mcpserver.StatusPending, st.Status, st.Message)
	require.NotNil(t, st.Approval)
	return st.Approval.ID
}

// The retry of a held call, the same tool with the same arguments by the
// same principal, is answered with the approval's outcome: while it is
// pending, the same pending approval, with nothing proposed again; once
// approved and run, its Result, once; after that, the call is a new one.
func TestRetry_ClaimsTheApprovedResultOnce(t *testing.T) {
	f, d := startDesk(t, mcpserver.Options{}, nil)
	f.rec.On("deploy", execgate.Outcome{Stdout: []byte("deployed\n")})
	assert.Contains(t, f.cs.InitializeResult().Instructions, "call the tool again with exactly the same arguments")

	res := f.call(t, "deploy", `{"args":["prod"]}`)
	id := pendingID(t, res)
	assert.Contains(t, text(t, res), "call this tool again with exactly the same arguments")
	assert.NotContains(t, text(t, res), "Do not call the tool again")

	again := f.call(t, "deploy", `{"args":["prod"]}`)
	assert.Equal(t, id, pendingID(t, again), "the retry is told the same approval")
	assert.Contains(t, text(t, again), "is still pending")
	assert.Equal(t, 1, d.count(), "nothing was proposed again")
	assert.Len(t, f.policy.requests(), 1, "the policy was asked once")
	assert.Zero(t, f.rec.Count())

	d.approve(t, id)
	r := ran(t, f.call(t, "deploy", `{"args":["prod"]}`))
	assert.Equal(t, id, r.ApprovalID)
	assert.Equal(t, "deployed\n", r.Stdout)
	assert.Equal(t, 1, f.rec.Count())

	// A second claim gets nothing: the call is a new one now, held anew.
	next := pendingID(t, f.call(t, "deploy", `{"args":["prod"]}`))
	assert.NotEqual(t, id, next)
	assert.Equal(t, 1, f.rec.Count(), "nothing ran again")
	assert.Equal(t, 2, d.count())
}

// A retry that is not the same call claims nothing: other arguments, or
// the same arguments once the tool would run something else (its
// proposal digest differs), are a call of their own, held for an approval
// of their own.
func TestRetry_AnotherCallClaimsNothing(t *testing.T) {
	f, d := startDesk(t, mcpserver.Options{}, nil)
	id := pendingID(t, f.call(t, "deploy", `{"args":["prod"]}`))
	d.approve(t, id)

	other := pendingID(t, f.call(t, "deploy", `{"args":["staging"]}`))
	assert.NotEqual(t, id, other, "other arguments are another call")

	// The same arguments, after the tool changed what it runs.
	specs := heldSpecs()
	for i := range specs {
		if specs[i].Name == "deploy" {
			specs[i].Args = execgate.Flags(execgate.FlagSpec{Leading: []string{"deploy", "--force"}, Positionals: execgate.Positionals{Max: 1}})
		}
	}
	changed, err := execgate.NewAllowlist(specs...)
	require.NoError(t, err)
	f.x.SetAllowlist(changed)
	require.NoError(t, f.srv.SetAllowlist(changed))
	res := f.call(t, "deploy", `{"args":["prod"]}`)
	fresh := pendingID(t, res)
	assert.NotEqual(t, id, fresh, "a call that would run something else claims nothing")
	assert.Equal(t, []string{"deploy", "--force", "prod"}, status(t, res).Approval.Args)
	assert.Equal(t, 1, f.rec.Count(), "only the approved call ran")
	assert.Equal(t, 3, d.count())
}

// Another principal's identical call claims nothing: it is held for an
// approval of its own, and the proposer's retry still gets its Result.
func TestRetry_AnotherPrincipalClaimsNothing(t *testing.T) {
	for _, v := range httpVersions {
		t.Run(v.name, func(t *testing.T) {
			d := newDesk()
			f := startHTTP(t, mcpserver.Options{Approvals: mcpserver.ApprovalsPending, OnPending: d.onPending, Outcomes: d}, v.stateless, true)
			d.x = f.x
			f.tokens.set("token-a", "agent-a")
			f.tokens.set("token-b", "agent-b")
			a := f.connect(t, "token-a", v.version, nil)
			b := f.connect(t, "token-b", v.version, nil)

			id := pendingID(t, callOver(t, a, "deploy", `{}`))
			d.approve(t, id)
			res := callOver(t, b, "deploy", `{}`)
			theirs := pendingID(t, res)
			assert.NotEqual(t, id, theirs)
			assert.Equal(t, "agent-b", status(t, res).Approval.Principal)
			assert.Equal(t, theirs, pendingID(t, callOver(t, b, "deploy", `{}`)), "b's retry is told its own approval")

			r := ran(t, callOver(t, a, "deploy", `{}`))
			assert.Equal(t, id, r.ApprovalID)
			assert.Equal(t, 1, f.rec.Count())
		})
	}
}

// scripted is an Outcomes that reports one outcome for every claim.
type scripted struct{ o mcpserver.ApprovalOutcome }

func (s scripted) Claim(context.Context, string, string, time.Duration) mcpserver.ApprovalOutcome {
	return s.o
}

// Each outcome a retry learns is told as what it is, and a final one
// ends the retry's binding: the next identical call is held anew. An
// approval the Outcomes no longer knows makes the retry a new call.
func TestRetry_TellsEachOutcome(t *testing.T) {
	done := execgate.Result{ID: "0190b8d5-0000-7000-8000-000000000000", Name: "deploy", Termination: execgate.TerminationExit, OK: true, Stdout: "deployed\n"}
	for _, tc := range []struct {
		outcome mcpserver.ApprovalOutcome
		status  string // "" for a Result
		kind    string
		words   string
	}{
		{mcpserver.ApprovalOutcome{State: mcpserver.ApprovalApproved, Result: &done}, "", "", "deploy exited with status 0"},
		{mcpserver.ApprovalOutcome{State: mcpserver.ApprovalClaimed}, mcpserver.StatusClaimed, "", "already handed out"},
		{mcpserver.ApprovalOutcome{State: mcpserver.ApprovalDropped}, mcpserver.StatusDropped, "", "no longer kept"},
		{mcpserver.ApprovalOutcome{State: mcpserver.ApprovalRejected}, mcpserver.StatusRejected, "", "an approver rejected"},
		{mcpserver.ApprovalOutcome{State: mcpserver.ApprovalExpired}, mcpserver.StatusExpired, "", "expired before anyone decided"},
		{mcpserver.ApprovalOutcome{State: mcpserver.ApprovalFailed, Err: &execgate.ApprovalError{Reason: execgate.ReasonPolicyChanged}}, mcpserver.StatusRefused, mcpserver.KindApproval, "nothing ran"},
		{mcpserver.ApprovalOutcome{State: mcpserver.ApprovalRunning}, mcpserver.StatusPending, "", "is running"},
		{mcpserver.ApprovalOutcome{State: mcpserver.ApprovalPending}, mcpserver.StatusPending, "", "is still pending"},
	} {
		t.Run(string(tc.outcome.State), func(t *testing.T) {
			var proposed int
			f := start(t, setup{opts: mcpserver.Options{
				OnPending: func(context.Context, execgate.Approval) error { proposed++; return nil },
				Outcomes:  scripted{tc.outcome},
			}})
			id := pendingID(t, f.call(t, "deploy", `{}`))
			res := f.call(t, "deploy", `{}`)
			if tc.status == "" {
				assert.Equal(t, done.Stdout, ran(t, res).Stdout)
			} else {
				st := status(t, res)
				assert.Equal(t, tc.status, st.Status)
				assert.Equal(t, tc.kind, st.Kind)
			}
			assert.Contains(t, text(t, res), tc.words)
			assert.Equal(t, 1, proposed, "the retry proposed nothing")
			final := tc.outcome.State != mcpserver.ApprovalPending && tc.outcome.State != mcpserver.ApprovalRunning
			next := pendingID(t, f.call(t, "deploy", `{}`))
			if final {
				assert.NotEqual(t, id, next, "after a final outcome the call is held anew")
				assert.Equal(t, 2, proposed)
			} else {
				assert.Equal(t, id, next)
				assert.Equal(t, 1, proposed)
			}
			assert.Zero(t, f.rec.Count(), "nothing ran here")
		})
	}
	t.Run("unknown", func(t *testing.T) {
		var proposed int
		f := start(t, setup{opts: mcpserver.Options{
			OnPending: func(context.Context, execgate.Approval) error { proposed++; return nil },
			Outcomes:  scripted{mcpserver.ApprovalOutcome{State: mcpserver.ApprovalUnknown}},
		}})
		id := pendingID(t, f.call(t, "deploy", `{}`))
		next := pendingID(t, f.call(t, "deploy", `{}`))
		assert.NotEqual(t, id, next, "an approval no longer known is asked for anew")
		assert.Equal(t, 2, proposed)
	})
}

// progressNotes collects the progress notifications a client receives.
type progressNotes struct {
	mu    sync.Mutex
	notes []*mcp.ProgressNotificationParams
}

func (p *progressNotes) handle(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	p.notes = append(p.notes, req.Params)
	p.mu.Unlock()
}

func (p *progressNotes) all() []*mcp.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*mcp.ProgressNotificationParams(nil), p.notes...)
}

// With ApprovalWait, a held call waits for the decision and is answered
// with it: the Result of the approved call, handed out to this call and
// to no retry, or the rejection. While it waits, a client that sent a
// progress token hears progress that always increases.
func TestApprovalWait_AnswersWithTheDecision(t *testing.T) {
	for _, decision := range []string{"approve", "reject"} {
		t.Run(decision, func(t *testing.T) {
			notes := &progressNotes{}
			f, d := startDesk(t, mcpserver.Options{ApprovalWait: 20 * time.Second},
				&mcp.ClientOptions{ProgressNotificationHandler: notes.handle})
			f.rec.On("deploy", execgate.Outcome{Stdout: []byte("deployed\n")})
			go func() {
				ap := <-d.added
				time.Sleep(1200 * time.Millisecond) // a heartbeat or two
				if decision == "approve" {
					d.approve(t, ap.ID)
				} else {
					d.reject(t, ap.ID)
				}
			}()
			params := &mcp.CallToolParams{Name: "deploy", Arguments: map[string]any{"args": []string{"prod"}}}
			params.SetProgressToken("wait-1")
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			start := time.Now()
			res, err := f.cs.CallTool(ctx, params)
			require.NoError(t, err)
			assert.Less(t, time.Since(start), 10*time.Second, "answered when decided, not when the wait ended")
			if decision == "approve" {
				assert.Equal(t, "deployed\n", ran(t, res).Stdout)
				assert.Equal(t, 1, f.rec.Count())
				// The Result was handed out: the next call is a new one.
				go func() { d.approve(t, (<-d.added).ID) }()
				again := ran(t, f.call(t, "deploy", `{"args":["prod"]}`))
				assert.NotEqual(t, ran(t, res).ApprovalID, again.ApprovalID, "a new approval, not the claimed one")
			} else {
				assert.Equal(t, mcpserver.StatusRejected, status(t, res).Status)
				assert.Zero(t, f.rec.Count())
			}
			got := notes.all()
			require.NotEmpty(t, got, "no progress while waiting")
			last := -1.0
			for _, n := range got {
				assert.Equal(t, "wait-1", n.ProgressToken)
				assert.Greater(t, n.Progress, last)
				last = n.Progress
				assert.Contains(t, n.Message, "waiting for a person to decide approval")
			}
		})
	}
}

// A wait that ends with no decision answers pending, and leaves the
// approval pending: its retry gets the Result once it is approved. A
// client that gives up waiting leaves it pending too.
func TestApprovalWait_EndsPending(t *testing.T) {
	f, d := startDesk(t, mcpserver.Options{ApprovalWait: 300 * time.Millisecond}, nil)
	start := time.Now()
	res := f.call(t, "deploy", `{"args":["prod"]}`)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	id := pendingID(t, res)
	assert.Contains(t, text(t, res), "is still pending")

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := f.cs.CallTool(ctx, &mcp.CallToolParams{Name: "deploy", Arguments: map[string]any{"args": []string{"prod"}}})
	require.Error(t, err, "the client gave up")
	d.idle(t) // the call it gave up on has stopped waiting

	d.approve(t, id)
	assert.Equal(t, id, ran(t, f.call(t, "deploy", `{"args":["prod"]}`)).ApprovalID)
	assert.Equal(t, 1, d.count())
}

func TestNew_RefusesABadApprovalWait(t *testing.T) {
	a, err := execgate.NewAllowlist(testSpecs()...)
	require.NoError(t, err)
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: a})
	require.NoError(t, err)
	for _, tc := range []struct {
		opts mcpserver.Options
		want string
	}{
		{mcpserver.Options{Allowlist: a, Outcomes: newDesk(), ApprovalWait: -time.Second}, "must not be negative"},
		{mcpserver.Options{Allowlist: a, ApprovalWait: time.Second}, "needs Options.Outcomes"},
	} {
		_, err := mcpserver.New(x, tc.opts)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// Without Outcomes, a held call is pending as before: the agent is told
// not to call again, and an identical call is proposed anew.
func TestRetry_WithoutOutcomesProposesAnew(t *testing.T) {
	var proposed int
	f := start(t, setup{opts: mcpserver.Options{OnPending: func(context.Context, execgate.Approval) error { proposed++; return nil }}})
	res := f.call(t, "deploy", `{}`)
	id := pendingID(t, res)
	assert.Contains(t, text(t, res), "Do not call the tool again")
	assert.NotEqual(t, id, pendingID(t, f.call(t, "deploy", `{}`)))
	assert.Equal(t, 2, proposed)
}
