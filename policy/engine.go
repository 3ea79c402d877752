package policy

import (
	"context"
	"encoding/binary"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/execgate/execgate"
)

// Defaults for zero [Options] fields.
const (
	// DefaultMaxGrantDuration is the longest grant an [Engine] accepts when
	// [Options.MaxGrantDuration] is zero.
	DefaultMaxGrantDuration = 24 * time.Hour
	// DefaultMaxGrants is how many live grants an [Engine] holds when
	// [Options.MaxGrants] is zero.
	DefaultMaxGrants = 1000
	// DefaultMaxPrincipals is how many principals' rate buckets an [Engine]
	// remembers when [Options.MaxPrincipals] is zero.
	DefaultMaxPrincipals = 4096
	// DefaultMaxLoopEntries is how many distinct calls an [Engine] watches
	// for loops when [Options.MaxLoopEntries] is zero.
	DefaultMaxLoopEntries = 4096
)

// Options configures an [Engine]. The zero Options is valid: every field's
// zero value picks the default it documents.
type Options struct {
	// Now is the [Engine]'s clock, for grant expiry and rate limits. Nil
	// means time.Now.
	Now func() time.Time

	// MaxGrantDuration is the longest time from now to a grant's expiry
	// that [Grant] accepts. Zero means [DefaultMaxGrantDuration]; negative is
	// refused.
	MaxGrantDuration time.Duration

	// MaxGrants is how many unexpired grants the [Engine] holds at once;
	// [Grant] refuses more with [ErrTooManyGrants]. Zero means
	// [DefaultMaxGrants]; negative is refused.
	MaxGrants int

	// MaxPrincipals bounds how many principals' per-minute buckets the
	// [Engine] remembers. When a new principal needs one and the Engine is
	// full, the bucket used least recently is forgotten; a principal
	// whose bucket was forgotten starts again with a full one. Set it above
	// the number of principals active in any minute. Zero means
	// [DefaultMaxPrincipals]; negative is refused.
	MaxPrincipals int

	// MaxLoopEntries bounds how many distinct calls (principal, name, argv
	// and stdin) the [Engine] remembers for loop detection, forgetting the
	// one used least recently when full. Zero means
	// [DefaultMaxLoopEntries]; negative is refused.
	MaxLoopEntries int
}

func (o *Options) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

func (o *Options) maxGrantDuration() time.Duration {
	if o.MaxGrantDuration == 0 {
		return DefaultMaxGrantDuration
	}
	return o.MaxGrantDuration
}

func (o *Options) maxGrants() int {
	if o.MaxGrants == 0 {
		return DefaultMaxGrants
	}
	return o.MaxGrants
}

func (o *Options) maxPrincipals() int {
	if o.MaxPrincipals == 0 {
		return DefaultMaxPrincipals
	}
	return o.MaxPrincipals
}

func (o *Options) maxLoopEntries() int {
	if o.MaxLoopEntries == 0 {
		return DefaultMaxLoopEntries
	}
	return o.MaxLoopEntries
}

// check returns a *ConfigError for the first field that cannot be used.
func (o *Options) check() error {
	switch {
	case o.MaxGrantDuration < 0:
		return &ConfigError{Path: "options.MaxGrantDuration", Message: "must not be negative"}
	case o.MaxGrants < 0:
		return &ConfigError{Path: "options.MaxGrants", Message: "must not be negative"}
	case o.MaxPrincipals < 0:
		return &ConfigError{Path: "options.MaxPrincipals", Message: "must not be negative"}
	case o.MaxLoopEntries < 0:
		return &ConfigError{Path: "options.MaxLoopEntries", Message: "must not be negative"}
	}
	return nil
}

// Engine is a rule-based [execgate.Policy]: named policies chosen by
// principal, ordered rules over command names, temporary grants, and rate
// limits. See the package documentation for how it decides.
//
// The zero Engine is valid and denies every call until rules are swapped
// in; it uses the defaults of the zero [Options]. An Engine is safe for
// concurrent use and must not be copied after first use.
type Engine struct {
	opts  Options
	rules atomic.Pointer[ruleSet]

	grantMu sync.Mutex                   // serializes changes to grants
	grants  atomic.Pointer[[]*liveGrant] // immutable once stored; creation order

	limits limits

	seedOnce sync.Once
	seed     maphash.Seed
}

// Engine implements [execgate.Policy].
var _ execgate.Policy = (*Engine)(nil)

