package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit"
)

func TestSlogSink_Records(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		ev     execgate.Event
		level  slog.Level
		want   map[string]any
		absent []string
	}{
		{
			name: "run",
			ev: execgate.Event{
				Op: execgate.OpRun, TraceID: "t1", Time: t0, Principal: "alice", Name: "git.log",
				Command: "/usr/bin/git", Args: []string{"log"}, ArgsSHA256: "ab", StdinBytes: 3,
				EnvKeys: []string{"HOME"}, Decision: "allow", Rule: "r1", Grant: "g1",
				Termination: execgate.TerminationExit, ExitCode: 0, Duration: time.Second,
				StdoutDropped: 7, StderrDropped: 8,
			},
			level: slog.LevelInfo,
			want: map[string]any{
				"op": "run", "traceId": "t1", "principal": "alice", "name": "git.log",
				"command": "/usr/bin/git", "args": []string{"log"}, "argsSha256": "ab", "stdinBytes": int64(3),
				"envKeys": []string{"HOME"}, "decision": "allow", "rule": "r1", "grant": "g1",
				"termination": "exit", "exitCode": int64(0), "duration": time.Second,
				"stdoutDropped": int64(7), "stderrDropped": int64(8),
			},
			absent: []string{"error", "reason", "approvalId", "rejected"},
		},
		{
			name:  "non-zero exit is not a refusal",
			ev:    execgate.Event{Op: execgate.OpRun, TraceID: "t2", Time: t0, Termination: execgate.TerminationExit, ExitCode: 2},
			level: slog.LevelInfo,
			want:  map[string]any{"exitCode": int64(2), "termination": "exit"},
		},
		{
			name:  "timeout",
			ev:    execgate.Event{Op: execgate.OpExecute, TraceID: "t3", Time: t0, ApprovalID: "ap", Termination: execgate.TerminationTimeout, ExitCode: -1},
			level: slog.LevelInfo,
			want:  map[string]any{"termination": "timeout", "exitCode": int64(-1), "approvalId": "ap"},
		},
		{
			name:   "refusal",
			ev:     execgate.Event{Op: execgate.OpRun, TraceID: "t4", Time: t0, Name: "rm.rf", Error: execgate.ErrorKindNotFound},
			level:  slog.LevelWarn,
			want:   map[string]any{"error": "not_found", "name": "rm.rf"},
			absent: []string{"termination", "exitCode", "duration", "args", "stdinBytes", "envKeys"},
		},
		{
			name:  "policy refusal",
			ev:    execgate.Event{Op: execgate.OpPropose, TraceID: "t5", Time: t0, Decision: "deny", Rule: "r", Error: execgate.ErrorKindPolicy, Reason: "deny"},
			level: slog.LevelWarn,
			want:  map[string]any{"error": "policy", "reason": "deny", "decision": "deny"},
		},
		{
			name: "an intent is logged at Info with its phase, before anything is known of the end",
			ev: execgate.Event{
				Op: execgate.OpRun, Phase: execgate.PhaseIntent, TraceID: "t7", Time: t0, Principal: "alice", Name: "git.log",
				Command: "/usr/bin/git", Args: []string{"log"}, Decision: "allow",
			},
			level:  slog.LevelInfo,
			want:   map[string]any{"phase": "intent", "traceId": "t7", "name": "git.log", "args": []string{"log"}},
			absent: []string{"termination", "exitCode", "duration", "signal", "pid", "error"},
		},
		{
			name: "an outcome carries every field of how the process ended",
			ev: execgate.Event{
				Op: execgate.OpExecute, Phase: execgate.PhaseOutcome, TraceID: "t8", Time: t0, Principal: "alice", Approver: "bob",
				Name: "vault.read", ArgsWithheld: true, ArgsSHA256: "cd", Termination: execgate.TerminationSignal, ExitCode: -1,
				Signal: "SIGKILL", PID: 4242, Duration: time.Second, Unconfined: []string{"network"},
			},
			level: slog.LevelInfo,
			want: map[string]any{
				"phase": "outcome", "approver": "bob", "argsWithheld": true, "argsSha256": "cd", "termination": "signal",
				"exitCode": int64(-1), "signal": "SIGKILL", "pid": int64(4242), "unconfined": []string{"network"},
			},
			absent: []string{"args"},
		},
		{
			name: "a refusal before the gate names its route",
			ev: execgate.Event{
				Op: execgate.OpRequest, Phase: execgate.PhaseOutcome, TraceID: "t9", Time: t0, Route: "POST /v1/tools/git.log",
				Error: execgate.ErrorKindUnauthenticated, Reason: "bad token",
			},
			level: slog.LevelWarn,
			want:  map[string]any{"op": "request", "route": "POST /v1/tools/git.log", "error": "unauthenticated", "reason": "bad token"},
		},
		{
			name:  "reject",
			ev:    execgate.Event{Op: execgate.OpReject, TraceID: "t6", Time: t0, ApprovalID: "ap"},
			level: slog.LevelInfo,
			want:  map[string]any{"rejected": false, "approvalId": "ap"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &capture{}
			require.NoError(t, audit.NewSlogSink(slog.New(h)).Audit(context.Background(), tt.ev))
			recs := h.all()
			require.Len(t, recs, 1)
			r := recs[0]
			assert.Equal(t, tt.level, r.Level)
			assert.Equal(t, audit.SlogMessage, r.Message)
			assert.True(t, r.Time.Equal(tt.ev.Time), "the record's time is the Event's")
			got := attrs(r)
			for k, v := range tt.want {
				if assert.Contains(t, got, k) {
					assert.Equal(t, v, got[k].Any(), k)
				}
			}
			for _, k := range tt.absent {
				assert.NotContains(t, got, k)
			}
		})
	}
}

