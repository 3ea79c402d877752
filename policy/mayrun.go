package policy

import (
	"strings"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/internal/inputrules"
)

// MayRun reports whether the [Engine] could allow a call of the requested
// name by principal, or hold it for a person's approval: whether, in the
// policy that governs principal, the first rule whose Tools match name
// allows it or requires an approval. It reports false when no policy
// governs principal, when no rule of that policy matches name, and when
// the rule that matches denies: every call of name by principal is then
// denied, whatever its arguments.
//
// Rules match names only, so the answer holds for every call of name
// under the policies in force; after [Engine.Swap], ask again. Rate limits
// do not change it, since a call they refuse now may be allowed later,
// and neither do grants, which only turn a require_approval, already
// counted, into an allow.
func (e *Engine) MayRun(principal, name string) bool {
	c := e.policyOf(principal)
	if c == nil {
		return false
	}
	r := c.ruleFor(name)
	return r != nil && r.action != execgate.ActionDeny
}

// MayServe reports whether principal could have some call that spec
// serves allowed or held for approval, by the [Engine] and by the spec's
// Floor together, for a server that lists to each caller only the tools
// it could use. spec is as [execgate.Allowlist.Lookup] and Specs report
// it, with its Floor filled in. a is the allowlist that holds spec; nil
// means one with no other spec.
//
//   - A spec whose Floor is [execgate.ActionDeny] serves nothing: the
//     Executor refuses every call of it.
//   - An ordinary spec serves the name spec.Name: MayRun decides.
//   - A dispatcher (spec.Dispatch) serves every name spec.Name+"."+sub,
//     sub a subcommand, that a does not serve with a spec of its own.
//     MayServe reports false only when the rules certainly decide none of
//     those names with an allow or a require_approval: every rule that
//     could allow one of them is shadowed by earlier rules for all the
//     names it matches, or names only names served elsewhere. When it
//     cannot tell, it reports true, so that a tool is listed too often
//     rather than hidden from a caller who could use it.
//
// Like MayRun, it judges names only, under the policies in force.
func (e *Engine) MayServe(principal string, spec execgate.CommandSpec, a *execgate.Allowlist) bool {
	if spec.Floor == execgate.ActionDeny {
		return false
	}
	if !spec.Dispatch {
		return e.MayRun(principal, spec.Name)
	}
	c := e.policyOf(principal)
	if c == nil {
		return false
	}
	ownSpec := func(name string) bool {
		s, ok := a.Lookup(name)
		return ok && s.Name == name
	}
	return c.mayDispatch(spec.Name, ownSpec)
}

// policyOf returns the policy in force that governs principal, or nil.
func (e *Engine) policyOf(principal string) *compiled {
	rs := e.rules.Load()
	if rs == nil {
		return nil
	}
	return rs.policyFor(principal)
}

// mayDispatch reports whether a rule of c could allow, or hold for
// approval, a name that the dispatcher d serves: d+"."+sub for a
// subcommand sub, other than the names for which ownSpec reports true.
// It errs towards true (see MayServe). A name's first matching rule
// decides it, so a rule counts only for the names no earlier rule
// matches; a pattern without wildcards names one name, which is judged
// exactly, and a pattern with wildcards is taken to reach a name unless
// an earlier pattern is the same pattern or matches every name of d.
func (c *compiled) mayDispatch(d string, ownSpec func(string) bool) bool {
	for i := range c.rules {
		r := &c.rules[i]
		if r.action == execgate.ActionDeny {
			continue
		}
		for _, g := range r.tools {
			if !g.matchesSubcommandOf(d) {
				continue
			}
			if g.literal {
				if inputrules.ValidSubcommand(g.pat[len(d)+1:]) && !ownSpec(g.pat) && c.ruleFor(g.pat) == r {
					return true
				}
				continue
			}
			if !c.shadowed(i, d, g) {
				return true
			}
		}
	}
	return false
}

// shadowed reports whether the rules before c.rules[i] certainly match
// every name of the dispatcher d that g matches, so that g decides none.
func (c *compiled) shadowed(i int, d string, g glob) bool {
	for _, r := range c.rules[:i] {
		for _, p := range r.tools {
			if p.pat == g.pat || p.matchesEverySubcommandOf(d) {
				return true
			}
		}
	}
	return false
}

// The names a dispatcher d serves are d, '.', then a subcommand: a
// letter from a to z, then letters from a to z, digits and '-'. The two
// functions below judge a pattern against all of them at once, without
// the bound on a subcommand's length: a pattern that matches only names
// over it is taken to match one, which errs towards listing.

// matchesSubcommandOf reports whether g matches some name d+"."+sub,
// sub a subcommand.
//
// It walks g and the names together: a state is a position in g and a
// position in the names, where 0 to len(d) are positions in d+"." and
// len(d)+1 and len(d)+2 are "before the subcommand's first character"
// and "within the subcommand", the only state in which a name may end.
func (g glob) matchesSubcommandOf(d string) bool {
	pre := d + "."
	first, rest := len(pre), len(pre)+1
	// next returns the position after the byte b at name position k, or -1.
	next := func(k int, b byte) int {
		switch {
		case k < first:
			if b == pre[k] {
				return k + 1
			}
		case k == first:
			if 'a' <= b && b <= 'z' {
				return rest
			}
		default:
			if 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '-' {
				return rest
			}
		}
		return -1
	}
	// skip returns the position after any one byte at name position k.
	skip := func(k int) int {
		if k < first {
			return k + 1
		}
		return rest
	}
	width := rest + 1
	seen := make([]bool, (len(g.pat)+1)*width)
	var walk func(i, k int) bool
	walk = func(i, k int) bool {
		if seen[i*width+k] {
			return false
		}
		seen[i*width+k] = true
		if i == len(g.pat) {
			return k == rest
		}
		switch c := g.pat[i]; c {
		case '*':
			return walk(i+1, k) || walk(i, skip(k))
		case '?':
			return walk(i+1, skip(k))
		default:
			n := next(k, c)
			return n >= 0 && walk(i+1, n)
		}
	}
	return walk(0, 0)
}

// matchesEverySubcommandOf reports whether g certainly matches every name
// d+"."+sub, sub a subcommand: g is a run of characters without '*',
// then a single '*', and the run matches the start of every such name
// ("*", "terraform.*", "terra*", "terraform.?*" for d "terraform").
func (g glob) matchesEverySubcommandOf(d string) bool {
	pre := d + "."
	head, ok := strings.CutSuffix(g.pat, "*")
	if !ok || len(head) > len(pre)+1 {
		return false
	}
	for i := 0; i < len(head); i++ {
		switch {
		case head[i] == '*':
			return false
		case head[i] == '?':
		case i == len(pre) || head[i] != pre[i]:
			// The subcommand's first character varies: only '?' matches
			// it in every name.
			return false
		}
	}
	return true
}
