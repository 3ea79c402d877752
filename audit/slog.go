package audit

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/execgate/execgate"
)

// SlogMessage is the message of every record a [SlogSink] writes.
const SlogMessage = "execgate audit"

// SlogSink is an [execgate.ReadyAuditor] that writes one log/slog record
// per [execgate.Event], with message [SlogMessage], the Event's time as the
// record's time, and the Event's fields as attributes named as in an
// [Entry]'s JSON: op, phase, traceId, principal, approver, name, route,
// command, args, argsWithheld, argsSha256, stdinBytes, envKeys, decision,
// rule, grant, approvalId, rejected, termination, exitCode, signal, pid,
// duration, stdoutDropped, stderrDropped, outputIncomplete, unconfined,
// connections, connectionsDropped,
// error and reason.
// Empty fields are left out; termination, exitCode and duration are
// present only on the outcome of a call whose process was handed to the
// ExecFn, and rejected on every Reject that was not refused. Stdin and
// environment values are never logged: Events do not carry them.
//
// A call that starts a process is logged twice, like it is recorded in a
// [Chain]: a record with phase "intent" just before the process starts,
// and one with phase "outcome" when it has ended, with the same traceId;
// every other call is logged once, as an outcome. To log only how calls
// ended, drop the records whose phase is "intent" in the handler.
//
// Levels: a refused call (the Event's Error is set) is logged at
// slog.LevelWarn; every other record, intents included, at
// slog.LevelInfo, whatever the process did: a non-zero exit, a timeout or
// a spawn error is the command's outcome, reported in termination and
// exitCode, not a refusal by the gate. A record below the handler's level
// is skipped: the handler chose not to have it, and Audit returns nil.
//
// When the handler fails, Audit returns its error, so a fail-closed
// Executor refuses the call whose intent it was, and Ready reports it
// until a later record is handled without error, so that the calls after
// it are refused too. Ready writes nothing; the sink recovers by itself
// once the handler does, because the Executor still records the calls it
// refuses, and each of those records is a new attempt: the same rule as
// a [Chain]'s. A SlogSink is safe for concurrent use if its handler is.
type SlogSink struct {
	h slog.Handler

	mu  sync.Mutex
	err error
}

var _ execgate.ReadyAuditor = (*SlogSink)(nil)

// NewSlogSink returns a [SlogSink] that writes to l's handler, with l's
// attributes and groups. A nil l means slog.Default().
func NewSlogSink(l *slog.Logger) *SlogSink {
	if l == nil {
		l = slog.Default()
	}
	return &SlogSink{h: l.Handler()}
}

// Audit writes one record for ev and returns the handler's error.
func (s *SlogSink) Audit(ctx context.Context, ev execgate.Event) error {
	level := slog.LevelInfo
	if ev.Error != "" {
		level = slog.LevelWarn
	}
	if !s.h.Enabled(ctx, level) {
		return nil
	}
	t := ev.Time
	if t.IsZero() {
		t = time.Now()
	}
	r := slog.NewRecord(t, level, SlogMessage, 0)
	r.AddAttrs(slogAttrs(ev)...)
	err := s.h.Handle(ctx, r)
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	return err
}

// Ready returns the error of the last record the handler failed to write,
// if no record has been written since, and nil otherwise.
func (s *SlogSink) Ready(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// slogAttrs returns ev's fields as attributes, leaving out empty ones.
func slogAttrs(ev execgate.Event) []slog.Attr {
	a := make([]slog.Attr, 0, 28)
	str := func(key, v string) {
		if v != "" {
			a = append(a, slog.String(key, v))
		}
	}
	strs := func(key string, v []string) {
		if len(v) > 0 {
			a = append(a, slog.Any(key, v))
		}
	}
	str("op", ev.Op)
	str("phase", ev.Phase)
	str("traceId", ev.TraceID)
	str("principal", ev.Principal)
	str("approver", ev.Approver)
	str("name", ev.Name)
	str("route", ev.Route)
	str("command", ev.Command)
	if ev.Args != nil {
		a = append(a, slog.Any("args", ev.Args))
	}
	if ev.ArgsWithheld {
		a = append(a, slog.Bool("argsWithheld", true))
	}
	str("argsSha256", ev.ArgsSHA256)
	if ev.StdinBytes != 0 {
		a = append(a, slog.Int("stdinBytes", ev.StdinBytes))
	}
	strs("envKeys", ev.EnvKeys)
	str("decision", ev.Decision)
	str("rule", ev.Rule)
	str("grant", ev.Grant)
	str("approvalId", ev.ApprovalID)
	if ev.Op == execgate.OpReject && ev.Error == "" {
		a = append(a, slog.Bool("rejected", ev.Rejected))
	}
	if ev.Termination != "" {
		a = append(a,
			slog.String("termination", string(ev.Termination)),
			slog.Int("exitCode", ev.ExitCode),
		)
	}
	str("signal", ev.Signal)
	if ev.PID != 0 {
		a = append(a, slog.Int("pid", ev.PID))
	}
	if ev.Termination != "" {
		a = append(a, slog.Duration("duration", ev.Duration))
	}
	if ev.StdoutDropped != 0 {
		a = append(a, slog.Int64("stdoutDropped", ev.StdoutDropped))
	}
	if ev.StderrDropped != 0 {
		a = append(a, slog.Int64("stderrDropped", ev.StderrDropped))
	}
	if ev.OutputIncomplete {
		a = append(a, slog.Bool("outputIncomplete", true))
	}
	strs("unconfined", ev.Unconfined)
	if len(ev.Connections) > 0 {
		a = append(a, slog.Any("connections", ev.Connections))
	}
	if ev.ConnectionsDropped != 0 {
		a = append(a, slog.Int("connectionsDropped", ev.ConnectionsDropped))
	}
	str("error", ev.Error)
	str("reason", ev.Reason)
	return a
}
