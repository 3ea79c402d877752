package execgate

import (
	"context"
	"encoding/json"
)

// SubmitOptions says how Submit and Decide treat a call.
type SubmitOptions struct {
	// Reason is the free text shown to the approver when the call is
	// proposed, as Propose's reason: at most [MaxReasonBytes] of UTF-8. It
	// is neither checked nor kept for a call that runs now.
	Reason string
	// NoPropose refuses a call the [Policy] holds for approval with the
	// [*PolicyError] ([ActionRequireApproval]) that Run returns, instead of
	// proposing it: nothing is stored. Submit is then Run.
	NoPropose bool
}

// Submission is what Submit did with a call.
type Submission struct {
	// Op is the path the call took: [OpRun] when it ran, [OpPropose] when it
	// was proposed.
	Op string
	// Result is the record of the process ([OpRun] only).
	Result Result
	// Approval is the pending approval, for a person or another system to
	// approve ([OpPropose] only).
	Approval Approval
}

// Submit looks name up, validates input, asks the [Policy] once and acts on
// its decision: a call the Policy allows runs now, as with Run; a call it
// holds for approval ([ActionRequireApproval]) is proposed, as with Propose,
// unless opts.NoPropose refuses it. It is the path for a server that takes
// approvals: the input is validated once and the Policy decides once,
// where calling Run and then, on a [*PolicyError] asking for an approval,
// Propose would do both twice.
//
// The Policy is asked with Op [OpRun] and, unless opts.NoPropose (or the
// call could not be carried by an approval), [Request.ProposeIfHeld] set,
// so that a Policy that counts proposed calls counts this one now; a
// Policy that counts calls counts a submitted call once. The [Auditor] gets
// the Events that Run or Propose would have given it: for a call that
// runs, its intent and then its outcome, with Op OpRun; for a call that
// is proposed, one outcome with Op [OpPropose]; for a refusal, one outcome,
// with Op OpPropose when the call was refused on its way to being stored
// and OpRun otherwise.
//
// A refusal returns an error and starts and stores nothing: those of Run
// for any call, and for a call on its way to being proposed those of
// Propose: a [*ValidationError] for an argv that an approval cannot carry
// ([MaxApprovalArgs], [MaxApprovalArgBytes], UTF-8) or a bad opts.Reason,
// an [*AuditError], or the store's error, such as [ErrStoreFull]. A call that
// runs returns a [Result] and a nil error whatever its process does, as
// with Run.
func (x *Executor) Submit(ctx context.Context, name string, input json.RawMessage, opts SubmitOptions) (Submission, error) {
	ev := x.newEvent(ctx, OpRun, name)
	sub, err := x.submit(ctx, name, input, opts, ev)
	if ev != nil && sub.Op == OpPropose {
		ev.ApprovalID = sub.Approval.ID
	}
	x.finish(ctx, ev, &sub.Result, err)
	return sub, err
}

func (x *Executor) submit(ctx context.Context, name string, input json.RawMessage, opts SubmitOptions, ev *Event) (Submission, error) {
	var w weighing
	if err := x.weigh(ctx, x.allow.Load(), name, input, opts, ev, &w); err != nil {
		return Submission{}, err
	}
	if w.op == OpPropose {
		ap, err := x.hold(ctx, &w.c, w.principal, opts.Reason, input)
		if err != nil {
			return Submission{}, err
		}
		return Submission{Op: OpPropose, Approval: ap}, nil
	}
	if err := x.auditReady(ctx); err != nil {
		return Submission{}, err
	}
	release, err := x.slots.acquire(ctx, name, w.principal)
	if err != nil {
		return Submission{}, err
	}
	defer release()
	res, err := x.spawn(ctx, &w.c, "", ev)
	if err != nil {
		return Submission{}, err
	}
	return Submission{Op: OpRun, Result: res}, nil
}

// weighing is how far a call got through the steps that Submit and
// Decide share.
type weighing struct {
	c         call
	principal string
	policy    Decision // the Policy's answer, before the floor
	asked     bool     // the Policy was asked
	d         Decision // the decision, after the floor
	op        string   // OpRun or OpPropose: the path the decision leaves
	dryRun    bool     // only deciding: the Policy is told to count nothing
}

// weigh is the one path from a submitted call to its decision: lookup and
// validation (prepare), the principal, whether an approval could carry the
// call, the Policy and the spec's Floor. It returns the refusal Submit
// gives, or, in w, the path the call takes. For OpPropose the caller
// still has to store the approval.
func (x *Executor) weigh(ctx context.Context, a *Allowlist, name string, input json.RawMessage, opts SubmitOptions, ev *Event, w *weighing) error {
	c, err := prepare(a, name, input)
	if err != nil {
		return err
	}
	w.c = c
	ev.noteCall(&w.c)
	w.principal = PrincipalFrom(ctx)
	if err := checkPrincipal(name, w.principal); err != nil {
		return err
	}
	// Whether an approval could carry the call is known before the Policy
	// is asked, so that a Policy that counts proposed calls is not told
	// the call will be proposed when it cannot be.
	var unfit []Issue
	if !opts.NoPropose {
		unfit = checkArgsAndReason(w.c.argv.Args, opts.Reason)
	}
	proposable := !opts.NoPropose && len(unfit) == 0
	w.policy, w.asked, err = x.ask(ctx, Request{Op: OpRun, Principal: w.principal, ProposeIfHeld: proposable, DryRun: w.dryRun}, &w.c)
	if err != nil {
		return err
	}
	w.d = applyFloor(&w.c, w.policy)
	ev.noteDecision(w.d)
	switch {
	case w.d.Action == ActionAllow:
		w.op = OpRun
		return nil
	case w.d.Action != ActionRequireApproval || opts.NoPropose:
		return &PolicyError{Name: name, Action: w.d.Action, Rule: w.d.Rule}
	}
	// From here the call is on its way to being proposed, and is recorded
	// as a proposal, as Propose would record it.
	if ev != nil {
		ev.Op = OpPropose
	}
	if len(unfit) > 0 {
		return &ValidationError{Name: name, Issues: unfit}
	}
	w.op = OpPropose
	return nil
}

