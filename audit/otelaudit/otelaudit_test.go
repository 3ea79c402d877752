package otelaudit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit/otelaudit"
	"github.com/execgate/execgate/execgatetest"
)

// recorder returns a TracerProvider whose ended spans sr records.
func recorder(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	return tp, sr
}

func attrs(s sdktrace.ReadOnlySpan) map[string]attribute.Value {
	m := make(map[string]attribute.Value)
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

func TestKeysMatchSemanticConventions(t *testing.T) {
	assert.Equal(t, string(semconv.ProcessExecutablePathKey), otelaudit.KeyExecutablePath)
	assert.Equal(t, string(semconv.ProcessExecutableNameKey), otelaudit.KeyExecutableName)
	assert.Equal(t, string(semconv.ProcessExitCodeKey), otelaudit.KeyExitCode)
	assert.Equal(t, string(semconv.ProcessCommandArgsKey), otelaudit.KeyCommandArgs)
	assert.Equal(t, string(semconv.ErrorTypeKey), otelaudit.KeyErrorType)
}

func TestSink_Spans(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	base := execgate.Event{
		TraceID: "0197a0b0-0000-7000-8000-000000000001", Time: t0, Principal: "alice",
		Name: "git.log", Command: "/usr/bin/git", Args: []string{"log", "-n", "5"},
		ArgsSHA256: strings.Repeat("ab", 32), StdinBytes: 7, EnvKeys: []string{"HOME", "LANG"},
		Decision: execgate.ActionAllow, Rule: "r1", Grant: "g1",
	}
	ran := func(term execgate.Termination, code int) execgate.Event {
		ev := base
		ev.Op = execgate.OpRun
		ev.Termination, ev.ExitCode, ev.Duration = term, code, 1500*time.Millisecond
		ev.StdoutDropped, ev.StderrDropped = 10, 20
		return ev
	}
	refused := func(op, kind, reason string) execgate.Event {
		ev := base
		ev.Op, ev.Error, ev.Reason, ev.ExitCode = op, kind, reason, 0
		return ev
	}
	reject := execgate.Event{Op: execgate.OpReject, TraceID: "t", Time: t0, ApprovalID: "ap-1", Rejected: false}

	tests := []struct {
		name       string
		ev         execgate.Event
		span       string
		status     codes.Code
		statusDesc string
		want       map[string]attribute.Value // must be present with this value
		absent     []string
	}{
		{
			name: "run ok", ev: ran(execgate.TerminationExit, 0), span: "execgate.run", status: codes.Unset,
			want: map[string]attribute.Value{
				otelaudit.KeyExecutablePath: attribute.StringValue("/usr/bin/git"),
				otelaudit.KeyExecutableName: attribute.StringValue("git"),
				otelaudit.KeyExitCode:       attribute.IntValue(0),
				otelaudit.KeyOp:             attribute.StringValue("run"),
				otelaudit.KeyTraceID:        attribute.StringValue(base.TraceID),
				otelaudit.KeyPrincipal:      attribute.StringValue("alice"),
				otelaudit.KeyName:           attribute.StringValue("git.log"),
				otelaudit.KeyDecision:       attribute.StringValue("allow"),
				otelaudit.KeyRule:           attribute.StringValue("r1"),
				otelaudit.KeyGrant:          attribute.StringValue("g1"),
				otelaudit.KeyTermination:    attribute.StringValue("exit"),
				otelaudit.KeyArgsSHA256:     attribute.StringValue(base.ArgsSHA256),
				otelaudit.KeyStdinBytes:     attribute.IntValue(7),
				otelaudit.KeyEnvKeys:        attribute.StringSliceValue([]string{"HOME", "LANG"}),
				otelaudit.KeyStdoutDropped:  attribute.Int64Value(10),
				otelaudit.KeyStderrDropped:  attribute.Int64Value(20),
			},
			absent: []string{otelaudit.KeyCommandArgs, otelaudit.KeyError, otelaudit.KeyErrorType, otelaudit.KeyReason, otelaudit.KeyRejected},
		},
		{
			name: "non-zero exit", ev: ran(execgate.TerminationExit, 3), span: "execgate.run",
			status: codes.Error, statusDesc: "exit status 3",
			want: map[string]attribute.Value{
				otelaudit.KeyExitCode:  attribute.IntValue(3),
				otelaudit.KeyErrorType: attribute.StringValue("exit"),
			},
		},
		{
			name: "timeout", ev: ran(execgate.TerminationTimeout, -1), span: "execgate.run",
			status: codes.Error, statusDesc: "timeout",
			want: map[string]attribute.Value{
				otelaudit.KeyTermination: attribute.StringValue("timeout"),
				otelaudit.KeyErrorType:   attribute.StringValue("timeout"),
			},
			absent: []string{otelaudit.KeyExitCode},
		},
		{
			name: "spawn error", ev: ran(execgate.TerminationSpawnError, -1), span: "execgate.run",
			status: codes.Error, statusDesc: "spawn_error",
			absent: []string{otelaudit.KeyExitCode},
		},
		{
			name: "policy refusal", ev: refused(execgate.OpRun, execgate.ErrorKindPolicy, execgate.ActionDeny), span: "execgate.run",
			status: codes.Error, statusDesc: "refused: policy: deny",
			want: map[string]attribute.Value{
				otelaudit.KeyError:     attribute.StringValue("policy"),
				otelaudit.KeyReason:    attribute.StringValue("deny"),
				otelaudit.KeyErrorType: attribute.StringValue("policy"),
			},
			absent: []string{otelaudit.KeyExitCode, otelaudit.KeyTermination},
		},
		{
			name: "approval refusal", ev: refused(execgate.OpExecute, execgate.ErrorKindApproval, execgate.ReasonExpired), span: "execgate.execute",
			status: codes.Error, statusDesc: "refused: approval: expired",
		},
		{
			name: "not found", ev: execgate.Event{Op: execgate.OpRun, Time: t0, Name: "nope", Error: execgate.ErrorKindNotFound},
			span: "execgate.run", status: codes.Error, statusDesc: "refused: not_found",
			absent: []string{otelaudit.KeyExecutablePath, otelaudit.KeyExecutableName, otelaudit.KeyDecision},
		},
		{
			name: "reject", ev: reject, span: "execgate.reject", status: codes.Unset,
			want: map[string]attribute.Value{
				otelaudit.KeyRejected:   attribute.BoolValue(false),
				otelaudit.KeyApprovalID: attribute.StringValue("ap-1"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, sr := recorder(t)
			require.NoError(t, otelaudit.New(tp).Audit(context.Background(), tt.ev))
			spans := sr.Ended()
			require.Len(t, spans, 1)
			s := spans[0]
			assert.Equal(t, tt.span, s.Name())
			assert.Equal(t, trace.SpanKindInternal, s.SpanKind())
			assert.Equal(t, otelaudit.ScopeName, s.InstrumentationScope().Name)
			assert.True(t, s.StartTime().Equal(tt.ev.Time), "start = Event.Time")
			assert.True(t, s.EndTime().Equal(tt.ev.Time.Add(tt.ev.Duration)), "end = Time + Duration")
			assert.Equal(t, tt.status, s.Status().Code)
			assert.Equal(t, tt.statusDesc, s.Status().Description)
			got := attrs(s)
			for k, v := range tt.want {
				if assert.Contains(t, got, k) {
					assert.Equal(t, v.Emit(), got[k].Emit(), k)
				}
			}
			for _, k := range tt.absent {
				assert.NotContains(t, got, k)
			}
		})
	}
}

func TestSink_ArgsOnlyWithOption(t *testing.T) {
	ev := execgate.Event{
		Op: execgate.OpRun, Time: time.Now(), Command: "/usr/bin/git",
		Args: []string{"log", "--author=secret-canary"}, Termination: execgate.TerminationExit,
	}
	tp, sr := recorder(t)
	require.NoError(t, otelaudit.New(tp).Audit(context.Background(), ev))
	require.NoError(t, otelaudit.New(tp, otelaudit.WithArgs()).Audit(context.Background(), ev))
	sensitive := ev
	sensitive.Args = nil // what an Event of a SensitiveArgs spec carries
	require.NoError(t, otelaudit.New(tp, otelaudit.WithArgs()).Audit(context.Background(), sensitive))

	spans := sr.Ended()
	require.Len(t, spans, 3)
	assert.NotContains(t, attrs(spans[0]), otelaudit.KeyCommandArgs, "argv is off by default")
	assert.NotContains(t, fmt.Sprint(spans[0].Attributes()), "secret-canary")
	assert.Equal(t, []string{"/usr/bin/git", "log", "--author=secret-canary"},
		attrs(spans[1])[otelaudit.KeyCommandArgs].AsStringSlice(), "the executable comes first")
	assert.NotContains(t, attrs(spans[2]), otelaudit.KeyCommandArgs)
}

func TestSink_ChildOfCallerSpan(t *testing.T) {
	tp, sr := recorder(t)
	ctx, parent := tp.Tracer("caller").Start(context.Background(), "agent step")
	require.NoError(t, otelaudit.New(tp).Audit(ctx, execgate.Event{Op: execgate.OpRun, Time: time.Now()}))
	parent.End()
	spans := sr.Ended()
	require.Len(t, spans, 2)
	assert.Equal(t, parent.SpanContext().SpanID(), spans[0].Parent().SpanID())
	assert.Equal(t, parent.SpanContext().TraceID(), spans[0].SpanContext().TraceID())
}

// A real Executor, a Recorder for processes: every call, run or refused,
// gives exactly one span, and no stdin or environment value reaches it.
func TestSink_OneSpanPerCall(t *testing.T) {
	type input struct {
		Args  []string `json:"args"`
		Stdin string   `json:"stdin,omitempty"`
	}
	allow, err := execgate.NewAllowlist(execgate.CommandSpec{
		Name: "echo.say", Command: "/bin/echo",
		Args: execgate.Struct(func(in input) execgate.Argv { return execgate.Argv{Args: in.Args, Stdin: []byte(in.Stdin)} }),
		Env:  map[string]string{"TOKEN": "env-canary"},
	})
	require.NoError(t, err)
	var deny atomic.Bool
	pol := execgate.PolicyFunc(func(context.Context, execgate.Request) (execgate.Decision, error) {
		if deny.Load() {
			return execgate.Decision{Action: execgate.ActionDeny, Rule: "no"}, nil
		}
		return execgate.Decision{Action: execgate.ActionAllow, Rule: "yes"}, nil
	})
	tp, sr := recorder(t)
	rec := execgatetest.NewRecorder()
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow, ExecFn: rec.Exec, Policy: pol, Auditor: otelaudit.New(tp)})
	require.NoError(t, err)
	ctx := context.Background()

	var ap execgate.Approval
	calls := []struct {
		name   string
		do     func() error
		span   string
		status codes.Code
	}{
		{"run", func() error {
			_, err := x.Run(ctx, "echo.say", json.RawMessage(`{"args":["hi"],"stdin":"stdin-canary"}`))
			return err
		}, "execgate.run", codes.Unset},
		{"run unknown", func() error { _, err := x.Run(ctx, "nope", nil); return err }, "execgate.run", codes.Error},
		{"run invalid", func() error { _, err := x.Run(ctx, "echo.say", json.RawMessage(`{"x":1}`)); return err }, "execgate.run", codes.Error},
		{"propose", func() error {
			var err error
			ap, err = x.Propose(ctx, "echo.say", json.RawMessage(`{"args":["later"]}`), "why")
			return err
		}, "execgate.propose", codes.Unset},
		{"execute denied", func() error {
			deny.Store(true)
			defer deny.Store(false)
			_, err := x.Execute(ctx, ap)
			return err
		}, "execgate.execute", codes.Error},
		{"reject", func() error { _, err := x.Reject(ctx, ap.ID); return err }, "execgate.reject", codes.Unset},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			before := len(sr.Ended())
			err := c.do()
			assert.Equal(t, c.status == codes.Error, err != nil)
			spans := sr.Ended()
			require.Len(t, spans, before+1, "exactly one span per call")
			s := spans[len(spans)-1]
			assert.Equal(t, c.span, s.Name())
			assert.Equal(t, c.status, s.Status().Code)
			assert.NotContains(t, fmt.Sprint(s.Attributes()), "canary")
		})
	}
	assert.Equal(t, 1, rec.Count())
}

func TestSink_NilProviderUsesGlobal(t *testing.T) {
	// The global provider is a no-op unless set: nothing fails.
	assert.NoError(t, otelaudit.New(nil).Audit(context.Background(), execgate.Event{Op: execgate.OpRun}))
}
