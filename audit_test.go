package execgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// eventLog is an Auditor that keeps every Event and can be made unready.
type eventLog struct {
	mu       sync.Mutex
	events   []execgate.Event
	notReady error
}

func (l *eventLog) Audit(_ context.Context, ev execgate.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
	return nil
}

func (l *eventLog) Ready(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.notReady
}

func (l *eventLog) take() []execgate.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.events
	l.events = nil
	return out
}

// outcomes drops the intent Events of a trail.
func outcomes(evs []execgate.Event) []execgate.Event {
	var out []execgate.Event
	for _, ev := range evs {
		if ev.Phase != execgate.PhaseIntent {
			out = append(out, ev)
		}
	}
	return out
}

func TestAudit_OneOutcomePerCallAndAnIntentPerProcess(t *testing.T) {
	log := &eventLog{}
	spec := echoSpec()
	spec.Env = map[string]string{"TOKEN": "env-secret-canary", "LANG": "C"}
	pol := execgate.PolicyFunc(func(_ context.Context, req execgate.Request) (execgate.Decision, error) {
		if len(req.Argv.Args) > 0 && req.Argv.Args[0] == "deny-me" {
			return execgate.Decision{Action: execgate.ActionDeny, Rule: "r-deny"}, nil
		}
		return execgate.Decision{Action: execgate.ActionAllow, Rule: "r-allow", Grant: "g1"}, nil
	})
	x, _ := newGate(t, execgate.Config{Auditor: log, Policy: pol}, spec)
	ctx := execgate.WithPrincipal(context.Background(), "alice")

	type call struct {
		name      string
		do        func() error
		op, kind  string
		reason    string
		termGiven bool
	}
	var ap execgate.Approval
	calls := []call{
		{"run ok", func() error {
			_, err := x.Run(ctx, "echo.say", json.RawMessage(`{"args":["hi"],"stdin":"stdin-secret-canary"}`))
			return err
		}, execgate.OpRun, "", "", true},
		{"run unknown", func() error { _, err := x.Run(ctx, "nope", nil); return err }, execgate.OpRun, execgate.ErrorKindNotFound, "", false},
		{"run invalid", func() error { _, err := x.Run(ctx, "echo.say", json.RawMessage(`[`)); return err }, execgate.OpRun, execgate.ErrorKindValidation, "", false},
		{"run denied", func() error {
			_, err := x.Run(ctx, "echo.say", json.RawMessage(`{"args":["deny-me"]}`))
			return err
		}, execgate.OpRun, execgate.ErrorKindPolicy, execgate.ActionDeny, false},
		{"propose", func() error {
			var err error
			ap, err = x.Propose(ctx, "echo.say", json.RawMessage(`{"args":["later"]}`), "why")
			return err
		}, execgate.OpPropose, "", "", false},
		{"execute", func() error { _, err := x.Execute(ctx, ap); return err }, execgate.OpExecute, "", "", true},
		{"execute again", func() error { _, err := x.Execute(ctx, ap); return err }, execgate.OpExecute, execgate.ErrorKindApproval, execgate.ReasonUnknown, false},
		{"execute malformed", func() error { _, err := x.Execute(ctx, execgate.Approval{}); return err }, execgate.OpExecute, execgate.ErrorKindValidation, "", false},
		{"reject", func() error { _, err := x.Reject(ctx, ap.ID); return err }, execgate.OpReject, "", "", false},
		{"reject malformed", func() error { _, err := x.Reject(ctx, "x"); return err }, execgate.OpReject, execgate.ErrorKindValidation, "", false},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			err := c.do()
			if c.kind == "" {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
			evs := log.take()
			if c.termGiven {
				require.Len(t, evs, 2, "an intent and an outcome for a call that started a process")
				in := evs[0]
				assert.Equal(t, execgate.PhaseIntent, in.Phase)
				assert.Equal(t, c.op, in.Op)
				assert.Equal(t, evs[1].TraceID, in.TraceID, "the intent and the outcome share the trace ID")
				assert.Empty(t, in.Termination, "an intent has no termination")
				assert.Equal(t, evs[1].Args, in.Args)
				evs = evs[1:]
			}
			require.Len(t, evs, 1, "exactly one outcome event per call")
			ev := evs[0]
			assert.Equal(t, execgate.PhaseOutcome, ev.Phase)
			assert.Equal(t, c.op, ev.Op)
			assert.Equal(t, c.kind, ev.Error)
			assert.Equal(t, c.reason, ev.Reason)
			assert.Equal(t, "alice", ev.Principal)
			assert.NotEmpty(t, ev.TraceID)
			assert.Equal(t, c.termGiven, ev.Termination != "")
			b, err := json.Marshal(ev)
			require.NoError(t, err)
			assert.NotContains(t, string(b), "secret-canary", "no stdin or env value in the trail")
		})
	}
}

