package execgate

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/execgate/execgate/internal/inputrules"
	"github.com/execgate/execgate/internal/strictjson"
)

// Proposal is the result of a spawn-free check: what a call would run.
// It cannot be executed; it exists so that code which must never spawn a
// process (a planner, a WebAssembly build, a dry run) can use the gate's
// validation. Digest is the proposal digest: it changes when anything that
// decides what runs changes. It is salted with a random key of the process,
// so it is stable within one process only and reveals nothing about the
// command's environment.
type Proposal struct {
	Name    string   `json:"name"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Stdin   []byte   `json:"stdin,omitempty"`
	Digest  string   `json:"digest"`
}

// Proposer validates calls against an allowlist without any means to run
// them: it holds no store and no [ExecFn]. The zero Proposer refuses every
// name. A Proposer is safe for concurrent use.
type Proposer struct {
	static  *Allowlist
	current *atomic.Pointer[Allowlist]
}

// NewProposer returns a [Proposer] for a.
func NewProposer(a *Allowlist) *Proposer {
	return &Proposer{static: a}
}

func (p *Proposer) allowlist() *Allowlist {
	if p == nil {
		return nil
	}
	if p.current != nil {
		return p.current.Load()
	}
	return p.static
}

// Check looks name up and validates input exactly as Run and Propose do,
// and reports what would run. It returns a [*NotFoundError] for a name that is
// not allowlisted and a [*ValidationError] for refused input. It asks no
// [Policy] and starts nothing.
func (p *Proposer) Check(name string, input json.RawMessage) (Proposal, error) {
	c, err := prepare(p.allowlist(), name, input)
	if err != nil {
		return Proposal{}, err
	}
	return Proposal{
		Name:    name,
		Command: c.e.spec.Command,
		Args:    c.argv.Args,
		Stdin:   c.argv.Stdin,
		Digest:  proposalDigestSalted(c.e.procFP, c.argv),
	}, nil
}

// call is a validated call: the requested name, the entry that serves it,
// and the argv its schema built.
type call struct {
	name string
	e    *entry
	argv Argv
}

// prepare is the one path from a name and an input to a validated call:
// lookup first (default deny), then the size cap, then the spec's schema,
// then the checks every argv must pass whatever schema built it. Run,
// Propose, Execute and Proposer.Check all go through it.
func prepare(a *Allowlist, name string, input json.RawMessage) (call, error) {
	e, sub := a.lookup(name)
	if e == nil {
		return call{}, &NotFoundError{Name: name}
	}
	if msg := inputrules.InputSizeProblem(len(input)); msg != "" {
		return call{}, &ValidationError{Name: name, Issues: []Issue{{Message: msg}}}
	}
	argv, err := parseInput(e, sub, input)
	if err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			// Schemas need not know the command's name.
			out := *ve
			out.Name = name
			if len(out.Issues) == 0 {
				out.Issues = []Issue{{Message: "input refused"}}
			}
			return call{}, &out
		}
		// A schema that fails without a ValidationError still refuses;
		// its message is not shown, it may repeat the input.
		return call{}, &ValidationError{Name: name, Issues: []Issue{{Message: "input refused by the command's schema"}}}
	}
	// Whatever the schema, copy the argv so that nothing the schema or the
	// caller holds can change it later, and refuse NUL, which no argv can
	// carry.
	args, ok := cloneArgs(argv.Args)
	if !ok {
		return call{}, &ValidationError{Name: name, Issues: []Issue{{Field: "args", Message: "an argument contains a NUL byte"}}}
	}
	out := Argv{Args: args}
	if len(argv.Stdin) > 0 {
		out.Stdin = append([]byte(nil), argv.Stdin...)
	}
	return call{name: name, e: e, argv: out}, nil
}

// cloneArgs copies args into new memory, the strings included, and
// reports false if one of them holds a NUL byte. The strings share one
// new allocation, which nothing else refers to.
func cloneArgs(args []string) ([]string, bool) {
	n := 0
	for _, a := range args {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, false
		}
		n += len(a)
	}
	out := make([]string, len(args))
	var b strings.Builder
	b.Grow(n)
	for _, a := range args {
		b.WriteString(a)
	}
	all, off := b.String(), 0
	for i, a := range args {
		out[i] = all[off : off+len(a)]
		off += len(a)
	}
	return out, true
}

// parseInput runs the spec's schema on input. A schema that panics refuses
// the input instead of taking the caller's process down; the panic value
// is not shown, it may quote the input.
func parseInput(e *entry, sub string, input json.RawMessage) (argv Argv, err error) {
	defer func() {
		if r := recover(); r != nil {
			argv, err = Argv{}, errors.New("schema panicked")
		}
	}()
	if e.spec.Dispatch {
		// NewAllowlist made sure a dispatcher's schema is a subcommandParser.
		return e.spec.Args.(subcommandParser).parseSubcommand(sub, input)
	}
	return e.spec.Args.Parse(input)
}

// Approval is the envelope of a proposed call, for a person or another
// system to approve. It carries the command, the argv, of the call's
// stdin its size, SHA-256 and a preview of its start ([StdinInfo]), so
// that an approver sees what the command will read, and the spec's
// confinement ([ConfinementInfo], with the egress allowlist in Egress),
// so that an approver sees what it may touch; never the environment or
// the raw JSON input. [Approval.Describe] writes it as text for a person.
//
// An Approval authorizes nothing by itself. [Executor.Execute] takes the
// private record stored under ID, checks that this envelope, recomputed,
// gives the same Digest as the stored one, and re-checks the record
// against the current allowlist. Changing any field makes Execute refuse.
type Approval struct {
	// ID is a UUIDv7 naming the stored record.
	ID string `json:"id"`
	// Principal is who proposed the call ([PrincipalFrom] the context of
	// Propose), or "". Execute asks the [Policy] about this principal's
	// call, not about the approver's.
	Principal string `json:"principal"`
	// Name is the logical command name.
	Name string `json:"name"`
	// Command is the absolute path of the executable.
	Command string `json:"command"`
	// Args are the arguments after the program name.
	Args []string `json:"args"`
	// Digest is the approval digest, 64 lowercase hex digits.
	Digest string `json:"digest"`
	// Reason is the free-form text the proposer gave.
	Reason string `json:"reason"`
	// PolicyVersion is the spec's PolicyVersion when it was proposed.
	PolicyVersion string `json:"policyVersion"`
	// Confine is what the command may touch once it runs, when its spec
	// has a [Confinement]: its paths, network, limits and whether every
	// part is required. Nil means the spec has none: the command runs
	// with the gate's own rights.
	Confine *ConfinementInfo `json:"confine,omitempty"`
	// Egress is the network the call may reach, when its spec's
	// [Confinement] has an [Egress]: the hosts the approver lets it
	// connect to. Nil means the spec has none (see the spec itself for
	// whether the command has the caller's network or none).
	Egress *Egress `json:"egress,omitempty"`
	// Stdin describes the call's stdin, when it has any: its size, its
	// SHA-256 and, for text, a preview of its start. Nil means the call
	// reads no stdin.
	Stdin *StdinInfo `json:"stdin,omitempty"`
	// CreatedAt is when it was proposed, by the [Executor]'s clock.
	CreatedAt time.Time `json:"createdAt"`
	// ExpiresAt is when it stops being executable: it is valid while the
	// [Executor]'s clock is before ExpiresAt.
	ExpiresAt time.Time `json:"expiresAt"`
}

// Propose looks name up, validates input and asks the [Policy] exactly as Run
// does, but instead of running the call it stores a private [Record] and
// returns an [Approval] for a person or another system to approve. Execute
// runs it, once. reason is free text shown to the approver, at most
// [MaxReasonBytes] of UTF-8. To run a call when the Policy allows it and
// propose it only when the Policy holds it, use Submit.
//
// The Record keeps a private copy of input: changing the caller's buffer
// afterwards changes nothing. A refusal returns [*NotFoundError],
// [*ValidationError] (also for a call whose argv exceeds [MaxApprovalArgs] or
// [MaxApprovalArgBytes], or a bad reason), [*PolicyError] when the Policy
// denies, or the store's error, such as [ErrStoreFull].
func (x *Executor) Propose(ctx context.Context, name string, input json.RawMessage, reason string) (Approval, error) {
	ev := x.newEvent(ctx, OpPropose, name)
	ap, err := x.propose(ctx, name, input, reason, ev)
	if ev != nil {
		ev.ApprovalID = ap.ID
	}
	x.finish(ctx, ev, nil, err)
	return ap, err
}

func (x *Executor) propose(ctx context.Context, name string, input json.RawMessage, reason string, ev *Event) (Approval, error) {
	c, err := prepare(x.allow.Load(), name, input)
	if err != nil {
		return Approval{}, err
	}
	ev.noteCall(&c)
	if issues := checkArgsAndReason(c.argv.Args, reason); len(issues) > 0 {
		return Approval{}, &ValidationError{Name: name, Issues: issues}
	}
	principal := PrincipalFrom(ctx)
	if err := checkPrincipal(name, principal); err != nil {
		return Approval{}, err
	}
	d, err := x.decide(ctx, OpPropose, &c, principal, "")
	if err != nil {
		return Approval{}, err
	}
	ev.noteDecision(d)
	if d.Action != ActionAllow && d.Action != ActionRequireApproval {
		return Approval{}, &PolicyError{Name: name, Action: d.Action, Rule: d.Rule}
	}
	return x.hold(ctx, &c, principal, reason, input)
}

// newID returns a new UUIDv7, or a random UUID if the clock cannot give one.
func newID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// maxApprovalJSON bounds the size of an encoded [Approval] that
// UnmarshalJSON reads: room for the largest argv the envelope limits
// allow, escaped; for the largest reason, stdin preview and confinement
// (which NewAllowlist bounds) an approval can show, each of their bytes
// escaped as encoding/json may escape it (six bytes, as in "\u003c");
// and for the other fields.
const maxApprovalJSON = 2*MaxApprovalArgs*MaxApprovalArgBytes + 6*(MaxReasonBytes+MaxStdinPreview+maxShownConfinementBytes) + 64<<10

// UnmarshalJSON decodes an [Approval] strictly, so that an envelope that was
// changed on its way back from the approver is refused rather than quietly
// reshaped: unknown fields (an added "env", say), duplicate keys, keys that
// match a field only case-insensitively, values of the wrong type, NUL
// bytes, invalid UTF-8 and trailing data are refused with a
// [*ValidationError] naming the field. JSON null leaves ap unchanged. A
// decoded Approval still authorizes nothing until Execute has checked it
// against its stored record.
func (ap *Approval) UnmarshalJSON(data []byte) error {
	if string(trimJSONSpace(data)) == "null" {
		return nil // as encoding/json does for values: null changes nothing
	}
	type plain Approval // the same fields, without this method
	var p plain
	err := strictjson.Options{MaxSize: maxApprovalJSON}.Decode(data, &p)
	var se *strictjson.Error
	if errors.As(err, &se) {
		ve := &ValidationError{Name: approvalSubject}
		for _, pr := range se.Problems {
			ve.Issues = append(ve.Issues, Issue{Field: pr.Path, Message: pr.Message})
		}
		return ve
	}
	if err != nil {
		return err
	}
	*ap = Approval(p)
	return nil
}
