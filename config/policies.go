package config

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/policy"
)

// This file checks the policies and grants sections and builds the
// policy.Engine. The policy package is the only judge of names, patterns,
// actions, rate limits and grants: each value is handed to policy.New (or
// Engine.Grant) on its own, so that every problem is found, not just the
// first, and the Path of each *policy.ConfigError is mapped back to the
// node the value came from. Only the checks that span several entries
// (duplicate names and principals) and the required keys are made here.

// policySection is what the policies and grants sections produce.
type policySection struct {
	engine      *policy.Engine
	policies    []policy.Policy
	grants      []policy.Grant // as created, in file order
	grantAt     []grantPos     // where each of grants is written
	policiesKey position
	grantsKey   position
	patterns    []patternAt // every rule's tools patterns, in file order
}

// patternAt is one tools pattern of a rule and where it is written, for
// [Loaded.Warnings].
type patternAt struct {
	pattern string
	at      position
}

// toolPatterns returns the tools patterns of the rules of docs, each with
// its position.
func toolPatterns(docs []*policyDoc) []patternAt {
	var out []patternAt
	for _, pd := range docs {
		if !pd.ok {
			continue
		}
		for _, rd := range pd.rules {
			if !rd.ok {
				continue
			}
			for _, t := range rd.tools {
				out = append(out, patternAt{pattern: t.v, at: positionOf(t.node, t.path)})
			}
		}
	}
	return out
}

// nodeIndex maps the key paths of the policies section to their nodes,
// to place the errors of the policy package.
type nodeIndex map[string]*yaml.Node

func addVal[T any](idx nodeIndex, v val[T]) {
	if v.node != nil {
		idx[v.path] = v.node
	}
}

