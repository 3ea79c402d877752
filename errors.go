package execgate

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// maxNameInError bounds how much of a caller-supplied name an error message
// repeats, so a refusal cannot be used to reflect large payloads.
const maxNameInError = 128

// quoteName quotes a caller-supplied name for an error message, shortened to
// maxNameInError bytes.
func quoteName(name string) string {
	if len(name) > maxNameInError {
		name = name[:maxNameInError] + "..."
	}
	return fmt.Sprintf("%q", name)
}

// NotFoundError reports that a requested command name is not in the
// allowlist. It is returned before any input is decoded, any policy is asked
// or any process is started.
type NotFoundError struct {
	// Name is the name that was requested.
	Name string
}

// Error implements error.
func (e *NotFoundError) Error() string {
	return "execgate: command " + quoteName(e.Name) + " is not allowlisted"
}

// Issue is one reason an input was refused.
type Issue struct {
	// Field is the JSON path of the offending field ("max_count",
	// "paths[2]"), the offending token for flag schemas, or "" when the
	// input as a whole was refused.
	Field string `json:"field"`
	// Message says what the field must be. It never repeats stdin, an
	// environment value or a field's value from a [Struct] schema; a [Flags]
	// schema quotes the offending argv token (shortened), which would be
	// visible in the argv anyway.
	Message string `json:"message"`
}

// ValidationError reports that an input, or an approval envelope, was
// refused by a schema or a structural check. Issues lists every problem
// found, in a stable order.
type ValidationError struct {
	// Name is the command name the input was meant for, or the kind of
	// value that was checked ("approval") when no command is involved.
	Name string
	// Issues holds at least one entry.
	Issues []Issue

	causes []error // see Unwrap
}

// Unwrap returns the errors of a type of their own behind e's issues: a
// [*PathError] for each path argument of a [Flags] or [Struct] schema
// refused among the issues listed, so that errors.As finds which path was
// refused and why. It returns nil when no issue has one.
func (e *ValidationError) Unwrap() []error { return e.causes }

// Error implements error. The message names every offending field. It never
// repeats stdin or an environment value; see [Issue.Message] for what a
// message may quote.
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("execgate: invalid input for ")
	b.WriteString(quoteName(e.Name))
	for i, is := range e.Issues {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		if is.Field != "" {
			fmt.Fprintf(&b, "%s: ", is.Field)
		}
		b.WriteString(is.Message)
	}
	return b.String()
}

// Reasons carried by [ApprovalError].
const (
	// ReasonUnknown: no stored record has the approval's ID. It was never
	// proposed, was already executed or rejected, or was pruned after expiry.
	ReasonUnknown = "unknown"
	// ReasonExpired: the record was found but the [Executor]'s clock is at or
	// past its ExpiresAt.
	ReasonExpired = "expired"
	// ReasonDigestMismatch: the envelope handed to Execute differs from the
	// one that was proposed.
	ReasonDigestMismatch = "digest_mismatch"
	// ReasonPolicyChanged: the allowlist changed between Propose and Execute
	// in a way that changes what would run.
	ReasonPolicyChanged = "policy_changed"
)

// ApprovalError reports that an approval cannot be executed. Once Execute
// has taken the stored record, the record stays consumed whatever the
// reason.
type ApprovalError struct {
	// ID is the approval's ID as it was handed to Execute.
	ID string
	// Reason is one of [ReasonUnknown], [ReasonExpired], [ReasonDigestMismatch]
	// and [ReasonPolicyChanged].
	Reason string
}

// Error implements error.
func (e *ApprovalError) Error() string {
	return "execgate: approval " + quoteName(e.ID) + " refused: " + e.Reason
}

// Policy actions reported by [PolicyError] and returned in a [Decision].
const (
	// ActionAllow lets the call run now.
	ActionAllow = "allow"
	// ActionDeny refuses the call.
	ActionDeny = "deny"
	// ActionRequireApproval lets the call run only through Propose and
	// Execute.
	ActionRequireApproval = "require_approval"
	// ActionRateLimited refuses the call because its principal has used up
	// a rate limit or budget, or repeats itself; it is refused like
	// [ActionDeny].
	ActionRateLimited = "rate_limited"
)

// PolicyError reports that the [Policy] refused a call, or that it requires
// an approval and the call came through Run.
type PolicyError struct {
	// Name is the requested command name.
	Name string
	// Action is [ActionDeny], [ActionRateLimited], or [ActionRequireApproval]
	// when Run was used for a call that must be proposed first.
	Action string
	// Rule names the rule that decided, if the [Policy] reported one.
	Rule string
}

// Error implements error.
func (e *PolicyError) Error() string {
	msg := "execgate: policy refused " + quoteName(e.Name) + ": " + e.Action
	if e.Action == ActionRequireApproval {
		msg += " (use Propose and Execute)"
	}
	if e.Rule != "" {
		msg += " by rule " + quoteName(e.Rule)
	}
	return msg
}

