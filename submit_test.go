package execgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// byArgPolicy decides by the call's first argument: "deny-me" is denied,
// "hold-me" needs an approval, "fail-me" makes the Policy fail, anything
// else is allowed. It keeps every Request it was asked.
type byArgPolicy struct {
	mu   sync.Mutex
	reqs []execgate.Request
}

func (p *byArgPolicy) Decide(_ context.Context, req execgate.Request) (execgate.Decision, error) {
	p.mu.Lock()
	p.reqs = append(p.reqs, req)
	p.mu.Unlock()
	first := ""
	if len(req.Argv.Args) > 0 {
		first = req.Argv.Args[0]
	}
	switch first {
	case "deny-me":
		return execgate.Decision{Action: execgate.ActionDeny, Rule: "r-deny"}, nil
	case "hold-me":
		return execgate.Decision{Action: execgate.ActionRequireApproval, Rule: "r-hold"}, nil
	case "fail-me":
		return execgate.Decision{}, errors.New("policy backend down")
	}
	return execgate.Decision{Action: execgate.ActionAllow, Rule: "r-allow"}, nil
}

func (p *byArgPolicy) take() []execgate.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.reqs
	p.reqs = nil
	return out
}

// countingStore is a MemoryStore that counts the records it was asked to
// save, and can be made full.
type countingStore struct {
	*execgate.MemoryStore
	saves atomic.Int64
	full  atomic.Bool
}

func newCountingStore() *countingStore {
	return &countingStore{MemoryStore: execgate.NewMemoryStore(execgate.MemoryStoreOptions{})}
}

func (s *countingStore) Save(ctx context.Context, rec execgate.Record) error {
	s.saves.Add(1)
	if s.full.Load() {
		return execgate.ErrStoreFull
	}
	return s.MemoryStore.Save(ctx, rec)
}

// submitFixture is an Executor over echo.say with a byArgPolicy, an
// eventLog and a countingStore.
type submitFixture struct {
	x      *execgate.Executor
	spawns func() int
	policy *byArgPolicy
	log    *eventLog
	store  *countingStore
}

func newSubmitFixture(t *testing.T, specs ...execgate.CommandSpec) *submitFixture {
	t.Helper()
	f := &submitFixture{policy: &byArgPolicy{}, log: &eventLog{}, store: newCountingStore()}
	if len(specs) == 0 {
		specs = []execgate.CommandSpec{echoSpec()}
	}
	x, rec := newGate(t, execgate.Config{Policy: f.policy, Auditor: f.log, Store: f.store}, specs...)
	f.x, f.spawns = x, rec.Count
	return f
}

func args(a ...string) json.RawMessage {
	b, _ := json.Marshal(map[string][]string{"args": a})
	return b
}

func TestSubmit_RunsWhatThePolicyAllows(t *testing.T) {
	f := newSubmitFixture(t)
	ctx := execgate.WithPrincipal(context.Background(), "alice")

	sub, err := f.x.Submit(ctx, "echo.say", args("hi"), execgate.SubmitOptions{Reason: "ignored when it runs"})
	require.NoError(t, err)
	assert.Equal(t, execgate.OpRun, sub.Op)
	assert.True(t, sub.Result.OK)
	assert.Equal(t, []string{"hi"}, sub.Result.Args)
	assert.Empty(t, sub.Approval.ID)
	assert.Equal(t, 1, f.spawns())
	assert.Zero(t, f.store.saves.Load(), "nothing stored")

	reqs := f.policy.take()
	require.Len(t, reqs, 1, "one decision")
	assert.Equal(t, execgate.OpRun, reqs[0].Op)
	assert.True(t, reqs[0].ProposeIfHeld, "the Policy is told a held call would be proposed")

	evs := f.log.take()
	require.Len(t, evs, 2, "an intent, then the outcome")
	assert.Equal(t, execgate.PhaseIntent, evs[0].Phase)
	for _, ev := range evs {
		assert.Equal(t, execgate.OpRun, ev.Op)
		assert.Equal(t, sub.Result.ID, ev.TraceID)
	}
}

