package execgate

import (
	"context"

	"github.com/execgate/execgate/internal/inputrules"
)

// Policy decides whether an allowlisted, validated call may run now, must
// wait for an approval, or is refused. The allowlist says what can ever run;
// a Policy says who may run it and when.
//
// The [Executor] asks the Policy on Run ([ActionRequireApproval] refuses with a
// [*PolicyError] telling the caller to Propose), on Submit (once, as on Run:
// ActionRequireApproval proposes the call), on Propose ([ActionDeny]
// refuses), and again on Execute against the policy in force then
// (ActionDeny refuses and the approval stays consumed). A Policy is asked
// only after lookup and validation have succeeded. Decide may be called
// concurrently. An error from Decide refuses the call.
type Policy interface {
	Decide(ctx context.Context, req Request) (Decision, error)
}

// Request is what a [Policy] decides on.
type Request struct {
	// Op is the [Executor] method asking: [OpRun], [OpPropose] or [OpExecute]. A
	// [Policy] that counts calls (a rate limit) may count a proposed call at
	// OpPropose only, since the same call is asked about again at
	// OpExecute.
	Op string
	// Principal is whose call it is: the caller of Run and Propose, from
	// PrincipalFrom(ctx), and for Execute the principal that proposed the
	// call, from the approval's stored record. "" if unknown.
	Principal string
	// Approver is, for Execute, the caller's principal: whoever is
	// executing the approval. It is "" for Run and Propose.
	Approver string
	// Name is the requested command name.
	Name string
	// Spec is the allowlisted spec, as [Allowlist.Lookup] reports it.
	Spec CommandSpec
	// Argv is what the call would run with.
	Argv Argv
	// ProposeIfHeld reports, for [OpRun], that a call the [Policy] holds for
	// approval will be proposed at once rather than refused: the call
	// came through [Executor.Submit] (or [Executor.Decide], which asks what
	// Submit would), and will not be asked about at [OpPropose]. A Policy
	// that counts proposed calls at OpPropose counts such a call at this
	// OpRun instead. It is false for every other Op and for [Executor.Run].
	ProposeIfHeld bool
	// DryRun reports that nothing will be done with the answer: the call
	// is only being decided ([Executor.Decide]). A [Policy] must change no
	// state for it, and count nothing; one that can only judge a limit by
	// counting answers as if the limit were not reached.
	DryRun bool
}

// Decision is a [Policy]'s answer.
type Decision struct {
	// Action is [ActionAllow], [ActionDeny], [ActionRequireApproval] or
	// [ActionRateLimited]. Any other value is treated as ActionDeny.
	Action string
	// Rule names the rule that decided, for errors and audit records.
	Rule string
	// Grant names the grant that turned [ActionRequireApproval] into
	// [ActionAllow], if one did, for audit records.
	Grant string
}

// PolicyFunc adapts a function to the [Policy] interface.
type PolicyFunc func(ctx context.Context, req Request) (Decision, error)

// Decide calls f(ctx, req).
func (f PolicyFunc) Decide(ctx context.Context, req Request) (Decision, error) {
	return f(ctx, req)
}

// MaxPrincipalBytes bounds a principal's length. Run, Propose and Execute
// refuse a principal that is longer, is not valid UTF-8, or holds white
// space or a character no argv token may hold (control, formatting and
// invisible characters, see [Flags]), with a [*ValidationError] for the
// field "principal". The empty principal is the unknown one. The MCP
// server and package config apply the same rule.
const MaxPrincipalBytes = inputrules.MaxPrincipalBytes

// checkPrincipal refuses principals that could bloat audit records and
// rate-limit state, or be confused with others in logs.
func checkPrincipal(name, principal string) error {
	if msg := inputrules.PrincipalProblem(principal); msg != "" {
		return &ValidationError{Name: name, Issues: []Issue{{Field: "principal", Message: msg}}}
	}
	return nil
}

type principalKey struct{}

// WithPrincipal returns a copy of ctx that carries the identity of the
// caller, for the [Policy].
func WithPrincipal(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, principalKey{}, id)
}

// PrincipalFrom returns the principal stored by [WithPrincipal], or "".
func PrincipalFrom(ctx context.Context) string {
	id, _ := ctx.Value(principalKey{}).(string)
	return id
}