// Through a real Executor and a JSON handler: the logger's own attributes
// are kept, env keys are named, and no stdin or env value is written.
func TestSlogSink_NoSecrets(t *testing.T) {
	var out bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&out, nil)).With("component", "gate")
	x, _ := newGate(t, execgate.Config{Auditor: audit.NewSlogSink(logger)})
	_, err := x.Run(context.Background(), "echo.say", json.RawMessage(`{"args":["ok"],"stdin":"stdin-canary"}`))
	require.NoError(t, err)
	_, err = x.Run(context.Background(), "echo.say", json.RawMessage(`{"args":"stdin-canary"}`))
	require.Error(t, err)

	// The run logs its intent and its outcome; the refusal its outcome.
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3)
	var intent, first map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &intent))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &first))
	assert.Equal(t, "INFO", intent["level"])
	assert.Equal(t, first["traceId"], intent["traceId"], "the intent and the outcome name the same call")
	assert.Equal(t, "intent", intent["phase"])
	assert.Equal(t, "outcome", first["phase"])
	assert.NotContains(t, intent, "termination", "the intent is logged before the process ends")
	assert.Equal(t, "gate", first["component"])
	assert.Equal(t, "INFO", first["level"])
	assert.Equal(t, []any{"LANG", "TOKEN"}, first["envKeys"])
	assert.Equal(t, float64(len("stdin-canary")), first["stdinBytes"])
	assert.Equal(t, "exit", first["termination"])
	assert.Contains(t, lines[2], `"level":"WARN"`)
	assert.NotContains(t, out.String(), "canary")
}

// A failing handler refuses the call whose intent it cannot log and makes
// the sink unready, so the Executor refuses the calls after it, until a
// record (the refusal of one of them) is handled again: recovery needs no
// restart, as for a Chain.
func TestSlogSink_FailsClosed(t *testing.T) {
	h := &capture{}
	sink := audit.NewSlogSink(slog.New(h))
	x, rec := newGate(t, execgate.Config{Auditor: sink})
	ctx := context.Background()

	broken := errors.New("log pipe closed")
	h.setFail(broken)
	_, err := x.Run(ctx, "echo.say", nil)
	var ae *execgate.AuditError
	require.ErrorAs(t, err, &ae, "the call's intent could not be logged")
	require.ErrorIs(t, err, broken)
	assert.Zero(t, rec.Count(), "no record, no start")
	require.ErrorIs(t, sink.Ready(ctx), broken)

	_, err = x.Run(ctx, "echo.say", nil)
	require.ErrorAs(t, err, &ae)
	assert.Zero(t, rec.Count())

	// The handler recovers; the next refusal is recorded and clears it.
	h.setFail(nil)
	_, err = x.Run(ctx, "echo.say", nil)
	require.ErrorAs(t, err, &ae)
	require.NoError(t, sink.Ready(ctx))
	_, err = x.Run(ctx, "echo.say", nil)
	require.NoError(t, err)
	assert.Equal(t, 1, rec.Count())

	// A record the handler skips by level does not clear an error.
	h2 := &capture{level: slog.LevelWarn}
	sink2 := audit.NewSlogSink(slog.New(h2))
	h2.setFail(broken)
	require.ErrorIs(t, sink2.Audit(ctx, execgate.Event{Op: "run", Error: "policy"}), broken)
	require.NoError(t, sink2.Audit(ctx, execgate.Event{Op: "run"}))
	require.ErrorIs(t, sink2.Ready(ctx), broken)
}

func TestMulti(t *testing.T) {
	a, b := &capture{}, &capture{}
	broken := errors.New("down")
	down := &outage{}
	m := audit.Multi(audit.NewSlogSink(slog.New(a)), nil, audit.NewSlogSink(slog.New(b)), down)
	ctx := context.Background()

	require.NoError(t, m.Ready(ctx))
	require.NoError(t, m.Audit(ctx, execgate.Event{Op: "run"}))
	assert.Len(t, a.all(), 1)
	assert.Len(t, b.all(), 1)

	a.setFail(broken)
	down.set(errors.New("outage"))
	err := m.Audit(ctx, execgate.Event{Op: "run"})
	require.ErrorIs(t, err, broken)
	assert.Len(t, b.all(), 2, "every auditor gets the Event even when one fails")
	err = m.Ready(ctx)
	require.ErrorIs(t, err, broken)
	assert.ErrorContains(t, err, "outage")

	require.NoError(t, audit.Multi().Ready(ctx))
	require.NoError(t, audit.Multi().Audit(ctx, execgate.Event{}))
}
