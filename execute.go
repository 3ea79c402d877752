package execgate

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"sync/atomic"
	"time"
)

// DefaultApprovalTTL is how long an approval stays executable when
// [Config.ApprovalTTL] is zero.
const DefaultApprovalTTL = 15 * time.Minute

// Config configures an [Executor]. Only [Allowlist] is required.
type Config struct {
	// Allowlist is the set of commands the [Executor] may run. It is
	// required; replace it later with SetAllowlist.
	Allowlist *Allowlist
	// ExecFn starts processes. Nil means [DefaultExecFn].
	ExecFn ExecFn
	// Store keeps pending approvals between Propose and Execute. Nil means
	// a new [MemoryStore] with the default capacity and this [Config]'s Now.
	Store ApprovalStore
	// ApprovalTTL is how long a proposed approval stays executable. Zero
	// means [DefaultApprovalTTL]; negative is refused.
	ApprovalTTL time.Duration
	// Now is the [Executor]'s clock, for [Result.At], [Result.Duration] and
	// approval expiry. Nil means time.Now.
	Now func() time.Time
	// Policy decides who may run what. Nil allows every allowlisted call.
	Policy Policy
	// Auditor receives one [Event] per call, refused or run. Nil means no
	// audit trail. See [Auditor] for how a failing Auditor stops calls.
	Auditor Auditor
	// AuditFailOpen lets calls go ahead when the [Auditor] reports it is not
	// ready or cannot record a call's intent. False (fail closed) refuses
	// them with an [*AuditError].
	AuditFailOpen bool
	// MaxConcurrent bounds how many processes the [Executor] has handed to
	// the [ExecFn] and not yet seen end, in all. Zero means no bound;
	// negative is refused. A call over the bound waits for a slot for
	// MaxQueueWait at most, within its context, and is then refused with
	// a [*BusyError]; nothing has started then.
	MaxConcurrent int
	// MaxConcurrentPerPrincipal bounds the same per principal: the
	// caller's, for Execute too (the approver's, not the proposer's, whose
	// name the envelope carries before Execute has checked it). Zero means no bound;
	// negative is refused.
	MaxConcurrentPerPrincipal int
	// MaxQueueWait is how long a call over a concurrency bound waits for
	// a slot, within its context. Zero means it is refused at once;
	// negative is refused.
	MaxQueueWait time.Duration
}

// Executor is the gate: it runs allowlisted commands with validated input,
// directly or through an approval. An Executor is safe for concurrent use.
// Make one with [NewExecutor]; the zero Executor refuses every name, knows no
// approval and cannot store one.
type Executor struct {
	allow  atomic.Pointer[Allowlist]
	execFn ExecFn
	store  ApprovalStore
	ttl    time.Duration
	now    func() time.Time
	policy Policy

	auditor       Auditor
	auditFailOpen bool
	slots         *slots // nil: no concurrency bound
}

// NewExecutor returns an [Executor] for cfg. It returns a [*ConfigError] if
// cfg.Allowlist is nil or cfg.ApprovalTTL, a concurrency bound or
// cfg.MaxQueueWait is negative.
func NewExecutor(cfg Config) (*Executor, error) {
	if cfg.Allowlist == nil {
		return nil, &ConfigError{Field: "Allowlist", Message: "required"}
	}
	for _, f := range []struct {
		name string
		neg  bool
	}{
		{"ApprovalTTL", cfg.ApprovalTTL < 0},
		{"MaxConcurrent", cfg.MaxConcurrent < 0},
		{"MaxConcurrentPerPrincipal", cfg.MaxConcurrentPerPrincipal < 0},
		{"MaxQueueWait", cfg.MaxQueueWait < 0},
	} {
		if f.neg {
			return nil, &ConfigError{Field: f.name, Message: "must not be negative"}
		}
	}
	x := &Executor{
		execFn: cfg.ExecFn,
		store:  cfg.Store,
		ttl:    cfg.ApprovalTTL,
		now:    cfg.Now,
		policy: cfg.Policy,

		auditor:       cfg.Auditor,
		auditFailOpen: cfg.AuditFailOpen,
	}
	if x.execFn == nil {
		x.execFn = DefaultExecFn
	}
	if x.now == nil {
		x.now = time.Now
	}
	if x.ttl == 0 {
		x.ttl = DefaultApprovalTTL
	}
	if x.store == nil {
		x.store = NewMemoryStore(MemoryStoreOptions{Now: x.now})
	}
	if cfg.MaxConcurrent > 0 || cfg.MaxConcurrentPerPrincipal > 0 {
		x.slots = newSlots(cfg.MaxConcurrent, cfg.MaxConcurrentPerPrincipal, cfg.MaxQueueWait)
	}
	x.allow.Store(cfg.Allowlist)
	return x, nil
}

