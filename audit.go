package execgate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Operations an [Event] reports.
const (
	OpRun     = "run"
	OpPropose = "propose"
	OpExecute = "execute"
	OpReject  = "reject"
	// OpRequest is a request that a server in front of the [Executor]
	// refused before it reached the gate (see [Executor.RecordRefusal]).
	OpRequest = "request"
	// OpGrant, OpRevoke and OpExpire are changes to a grant that a server
	// in front of the [Executor] made or saw (see [Executor.RecordGrant]):
	// a grant made, one ended before its expiry, one that reached it.
	OpGrant  = "grant"
	OpRevoke = "revoke"
	OpExpire = "expire"
)

// Phases of an [Event].
const (
	// PhaseIntent is the [Event] recorded before a process is handed to the
	// [ExecFn]: the call was decided and is about to start. Its TraceID is
	// the [Result]'s ID, which the outcome Event repeats.
	PhaseIntent = "intent"
	// PhaseOutcome is the [Event] recorded when a call has ended: refused,
	// proposed, rejected, or run to the end of its process.
	PhaseOutcome = "outcome"
)

// Event is the audit record of one call to Run, Propose, Execute or
// Reject, refused or run, and of what a server in front of the [Executor]
// records beside them ([Executor.RecordRefusal], [Executor.RecordGrant]).
// The [Executor] hands one Event per call to [Config.Auditor] (Phase
// [PhaseOutcome]) and, for a call that hands a process to the [ExecFn],
// one before that (Phase [PhaseIntent]), so that a trail
// holds every process that started even when the gate dies before the
// process ends. An Event never holds stdin or environment values: only
// their size and the environment's key names.
type Event struct {
	// Op is [OpRun], [OpPropose], [OpExecute], [OpReject], [OpRequest] for a
	// refusal made before the gate, or [OpGrant], [OpRevoke] or [OpExpire]
	// for a change to a grant.
	Op string `json:"op"`
	// Phase is [PhaseIntent] or [PhaseOutcome].
	Phase string `json:"phase"`
	// TraceID is the [Result]'s ID when a process was handed to the [ExecFn],
	// and a new UUIDv7 otherwise.
	TraceID string `json:"traceId"`
	// Time is when the call started, from [Config.Now].
	Time time.Time `json:"time"`
	// Principal is whose call it is: PrincipalFrom(ctx) of the call, and
	// for Execute the principal that proposed it; for a change to a grant,
	// the principal the grant covers. Like Name, it is cut to
	// maxEventString bytes, so a hostile caller cannot bloat the trail.
	Principal string `json:"principal,omitempty"`
	// Approver is, for Execute, PrincipalFrom(ctx) of the caller; for
	// [OpGrant] and [OpRevoke], whoever made or revoked the grant.
	Approver string `json:"approver,omitempty"`
	// Name is the requested command name (for Execute, the approval's).
	Name string `json:"name,omitempty"`
	// Route is, for [OpRequest], the transport and route of the refused
	// request ("POST /v1/tools/git.log", "mcp tools/call"), cut like Name.
	Route string `json:"route,omitempty"`
	// Command is the resolved executable, once the name was looked up.
	Command string `json:"command,omitempty"`
	// Args is the argv after validation, unless the spec sets
	// SensitiveArgs; ArgsSHA256 is then the only trace of it.
	Args []string `json:"args,omitempty"`
	// ArgsWithheld reports that the spec sets SensitiveArgs, so Args is
	// empty whatever the argv was.
	ArgsWithheld bool `json:"argsWithheld,omitempty"`
	// ArgsSHA256 is the hex SHA-256 of the argv, in the canonical encoding
	// of the proposal digest's "args" list, whenever the argv is known.
	// When the spec sets SensitiveArgs it is instead a hash keyed with a
	// random secret of this process, so that a short secret in the argv
	// cannot be found by hashing guesses; it then identifies equal argvs
	// within one process only.
	ArgsSHA256 string `json:"argsSha256,omitempty"`
	// StdinBytes is the size of the call's stdin.
	StdinBytes int `json:"stdinBytes,omitempty"`
	// EnvKeys are the names of the child's environment variables, sorted.
	EnvKeys []string `json:"envKeys,omitempty"`
	// Decision, Rule and Grant are the policy's answer, once it was asked.
	// For a change to a grant, Grant is the grant's ID.
	Decision string `json:"decision,omitempty"`
	Rule     string `json:"rule,omitempty"`
	Grant    string `json:"grant,omitempty"`
	// ApprovalID is the approval's ID for Propose, Execute and Reject, and
	// the approval whose decision made the grant for a change to a grant.
	ApprovalID string `json:"approvalId,omitempty"`
	// Rejected reports, for Reject, whether a pending approval was removed.
	Rejected bool `json:"rejected,omitempty"`
	// Termination, ExitCode, Duration and the dropped counts come from
	// the [Result] when a process was handed to the [ExecFn]; [Termination] is
	// "" otherwise.
	Termination   Termination   `json:"termination,omitempty"`
	ExitCode      int           `json:"exitCode"`
	Signal        string        `json:"signal,omitempty"`
	PID           int           `json:"pid,omitempty"`
	Duration      time.Duration `json:"duration,omitempty"`
	StdoutDropped int64         `json:"stdoutDropped,omitempty"`
	StderrDropped int64         `json:"stderrDropped,omitempty"`
	// OutputIncomplete is the [Result]'s: a stream may be missing bytes
	// that were neither kept nor counted.
	OutputIncomplete bool `json:"outputIncomplete,omitempty"`
	// Unconfined is the [Result]'s: the parts of a best-effort [Confinement]
	// that were not applied.
	Unconfined []string `json:"unconfined,omitempty"`
	// Connections and ConnectionsDropped are the [Result]'s: the
	// connection attempts the command made through its egress proxy.
	Connections        []Connection `json:"connections,omitempty"`
	ConnectionsDropped int          `json:"connectionsDropped,omitempty"`
	// Error is the kind of refusal, [KindOf] the call's error (an
	// [ErrorKind]: [ErrorKindNotFound], ...), or "" for a call that was not
	// refused.
	Error string `json:"error,omitempty"`
	// Reason details the refusal: the [PolicyError]'s action, the
	// [ApprovalError]'s reason, the [BusyError]'s scope,
	// [StoreFullPrincipal] for a [QuotaError], or, for [OpRequest],
	// the server's few words; for a change to a grant, the server's few
	// words on it (how long it lasts, why it ended).
	Reason string `json:"reason,omitempty"`
}

