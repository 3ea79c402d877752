package mcpserver

import (
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execgate/execgate"
)

// Statuses carried by [CallStatus].
const (
	// StatusRefused: the gate or this server refused the call; nothing ran.
	// [CallStatus.Kind] says why.
	StatusRefused = "refused"
	// StatusPending: the call needs a person's approval, which is pending;
	// nothing ran yet. [CallStatus.Approval] is the envelope an out-of-band
	// approver hands to Executor.Execute.
	StatusPending = "pending_approval"
	// StatusDeclined: the client's user declined (or dismissed) the
	// approval request; the approval was rejected and nothing ran.
	StatusDeclined = "declined"
	// StatusNotApproved: the approval request failed or timed out before
	// anyone answered it; the approval was rejected and nothing ran.
	StatusNotApproved = "not_approved"
	// StatusRejected: an out-of-band approver rejected the approval of an
	// earlier identical call, whose retry this is (see
	// [Options.Outcomes]); nothing ran.
	StatusRejected = string(ApprovalRejected)
	// StatusExpired: the approval of an earlier identical call, whose
	// retry this is, expired before anyone decided it; nothing ran.
	StatusExpired = string(ApprovalExpired)
	// StatusClaimed: the approval of an earlier identical call was
	// approved and its command ran, and its Result was already handed out
	// (it is handed out once); nothing ran again.
	StatusClaimed = string(ApprovalClaimed)
	// StatusDropped: the approval of an earlier identical call was
	// approved and its command ran, and its Result is no longer kept;
	// nothing ran again.
	StatusDropped = string(ApprovalDropped)
)

// Kinds of refusal carried by [CallStatus.Kind]: the gate's own, the
// [execgate.ErrorKind] vocabulary that the audit trail and the execgate
// binary's HTTP API use too (see execgate.ErrorKind for what each means
// and what a caller can do).
const (
	// KindNotFound: the tool or command is not allowlisted
	// ([*execgate.NotFoundError]).
	KindNotFound = execgate.ErrorKindNotFound
	// KindValidation: the arguments were refused
	// ([*execgate.ValidationError]); Issues names each offending field.
	KindValidation = execgate.ErrorKindValidation
	// KindPolicy: the Policy denied or rate-limited the call, or it needs
	// an approval this server does not take ([*execgate.PolicyError]), or
	// one that nothing here can give (see [Options.NoApprover]: Action is
	// then "require_approval"); Action and Rule say which.
	KindPolicy = execgate.ErrorKindPolicy
	// KindApproval: an approved call could not be executed
	// ([*execgate.ApprovalError]); Reason says why.
	KindApproval = execgate.ErrorKindApproval
	// KindBusy: a concurrency bound of the gate was reached
	// ([*execgate.BusyError]); Reason is its scope, "executor" or
	// "principal". The same call may be made again once one has ended.
	KindBusy = execgate.ErrorKindBusy
	// KindAudit: the audit trail cannot record the call
	// ([*execgate.AuditError]).
	KindAudit = execgate.ErrorKindAudit
	// KindStoreFull: no room for another pending approval: the approval
	// store is full ([execgate.ErrStoreFull]), or too many approval
	// requests wait for a client's answer.
	KindStoreFull = execgate.ErrorKindStoreFull
	// KindInternal: an error this server does not show; it is logged.
	// An approval that [Options.OnPending] could not hand to an approver
	// is refused with this kind too.
	KindInternal = execgate.ErrorKindInternal

	// KindInvalidInput was the kind of refused arguments, "invalid_input"
	// until it became the gate's "validation".
	//
	// Deprecated: use [KindValidation], which it equals.
	KindInvalidInput = KindValidation
	// KindUnavailable was the kind of a call the gate could not take
	// then: an audit trail that could not record (now [KindAudit]), a full
	// approval store or too many waiting approval requests (now
	// [KindStoreFull]), an approval OnPending could not deliver (now
	// [KindInternal]). No refusal carries it any more.
	//
	// Deprecated: use KindAudit, KindStoreFull or KindInternal.
	KindUnavailable = "unavailable"
)