// ConfigError reports a [CommandSpec] or [Config] that cannot be used. It is
// returned by [NewAllowlist] and [NewExecutor]; nothing is partially built.
type ConfigError struct {
	// Spec is the name of the offending spec, or "" for an [Executor] [Config].
	Spec string
	// Field is the offending field ("Command", "SHA256", "Timeout").
	Field string
	// Message says what is wrong.
	Message string
}

// Error implements error.
func (e *ConfigError) Error() string {
	if e.Spec == "" {
		return "execgate: config: " + e.Field + ": " + e.Message
	}
	return "execgate: spec " + quoteName(e.Spec) + ": " + e.Field + ": " + e.Message
}

// ErrStoreFull is returned by an [ApprovalStore]'s Save, and so by Propose,
// when the store already holds its capacity of pending records, or, inside
// a [*QuotaError], when the proposing principal holds its quota of them.
var ErrStoreFull = errors.New("execgate: approval store is full")

// Quotas a [QuotaError] names.
const (
	// QuotaCount: the principal holds its quota of pending records
	// ([MemoryStoreOptions.PerPrincipalCapacity]).
	QuotaCount = "count"
	// QuotaBytes: the record would take the principal's pending records
	// over their quota of bytes ([MemoryStoreOptions.PerPrincipalMaxBytes]).
	QuotaBytes = "bytes"
)

// StoreFullPrincipal is the reason of an [ErrorKindStoreFull] refusal
// that a [*QuotaError] made, in the audit trail ([Event.Reason]) and on
// the surfaces that show a refusal's reason: the calling principal holds
// its quota of the store, while the other principals may still have room.
const StoreFullPrincipal = "principal"

// QuotaError is returned by an [ApprovalStore]'s Save, and so by Propose,
// when the proposing principal (the record's Approval.Principal) already
// holds its quota of the store's pending records or of their bytes, so
// that one principal cannot fill the store for the others. Every call
// without a principal ("") shares one quota. Nothing was stored. It
// unwraps to [ErrStoreFull], so errors.Is(err, ErrStoreFull) holds and
// [KindOf] gives [ErrorKindStoreFull]; match it with errors.As to learn
// whose quota is full.
type QuotaError struct {
	// Principal is the principal whose quota is full; "" for the calls
	// that carry none.
	Principal string
	// Quota is [QuotaCount] or [QuotaBytes].
	Quota string
	// Limit is the quota that was reached: records for QuotaCount, bytes
	// for QuotaBytes.
	Limit int64
}

// Error implements error. The message names the principal and the quota
// and says what to do; it never repeats the record's input.
func (e *QuotaError) Error() string {
	who := "principal " + quoteName(e.Principal)
	if e.Principal == "" {
		who = "the calls without a principal"
	}
	what := strconv.FormatInt(e.Limit, 10) + " pending approvals"
	if e.Quota == QuotaBytes {
		what = strconv.FormatInt(e.Limit, 10) + " bytes of pending approvals"
	}
	return "execgate: approval store quota of " + who + " is full (" + what +
		"); nothing was stored: wait until its pending approvals are decided or expire, or have the operator raise the quota per principal"
}

// Unwrap returns [ErrStoreFull].
func (e *QuotaError) Unwrap() error { return ErrStoreFull }

// ErrNoRecord is returned by an [ApprovalStore]'s Take when it holds no
// record with the requested ID.
var ErrNoRecord = errors.New("execgate: no such approval record")

// ErrDuplicateID is returned by an [ApprovalStore]'s Save when a record with
// the same ID is already stored.
var ErrDuplicateID = errors.New("execgate: approval ID already stored")

// ErrorKind names a kind of refusal. It is the one vocabulary of every
// surface that reports a refusal: [Event.Error] in the audit trail, the Kind
// of a refusal over MCP (package mcpserver), and the "kind" of an error
// from the execgate binary's HTTP API, its run command and its explain
// command. [KindOf] classifies any error the gate returns; the two kinds for
// refusals made before the gate, [ErrorKindUnauthenticated] and
// [ErrorKindRequest], are named by the server that made them (see
// [Executor.RecordRefusal]).
//
// Each kind says what the caller can do about it:
//
//   - [ErrorKindNotFound]: use a name the allowlist serves.
//   - [ErrorKindValidation]: change the fields the Issues name.
//   - [ErrorKindPolicy]: the Policy's Action says: deny, do not retry;
//     rate_limited, retry later; require_approval, propose the call.
//   - [ErrorKindApproval]: propose the call anew.
//   - [ErrorKindBusy], [ErrorKindStoreFull]: retry later; nothing started
//     and nothing was stored.
//   - [ErrorKindAudit], [ErrorKindInternal]: nothing the caller can change;
//     an operator must look.
//   - [ErrorKindUnauthenticated], [ErrorKindRequest]: fix the credentials,
//     or the request itself.
//
// In every case nothing ran.
type ErrorKind string