// Auditor receives the audit trail. Audit is called once per call with
// Phase [PhaseOutcome], after the call is decided and, if a process ran,
// after it ended; for a call that starts a process it is first called with
// Phase [PhaseIntent], just before the process is handed to the [ExecFn]. An
// intent that Audit cannot record (an error) refuses the call with an
// [*AuditError] and starts nothing, unless [Config.AuditFailOpen] is set. Audit
// may be called concurrently.
//
// An Auditor that also implements [ReadyAuditor] is asked before anything
// happens that needs a record: before a process is handed to the ExecFn,
// before Propose stores an approval, and before Execute takes one. If Ready
// returns an error, the call is refused with an *AuditError (fail closed)
// unless Config.AuditFailOpen is set. An Auditor whose Audit fails should
// report it from Ready until it has recovered, so that a lost record stops
// further calls instead of passing silently: a call whose outcome could
// not be recorded has already run and still returns its [Result] (its
// intent is in the trail), while one whose intent could not be recorded
// never started.
type Auditor interface {
	Audit(ctx context.Context, ev Event) error
}

// ReadyAuditor is an [Auditor] that can tell whether it is able to record.
type ReadyAuditor interface {
	Auditor
	Ready(ctx context.Context) error
}

// AuditError reports that a call was refused because its [Auditor] was not
// ready to record it.
type AuditError struct {
	Err error
}

// Error implements error.
func (e *AuditError) Error() string { return "execgate: audit is not available: " + e.Err.Error() }

// Unwrap returns the [Auditor]'s error.
func (e *AuditError) Unwrap() error { return e.Err }

// auditReady asks a ReadyAuditor whether it can record.
func (x *Executor) auditReady(ctx context.Context) error {
	ra, ok := x.auditor.(ReadyAuditor)
	if !ok || x.auditFailOpen {
		return nil
	}
	if err := ra.Ready(ctx); err != nil {
		return &AuditError{Err: err}
	}
	return nil
}

