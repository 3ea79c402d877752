package policy

import (
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/execgate/execgate/internal/inputrules"
)

// Grant lets matching principals run matching commands without an
// approval until it expires: a call their policy's rules send to
// require_approval is allowed instead, and the Decision names the grant.
// A grant never overturns a deny, never applies to a call no rule
// matches, and does not lift rate limits. The field names in the yaml tags
// are those of a "grants:" entry in a configuration file.
type Grant struct {
	// ID identifies the grant in decisions, Grants and Revoke. Empty asks
	// [Grant] to choose a new UUIDv7; otherwise it is 1 to 128 bytes of
	// ASCII letters, digits, '_', '-', '.' and ':', and no live grant may
	// already have it.
	ID string `yaml:"id"`

	// Principal is the pattern of the principals the grant covers, with
	// the syntax of [Policy.Principal] ("alice", "team-*", "*"). Required.
	Principal string `yaml:"principal"`

	// Tool is the pattern of the requested names the grant covers, with
	// the syntax of [Rule.Tools] ("terraform.plan", "gh.*"). Required.
	Tool string `yaml:"tool"`

	// Expires is when the grant stops applying: it applies while the
	// [Engine]'s clock is before Expires. It must be after now and at most
	// [Options.MaxGrantDuration] from now.
	Expires time.Time `yaml:"expires"`

	// Reason says why the grant exists, for people reading Grants. It is
	// optional, at most 1024 bytes, without control characters.
	Reason string `yaml:"reason"`

	// Created is set by [Grant] to the [Engine]'s clock; a value passed in is
	// ignored.
	Created time.Time `yaml:"-"`

	// Exact makes Principal and Tool names instead of patterns: the grant
	// covers the principal that is exactly Principal, any principal the
	// Executor accepts ('*', '?' and brackets are matched as written),
	// calling exactly the name Tool, a command name such as a
	// dispatcher's "terraform.plan", and nothing else. A program that
	// grants what a person approved sets it, so that a principal or a
	// name never covers more than the one the person saw. A
	// configuration file's grants are patterns.
	Exact bool `yaml:"-"`

	// GrantedBy is who made the grant, for people reading Grants: the
	// approver who approved a call and granted its tool, for example. It
	// is optional, and a principal as the Executor accepts one.
	GrantedBy string `yaml:"-"`

	// Approval is the ID of the approval whose decision made the grant,
	// or "" for a grant made otherwise (a configuration file's). It is
	// optional, with the syntax of ID.
	Approval string `yaml:"-"`
}

// ErrTooManyGrants is returned by [Grant] when the [Engine] already holds
// [Options.MaxGrants] unexpired grants.
var ErrTooManyGrants = errors.New("policy: too many grants")

// ErrDuplicateGrant is returned by [Grant] when a live grant already has the
// requested ID.
var ErrDuplicateGrant = errors.New("policy: a grant with this ID already exists")

// maxReasonLen bounds [Grant.Reason].
const maxReasonLen = 1024

type liveGrant struct {
	g         Grant
	principal glob
	tool      glob
}

// Grant adds a grant and returns its ID. It refuses, creating nothing, a
// grant with a malformed pattern (for an exact grant, a principal the
// Executor would refuse or a malformed command name), a malformed ID,
// reason, GrantedBy or Approval, or an expiry that is not
// after now or more than [Options.MaxGrantDuration] from now (a
// [*ConfigError] with a Path such as "grant.expires"), an ID that is
// already live ([ErrDuplicateGrant]), and a grant over [Options.MaxGrants]
// ([ErrTooManyGrants]). Expired grants are pruned first and do not count.
func (e *Engine) Grant(g Grant) (string, error) {
	pg, tg, err := grantGlobs(&g)
	if err != nil {
		return "", err
	}
	if msg := checkGrantID(g.ID); msg != "" {
		return "", &ConfigError{Path: "grant.id", Message: msg}
	}
	if msg := checkGrantID(g.Approval); msg != "" {
		return "", &ConfigError{Path: "grant.approval", Message: msg}
	}
	if msg := inputrules.PrincipalProblem(g.GrantedBy); msg != "" {
		return "", &ConfigError{Path: "grant.granted_by", Message: msg}
	}
	if len(g.Reason) > maxReasonLen {
		return "", &ConfigError{Path: "grant.reason", Message: fmt.Sprintf("must be at most %d bytes", maxReasonLen)}
	}
	for _, r := range g.Reason {
		if unicode.IsControl(r) {
			return "", &ConfigError{Path: "grant.reason", Message: "must not contain control characters"}
		}
	}
	now := e.opts.now()
	switch {
	case !now.Before(g.Expires):
		return "", &ConfigError{Path: "grant.expires", Message: "must be in the future"}
	case g.Expires.Sub(now) > e.opts.maxGrantDuration():
		return "", &ConfigError{Path: "grant.expires", Message: fmt.Sprintf("is %s from now; at most %s", g.Expires.Sub(now).Round(time.Second), e.opts.maxGrantDuration())}
	}
	g.Created = now

	e.grantMu.Lock()
	defer e.grantMu.Unlock()
	live := e.liveGrants(now)
	if g.ID == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return "", fmt.Errorf("policy: new grant ID: %w", err)
		}
		g.ID = id.String()
	}
	if slices.ContainsFunc(live, func(l *liveGrant) bool { return l.g.ID == g.ID }) {
		return "", ErrDuplicateGrant
	}
	if len(live) >= e.opts.maxGrants() {
		return "", ErrTooManyGrants
	}
	live = append(live, &liveGrant{g: g, principal: pg, tool: tg})
	e.grants.Store(&live)
	return g.ID, nil
}

