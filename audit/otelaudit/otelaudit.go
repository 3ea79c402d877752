package otelaudit

import (
	"context"
	"net"
	"path"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/execgate/execgate"
)

// ScopeName is the instrumentation scope of the Tracer a Sink uses.
const ScopeName = "github.com/execgate/execgate/audit/otelaudit"

// Attribute keys from the OpenTelemetry semantic conventions for processes
// and errors, as of semantic conventions 1.40.
const (
	// KeyExecutablePath is the resolved executable (Event.Command).
	KeyExecutablePath = "process.executable.path"
	// KeyExecutableName is the base name of the executable.
	KeyExecutableName = "process.executable.name"
	// KeyExitCode is the process's own exit status, set only when it
	// exited (termination "exit").
	KeyExitCode = "process.exit.code"
	// KeyCommandArgs is the executable followed by the argv; set only with
	// WithArgs.
	KeyCommandArgs = "process.command_args"
	// KeyErrorType is the refusal's error kind (Event.Error) for a refused
	// call, or the termination of a process that did not exit with status
	// 0 ("timeout", "exit" for a non-zero status, ...).
	KeyErrorType = "error.type"
)

// Attribute keys for what only execgate knows.
const (
	// KeyOp is Event.Op: run, propose, execute or reject for a call;
	// request for a refused HTTP request; grant, revoke or expire for a
	// grant (see execgate.OpRun and the constants beside it).
	KeyOp = "execgate.op"
	// KeyTraceID is Event.TraceID, the Result's ID when a process ran.
	KeyTraceID = "execgate.trace_id"
	// KeyPrincipal is Event.Principal.
	KeyPrincipal = "execgate.principal"
	// KeyName is Event.Name, the requested command name.
	KeyName = "execgate.name"
	// KeyArgsSHA256 is Event.ArgsSHA256.
	KeyArgsSHA256 = "execgate.args_sha256"
	// KeyStdinBytes is Event.StdinBytes.
	KeyStdinBytes = "execgate.stdin_bytes"
	// KeyEnvKeys is Event.EnvKeys, names only.
	KeyEnvKeys = "execgate.env_keys"
	// KeyDecision is Event.Decision.
	KeyDecision = "execgate.decision"
	// KeyRule is Event.Rule.
	KeyRule = "execgate.rule"
	// KeyGrant is Event.Grant.
	KeyGrant = "execgate.grant"
	// KeyApprovalID is Event.ApprovalID.
	KeyApprovalID = "execgate.approval_id"
	// KeyRejected is Event.Rejected, on a Reject that was not refused.
	KeyRejected = "execgate.rejected"
	// KeyTermination is Event.Termination.
	KeyTermination = "execgate.termination"
	// KeyStdoutDropped is Event.StdoutDropped.
	KeyStdoutDropped = "execgate.stdout_dropped"
	// KeyStderrDropped is Event.StderrDropped.
	KeyStderrDropped = "execgate.stderr_dropped"
	// KeyConnections is Event.Connections, each as "allowed host:port" or
	// "refused host:port".
	KeyConnections = "execgate.connections"
	// KeyConnectionsDropped is Event.ConnectionsDropped.
	KeyConnectionsDropped = "execgate.connections_dropped"
	// KeyError is Event.Error, the kind of refusal.
	KeyError = "execgate.error"
	// KeyReason is Event.Reason.
	KeyReason = "execgate.reason"
)

// Option configures a Sink.
type Option func(*Sink)

// WithArgs records the argv in process.command_args, the executable
// first. The argv can hold secrets (tokens, paths, message text), so it is
// off by default, as the semantic conventions advise. Events of specs with
// SensitiveArgs never carry the argv, so their spans never get it.
func WithArgs() Option {
	return func(s *Sink) { s.args = true }
}

// Sink is an execgate.Auditor that turns every Event into one span, using
// only the OpenTelemetry API: it needs an SDK, or another implementation of
// trace.TracerProvider, to export anything.
//
// The span is named "execgate." plus the Event's Op ("execgate.run"; the
// command name is an attribute, not part of the name, because a refused
// name is whatever the caller sent). It is a child of the span in the
// call's context, if any, of kind internal; it starts at Event.Time and
// ends at Event.Time plus Event.Duration, which is how long the ExecFn
// took, so a refused call gives a span of zero length. Its status is Error
// for a refusal and for a process that did not exit with status 0, and
// unset otherwise. Stdin and environment values never appear: Events do
// not carry them.
//
// A Sink never fails and is safe for concurrent use.
type Sink struct {
	tracer trace.Tracer
	args   bool
}

var _ execgate.Auditor = (*Sink)(nil)