// maxEventString bounds the caller-chosen strings an [Event] repeats.
const maxEventString = 256

// eventString cuts a caller-chosen string for an Event.
func eventString(s string) string {
	if len(s) <= maxEventString {
		return s
	}
	return strings.ToValidUTF8(s[:maxEventString], "") + "..."
}

// newEvent starts the Event of one call.
func (x *Executor) newEvent(ctx context.Context, op, name string) *Event {
	if x.auditor == nil {
		return nil
	}
	return &Event{Op: op, Phase: PhaseOutcome, Time: x.clock(), Principal: eventString(PrincipalFrom(ctx)), Name: eventString(name)}
}

// recordIntent hands the Auditor the intent Event of a call that is about
// to start, with the Result's ID as its TraceID. An intent that cannot be
// recorded refuses the call (an *AuditError), unless the Executor fails
// open.
func (x *Executor) recordIntent(ctx context.Context, ev *Event, id string) error {
	if ev == nil {
		return nil
	}
	// The outcome keeps the intent's ID also when the call is refused
	// here: an Auditor that fans out to several sinks may have recorded
	// the intent in some of them.
	ev.TraceID = id
	in := *ev
	in.Phase = PhaseIntent
	if err := x.auditor.Audit(ctx, in); err != nil && !x.auditFailOpen {
		return &AuditError{Err: err}
	}
	return nil
}

// Refusal describes a request that a server in front of the [Executor]
// refused before it reached the gate, for [Executor.RecordRefusal].
type Refusal struct {
	// Route is the transport and route of the request, such as
	// "POST /v1/tools/git.log" or "mcp tools/call".
	Route string
	// Name is the command name the request named, if any.
	Name string
	// Kind is the kind of refusal, an [ErrorKind]: [ErrorKindUnauthenticated]
	// or [ErrorKindRequest] for a request the server refused on its own
	// account, or the kind the gate would give the same refusal
	// ([ErrorKindNotFound] for a name the server does not serve,
	// [ErrorKindValidation] for a field it refuses, [ErrorKindApproval] for an
	// approval it does not know, [ErrorKindBusy]).
	Kind string
	// Reason says why, in a few words ("bad token", "body too large").
	// It must not hold a token, a body or any other secret.
	Reason string
}

// RecordRefusal hands the [Auditor] an [Event] (Op [OpRequest]) for a request
// refused before it reached the gate, so that those refusals are in the
// same trail as the gate's own. The principal is PrincipalFrom(ctx), ""
// for a request that was not authenticated; Route, Name and Reason are cut
// like every caller-chosen string of an Event. Without an Auditor it does
// nothing and returns nil.
func (x *Executor) RecordRefusal(ctx context.Context, r Refusal) error {
	if x.auditor == nil {
		return nil
	}
	ev := x.newEvent(ctx, OpRequest, r.Name)
	ev.TraceID = newID()
	ev.Route = eventString(r.Route)
	ev.Error = eventString(r.Kind)
	ev.Reason = eventString(r.Reason)
	return x.auditor.Audit(ctx, *ev)
}

// GrantChange describes a change to a grant that a server in front of
// the [Executor] made or saw, for [Executor.RecordGrant].
type GrantChange struct {
	// Op is [OpGrant] for a grant made, [OpRevoke] for one ended before its
	// expiry, [OpExpire] for one that reached its expiry.
	Op string
	// Grant is the grant's ID.
	Grant string
	// Principal is the principal the grant covers, Name the command name.
	Principal, Name string
	// ApprovalID is the approval whose decision made the grant, if one did.
	ApprovalID string
	// Reason says, in a few words, how long the grant lasts or why it
	// ended. It must not hold a token or any other secret.
	Reason string
}