// hold stores a validated and decided call as a pending approval and
// returns its envelope. It is the last step of Propose and of a Submit
// that proposes.
func (x *Executor) hold(ctx context.Context, c *call, principal, reason string, input json.RawMessage) (Approval, error) {
	if err := x.auditReady(ctx); err != nil {
		return Approval{}, err
	}
	now := x.clock().UTC().Round(0)
	ap := Approval{
		ID:            newID(),
		Principal:     principal,
		Name:          c.name,
		Command:       c.e.spec.Command,
		Args:          c.argv.Args,
		Reason:        reason,
		PolicyVersion: c.e.spec.PolicyVersion,
		Confine:       confinementInfo(&c.e.spec),
		Egress:        specEgress(&c.e.spec),
		Stdin:         stdinInfo(c.argv.Stdin),
		CreatedAt:     now,
		ExpiresAt:     now.Add(x.ttl),
	}
	salt := newSalt()
	rec := Record{
		Input:       append(json.RawMessage(nil), input...),
		Salt:        salt,
		Fingerprint: saltedFingerprint(salt, c.e.fingerprint),
		StdinSHA256: stdinSHA256(c.argv.Stdin),
	}
	ap.Digest = approvalDigest(&ap, rec.Fingerprint, rec.StdinSHA256)
	rec.Approval = ap
	rec.Approval.Args = append([]string(nil), ap.Args...)
	rec.Approval.Confine = ap.Confine.clone()
	rec.Approval.Egress = ap.Egress.clone()
	rec.Approval.Stdin = ap.Stdin.clone()
	if err := x.approvals().Save(ctx, rec); err != nil {
		return Approval{}, err
	}
	return ap, nil
}

// specEgress returns a copy of the Egress of s's confinement, or nil.
func specEgress(s *CommandSpec) *Egress {
	if s.Confine == nil {
		return nil
	}
	return s.Confine.Egress.clone()
}

// Verdict is what Decide found: what Submit would do with a call.
type Verdict struct {
	// Op is [OpRun] when Submit would run the call now, [OpPropose] when it
	// would propose it, and "" when it would refuse it (Decide's error is
	// then the refusal).
	Op string
	// Spec is the spec that serves the name, as [Allowlist.Lookup] reports
	// it (a dispatcher's Floor filled in), once the name was found.
	Spec CommandSpec
	// Argv is what the call would run with, once its input was validated.
	Argv Argv
	// Policy is the [Policy]'s own answer, before the spec's Floor, with an
	// action the gate does not know read as [ActionDeny]; nil when no Policy
	// answered (the [Executor] has none, the call was refused before it was
	// asked, or it failed).
	Policy *Decision
	// Decision is the decision Submit would act on: the [Policy]'s answer
	// ([ActionAllow] without a Policy), made stricter by the spec's Floor if
	// the Floor is stricter, and then with Rule [FloorRule]. It is the zero
	// [Decision] when the call was refused before it was decided.
	Decision Decision
}

// Decide reports what Submit(ctx, name, input, opts) would do, doing none
// of it: it looks name up, validates input, checks the principal and,
// for a call that would be proposed, what an approval can carry, asks the
// [Policy] exactly as Submit would and applies the spec's Floor. It starts
// no process, stores no approval and records nothing in the audit trail,
// since no call was made. What only the moment of a call decides is not
// looked at: whether the [Auditor] is ready, the concurrency bounds and the
// room in the store.
//
// The Policy is asked the question Submit would ask it, with
// [Request.DryRun] set: it must count nothing, so a Decide spends no rate
// limit. The policy engine then answers as if no rate limit or loop bound
// were reached, since it can only judge them by counting; Submit may
// still refuse such a call as rate limited.
//
// The error is the refusal Submit would return, before any process or
// store is involved: [*NotFoundError], [*ValidationError], [*PolicyError] or
// the Policy's own error. The [Verdict] holds what was found before it: the
// Spec once the name was found, the [Argv] once the input was accepted, the
// decision once it was made.
func (x *Executor) Decide(ctx context.Context, name string, input json.RawMessage, opts SubmitOptions) (Verdict, error) {
	a := x.allow.Load()
	var v Verdict
	if e, _ := a.lookup(name); e != nil {
		v.Spec = e.publicSpec()
	}
	w := weighing{dryRun: true}
	err := x.weigh(ctx, a, name, input, opts, nil, &w)
	if w.c.e != nil {
		v.Argv = Argv{Args: w.c.argv.Args, Stdin: w.c.argv.Stdin}
	}
	if w.asked {
		d := w.policy
		v.Policy = &d
	}
	v.Decision = w.d
	if err != nil {
		return v, err
	}
	v.Op = w.op
	return v, nil
}