// lookup returns the node of path, or of the nearest ancestor written in
// the file (a key that must be added is reported on its mapping).
func (idx nodeIndex) lookup(path string) *yaml.Node {
	for path != "" {
		if n, ok := idx[path]; ok {
			return n
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return nil
}

// probePolicy is the name of the policy that carries one value to
// [policy.New] for a check.
const probePolicy = "probe"

// judge asks policy.New about p alone and returns its complaint, or nil.
func judge(p policy.Policy) *policy.ConfigError {
	_, err := policy.New([]policy.Policy{p}, policy.Options{})
	if err == nil {
		return nil
	}
	var ce *policy.ConfigError
	if errors.As(err, &ce) {
		return ce
	}
	return &policy.ConfigError{Path: "policies[0]", Message: err.Error()}
}

// probeRule returns a policy holding only r, for judge.
func probeRule(r policy.Rule) policy.Policy {
	return policy.Policy{Name: probePolicy, Principal: "*", Rules: []policy.Rule{r}}
}

// policySection checks the policies and grants sections and builds the
// Engine with opts. It returns nil when the file has no policies section.
func (b *builder) policySection(opts policy.Options) *policySection {
	doc := b.doc
	if doc.policiesKey == nil {
		if doc.grantsKey != nil {
			b.add(doc.grantsKey, doc.grantsPath, "grants need a policies section: a grant turns a rule's require_approval into allow, and without policies every allowlisted call is allowed already")
		}
		return nil
	}
	idx := nodeIndex{"policies": doc.policiesKey}
	pols, paths := b.policies(doc.policies, idx)
	var eng *policy.Engine
	if b.count() == 0 {
		// Every value was checked on its own; this also judges what spans
		// entries, and no problem anywhere can have left a value out.
		e, err := policy.New(pols, opts)
		if err != nil {
			b.placePolicyError(err, paths, idx)
		} else {
			eng = e
		}
	}
	if eng == nil {
		// Nothing will be built, but the grants are still checked, in
		// an Engine without rules.
		e, err := policy.New(nil, opts)
		if err != nil {
			b.add(nil, "", "%v", err) // opts were checked before loading
			return nil
		}
		eng = e
	}
	sec := &policySection{
		engine:      eng,
		policies:    pols,
		policiesKey: positionOf(doc.policiesKey, "policies"),
		grantsKey:   positionOf(doc.grantsKey, doc.grantsPath),
		patterns:    toolPatterns(doc.policies),
	}
	b.grants(sec, opts)
	return sec
}

// required reports key as missing when the mapping n at path lacks it.
func (b *builder) required(n *yaml.Node, path string, present map[string]bool, key, what string) {
	if !present[key] {
		b.add(n, keyPath(path, key), "required: %s", what)
	}
}

// policies checks the entries of the policies list and returns them as
// policy.Policy values, with the key path of each. It fills idx.
func (b *builder) policies(docs []*policyDoc, idx nodeIndex) ([]policy.Policy, []string) {
	out := make([]policy.Policy, 0, len(docs))
	paths := make([]string, 0, len(docs))
	names := make(map[string]*yaml.Node)
	principals := make(map[string]*policyDoc)
	for _, pd := range docs {
		if !pd.ok {
			continue // already reported
		}
		idx[pd.path] = pd.node
		addVal(idx, pd.name)
		addVal(idx, pd.principal)
		p := policy.Policy{Name: pd.name.v, Principal: pd.principal.v}

		b.required(pd.node, pd.path, pd.keys, "name", "the policy's name, such as agents")
		if pd.name.set {
			if ce := judge(policy.Policy{Name: pd.name.v, Principal: "*"}); ce != nil {
				b.add(pd.name.node, pd.name.path, "%s", ce.Message)
			} else if first, dup := names[pd.name.v]; dup {
				b.add(pd.name.node, pd.name.path, "duplicate policy name %s (first at line %d)", quote(pd.name.v), first.Line)
			} else {
				names[pd.name.v] = pd.name.node
			}
		}
		b.required(pd.node, pd.path, pd.keys, "principal", `the principals this policy governs: a name ("ci-bot"), a pattern ("agent-*"), or "*" for everyone`)
		if pd.principal.set {
			if ce := judge(policy.Policy{Name: probePolicy, Principal: pd.principal.v}); ce != nil {
				b.add(pd.principal.node, pd.principal.path, "%s", ce.Message)
			} else if first, dup := principals[pd.principal.v]; dup {
				b.add(pd.principal.node, pd.principal.path, "%s is already the principal of policy %s (line %d); merge their rules into one policy", quote(pd.principal.v), quote(first.name.v), first.principal.node.Line)
			} else {
				principals[pd.principal.v] = pd
			}
		}
		b.required(pd.node, pd.path, pd.keys, "rules", "the rules, tried in order (rules: [] denies every call of these principals)")
		p.Rules = b.rules(pd, idx)
		p.RateLimit = b.rateLimit(&pd.rate, idx)
		out = append(out, p)
		paths = append(paths, pd.path)
	}
	return out, paths
}

// rules checks the rules of one policy.
func (b *builder) rules(pd *policyDoc, idx nodeIndex) []policy.Rule {
	var out []policy.Rule
	names := make(map[string]*yaml.Node)
	for _, rd := range pd.rules {
		if !rd.ok {
			continue
		}
		idx[rd.path] = rd.node
		addVal(idx, rd.name)
		addVal(idx, rd.action)
		r := policy.Rule{Name: rd.name.v, Action: rd.action.v}
		if rd.name.set {
			if ce := judge(probeRule(policy.Rule{Name: rd.name.v, Tools: []string{"x"}, Action: execgate.ActionDeny})); ce != nil {
				b.add(rd.name.node, rd.name.path, "%s", ce.Message)
			} else if first, dup := names[rd.name.v]; dup {
				b.add(rd.name.node, rd.name.path, "duplicate rule name %s in this policy (first at line %d)", quote(rd.name.v), first.Line)
			} else {
				names[rd.name.v] = rd.name.node
			}
		}
		b.required(rd.node, rd.path, rd.keys, "action", "allow, deny or require_approval")
		if rd.action.set {
			if ce := judge(probeRule(policy.Rule{Tools: []string{"x"}, Action: rd.action.v})); ce != nil {
				msg := ce.Message
				if rd.action.v == "human_approval" {
					msg += " (a tool's default_action says human_approval; a rule says require_approval)"
				}
				b.add(rd.action.node, rd.action.path, "%s", msg)
			}
		}
		b.required(rd.node, rd.path, rd.keys, "tools", `the command names this rule covers, such as ["git.log", "gh.*"]`)
		if rd.toolsNode != nil {
			idx[keyPath(rd.path, "tools")] = rd.toolsNode
			if rd.toolsNode.Kind == yaml.SequenceNode && len(rd.toolsNode.Content) == 0 {
				if ce := judge(probeRule(policy.Rule{Action: execgate.ActionDeny})); ce != nil {
					b.add(rd.toolsNode, keyPath(rd.path, "tools"), "%s", ce.Message)
				}
			}
		}
		for _, t := range rd.tools {
			addVal(idx, t)
			if ce := judge(probeRule(policy.Rule{Tools: []string{t.v}, Action: execgate.ActionDeny})); ce != nil {
				b.add(t.node, t.path, "%s", ce.Message)
			}
			r.Tools = append(r.Tools, t.v)
		}
		out = append(out, r)
	}
	return out
}

// rateLimit checks a policy's rate_limit.
func (b *builder) rateLimit(rd *rateDoc, idx nodeIndex) policy.RateLimit {
	if rd.node == nil {
		return policy.RateLimit{}
	}
	idx[rd.path] = rd.node
	if rd.loopNode != nil {
		idx[rd.loopPath] = rd.loopNode
	}
	var rl policy.RateLimit
	ok := true
	integer := func(v val[int64], dst *int) {
		addVal(idx, v)
		if !v.set {
			ok = ok && v.node == nil // a value of the wrong type was reported
			return
		}
		if int64(int(v.v)) != v.v {
			b.add(v.node, v.path, "%d is too large", v.v)
			ok = false
			return
		}
		*dst = int(v.v)
	}
	integer(rd.perMinute, &rl.PerMinute)
	integer(rd.burst, &rl.Burst)
	integer(rd.budget, &rl.Budget)
	integer(rd.loopMax, &rl.Loop.Max)
	addVal(idx, rd.budgetWindow)
	addVal(idx, rd.loopWindow)
	rl.BudgetWindow, rl.Loop.Window = rd.budgetWindow.v, rd.loopWindow.v
	for _, v := range []val[time.Duration]{rd.budgetWindow, rd.loopWindow} {
		ok = ok && (v.set || v.node == nil)
	}
	if ok {
		if ce := judge(policy.Policy{Name: probePolicy, Principal: "*", RateLimit: rl}); ce != nil {
			// Path is "policies[0].rate_limit...."; the values were all
			// indexed under this policy's path.
			b.placeAt(ce, "policies[0].rate_limit", rd.path, idx)
		}
	}
	return rl
}

// placeAt records ce, whose Path starts with from, at the node of the
// same path under to.
func (b *builder) placeAt(ce *policy.ConfigError, from, to string, idx nodeIndex) {
	path := ce.Path
	if rest, ok := strings.CutPrefix(path, from); ok {
		path = to + rest
	}
	n := idx.lookup(path)
	b.add(n, path, "%s", ce.Message)
}

// policyIndexRe matches the start of a [*policy.ConfigError]'s Path.
var policyIndexRe = regexp.MustCompile(`^policies\[(\d+)\]`)

// placePolicyError records an error of policy.New on the whole list.
// paths are the key paths of the policies given to it, in order.
func (b *builder) placePolicyError(err error, paths []string, idx nodeIndex) {
	var ce *policy.ConfigError
	if !errors.As(err, &ce) {
		b.add(idx["policies"], "policies", "%v", err)
		return
	}
	if m := policyIndexRe.FindStringSubmatch(ce.Path); m != nil {
		if i, convErr := strconv.Atoi(m[1]); convErr == nil && i < len(paths) {
			b.placeAt(ce, m[0], paths[i], idx)
			return
		}
	}
	b.add(idx["policies"], "policies", "%s: %s", ce.Path, ce.Message)
}

// grants checks the entries of the grants list by creating them in
// sec.engine, which is only handed out if no problem was found anywhere.
// It is one loop over the entries, each field checked at its own line.
func (b *builder) grants(sec *policySection, opts policy.Options) {
	ids := make(map[string]*yaml.Node)
	var created []string
	var at []grantPos
	for _, gd := range b.doc.grants {
		if !gd.ok {
			continue
		}
		b.required(gd.node, gd.path, gd.keys, "principal", `the principals the grant covers, such as agent-7, or a pattern such as "agent-*"`)
		b.required(gd.node, gd.path, gd.keys, "tool", `the command names the grant covers, such as terraform.plan, or a pattern such as "terraform.*"`)
		b.required(gd.node, gd.path, gd.keys, "expires", "when the grant ends, an RFC 3339 timestamp such as 2030-01-02T15:04:05Z")
		if gd.id.set && gd.id.v != "" {
			if first, dup := ids[gd.id.v]; dup {
				b.add(gd.id.node, gd.id.path, "duplicate grant id %s (first at line %d)", quote(gd.id.v), first.Line)
				continue
			}
			ids[gd.id.v] = gd.id.node
		}
		// A value that is missing, or of the wrong type, was reported:
		// a placeholder stands in for it, and the Engine's complaints
		// about it are not repeated.
		complete := gd.principal.set && gd.tool.set && gd.expires.set &&
			(!gd.keys["id"] || gd.id.set) && (!gd.keys["reason"] || gd.reason.set)
		g := policy.Grant{ID: gd.id.v, Principal: gd.principal.v, Tool: gd.tool.v, Expires: gd.expires.v, Reason: gd.reason.v}
		if !gd.principal.set {
			g.Principal = "*"
		}
		if !gd.tool.set {
			g.Tool = "*"
		}
		strs := map[string]*val[string]{"id": &gd.id, "principal": &gd.principal, "tool": &gd.tool, "reason": &gd.reason}
		clean := true
	attempts:
		// Each attempt that fails on a string field replaces it with a
		// value the Engine accepts, so there are at most five.
		for range 5 {
			id, err := sec.engine.Grant(g)
			if err == nil {
				if complete && clean {
					created = append(created, id)
					at = append(at, grantPos{entry: positionOf(gd.node, gd.path), id: positionOf(gd.id.node, gd.id.path)})
				} else {
					sec.engine.Revoke(id)
				}
				break attempts
			}
			clean = false
			var ce *policy.ConfigError
			switch {
			case errors.As(err, &ce):
				field, _ := strings.CutPrefix(ce.Path, "grant.")
				v, known := strs[field]
				switch {
				case field == "expires":
					if gd.expires.set {
						b.add(gd.expires.node, gd.expires.path, "%s", ce.Message)
					}
					break attempts
				case !known:
					b.add(gd.node, gd.path, "%s: %s", ce.Path, ce.Message)
					break attempts
				case v.set:
					b.add(v.node, v.path, "%s", ce.Message)
				}
				if field == "principal" || field == "tool" {
					*fieldOf(&g, field) = "*"
				} else {
					*fieldOf(&g, field) = ""
				}
			case errors.Is(err, policy.ErrTooManyGrants):
				b.add(gd.node, gd.path, "one grant too many: an Engine holds at most %d live grants (LoadOptions.Policy.MaxGrants)", maxGrants(opts))
				break attempts
			case errors.Is(err, policy.ErrDuplicateGrant):
				b.add(gd.id.node, gd.id.path, "a grant with this id already exists")
				break attempts
			default:
				b.add(gd.node, gd.path, "%v", err)
				break attempts
			}
		}
	}
	sec.grants = grantsByID(sec.engine, created)
	sec.grantAt = at
}

// fieldOf returns the string field of g named by its yaml key.
func fieldOf(g *policy.Grant, key string) *string {
	switch key {
	case "id":
		return &g.ID
	case "principal":
		return &g.Principal
	case "tool":
		return &g.Tool
	default:
		return &g.Reason
	}
}

func maxGrants(opts policy.Options) int {
	if opts.MaxGrants == 0 {
		return policy.DefaultMaxGrants
	}
	return opts.MaxGrants
}

// grantsByID returns the live grants of e with the given IDs, in the
// order of ids.
func grantsByID(e *policy.Engine, ids []string) []policy.Grant {
	if len(ids) == 0 {
		return nil
	}
	live := make(map[string]policy.Grant)
	for _, g := range e.Grants() {
		live[g.ID] = g
	}
	out := make([]policy.Grant, 0, len(ids))
	for _, id := range ids {
		if g, ok := live[id]; ok {
			out = append(out, g)
		} else {
			// Expired already (a clock that jumped): keep the ID.
			out = append(out, policy.Grant{ID: id})
		}
	}
	return out
}

// grantIDs returns the IDs of gs.
func grantIDs(gs []policy.Grant) []string {
	if len(gs) == 0 {
		return nil
	}
	ids := make([]string, len(gs))
	for i, g := range gs {
		ids[i] = g.ID
	}
	return ids
}