// RecordGrant hands the [Auditor] an [Event] for a change to a grant, so
// that grants made, revoked and expired are in the same trail as the
// calls they let through. The Event's Approver is PrincipalFrom(ctx),
// whoever made or revoked the grant ("" for an expiry, or an end no
// person asked for); its Principal, Name, Grant, ApprovalID and Reason
// are c's, cut like every caller-chosen string of an Event. An Op other
// than [OpGrant], [OpRevoke] and [OpExpire] is refused. Without an
// Auditor it does nothing and returns nil; otherwise it returns the
// Auditor's error, for a caller that must not make a grant it could not
// record.
func (x *Executor) RecordGrant(ctx context.Context, c GrantChange) error {
	switch c.Op {
	case OpGrant, OpRevoke, OpExpire:
	default:
		return fmt.Errorf("execgate: RecordGrant: op %q is not a change to a grant; use OpGrant, OpRevoke or OpExpire", eventString(c.Op))
	}
	if x.auditor == nil {
		return nil
	}
	ev := x.newEvent(ctx, c.Op, c.Name)
	ev.TraceID = newID()
	ev.Principal = eventString(c.Principal)
	ev.Approver = eventString(PrincipalFrom(ctx))
	ev.Grant = eventString(c.Grant)
	ev.ApprovalID = eventString(c.ApprovalID)
	ev.Reason = eventString(c.Reason)
	return x.auditor.Audit(ctx, *ev)
}

// noteCall records what a validated call would run.
func (ev *Event) noteCall(c *call) {
	if ev == nil {
		return
	}
	ev.Name = c.name
	ev.Command = c.e.spec.Command
	if c.e.spec.SensitiveArgs {
		// A plain hash of a short secret can be reversed by trying
		// candidates; this one is keyed with a secret of the process.
		ev.ArgsSHA256 = argsKeyedHash(processSalt(), c.argv.Args)
		ev.ArgsWithheld = true
	} else {
		ev.ArgsSHA256 = argsSHA256(c.argv.Args)
		ev.Args = slices.Clone(c.argv.Args)
	}
	ev.StdinBytes = len(c.argv.Stdin)
	ev.EnvKeys = make([]string, len(c.e.env))
	for i, kv := range c.e.env {
		ev.EnvKeys[i], _, _ = strings.Cut(kv, "=")
	}
}

// noteDecision records the policy's answer.
func (ev *Event) noteDecision(d Decision) {
	if ev == nil {
		return
	}
	ev.Decision, ev.Rule, ev.Grant = d.Action, d.Rule, d.Grant
}

// finish completes the Event with the call's outcome and hands it to the
// Auditor. An error from Audit is the Auditor's to report (see Auditor).
func (x *Executor) finish(ctx context.Context, ev *Event, res *Result, err error) {
	if ev == nil {
		return
	}
	if res != nil && res.ID != "" {
		ev.TraceID = res.ID
		ev.Termination = res.Termination
		ev.ExitCode = res.ExitCode
		ev.Signal = res.Signal
		ev.PID = res.PID
		ev.Duration = res.Duration
		ev.StdoutDropped = res.StdoutDropped
		ev.StderrDropped = res.StderrDropped
		ev.OutputIncomplete = res.OutputIncomplete
		ev.Unconfined = slices.Clone(res.Unconfined)
		ev.Connections = slices.Clone(res.Connections)
		ev.ConnectionsDropped = res.ConnectionsDropped
	} else if ev.TraceID == "" {
		ev.TraceID = newID()
	}
	if err != nil {
		ev.Error, ev.Reason = string(KindOf(err)), refusalReason(err)
	}
	_ = x.auditor.Audit(ctx, *ev)
}

// refusalReason details a refusal for the audit trail: the PolicyError's
// action, the ApprovalError's reason, the BusyError's scope, or
// [StoreFullPrincipal] for a QuotaError, else "".
func refusalReason(err error) string {
	var (
		pe *PolicyError
		ae *ApprovalError
		be *BusyError
	)
	switch KindOf(err) {
	case ErrorKindPolicy:
		if errors.As(err, &pe) {
			return pe.Action
		}
	case ErrorKindApproval:
		if errors.As(err, &ae) {
			return ae.Reason
		}
	case ErrorKindBusy:
		if errors.As(err, &be) {
			return be.Scope
		}
	case ErrorKindStoreFull:
		var qe *QuotaError
		if errors.As(err, &qe) {
			return StoreFullPrincipal
		}
	}
	return ""
}
