package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit"
	"github.com/execgate/execgate/audit/otelaudit"
)

// outage is an Auditor that records nothing and can be made unready.
type outage struct {
	mu  sync.Mutex
	err error
}

func (o *outage) Audit(context.Context, execgate.Event) error { return nil }

func (o *outage) Ready(context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

func (o *outage) set(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.err = err
}

// fullStore refuses every Save, as a store at capacity does.
type fullStore struct{ execgate.ApprovalStore }

func (fullStore) Save(context.Context, execgate.Record) error { return execgate.ErrStoreFull }

// switchPolicy decides on the first argument, and can be switched to deny
// everything.
type switchPolicy struct {
	mu      sync.Mutex
	denyAll bool
}

func (p *switchPolicy) set(deny bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.denyAll = deny
}

func (p *switchPolicy) Decide(_ context.Context, req execgate.Request) (execgate.Decision, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.denyAll {
		return execgate.Decision{Action: execgate.ActionDeny, Rule: "lockdown"}, nil
	}
	first := ""
	if len(req.Argv.Args) > 0 {
		first = req.Argv.Args[0]
	}
	switch first {
	case "deny-me":
		return execgate.Decision{Action: execgate.ActionDeny, Rule: "r-deny"}, nil
	case "approve-me":
		return execgate.Decision{Action: execgate.ActionRequireApproval, Rule: "r-approve"}, nil
	case "limit-me":
		return execgate.Decision{Action: execgate.ActionRateLimited, Rule: "r-limit"}, nil
	case "fail-me":
		return execgate.Decision{}, errors.New("policy backend down")
	}
	return execgate.Decision{Action: execgate.ActionAllow, Rule: "r-allow", Grant: "g-1"}, nil
}

// Drive a real Executor through every outcome and every refusal path: each
// call leaves exactly one outcome entry in the chain, one outcome record
// in each slog sink and one span, and a call that started a process also
// leaves its intent, just before the outcome, in the chain and the logs
// (not as a span). The recorded fields match the call. No stdin or
// environment value reaches any sink.
func TestSinks_OneOutcomePerCallAndAnIntentPerProcess(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	chain, err := audit.OpenChain(path, audit.ChainOptions{})
	require.NoError(t, err)
	defer chain.Close()

	records := &capture{}
	var jsonOut bytes.Buffer
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer tp.Shutdown(context.Background())
	down := &outage{}
	auditor := audit.Multi(
		chain,
		audit.NewSlogSink(slog.New(records)),
		audit.NewSlogSink(slog.New(slog.NewJSONHandler(&jsonOut, nil))),
		otelaudit.New(tp, otelaudit.WithArgs()),
		down,
	)

	clk := newClock()
	pol := &switchPolicy{}
	specs := []execgate.CommandSpec{spec("echo.say"), spec("fail.cmd"), spec("slow.cmd"), spec("broken.cmd")}
	x, rec := newGate(t, execgate.Config{Auditor: auditor, Policy: pol, Now: clk.Now}, specs...)
	rec.On("fail.cmd", execgate.Outcome{ExitCode: 3, StdoutDropped: 10, StderrDropped: 20})
	rec.On("slow.cmd", execgate.Outcome{Termination: execgate.TerminationTimeout, Signal: "SIGKILL"})
	rec.On("broken.cmd", execgate.Outcome{Err: errors.New("exec format error")})
	full, _ := newGate(t, execgate.Config{Auditor: auditor, Store: fullStore{}}, specs...)

	changed := spec("echo.say")
	changed.Env = map[string]string{"TOKEN": "env-canary", "LANG": "C", "NEW": "1"}
	changedList, err := execgate.NewAllowlist(append([]execgate.CommandSpec{changed}, specs[1:]...)...)
	require.NoError(t, err)
	sameList, err := execgate.NewAllowlist(specs...)
	require.NoError(t, err)

	ctx := execgate.WithPrincipal(context.Background(), "alice")
	run := func(name, in string) func() error {
		return func() error { _, err := x.Run(ctx, name, json.RawMessage(in)); return err }
	}
	aps := map[string]execgate.Approval{}
	propose := func(key, in string) func() error {
		return func() error {
			ap, err := x.Propose(ctx, "echo.say", json.RawMessage(in), "because")
			aps[key] = ap
			return err
		}
	}
	execute := func(key string) func() error {
		return func() error { _, err := x.Execute(ctx, aps[key]); return err }
	}

	type step struct {
		name     string
		do       func() error
		op       string
		kind     string // ErrorKind, "" for a call that was not refused
		reason   string
		ran      bool                 // a process was handed to the ExecFn
		term     execgate.Termination // when ran
		spanFail bool                 // span status Error
	}
	steps := []step{
		{name: "run ok", do: run("echo.say", `{"args":["hi"],"stdin":"stdin-canary"}`), op: "run", ran: true, term: "exit"},
		{name: "run non-zero exit", do: run("fail.cmd", `{"args":[]}`), op: "run", ran: true, term: "exit", spanFail: true},
		{name: "run timeout", do: run("slow.cmd", `{"args":[]}`), op: "run", ran: true, term: "timeout", spanFail: true},
		{name: "run spawn error", do: run("broken.cmd", `{"args":[]}`), op: "run", ran: true, term: "spawn_error", spanFail: true},
		{name: "run unknown name", do: run("rm.rf", `{}`), op: "run", kind: execgate.ErrorKindNotFound},
		{name: "run invalid input", do: run("echo.say", `{"args":"x"}`), op: "run", kind: execgate.ErrorKindValidation},
		{name: "run denied", do: run("echo.say", `{"args":["deny-me"]}`), op: "run", kind: execgate.ErrorKindPolicy, reason: execgate.ActionDeny},
		{name: "run needs approval", do: run("echo.say", `{"args":["approve-me"]}`), op: "run", kind: execgate.ErrorKindPolicy, reason: execgate.ActionRequireApproval},
		{name: "run rate limited", do: run("echo.say", `{"args":["limit-me"]}`), op: "run", kind: execgate.ErrorKindPolicy, reason: execgate.ActionRateLimited},
		{name: "run policy error", do: run("echo.say", `{"args":["fail-me"]}`), op: "run", kind: execgate.ErrorKindOther},
		{name: "run audit down", do: func() error {
			down.set(errors.New("disk full"))
			defer down.set(nil)
			return run("echo.say", `{"args":["hi"]}`)()
		}, op: "run", kind: execgate.ErrorKindAudit},

		{name: "propose", do: propose("ok", `{"args":["approve-me"]}`), op: "propose"},
		{name: "propose for expiry", do: propose("expire", `{"args":["a"]}`), op: "propose"},
		{name: "propose for tampering", do: propose("tamper", `{"args":["b"]}`), op: "propose"},
		{name: "propose for spec change", do: propose("changed", `{"args":["c"]}`), op: "propose"},
		{name: "propose for lockdown", do: propose("lockdown", `{"args":["d"]}`), op: "propose"},
		{name: "propose for audit outage", do: propose("outage", `{"args":["e"]}`), op: "propose"},
		{name: "propose for reject", do: propose("reject", `{"args":["f"]}`), op: "propose"},
		{name: "propose unknown name", do: func() error { _, err := x.Propose(ctx, "rm.rf", nil, ""); return err }, op: "propose", kind: execgate.ErrorKindNotFound},
		{name: "propose bad reason", do: func() error {
			_, err := x.Propose(ctx, "echo.say", json.RawMessage(`{"args":[]}`), "bad \xff utf-8")
			return err
		}, op: "propose", kind: execgate.ErrorKindValidation},
		{name: "propose denied", do: propose("denied", `{"args":["deny-me"]}`), op: "propose", kind: execgate.ErrorKindPolicy, reason: execgate.ActionDeny},
		{name: "propose store full", do: func() error {
			_, err := full.Propose(ctx, "echo.say", json.RawMessage(`{"args":[]}`), "")
			return err
		}, op: "propose", kind: execgate.ErrorKindStore},
		{name: "propose audit down", do: func() error {
			down.set(errors.New("disk full"))
			defer down.set(nil)
			return propose("down", `{"args":[]}`)()
		}, op: "propose", kind: execgate.ErrorKindAudit},

		{name: "execute", do: execute("ok"), op: "execute", ran: true, term: "exit"},
		{name: "execute again", do: execute("ok"), op: "execute", kind: execgate.ErrorKindApproval, reason: execgate.ReasonUnknown},
		{name: "execute malformed", do: func() error { _, err := x.Execute(ctx, execgate.Approval{ID: "x"}); return err }, op: "execute", kind: execgate.ErrorKindValidation},
		{name: "execute tampered", do: func() error {
			ap := aps["tamper"]
			ap.Args = []string{"--evil"}
			_, err := x.Execute(ctx, ap)
			return err
		}, op: "execute", kind: execgate.ErrorKindApproval, reason: execgate.ReasonDigestMismatch},
		{name: "execute after spec change", do: func() error {
			x.SetAllowlist(changedList)
			defer x.SetAllowlist(sameList)
			return execute("changed")()
		}, op: "execute", kind: execgate.ErrorKindApproval, reason: execgate.ReasonPolicyChanged},
		{name: "execute denied now", do: func() error {
			pol.set(true)
			defer pol.set(false)
			return execute("lockdown")()
		}, op: "execute", kind: execgate.ErrorKindPolicy, reason: execgate.ActionDeny},
		{name: "execute audit down", do: func() error {
			down.set(errors.New("disk full"))
			defer down.set(nil)
			return execute("outage")()
		}, op: "execute", kind: execgate.ErrorKindAudit},
		{name: "execute after audit is back", do: execute("outage"), op: "execute", ran: true, term: "exit"},
		{name: "execute expired", do: func() error {
			clk.Advance(execgate.DefaultApprovalTTL + time.Minute)
			return execute("expire")()
		}, op: "execute", kind: execgate.ErrorKindApproval, reason: execgate.ReasonExpired},

		{name: "reject", do: func() error { _, err := x.Reject(ctx, aps["reject"].ID); return err }, op: "reject"},
		{name: "reject again", do: func() error { _, err := x.Reject(ctx, aps["reject"].ID); return err }, op: "reject"},
		{name: "reject malformed", do: func() error { _, err := x.Reject(ctx, "../x"); return err }, op: "reject", kind: execgate.ErrorKindValidation},
	}

	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			seq, nrec, nspans, nrun := chain.Head().Seq, len(records.all()), len(sr.Ended()), rec.Count()

			err := s.do()
			if s.kind == "" {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}

			// One outcome in each sink, an intent before it in the chain
			// and the logs if a process ran, and a process only then.
			entries := uint64(1)
			if s.ran {
				entries = 2
				assert.Equal(t, nrun+1, rec.Count())
			} else {
				assert.Equal(t, nrun, rec.Count(), "a refusal spawns nothing")
			}
			require.Equal(t, seq+entries, chain.Head().Seq, "chain entries")
			require.Len(t, records.all(), nrec+int(entries), "slog records")
			require.Len(t, sr.Ended(), nspans+1, "one span")

			// The chain entries.
			lines := readLines(t, path)
			e := lastEntry(t, path)
			assert.Equal(t, execgate.PhaseOutcome, e["phase"])
			if s.ran {
				var in map[string]any
				require.NoError(t, json.Unmarshal(lines[len(lines)-2], &in))
				assert.Equal(t, execgate.PhaseIntent, in["phase"])
				assert.Equal(t, s.op, in["op"])
				assert.Equal(t, e["traceId"], in["traceId"], "the intent and the outcome name the same call")
				assert.NotContains(t, in, "termination", "an intent is written before the process ends")
				assert.Equal(t, "alice", in["principal"])
				nrec++ // the intent's slog record; the outcome's follows
			}
			assert.Equal(t, s.op, e["op"])
			assert.Equal(t, s.kind, str(e["error"]))
			assert.Equal(t, s.reason, str(e["reason"]))
			assert.Equal(t, string(s.term), str(e["termination"]))
			assert.Equal(t, "alice", e["principal"])
			assert.NotEmpty(t, e["traceId"])

			// The slog record.
			r := records.all()[nrec]
			a := attrs(r)
			assert.Equal(t, audit.SlogMessage, r.Message)
			if s.kind != "" {
				assert.Equal(t, slog.LevelWarn, r.Level, "refusals are Warn")
				assert.Equal(t, s.kind, a["error"].String())
			} else {
				assert.Equal(t, slog.LevelInfo, r.Level)
				assert.NotContains(t, a, "error")
			}
			assert.Equal(t, s.op, a["op"].String())
			assert.Equal(t, e["traceId"], a["traceId"].String(), "slog and chain name the same call")

			// The span.
			sp := sr.Ended()[nspans]
			assert.Equal(t, "execgate."+s.op, sp.Name())
			wantFail := s.kind != "" || s.spanFail
			assert.Equal(t, wantFail, sp.Status().Code == codes.Error, "span status")
		})
	}

	// The whole trail verifies, and holds no stdin or environment value.
	require.NoError(t, audit.VerifyFile(path))
	file, err := os.ReadFile(path)
	require.NoError(t, err)
	var spanText bytes.Buffer
	for _, sp := range sr.Ended() {
		fmt.Fprintln(&spanText, sp.Attributes())
	}
	for name, text := range map[string]string{"chain": string(file), "slog": jsonOut.String(), "spans": spanText.String()} {
		assert.NotContains(t, text, "canary", "%s leaks stdin or env", name)
		assert.Contains(t, text, "TOKEN", "%s names env keys", name)
	}
	started := 0
	for _, s := range steps {
		if s.ran {
			started++
		}
	}
	assert.Equal(t, len(steps)+started, bytes.Count(jsonOut.Bytes(), []byte("\n")), "an outcome per call, an intent per process")
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// Every field of a run reaches the chain entry, and decodes back into an
// Entry that equals the Event.
func TestChain_EntryFields(t *testing.T) {
	var buf bytes.Buffer
	chain := audit.NewChain(&buf, audit.ChainOptions{})
	x, rec := newGate(t, execgate.Config{Auditor: chain, Policy: &switchPolicy{}})
	rec.Otherwise(execgate.Outcome{ExitCode: 2, StdoutDropped: 5, StderrDropped: 6})
	ctx := execgate.WithPrincipal(context.Background(), "bob")
	res, err := x.Run(ctx, "echo.say", json.RawMessage(`{"args":["a","b"],"stdin":"12345"}`))
	require.NoError(t, err)

	lines := bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n"))
	require.Len(t, lines, 2, "the call's intent, then its outcome")
	var in, e audit.Entry
	require.NoError(t, json.Unmarshal(lines[0], &in))
	require.NoError(t, json.Unmarshal(lines[1], &e))

	// The intent: what is about to run, before anything is known of how
	// it ends.
	assert.Equal(t, uint64(1), in.Seq)
	assert.Equal(t, audit.Genesis, in.Prev)
	assert.Len(t, in.Hash, 64)
	assert.Equal(t, execgate.PhaseIntent, in.Phase)
	assert.Equal(t, execgate.OpRun, in.Op)
	assert.Equal(t, res.ID, in.TraceID)
	assert.Equal(t, "bob", in.Principal)
	assert.Equal(t, "/bin/echo", in.Command)
	assert.Equal(t, []string{"a", "b"}, in.Args)
	assert.Equal(t, 5, in.StdinBytes)
	assert.Equal(t, execgate.ActionAllow, in.Decision)
	assert.Empty(t, in.Termination)
	assert.Zero(t, in.ExitCode)
	assert.Zero(t, in.Duration)

	// The outcome, chained to the intent.
	assert.Equal(t, uint64(2), e.Seq)
	assert.Equal(t, sha(lines[0]), e.Prev)
	assert.Len(t, e.Hash, 64)
	assert.Equal(t, execgate.PhaseOutcome, e.Phase)
	assert.Equal(t, execgate.OpRun, e.Op)
	assert.Equal(t, res.ID, e.TraceID)
	assert.Equal(t, "bob", e.Principal)
	assert.Equal(t, "echo.say", e.Name)
	assert.Equal(t, "/bin/echo", e.Command)
	assert.Equal(t, []string{"a", "b"}, e.Args)
	assert.Len(t, e.ArgsSHA256, 64)
	assert.Equal(t, 5, e.StdinBytes)
	assert.Equal(t, []string{"LANG", "TOKEN"}, e.EnvKeys)
	assert.Equal(t, execgate.ActionAllow, e.Decision)
	assert.Equal(t, "r-allow", e.Rule)
	assert.Equal(t, "g-1", e.Grant)
	assert.Equal(t, execgate.TerminationExit, e.Termination)
	assert.Equal(t, 2, e.ExitCode)
	assert.Equal(t, res.Duration, e.Duration)
	assert.Equal(t, int64(5), e.StdoutDropped)
	assert.Equal(t, int64(6), e.StderrDropped)
	assert.Empty(t, e.Error)
	assert.False(t, e.Time.IsZero())
	assert.NotContains(t, buf.String(), "12345")
	assert.NotContains(t, buf.String(), "canary")

	// A spec with SensitiveArgs leaves only the argv's hash.
	sensitive := spec("echo.say")
	sensitive.SensitiveArgs = true
	buf.Reset()
	x, _ = newGate(t, execgate.Config{Auditor: audit.NewChain(&buf, audit.ChainOptions{})}, sensitive)
	_, err = x.Run(ctx, "echo.say", json.RawMessage(`{"args":["hunter2"]}`))
	require.NoError(t, err)
	assert.NotContains(t, buf.String(), "hunter2")
	assert.Contains(t, buf.String(), `"argsSha256":"`)
}