func TestSubmit_ProposesWhatThePolicyHolds(t *testing.T) {
	f := newSubmitFixture(t)
	ctx := execgate.WithPrincipal(context.Background(), "alice")

	sub, err := f.x.Submit(ctx, "echo.say", args("hold-me", "now"), execgate.SubmitOptions{Reason: "please"})
	require.NoError(t, err)
	assert.Equal(t, execgate.OpPropose, sub.Op)
	assert.Empty(t, sub.Result.ID, "nothing ran")
	ap := sub.Approval
	assert.Equal(t, []string{"hold-me", "now"}, ap.Args)
	assert.Equal(t, "please", ap.Reason)
	assert.Equal(t, "alice", ap.Principal)
	assert.Zero(t, f.spawns())

	reqs := f.policy.take()
	require.Len(t, reqs, 1, "one decision, not one for Run and one for Propose")
	assert.Equal(t, execgate.OpRun, reqs[0].Op)
	assert.True(t, reqs[0].ProposeIfHeld)

	evs := f.log.take()
	require.Len(t, evs, 1, "one outcome and no intent: nothing started")
	assert.Equal(t, execgate.OpPropose, evs[0].Op)
	assert.Equal(t, ap.ID, evs[0].ApprovalID)
	assert.Empty(t, evs[0].Error)
	assert.Equal(t, execgate.ActionRequireApproval, evs[0].Decision)

	res, err := f.x.Execute(execgate.WithPrincipal(context.Background(), "bob"), ap)
	require.NoError(t, err, "the proposal is a real one")
	assert.Equal(t, ap.ID, res.ApprovalID)
	assert.Equal(t, 1, f.spawns())
}

// TestSubmit_RefusesAsRunAndProposeWould lists every way a submitted call
// is refused, with the kind and the Op its one audit outcome has.
func TestSubmit_RefusesAsRunAndProposeWould(t *testing.T) {
	long := strings.Repeat("x", execgate.MaxReasonBytes+1)
	many := make([]string, execgate.MaxApprovalArgs+1)
	for i := range many {
		many[i] = "a"
	}
	cases := []struct {
		why    string
		name   string
		input  json.RawMessage
		opts   execgate.SubmitOptions
		setup  func(*submitFixture) func()
		kind   string
		reason string
		op     string
		asked  bool
	}{
		{why: "an unknown name is refused before anything else", name: "nope", kind: execgate.ErrorKindNotFound, op: execgate.OpRun},
		{why: "refused input is refused before the Policy", input: json.RawMessage(`[`), kind: execgate.ErrorKindValidation, op: execgate.OpRun},
		{why: "a denied call is refused as Run refuses it", input: args("deny-me"), kind: execgate.ErrorKindPolicy, reason: execgate.ActionDeny, op: execgate.OpRun, asked: true},
		{why: "a failing Policy refuses the call", input: args("fail-me"), kind: execgate.ErrorKindInternal, op: execgate.OpRun, asked: true},
		{why: "NoPropose refuses a held call as Run does, storing nothing", input: args("hold-me"), opts: execgate.SubmitOptions{NoPropose: true},
			kind: execgate.ErrorKindPolicy, reason: execgate.ActionRequireApproval, op: execgate.OpRun, asked: true},
		{why: "a held call whose reason an approval cannot carry is refused as Propose refuses it", input: args("hold-me"), opts: execgate.SubmitOptions{Reason: long},
			kind: execgate.ErrorKindValidation, op: execgate.OpPropose, asked: true},
		{why: "a held call whose argv an approval cannot carry is refused as Propose refuses it", input: args(append([]string{"hold-me"}, many...)...),
			kind: execgate.ErrorKindValidation, op: execgate.OpPropose, asked: true},
		{why: "a held call is refused when the store is full", input: args("hold-me"),
			setup: func(f *submitFixture) func() { f.store.full.Store(true); return func() { f.store.full.Store(false) } },
			kind:  execgate.ErrorKindStoreFull, op: execgate.OpPropose, asked: true},
		{why: "a held call is refused when the Auditor is not ready", input: args("hold-me"),
			setup: func(f *submitFixture) func() {
				f.log.notReady = errors.New("disk full")
				return func() { f.log.notReady = nil }
			},
			kind: execgate.ErrorKindAudit, op: execgate.OpPropose, asked: true},
		{why: "an allowed call is refused when the Auditor is not ready", input: args("hi"),
			setup: func(f *submitFixture) func() {
				f.log.notReady = errors.New("disk full")
				return func() { f.log.notReady = nil }
			},
			kind: execgate.ErrorKindAudit, op: execgate.OpRun, asked: true},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			f := newSubmitFixture(t)
			if c.setup != nil {
				defer c.setup(f)()
			}
			name := c.name
			if name == "" {
				name = "echo.say"
			}
			sub, err := f.x.Submit(context.Background(), name, c.input, c.opts)
			require.Error(t, err)
			assert.Equal(t, execgate.Submission{}, sub)
			assert.Equal(t, c.kind, string(execgate.KindOf(err)))
			assert.Zero(t, f.spawns(), "nothing started")
			if c.kind != execgate.ErrorKindStoreFull {
				assert.Zero(t, f.store.saves.Load(), "nothing offered to the store")
			}
			assert.Equal(t, c.asked, len(f.policy.take()) == 1, "the Policy is asked once, or not at all")
			evs := f.log.take()
			require.Len(t, evs, 1, "one outcome")
			assert.Equal(t, c.op, evs[0].Op)
			assert.Equal(t, c.kind, evs[0].Error)
			assert.Equal(t, c.reason, evs[0].Reason)
		})
	}
}