// Kinds of refusal. They are untyped constants, so that they compare with
// the string fields that carry a kind ([Event.Error], [Refusal.Kind]) and
// convert to [ErrorKind], which [KindOf] returns.
const (
	// ErrorKindNotFound: the name is not allowlisted ([*NotFoundError]);
	// nothing was decoded and no [Policy] was asked.
	ErrorKindNotFound = "not_found"
	// ErrorKindValidation: the input, the principal, the reason, an
	// approval envelope or an approval ID was refused
	// ([*ValidationError]); its Issues name each field.
	ErrorKindValidation = "validation"
	// ErrorKindPolicy: the [Policy], or the spec's Floor, denied the call,
	// refused it for a rate limit, or holds it for an approval that the
	// path it came by does not take ([*PolicyError]); Action says which and
	// Rule names the rule.
	ErrorKindPolicy = "policy"
	// ErrorKindApproval: an approval cannot be executed ([*ApprovalError]);
	// Reason is [ReasonUnknown], [ReasonExpired], [ReasonDigestMismatch] or
	// [ReasonPolicyChanged].
	ErrorKindApproval = "approval"
	// ErrorKindBusy: a concurrency bound of the [Executor] was reached
	// ([*BusyError]); the same call may be made again once a command has
	// ended.
	ErrorKindBusy = "busy"
	// ErrorKindAudit: the [Auditor] could not record the call
	// ([*AuditError]), so the gate, failing closed, started nothing.
	ErrorKindAudit = "audit"
	// ErrorKindStoreFull: there is no room for another pending approval
	// ([ErrStoreFull] from the [ApprovalStore], a [*QuotaError] when the
	// calling principal holds its quota of the store, or a server's own
	// bound on the approvals it keeps waiting); retry once some are
	// decided or have expired.
	ErrorKindStoreFull = "store_full"
	// ErrorKindInternal: any other error: the [Policy]'s own, an
	// [ApprovalStore]'s other than [ErrStoreFull] ([ErrDuplicateID] among them),
	// a [*ConfigError], a context's. Servers log its message and do not show
	// it.
	ErrorKindInternal = "internal"
	// ErrorKindUnauthenticated: a server in front of the gate refused a
	// request without valid credentials.
	ErrorKindUnauthenticated = "unauthenticated"
	// ErrorKindRequest: a server in front of the gate refused a request
	// for its size, content type, method, route, framing, or for what the
	// authenticated caller's role may do; the refusal's reason says which.
	ErrorKindRequest = "request"

	// ErrorKindStore is the kind [ErrStoreFull] had before [ErrorKindStoreFull]
	// ("store", which [ErrDuplicateID] had too).
	//
	// Deprecated: use ErrorKindStoreFull, which it equals.
	ErrorKindStore = ErrorKindStoreFull
	// ErrorKindOther is the kind of an error no other kind names ("error"
	// before [ErrorKindInternal]).
	//
	// Deprecated: use ErrorKindInternal, which it equals.
	ErrorKindOther = ErrorKindInternal
)

// errorKinds lists every kind a refusal can have, in the order of the
// documentation.
var errorKinds = []ErrorKind{
	ErrorKindNotFound, ErrorKindValidation, ErrorKindPolicy, ErrorKindApproval,
	ErrorKindBusy, ErrorKindAudit, ErrorKindStoreFull, ErrorKindInternal,
	ErrorKindUnauthenticated, ErrorKindRequest,
}

// KindOf classifies an error that Run, Submit, Decide, Propose, Execute,
// Reject or an [ApprovalStore] returned, also wrapped: the first of
// [*NotFoundError], [*ValidationError], [*PolicyError], [*ApprovalError],
// [*AuditError], [*BusyError] and [ErrStoreFull] that errors.As or errors.Is
// finds in err gives its kind, and any other error is
// [ErrorKindInternal]. A nil err has the kind "".
func KindOf(err error) ErrorKind {
	if err == nil {
		return ""
	}
	var (
		nf *NotFoundError
		ve *ValidationError
		pe *PolicyError
		ae *ApprovalError
		au *AuditError
		be *BusyError
	)
	switch {
	case errors.As(err, &nf):
		return ErrorKindNotFound
	case errors.As(err, &ve):
		return ErrorKindValidation
	case errors.As(err, &pe):
		return ErrorKindPolicy
	case errors.As(err, &ae):
		return ErrorKindApproval
	case errors.As(err, &au):
		return ErrorKindAudit
	case errors.As(err, &be):
		return ErrorKindBusy
	case errors.Is(err, ErrStoreFull):
		return ErrorKindStoreFull
	default:
		return ErrorKindInternal
	}
}