func TestAudit_EventFields(t *testing.T) {
	log := &eventLog{}
	spec := echoSpec()
	spec.Env = map[string]string{"TOKEN": "x", "LANG": "C"}
	x, _ := newGate(t, execgate.Config{Auditor: log}, spec)
	res, err := x.Run(context.Background(), "echo.say", json.RawMessage(`{"args":["a","b"],"stdin":"12345"}`))
	require.NoError(t, err)
	ev := outcomes(log.take())[0]
	assert.Equal(t, res.ID, ev.TraceID, "the trace id is the Result's ID")
	assert.Equal(t, "/bin/echo", ev.Command)
	assert.Equal(t, []string{"a", "b"}, ev.Args)
	assert.Len(t, ev.ArgsSHA256, 64)
	assert.Equal(t, 5, ev.StdinBytes)
	assert.Equal(t, []string{"LANG", "TOKEN"}, ev.EnvKeys)
	assert.Equal(t, execgate.ActionAllow, ev.Decision)
	assert.Equal(t, execgate.TerminationExit, ev.Termination)

	// Sensitive arguments leave only their hash.
	spec.SensitiveArgs = true
	x, _ = newGate(t, execgate.Config{Auditor: log}, spec)
	_, err = x.Run(context.Background(), "echo.say", json.RawMessage(`{"args":["password123"]}`))
	require.NoError(t, err)
	ev2 := outcomes(log.take())[0]
	assert.Nil(t, ev2.Args)
	assert.Len(t, ev2.ArgsSHA256, 64)
	b, _ := json.Marshal(ev2)
	assert.NotContains(t, string(b), "password123")
}

func TestAudit_FailsClosedBeforeSpawn(t *testing.T) {
	log := &eventLog{notReady: errors.New("disk full")}
	x, rec := newGate(t, execgate.Config{Auditor: log}, echoSpec())
	_, err := x.Run(context.Background(), "echo.say", nil)
	var ae *execgate.AuditError
	require.ErrorAs(t, err, &ae)
	assert.True(t, strings.Contains(err.Error(), "disk full"))
	assert.Zero(t, rec.Count())

	_, err = x.Propose(context.Background(), "echo.say", nil, "")
	require.ErrorAs(t, err, &ae)

	// An approval is not burned while the Auditor is down.
	log.notReady = nil
	ap := propose(t, x, `{}`)
	log.notReady = errors.New("disk full")
	_, err = x.Execute(context.Background(), ap)
	require.ErrorAs(t, err, &ae)
	log.notReady = nil
	_, err = x.Execute(context.Background(), ap)
	require.NoError(t, err)
	assert.Equal(t, 1, rec.Count())

	// Fail open, when asked for.
	log.notReady = errors.New("disk full")
	x, rec = newGate(t, execgate.Config{Auditor: log, AuditFailOpen: true}, echoSpec())
	_, err = x.Run(context.Background(), "echo.say", nil)
	require.NoError(t, err)
	assert.Equal(t, 1, rec.Count())
}

func TestPolicy_RateLimitedRefuses(t *testing.T) {
	pol := &countingPolicy{action: execgate.ActionRateLimited, rule: "rl"}
	x, rec := newGate(t, execgate.Config{Policy: pol}, echoSpec())
	_, err := x.Run(context.Background(), "echo.say", nil)
	var pe *execgate.PolicyError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, execgate.ActionRateLimited, pe.Action)
	_, err = x.Propose(context.Background(), "echo.say", nil, "")
	require.ErrorAs(t, err, &pe)
	assert.Zero(t, rec.Count())
}

func TestAudit_CallerStringsAreBounded(t *testing.T) {
	log := &eventLog{}
	x, _ := newGate(t, execgate.Config{Auditor: log}, echoSpec())
	huge := strings.Repeat("\x01", 3<<20)
	_, err := x.Run(execgate.WithPrincipal(context.Background(), huge), huge, nil)
	require.Error(t, err)
	ev := log.take()[0]
	assert.LessOrEqual(t, len(ev.Name), 260)
	assert.LessOrEqual(t, len(ev.Principal), 260)
}