// TestSubmit_AnUnfitCallIsNotAnnouncedAsAProposal checks that the Policy
// is not told a call will be proposed when no approval could carry it,
// so that a Policy that counts proposals does not count one that is then
// refused; and that such a call still runs when the Policy allows it.
func TestSubmit_AnUnfitCallIsNotAnnouncedAsAProposal(t *testing.T) {
	f := newSubmitFixture(t)
	long := strings.Repeat("x", execgate.MaxReasonBytes+1)

	_, err := f.x.Submit(context.Background(), "echo.say", args("hold-me"), execgate.SubmitOptions{Reason: long})
	require.Error(t, err)
	reqs := f.policy.take()
	require.Len(t, reqs, 1)
	assert.False(t, reqs[0].ProposeIfHeld)

	sub, err := f.x.Submit(context.Background(), "echo.say", args("hi"), execgate.SubmitOptions{Reason: long})
	require.NoError(t, err, "the reason is for an approver; a call that runs has none")
	assert.Equal(t, execgate.OpRun, sub.Op)
}

// TestSubmit_RecordsWhatRunAndProposeRecord compares the trail of a
// submitted call with the trail Run or Propose leaves for the same call:
// the Events are the same but for what names the one call (trace ID,
// time, approval ID) and what Submit tells the Policy.
func TestSubmit_RecordsWhatRunAndProposeRecord(t *testing.T) {
	same := func(ev execgate.Event) execgate.Event {
		ev.TraceID, ev.ApprovalID = "", ""
		ev.Time, ev.Duration = time.Time{}, 0
		return ev
	}
	cases := []struct {
		why    string
		input  json.RawMessage
		direct func(x *execgate.Executor, ctx context.Context, in json.RawMessage) error
		// decided: Propose refuses the call before it asks the Policy;
		// Submit has asked it, to know the call is a proposal, and its
		// record says what the Policy answered.
		decided bool
	}{
		{"an allowed call leaves what Run leaves", args("hi"), func(x *execgate.Executor, ctx context.Context, in json.RawMessage) error {
			_, err := x.Run(ctx, "echo.say", in)
			return err
		}, false},
		{"a denied call leaves what Run leaves", args("deny-me"), func(x *execgate.Executor, ctx context.Context, in json.RawMessage) error {
			_, err := x.Run(ctx, "echo.say", in)
			return err
		}, false},
		{"a held call leaves what Propose leaves", args("hold-me"), func(x *execgate.Executor, ctx context.Context, in json.RawMessage) error {
			_, err := x.Propose(ctx, "echo.say", in, "r")
			return err
		}, false},
		{"a held call an approval cannot carry leaves what Propose leaves, and the decision", args("hold-me", strings.Repeat("y", execgate.MaxApprovalArgBytes+1)),
			func(x *execgate.Executor, ctx context.Context, in json.RawMessage) error {
				_, err := x.Propose(ctx, "echo.say", in, "r")
				return err
			}, true},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			f := newSubmitFixture(t)
			ctx := execgate.WithPrincipal(context.Background(), "alice")
			_, subErr := f.x.Submit(ctx, "echo.say", c.input, execgate.SubmitOptions{Reason: "r"})
			got := f.log.take()
			dirErr := c.direct(f.x, ctx, c.input)
			want := f.log.take()
			assert.Equal(t, execgate.KindOf(dirErr), execgate.KindOf(subErr))
			require.Len(t, got, len(want))
			for i := range want {
				g := same(got[i])
				if c.decided {
					assert.Equal(t, execgate.ActionRequireApproval, g.Decision)
					g.Decision, g.Rule = "", ""
				}
				w := same(want[i])
				w.Args, g.Args = nil, nil // compared alone: an argv may be long
				assert.Equal(t, same(want[i]).Args, same(got[i]).Args, "event %d's argv", i)
				assert.Equal(t, w, g, "event %d", i)
			}
		})
	}
}