// The zero Executor is usable and refuses everything: it has no allowlist,
// and no approvals are pending in the store it lacks. These accessors give
// it the defaults NewExecutor would.

func (x *Executor) clock() time.Time {
	if x.now == nil {
		return time.Now()
	}
	return x.now()
}

func (x *Executor) spawner() ExecFn {
	if x.execFn == nil {
		return DefaultExecFn
	}
	return x.execFn
}

// zeroStore is the store of a zero [Executor]: it holds nothing and accepts
// nothing.
type zeroStore struct{}

func (zeroStore) Save(context.Context, Record) error { return ErrStoreFull }
func (zeroStore) Take(context.Context, string) (Record, error) {
	return Record{}, ErrNoRecord
}
func (zeroStore) Delete(context.Context, string) (bool, error) { return false, nil }

func (x *Executor) approvals() ApprovalStore {
	if x.store == nil {
		return zeroStore{}
	}
	return x.store
}

// SetAllowlist replaces the [Executor]'s allowlist atomically. Calls that have
// already been validated finish with the spec they were validated against;
// pending approvals are re-checked against a at Execute. A nil a refuses
// every name.
func (x *Executor) SetAllowlist(a *Allowlist) {
	x.allow.Store(a)
}

// Allowlist returns the [Executor]'s current allowlist, which may be nil.
func (x *Executor) Allowlist() *Allowlist {
	return x.allow.Load()
}

// Proposer returns a [Proposer] that always uses the [Executor]'s current
// allowlist.
func (x *Executor) Proposer() *Proposer {
	return &Proposer{current: &x.allow}
}

// Run looks name up, validates input, asks the [Policy], and runs the
// command now. It is Submit with [SubmitOptions.NoPropose].
//
// A refusal returns an error and starts nothing: [*NotFoundError] for a name
// that is not allowlisted, [*ValidationError] for refused input,
// [*PolicyError] when the Policy denies the call or requires an approval
// (use Submit, or Propose), [*BusyError] when a concurrency bound is
// reached, [*AuditError] when the [Auditor] cannot record the call's intent,
// or the Policy's own error. Once a call has passed those checks, Run
// returns a [Result] and a nil error whatever the process does, including
// when it cannot be started (see [Termination]).
func (x *Executor) Run(ctx context.Context, name string, input json.RawMessage) (Result, error) {
	ev := x.newEvent(ctx, OpRun, name)
	sub, err := x.submit(ctx, name, input, SubmitOptions{NoPropose: true}, ev)
	x.finish(ctx, ev, &sub.Result, err)
	return sub.Result, err
}

// FloorRule is the [Decision.Rule], and so the [PolicyError.Rule], of a
// decision that a spec's Floor made stricter than the [Policy]'s.
const FloorRule = "floor"

// decide asks the Policy, if any, and applies the spec's Floor (see ask
// and applyFloor).
//
// principal is whose call it is: the caller's for Run and Propose, the
// proposer's, from the stored record, for Execute, where approver is the
// caller's.
func (x *Executor) decide(ctx context.Context, op string, c *call, principal, approver string) (Decision, error) {
	d, _, err := x.ask(ctx, Request{Op: op, Principal: principal, Approver: approver}, c)
	if err != nil {
		return Decision{}, err
	}
	return applyFloor(c, d), nil
}