// CallStatus is the structured content of a tool result for a call whose
// command did not run: refused, pending approval, declined or not
// approved. A call whose command ran has an [execgate.Result] as its
// structured content instead, which has no "status" member.
type CallStatus struct {
	// Status is one of [StatusRefused], [StatusPending], [StatusDeclined],
	// [StatusNotApproved] and, for the retry of a call left pending (see
	// [Options.Outcomes]), [StatusRejected], [StatusExpired],
	// [StatusClaimed] and [StatusDropped].
	Status string `json:"status"`
	// Kind says why a call was refused ([StatusRefused] only), an
	// [execgate.ErrorKind]: [KindNotFound], [KindValidation], [KindPolicy],
	// [KindApproval], [KindBusy], [KindAudit], [KindStoreFull] or [KindInternal].
	Kind string `json:"kind,omitempty"`
	// Message is the same text as the result's text content.
	Message string `json:"message"`
	// Name is the command name the refusal is about, if known.
	Name string `json:"name,omitempty"`
	// Issues lists the refused fields ([KindValidation] only).
	Issues []execgate.Issue `json:"issues,omitempty"`
	// Action and Rule are the Policy's decision ([KindPolicy] only).
	Action string `json:"action,omitempty"`
	Rule   string `json:"rule,omitempty"`
	// Reason is the approval error's reason ([KindApproval]), the
	// concurrency bound's scope ([KindBusy]), or
	// [execgate.StoreFullPrincipal] when the caller's own quota of the
	// approval store is full ([KindStoreFull], an [*execgate.QuotaError]).
	Reason string `json:"reason,omitempty"`
	// Approval is the approval the status is about: the pending envelope
	// ([StatusPending]), or the rejected one ([StatusDeclined],
	// [StatusNotApproved]).
	Approval *execgate.Approval `json:"approval,omitempty"`
}

// statusResult builds an IsError result whose text is st.Message.
func statusResult(st *CallStatus) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: st.Message}},
		StructuredContent: st,
		IsError:           true,
	}
}

// refusal turns an error from the Executor (or this server's own checks)
// into a tool result a model can act on. Its Kind is execgate.KindOf the
// error. Typed errors keep their message, which never repeats stdin or
// environment values; any other error is logged and shown as an internal
// error.
func (s *Server) refusal(err error) *mcp.CallToolResult {
	st := &CallStatus{Status: StatusRefused, Kind: string(execgate.KindOf(err)), Message: err.Error()}
	var (
		nf *execgate.NotFoundError
		ve *execgate.ValidationError
		pe *execgate.PolicyError
		ae *execgate.ApprovalError
		be *execgate.BusyError
	)
	switch st.Kind {
	case KindNotFound:
		if errors.As(err, &nf) {
			st.Name = nf.Name
		}
	case KindValidation:
		if errors.As(err, &ve) {
			st.Name, st.Issues = ve.Name, ve.Issues
		}
	case KindPolicy:
		if errors.As(err, &pe) {
			st.Name, st.Action, st.Rule = pe.Name, pe.Action, pe.Rule
			if pe.Action == execgate.ActionRequireApproval {
				st.Message = fmt.Sprintf("execgate: %q needs a person's approval, and this server does not take approvals", pe.Name)
			}
		}
	case KindApproval:
		if errors.As(err, &ae) {
			st.Reason = ae.Reason
		}
	case KindBusy:
		if errors.As(err, &be) {
			st.Name, st.Reason = be.Name, be.Scope
		}
	case KindStoreFull:
		var qe *execgate.QuotaError
		if errors.As(err, &qe) {
			st.Reason = execgate.StoreFullPrincipal
		}
	case KindInternal:
		s.opts.Logger.Error("mcpserver: call failed", "error", err)
		st.Message = "execgate: the call failed with an internal error"
	}
	st.Message += "; nothing ran."
	return statusResult(st)
}

// ranResult reports a call whose command was handed to the process
// runner. The text shows how it ended, its output and how much output
// was dropped; the structured content is the Result. IsError is set unless
// the process exited with status 0 (Result.OK): a non-zero exit, a signal,
// a timeout, a cancellation and a spawn error are all errors to a model.
func ranResult(r execgate.Result) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: resultText(r)}},
		StructuredContent: r,
		IsError:           !r.OK,
	}
}