// New returns a Sink that makes its spans with a Tracer from tp, named
// ScopeName. A nil tp means the global TracerProvider,
// otel.GetTracerProvider(), looked up now.
func New(tp trace.TracerProvider, opts ...Option) *Sink {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	s := &Sink{tracer: tp.Tracer(ScopeName)}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Audit records ev as a span, one per call: an intent Event
// (execgate.PhaseIntent) makes no span, since the call's outcome Event
// repeats everything it holds. It always returns nil.
func (s *Sink) Audit(ctx context.Context, ev execgate.Event) error {
	if ev.Phase == execgate.PhaseIntent {
		return nil
	}
	_, span := s.tracer.Start(ctx, "execgate."+ev.Op,
		trace.WithTimestamp(ev.Time),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(s.attributes(ev)...),
	)
	if code, desc, failed := status(ev); failed {
		span.SetStatus(code, desc)
	}
	span.End(trace.WithTimestamp(ev.Time.Add(ev.Duration)))
	return nil
}

// attributes returns ev's fields as span attributes, leaving out empty
// ones.
func (s *Sink) attributes(ev execgate.Event) []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, 24)
	str := func(key, v string) {
		if v != "" {
			a = append(a, attribute.String(key, v))
		}
	}
	str(KeyOp, ev.Op)
	str(KeyTraceID, ev.TraceID)
	str(KeyPrincipal, ev.Principal)
	str(KeyName, ev.Name)
	if ev.Command != "" {
		a = append(a,
			attribute.String(KeyExecutablePath, ev.Command),
			attribute.String(KeyExecutableName, path.Base(ev.Command)),
		)
		if s.args && ev.Args != nil {
			argv := make([]string, 0, len(ev.Args)+1)
			argv = append(append(argv, ev.Command), ev.Args...)
			a = append(a, attribute.StringSlice(KeyCommandArgs, argv))
		}
	}
	str(KeyArgsSHA256, ev.ArgsSHA256)
	if ev.StdinBytes != 0 {
		a = append(a, attribute.Int(KeyStdinBytes, ev.StdinBytes))
	}
	if len(ev.EnvKeys) > 0 {
		a = append(a, attribute.StringSlice(KeyEnvKeys, ev.EnvKeys))
	}
	str(KeyDecision, ev.Decision)
	str(KeyRule, ev.Rule)
	str(KeyGrant, ev.Grant)
	str(KeyApprovalID, ev.ApprovalID)
	if ev.Op == execgate.OpReject && ev.Error == "" {
		a = append(a, attribute.Bool(KeyRejected, ev.Rejected))
	}
	if ev.Termination != "" {
		a = append(a, attribute.String(KeyTermination, string(ev.Termination)))
		if ev.Termination == execgate.TerminationExit {
			a = append(a, attribute.Int(KeyExitCode, ev.ExitCode))
		}
	}
	if ev.StdoutDropped != 0 {
		a = append(a, attribute.Int64(KeyStdoutDropped, ev.StdoutDropped))
	}
	if ev.StderrDropped != 0 {
		a = append(a, attribute.Int64(KeyStderrDropped, ev.StderrDropped))
	}
	if len(ev.Connections) > 0 {
		cs := make([]string, len(ev.Connections))
		for i, c := range ev.Connections {
			verdict := "refused "
			if c.Allowed {
				verdict = "allowed "
			}
			cs[i] = verdict + net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
		}
		a = append(a, attribute.StringSlice(KeyConnections, cs))
	}
	if ev.ConnectionsDropped != 0 {
		a = append(a, attribute.Int(KeyConnectionsDropped, ev.ConnectionsDropped))
	}
	str(KeyError, ev.Error)
	str(KeyReason, ev.Reason)
	if _, _, failed := status(ev); failed {
		errType := ev.Error
		if errType == "" {
			errType = string(ev.Termination)
		}
		a = append(a, attribute.String(KeyErrorType, errType))
	}
	return a
}

// status reports whether ev is a failure, and the span status to give it.
func status(ev execgate.Event) (codes.Code, string, bool) {
	switch {
	case ev.Error != "":
		desc := "refused: " + ev.Error
		if ev.Reason != "" {
			desc += ": " + ev.Reason
		}
		return codes.Error, desc, true
	case ev.Termination == "" || (ev.Termination == execgate.TerminationExit && ev.ExitCode == 0):
		return codes.Unset, "", false
	case ev.Termination == execgate.TerminationExit:
		return codes.Error, "exit status " + strconv.Itoa(ev.ExitCode), true
	default:
		return codes.Error, string(ev.Termination), true
	}
}