// grantGlobs checks g's principal and tool, as patterns or, when g.Exact
// is set, as names, and returns what matches them.
func grantGlobs(g *Grant) (principal, tool glob, err error) {
	if g.Exact {
		switch {
		case g.Principal == "":
			return glob{}, glob{}, &ConfigError{Path: "grant.principal", Message: "an exact grant names a principal; it must not be empty"}
		case inputrules.PrincipalProblem(g.Principal) != "":
			return glob{}, glob{}, &ConfigError{Path: "grant.principal", Message: inputrules.PrincipalProblem(g.Principal)}
		}
		if err := inputrules.NameProblem(g.Tool); err != nil {
			return glob{}, glob{}, &ConfigError{Path: "grant.tool", Message: "an exact grant names a command: " + err.Error()}
		}
		return exactGlob(g.Principal), exactGlob(g.Tool), nil
	}
	principal, err = compilePrincipalGlob(g.Principal)
	if err != nil {
		return glob{}, glob{}, &ConfigError{Path: "grant.principal", Message: err.Error()}
	}
	tool, err = compileToolGlob(g.Tool)
	if err != nil {
		return glob{}, glob{}, &ConfigError{Path: "grant.tool", Message: err.Error()}
	}
	return principal, tool, nil
}

// Revoke removes the grant with the given ID, with effect on the next
// decision. It reports whether an unexpired grant was removed: false for
// an unknown ID, one already revoked, or one that had expired.
func (e *Engine) Revoke(id string) bool {
	e.grantMu.Lock()
	defer e.grantMu.Unlock()
	live := e.liveGrants(e.opts.now())
	i := slices.IndexFunc(live, func(l *liveGrant) bool { return l.g.ID == id })
	if i >= 0 {
		live = slices.Delete(live, i, i+1)
	}
	e.grants.Store(&live)
	return i >= 0
}

// Grants returns the unexpired grants, oldest first. Expired grants are
// pruned and never listed.
func (e *Engine) Grants() []Grant {
	e.grantMu.Lock()
	defer e.grantMu.Unlock()
	live := e.liveGrants(e.opts.now())
	e.grants.Store(&live)
	out := make([]Grant, len(live))
	for i, l := range live {
		out[i] = l.g
	}
	return out
}

// liveGrants returns a new slice of the grants unexpired at now. The
// caller holds grantMu.
func (e *Engine) liveGrants(now time.Time) []*liveGrant {
	var cur []*liveGrant
	if p := e.grants.Load(); p != nil {
		cur = *p
	}
	live := make([]*liveGrant, 0, len(cur)+1)
	for _, l := range cur {
		if now.Before(l.g.Expires) {
			live = append(live, l)
		}
	}
	return live
}

// grantFor returns the ID of the oldest grant in gs that is unexpired at
// now and covers principal and name, or "". It prunes expired grants when
// it meets one and no other goroutine is changing the grants.
func (e *Engine) grantFor(gs []*liveGrant, principal, name string, now time.Time) string {
	expired := false
	id := ""
	for _, l := range gs {
		if !now.Before(l.g.Expires) {
			expired = true
			continue
		}
		if l.tool.match(name) && l.principal.match(principal) {
			id = l.g.ID
			break
		}
	}
	if expired && e.grantMu.TryLock() {
		live := e.liveGrants(now)
		e.grants.Store(&live)
		e.grantMu.Unlock()
	}
	return id
}

// checkGrantID returns why id cannot name a grant, or "". Empty is fine:
// Grant chooses one.
func checkGrantID(id string) string {
	if len(id) > 128 {
		return "must be at most 128 bytes"
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !isNameByte(c) && c != ':' {
			return fmt.Sprintf("%q: only ASCII letters, digits, '_', '-', '.' and ':' are allowed", id)
		}
	}
	return ""
}