func resultText(r execgate.Result) string {
	var b strings.Builder
	switch r.Termination {
	case execgate.TerminationExit:
		fmt.Fprintf(&b, "%s exited with status %d.\n", r.Name, r.ExitCode)
	case execgate.TerminationSignal:
		fmt.Fprintf(&b, "%s was killed by %s.\n", r.Name, r.Signal)
	case execgate.TerminationTimeout:
		fmt.Fprintf(&b, "%s ran out of time and was killed.\n", r.Name)
	case execgate.TerminationNoOutputTimeout:
		fmt.Fprintf(&b, "%s produced no output for too long and was killed.\n", r.Name)
	case execgate.TerminationCanceled:
		fmt.Fprintf(&b, "%s was canceled.\n", r.Name)
	case execgate.TerminationSpawnError:
		fmt.Fprintf(&b, "%s could not be started: %s\n", r.Name, r.SpawnError)
	default:
		fmt.Fprintf(&b, "%s ended: %s.\n", r.Name, r.Termination)
	}
	stream(&b, "stdout", r.Stdout, r.StdoutDropped)
	stream(&b, "stderr", r.Stderr, r.StderrDropped)
	if r.OutputIncomplete {
		b.WriteString("[output may be incomplete: a process the command started still held its output open]\n")
	}
	return b.String()
}

func stream(b *strings.Builder, name, out string, dropped int64) {
	if out == "" && dropped == 0 {
		fmt.Fprintf(b, "%s: (empty)\n", name)
		return
	}
	fmt.Fprintf(b, "%s:\n%s", name, out)
	if !strings.HasSuffix(out, "\n") {
		b.WriteByte('\n')
	}
	if dropped > 0 {
		fmt.Fprintf(b, "[%s truncated: %d more bytes were not kept]\n", name, dropped)
	}
}

// pendingResult reports an approval left for an out-of-band approver. It
// is an IsError result: the requested command has not run, and a model
// must not read the call as done. With Options.Outcomes it tells the
// model to call the tool again, with the same arguments, once a person
// has decided; still says that a retry or a wait found it still pending,
// and running that it was approved and its command is running.
func (s *Server) pendingResult(ap execgate.Approval, still, running bool) *mcp.CallToolResult {
	until := ap.ExpiresAt.UTC().Format("2006-01-02T15:04:05Z07:00")
	var msg string
	switch {
	case s.opts.Outcomes == nil:
		msg = fmt.Sprintf("execgate: %q needs a person's approval and has NOT run. "+
			"Approval %s is pending until %s; once a person approves it, it runs once. "+
			"Do not call the tool again for this request: tell the user that approval %s is waiting.",
			ap.Name, ap.ID, until, ap.ID)
	case running:
		msg = fmt.Sprintf("execgate: %q was approved (approval %s) and its command is running. "+
			"Call this tool again with exactly the same arguments to get its result.", ap.Name, ap.ID)
	default:
		state := "is pending"
		if still {
			state = "is still pending"
		}
		msg = fmt.Sprintf("execgate: %q needs a person's approval and has NOT run. "+
			"Approval %s %s, until %s. Tell the user that approval %s is waiting. "+
			"Once a person has decided, call this tool again with exactly the same arguments: "+
			"that call returns the command's result (once) or says why it did not run, and asks for no new approval.",
			ap.Name, ap.ID, state, until, ap.ID)
	}
	return statusResult(&CallStatus{Status: StatusPending, Name: ap.Name, Message: msg, Approval: &ap})
}

// unanswered reports an approval that was rejected because the person
// declined it (status StatusDeclined) or because no answer came (status
// StatusNotApproved); why is shown to the model.
func unanswered(status string, ap execgate.Approval, why string) *mcp.CallToolResult {
	msg := fmt.Sprintf("execgate: %q was not approved (%s); nothing ran.", ap.Name, why)
	return statusResult(&CallStatus{Status: status, Name: ap.Name, Message: msg, Approval: &ap})
}