// New returns an [Engine] that decides with policies and opts. It returns a
// [*ConfigError], and no Engine, if a policy, rule or option cannot be
// used: a malformed pattern, an unknown action, a duplicate name or
// principal pattern, an impossible rate limit, or a negative option. A nil
// or empty policies denies every call.
func New(policies []Policy, opts Options) (*Engine, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	rs, err := compile(policies)
	if err != nil {
		return nil, err
	}
	e := &Engine{opts: opts}
	e.rules.Store(rs)
	return e, nil
}

// Swap replaces the [Engine]'s policies atomically: the next decision uses
// them, decisions already under way finish with the old ones, and no lock
// is held across a decision. If policies cannot be used, Swap returns a
// [*ConfigError] and the policies in force stay.
//
// Grants and rate-limit state survive a swap. A principal's per-minute
// bucket keeps its tokens and takes the new rate and burst of whatever
// policy governs it next; a policy's budget keeps what has been spent as
// long as a policy of the same name still has a budget, and is dropped
// otherwise; loop history is kept per call and judged with the new
// policy's [Loop].
func (e *Engine) Swap(policies []Policy) error {
	rs, err := compile(policies)
	if err != nil {
		return err
	}
	e.rules.Store(rs)
	e.limits.keepBudgets(rs)
	return nil
}

// Decide implements [execgate.Policy]. It never returns an error: every
// call gets a Decision whose [Rule] says what decided it. It takes the
// principal from req.Principal and matches req.Name, the requested name,
// not req.Spec.Name. The ctx is not used.
func (e *Engine) Decide(_ context.Context, req execgate.Request) (execgate.Decision, error) {
	return e.decide(&req), nil
}

func (e *Engine) decide(req *execgate.Request) execgate.Decision {
	rs := e.rules.Load()
	if rs == nil {
		return execgate.Decision{Action: execgate.ActionDeny, Rule: DefaultRule}
	}
	p := rs.policyFor(req.Principal)
	if p == nil {
		return execgate.Decision{Action: execgate.ActionDeny, Rule: DefaultRule}
	}
	r := p.ruleFor(req.Name)
	if r == nil {
		return execgate.Decision{Action: execgate.ActionDeny, Rule: p.defaultRule}
	}
	d := execgate.Decision{Action: r.action, Rule: r.id}
	var now time.Time
	switch r.action {
	case execgate.ActionDeny:
		return d
	case execgate.ActionRequireApproval:
		var id string
		if gs := e.grants.Load(); gs != nil && len(*gs) > 0 {
			now = e.opts.now()
			id = e.grantFor(*gs, req.Principal, req.Name, now)
		}
		if id != "" {
			d.Action, d.Grant = execgate.ActionAllow, id
		} else if req.Op != execgate.OpPropose && !req.ProposeIfHeld {
			// Run refuses it and Execute was counted at Propose; Submit
			// proposes it now, and is counted like Propose.
			return d
		}
	}
	// A proposed call was counted when it was proposed; asking again at
	// Execute must neither count it twice nor burn an approval a person
	// already gave.
	// A dry run (Executor.Decide) must count nothing, and a limit can
	// only be judged by counting.
	if p.limit == nil || req.Op == execgate.OpExecute || req.DryRun {
		return d
	}
	if now.IsZero() {
		now = e.opts.now()
	}
	var key uint64
	if p.limit.loopMax > 0 {
		key = e.callKey(req)
	}
	if rule := e.limits.admit(p.limit, p.name, req.Principal, key, now, &e.opts); rule != "" {
		return execgate.Decision{Action: execgate.ActionRateLimited, Rule: rule}
	}
	return d
}

// callKey hashes what makes two calls the same for loop detection: the
// principal, the requested name, the argv and stdin. Every part is length
// prefixed, so different calls cannot run together into the same bytes.
// The seed is random per Engine, so callers cannot aim for collisions.
func (e *Engine) callKey(req *execgate.Request) uint64 {
	e.seedOnce.Do(func() { e.seed = maphash.MakeSeed() })
	var h maphash.Hash
	h.SetSeed(e.seed)
	writeString(&h, req.Principal)
	writeString(&h, req.Name)
	writeLen(&h, len(req.Argv.Args))
	for _, a := range req.Argv.Args {
		writeString(&h, a)
	}
	writeLen(&h, len(req.Argv.Stdin))
	_, _ = h.Write(req.Argv.Stdin)
	return h.Sum64()
}

func writeLen(h *maphash.Hash, n int) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	_, _ = h.Write(b[:])
}

func writeString(h *maphash.Hash, s string) {
	writeLen(h, len(s))
	_, _ = h.WriteString(s)
}