func TestAudit_SensitiveArgsHashIsKeyed(t *testing.T) {
	log := &eventLog{}
	spec := echoSpec()
	spec.SensitiveArgs = true
	x, _ := newGate(t, execgate.Config{Auditor: log}, spec)
	_, err := x.Run(context.Background(), "echo.say", json.RawMessage(`{"args":["1234"]}`))
	require.NoError(t, err)
	_, err = x.Run(context.Background(), "echo.say", json.RawMessage(`{"args":["1234"]}`))
	require.NoError(t, err)
	evs := outcomes(log.take())
	assert.Equal(t, evs[0].ArgsSHA256, evs[1].ArgsSHA256, "equal argvs match within the process")

	plain := echoSpec()
	x, _ = newGate(t, execgate.Config{Auditor: log}, plain)
	_, err = x.Run(context.Background(), "echo.say", json.RawMessage(`{"args":["1234"]}`))
	require.NoError(t, err)
	assert.NotEqual(t, log.take()[0].ArgsSHA256, evs[0].ArgsSHA256, "the keyed hash is not the plain one")
}

// failingLog is an Auditor that is ready but fails every Audit of one phase.
type failingLog struct {
	eventLog
	failPhase string
	failedIDs []string // the trace IDs of the Events it failed
}

func (l *failingLog) Audit(ctx context.Context, ev execgate.Event) error {
	if ev.Phase == l.failPhase {
		l.mu.Lock()
		l.failedIDs = append(l.failedIDs, ev.TraceID)
		l.mu.Unlock()
		return errors.New("no space left on device")
	}
	return l.eventLog.Audit(ctx, ev)
}

// Invariant 11 of DESIGN.md.
func TestRecordIsTrue_NoIntentNoStart(t *testing.T) {
	cases := []struct {
		name     string
		failOpen bool
		started  int // processes the ExecFn was handed
	}{
		{name: "an intent that cannot be recorded refuses the call and starts nothing", started: 0},
		{name: "AuditFailOpen keeps its meaning: the call runs without its intent", failOpen: true, started: 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := &failingLog{failPhase: execgate.PhaseIntent}
			x, rec := newGate(t, execgate.Config{Auditor: log, AuditFailOpen: c.failOpen}, echoSpec())
			_, runErr := x.Run(context.Background(), "echo.say", nil)
			ap := propose(t, x, `{}`)
			_, execErr := x.Execute(context.Background(), ap)
			assert.Equal(t, c.started, rec.Count())
			if c.failOpen {
				assert.NoError(t, runErr)
				assert.NoError(t, execErr)
				return
			}
			var ae *execgate.AuditError
			for _, err := range []error{runErr, execErr} {
				require.ErrorAs(t, err, &ae)
				assert.Contains(t, err.Error(), "no space left")
			}
			// The refusals themselves are recorded as outcomes.
			var kinds []string
			evs := log.take()
			for _, ev := range evs {
				kinds = append(kinds, ev.Op+":"+ev.Error)
			}
			require.Equal(t, []string{"run:audit", "propose:", "execute:audit"}, kinds)
			// A refusal for a failed intent keeps the intent's trace ID,
			// so a sink that did record the intent can pair them.
			require.Len(t, log.failedIDs, 2)
			assert.Equal(t, log.failedIDs[0], evs[0].TraceID)
			assert.Equal(t, log.failedIDs[1], evs[2].TraceID)
		})
	}
}

func TestRecordRefusal_ReachesTheAuditor(t *testing.T) {
	log := &eventLog{}
	x, rec := newGate(t, execgate.Config{Auditor: log}, echoSpec())
	err := x.RecordRefusal(context.Background(), execgate.Refusal{
		Route: "POST /v1/tools/echo.say", Name: "echo.say",
		Kind: execgate.ErrorKindUnauthenticated, Reason: "bad token" + strings.Repeat("x", 1<<20),
	})
	require.NoError(t, err)
	evs := log.take()
	require.Len(t, evs, 1)
	ev := evs[0]
	assert.Equal(t, execgate.OpRequest, ev.Op)
	assert.Equal(t, execgate.PhaseOutcome, ev.Phase)
	assert.Equal(t, "", ev.Principal, "an unauthenticated request has no principal")
	assert.Equal(t, "POST /v1/tools/echo.say", ev.Route)
	assert.Equal(t, execgate.ErrorKindUnauthenticated, ev.Error)
	assert.LessOrEqual(t, len(ev.Reason), 260, "a caller-chosen reason is cut")
	assert.NotEmpty(t, ev.TraceID)
	assert.Zero(t, rec.Count())

	// Without an Auditor it is a no-op.
	x, _ = newGate(t, execgate.Config{}, echoSpec())
	assert.NoError(t, x.RecordRefusal(context.Background(), execgate.Refusal{Kind: execgate.ErrorKindRequest}))
}