// TestSubmit_AsksThePolicyOnceWhereRunThenProposeAskedTwice counts the
// decisions a held call costs: Submit asks once; the path every adapter
// used to assemble (Run, then Propose on a PolicyError asking for an
// approval) asked twice, and validated twice.
func TestSubmit_AsksThePolicyOnceWhereRunThenProposeAskedTwice(t *testing.T) {
	schema := &countingSchema{argv: execgate.Argv{Args: []string{"hold-me"}}}
	pol := &byArgPolicy{}
	x, _ := newGate(t, execgate.Config{Policy: pol}, execgate.CommandSpec{Name: "c", Command: "/bin/echo", Args: schema})
	ctx := context.Background()

	_, err := x.Submit(ctx, "c", nil, execgate.SubmitOptions{})
	require.NoError(t, err)
	assert.Len(t, pol.take(), 1)
	assert.Equal(t, int64(1), schema.parses.Swap(0))

	_, err = x.Run(ctx, "c", nil)
	var pe *execgate.PolicyError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, execgate.ActionRequireApproval, pe.Action)
	_, err = x.Propose(ctx, "c", nil, "")
	require.NoError(t, err)
	assert.Len(t, pol.take(), 2)
	assert.Equal(t, int64(2), schema.parses.Load())
}

func TestDecide_SaysWhatSubmitWouldDoAndDoesNothing(t *testing.T) {
	cases := []struct {
		why   string
		name  string
		input json.RawMessage
		opts  execgate.SubmitOptions
		op    string
		kind  execgate.ErrorKind
	}{
		{why: "an allowed call would run", input: args("hi"), op: execgate.OpRun},
		{why: "a held call would be proposed", input: args("hold-me"), op: execgate.OpPropose},
		{why: "a held call would be refused with NoPropose", input: args("hold-me"), opts: execgate.SubmitOptions{NoPropose: true}, kind: execgate.ErrorKindPolicy},
		{why: "a denied call would be refused", input: args("deny-me"), kind: execgate.ErrorKindPolicy},
		{why: "an unknown name would be refused", name: "nope", kind: execgate.ErrorKindNotFound},
		{why: "refused input would be refused", input: json.RawMessage(`{"args":1}`), kind: execgate.ErrorKindValidation},
		{why: "a held call an approval cannot carry would be refused", input: args("hold-me"), opts: execgate.SubmitOptions{Reason: strings.Repeat("x", execgate.MaxReasonBytes+1)}, kind: execgate.ErrorKindValidation},
		{why: "a failing Policy would refuse", input: args("fail-me"), kind: execgate.ErrorKindInternal},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			name := c.name
			if name == "" {
				name = "echo.say"
			}
			ctx := execgate.WithPrincipal(context.Background(), "alice")
			f := newSubmitFixture(t)
			v, err := f.x.Decide(ctx, name, c.input, c.opts)
			assert.Equal(t, c.kind, execgate.KindOf(err))
			assert.Equal(t, c.op, v.Op)
			assert.Zero(t, f.spawns(), "Decide starts nothing")
			assert.Zero(t, f.store.saves.Load(), "Decide stores nothing")
			assert.Empty(t, f.log.take(), "Decide records nothing")
			decided := f.policy.take()

			sub, subErr := f.x.Submit(ctx, name, c.input, c.opts)
			assert.Equal(t, execgate.KindOf(subErr), execgate.KindOf(err), "Submit does what Decide said")
			assert.Equal(t, sub.Op, v.Op)
			submitted := f.policy.take()
			for i := range decided {
				assert.True(t, decided[i].DryRun, "Decide tells the Policy it is only deciding")
				decided[i].DryRun = false
			}
			assert.Equal(t, submitted, decided, "Decide asks the Policy what Submit asks it, as a dry run")
		})
	}
}