// ask asks the Policy, if any, and normalizes its answer: anything other
// than allow, require_approval or rate_limited is a deny. Without a
// Policy every call is allowed, and asked is false.
//
// req holds who asks and how (Op, Principal, Approver, ProposeIfHeld,
// DryRun); ask fills in the call.
func (x *Executor) ask(ctx context.Context, req Request, c *call) (d Decision, asked bool, err error) {
	if x.policy == nil {
		return Decision{Action: ActionAllow}, false, nil
	}
	req.Name = c.name
	req.Spec = c.e.publicSpec()
	req.Argv = Argv{Args: append([]string(nil), c.argv.Args...), Stdin: append([]byte(nil), c.argv.Stdin...)}
	d, err = x.policy.Decide(ctx, req)
	if err != nil {
		return Decision{}, false, err
	}
	switch d.Action {
	case ActionAllow, ActionRequireApproval, ActionRateLimited:
	default:
		d.Action = ActionDeny
	}
	return d, true, nil
}

// applyFloor applies the spec's Floor to d, which it can only make
// stricter.
func applyFloor(c *call, d Decision) Decision {
	if strictness(c.e.spec.Floor) > strictness(d.Action) {
		return Decision{Action: c.e.spec.Floor, Rule: FloorRule}
	}
	return d
}

// strictness orders actions from allow to deny.
func strictness(action string) int {
	switch action {
	case ActionAllow:
		return 0
	case ActionRequireApproval:
		return 1
	default: // deny and rate_limited refuse alike
		return 2
	}
}

// spawn hands a validated call to the ExecFn and turns its Outcome into a
// Result. Before it does, it records the call's intent; a failure to
// record refuses the call, and then nothing starts. The caller holds the
// call's concurrency slot.
func (x *Executor) spawn(ctx context.Context, c *call, approvalID string, ev *Event) (Result, error) {
	id := newID()
	if err := x.recordIntent(ctx, ev, id); err != nil {
		return Result{}, err
	}
	e, argv := c.e, c.argv
	s := &e.spec
	inv := Invocation{
		Name:            c.name,
		Path:            s.Command,
		SHA256:          s.SHA256,
		Args:            append([]string(nil), argv.Args...),
		Env:             append(make([]string, 0, len(e.env)), e.env...),
		Dir:             s.Dir,
		Stdin:           argv.Stdin,
		Timeout:         s.Timeout,
		NoOutputTimeout: s.NoOutputTimeout,
		MaxOutput:       s.MaxOutput,
		Confine:         s.Confine.clone(),
	}
	at := x.clock()
	out := x.spawner()(ctx, inv)
	end := x.clock()
	r := normalize(out, s.MaxOutput)
	r.ID = id
	r.ApprovalID = approvalID
	r.Name = c.name
	r.Command = s.Command
	r.Args = argv.Args
	r.At = at
	r.Duration = end.Sub(at)
	return r, nil
}

// normalize turns what an ExecFn reported into the fields of a Result,
// enforcing the rules documented on Termination and bounding the output.
func normalize(o Outcome, maxOutput int) Result {
	stdout, sd := bound(o.Stdout, maxOutput)
	stderr, ed := bound(o.Stderr, maxOutput)
	r := Result{
		ExitCode:      o.ExitCode,
		Termination:   o.Termination,
		Signal:        o.Signal,
		PID:           o.PID,
		Stdout:        string(stdout),
		Stderr:        string(stderr),
		StdoutDropped: addCount(o.StdoutDropped, sd),
		StderrDropped: addCount(o.StderrDropped, ed),

		OutputIncomplete: o.OutputIncomplete,
	}
	switch {
	case o.Err != nil:
		r.Termination = TerminationSpawnError
		r.SpawnError = o.Err.Error()
		if r.SpawnError == "" {
			r.SpawnError = "the process could not be started"
		}
	case r.Termination == "":
		r.Termination = TerminationExit
	case r.Termination == TerminationSpawnError:
		r.SpawnError = "the process could not be started"
	case !r.Termination.known():
		r.Termination = TerminationSpawnError
		r.SpawnError = "the ExecFn reported an unknown termination"
	}
	switch r.Termination {
	case TerminationExit:
		r.Signal = ""
	case TerminationSpawnError:
		r.Signal, r.PID = "", 0
	}
	if r.Termination != TerminationSpawnError && len(o.Unconfined) > 0 {
		r.Unconfined = slices.Clone(o.Unconfined)
	}
	if r.Termination != TerminationSpawnError {
		r.Connections, r.ConnectionsDropped = boundConnections(o.Connections, o.ConnectionsDropped)
	}
	if r.Termination != TerminationExit {
		r.ExitCode = -1
	}
	r.OK = r.Termination == TerminationExit && r.ExitCode == 0
	return r
}

// boundConnections keeps the first MaxConnections of an ExecFn's
// connections, adding the rest to its dropped count (ignored if negative).
func boundConnections(cs []Connection, dropped int) ([]Connection, int) {
	dropped = max(dropped, 0)
	if len(cs) > MaxConnections {
		dropped = int(min(int64(dropped)+int64(len(cs)-MaxConnections), math.MaxInt32))
		cs = cs[:MaxConnections]
	}
	if len(cs) == 0 {
		return nil, dropped
	}
	return slices.Clone(cs), dropped
}

// addCount adds a dropped-byte count reported by an ExecFn (ignored if
// negative) to the count the Executor cut, without overflowing.
func addCount(reported, cut int64) int64 {
	reported = max(reported, 0)
	if reported > math.MaxInt64-cut {
		return math.MaxInt64
	}
	return reported + cut
}

// Execute runs the call an [Approval] stands for, at most once.
//
// Execute is the approver's side of the gate: the envelope works like a
// bearer token for the proposed call, and Propose hands it to the proposer.
// Never let the party that proposes reach Execute directly; put the person
// or system that approves in between, and authenticate it.
//
// Execute trusts nothing in ap but its ID and Digest. In order, it: refuses
// a malformed envelope (not a UUID, not a 64-hex digest, over the size
// limits) with a [*ValidationError], before the store is touched; takes the
// stored record, atomically, so that no other Execute or Reject can have
// it; refuses an expired record (the [Executor]'s clock at or past
// ExpiresAt); recomputes the digest from the envelope it was handed and
// compares it, and the digest it carries, with the stored one, in constant
// time; looks the name up again in the current allowlist and compares the
// spec's fingerprint with the stored one; validates the stored input again
// with the current schema and compares the argv and stdin it builds with
// the stored ones; asks the current [Policy]; and then runs the call with the
// current spec's environment and directory.
//
// Refusals are [*ApprovalError] ([ReasonUnknown], [ReasonExpired],
// [ReasonDigestMismatch], [ReasonPolicyChanged]), *ValidationError when the
// current schema refuses the stored input, [*PolicyError] when the Policy
// now denies the call, [*BusyError] when a concurrency bound is reached,
// [*AuditError] when the [Auditor] is not ready or cannot record the call's
// intent, or the store's error. A *BusyError, and an *AuditError from a
// [ReadyAuditor] that reports itself not ready, come before the record is
// taken and leave the approval pending; once the record has been taken,
// every refusal leaves it consumed (an intent that fails to be recorded
// even though the Auditor said it was ready among them). A call that runs returns a
// [Result] and a nil error, as with Run.
func (x *Executor) Execute(ctx context.Context, ap Approval) (Result, error) {
	ev := x.newEvent(ctx, OpExecute, "")
	res, err := x.execute(ctx, ap, ev)
	x.finish(ctx, ev, &res, err)
	return res, err
}