func TestDecide_ReportsTheSpecTheArgvThePolicyAndTheFloor(t *testing.T) {
	held := echoSpec()
	held.Name, held.Floor = "echo.held", execgate.ActionRequireApproval
	f := newSubmitFixture(t, echoSpec(), held)
	ctx := context.Background()

	v, err := f.x.Decide(ctx, "echo.say", args("a", "b"), execgate.SubmitOptions{})
	require.NoError(t, err)
	assert.Equal(t, "echo.say", v.Spec.Name)
	assert.Equal(t, "/bin/echo", v.Spec.Command)
	assert.Equal(t, []string{"a", "b"}, v.Argv.Args)
	require.NotNil(t, v.Policy)
	assert.Equal(t, execgate.Decision{Action: execgate.ActionAllow, Rule: "r-allow"}, *v.Policy)
	assert.Equal(t, *v.Policy, v.Decision, "a floor of allow changes nothing")

	v, err = f.x.Decide(ctx, "echo.held", args("a"), execgate.SubmitOptions{})
	require.NoError(t, err)
	assert.Equal(t, execgate.OpPropose, v.Op)
	assert.Equal(t, execgate.ActionAllow, v.Policy.Action, "the Policy's own answer")
	assert.Equal(t, execgate.Decision{Action: execgate.ActionRequireApproval, Rule: execgate.FloorRule}, v.Decision, "made stricter by the floor")

	v, err = f.x.Decide(ctx, "echo.say", json.RawMessage(`[`), execgate.SubmitOptions{})
	require.Error(t, err)
	assert.Equal(t, "echo.say", v.Spec.Name, "the spec was found before the input was refused")
	assert.Nil(t, v.Policy, "the Policy was not asked")
	assert.Zero(t, v.Decision)

	x, _ := newGate(t, execgate.Config{}, held)
	v, err = x.Decide(ctx, "echo.held", args("a"), execgate.SubmitOptions{})
	require.NoError(t, err)
	assert.Nil(t, v.Policy, "no Policy to ask")
	assert.Equal(t, execgate.FloorRule, v.Decision.Rule)
}