func (x *Executor) execute(ctx context.Context, ap Approval, ev *Event) (Result, error) {
	if err := checkEnvelope(&ap); err != nil {
		return Result{}, err
	}
	if ev != nil {
		ev.Name, ev.ApprovalID = eventString(ap.Name), ap.ID
		ev.Principal, ev.Approver = eventString(ap.Principal), eventString(PrincipalFrom(ctx))
	}
	if err := checkPrincipal(approvalSubject, PrincipalFrom(ctx)); err != nil {
		return Result{}, err
	}
	// An Auditor that cannot record refuses before the record is taken, so
	// the approval is not burned.
	if err := x.auditReady(ctx); err != nil {
		return Result{}, err
	}
	// So is a call over a concurrency bound. It counts against the
	// caller, whom the embedding program authenticated: the envelope's
	// principal is not checked until the digest below, and a forged
	// envelope must not take another principal's slots.
	release, err := x.slots.acquire(ctx, ap.Name, PrincipalFrom(ctx))
	if err != nil {
		return Result{}, err
	}
	defer release()
	rec, err := x.approvals().Take(ctx, ap.ID)
	if errors.Is(err, ErrNoRecord) {
		return Result{}, &ApprovalError{ID: ap.ID, Reason: ReasonUnknown}
	}
	if err != nil {
		return Result{}, err
	}
	stored := &rec.Approval
	if stored.ID != ap.ID {
		return Result{}, &ApprovalError{ID: ap.ID, Reason: ReasonUnknown}
	}
	// A durable store may hand back a record past its expiry.
	if !x.clock().Before(stored.ExpiresAt) {
		return Result{}, &ApprovalError{ID: ap.ID, Reason: ReasonExpired}
	}
	// The envelope must be the one proposed, field for field: both the
	// digest it carries and the digest of its fields must be the stored
	// one, and so must the digest of the stored fields.
	sent := digestEqual(ap.Digest, stored.Digest)
	fromEnvelope := digestEqual(approvalDigest(&ap, rec.Fingerprint, rec.StdinSHA256), stored.Digest)
	fromRecord := digestEqual(approvalDigest(stored, rec.Fingerprint, rec.StdinSHA256), stored.Digest)
	if !sent || !fromEnvelope || !fromRecord {
		return Result{}, &ApprovalError{ID: ap.ID, Reason: ReasonDigestMismatch}
	}
	// Everything that runs comes from the current allowlist and the stored
	// input, never from the envelope.
	cur := x.allow.Load()
	if e, _ := cur.lookup(stored.Name); e == nil || !digestEqual(saltedFingerprint(rec.Salt, e.fingerprint), rec.Fingerprint) {
		return Result{}, &ApprovalError{ID: ap.ID, Reason: ReasonPolicyChanged}
	}
	c, err := prepare(cur, stored.Name, rec.Input)
	if err != nil {
		return Result{}, err
	}
	ev.noteCall(&c)
	if !slices.Equal(c.argv.Args, stored.Args) || !digestEqual(stdinSHA256(c.argv.Stdin), rec.StdinSHA256) {
		return Result{}, &ApprovalError{ID: ap.ID, Reason: ReasonPolicyChanged}
	}
	// The policy judges the proposer's call, as it would have at Propose;
	// the caller here is the approver.
	d, err := x.decide(ctx, OpExecute, &c, stored.Principal, PrincipalFrom(ctx))
	if err != nil {
		return Result{}, err
	}
	ev.noteDecision(d)
	if d.Action != ActionAllow && d.Action != ActionRequireApproval {
		return Result{}, &PolicyError{Name: stored.Name, Action: d.Action, Rule: d.Rule}
	}
	return x.spawn(ctx, &c, ap.ID, ev)
}

// Reject withdraws a pending approval so that it can never execute. It
// reports whether a pending record was removed: false for an unknown ID,
// one already executed or rejected, or one that had expired. Reject and
// Execute race for the same record and exactly one of them wins. A
// malformed id is refused with a [*ValidationError] before the store is
// touched.
func (x *Executor) Reject(ctx context.Context, id string) (bool, error) {
	ev := x.newEvent(ctx, OpReject, "")
	var ok bool
	var err error
	if is := checkID(id); is != nil {
		err = &ValidationError{Name: approvalSubject, Issues: []Issue{*is}}
	} else if err = x.auditReady(ctx); err == nil {
		ok, err = x.approvals().Delete(ctx, id)
		if ev != nil {
			ev.ApprovalID, ev.Rejected = id, ok
		}
	}
	x.finish(ctx, ev, nil, err)
	return ok, err
}
