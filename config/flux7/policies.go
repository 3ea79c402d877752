package flux7

import (
	"context"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/policy"
)

// This file converts the policies section. The policy package judges
// every principal, name and pattern, so that what this file accepts is
// what the loader accepts; whatever it refuses, or whatever flux7 might
// match differently, is converted to something that allows no more.

// outPolicy is one entry of the output's policies list.
type outPolicy struct {
	comments  []string
	name      string
	principal string
	rules     []outRule
}

// outRule is one rule of an output policy.
type outRule struct {
	comments []string
	name     string
	tools    []string
	action   string // this project's spelling
}

// checkPolicies refuses rule actions flux7 itself does not know.
func (c *converter) checkPolicies(pols []*policyDoc) {
	for _, pd := range pols {
		for _, r := range pd.rules {
			if r.action.set {
				if _, ok := flux7Actions[r.action.v]; !ok {
					c.add(r.action.node, r.action.path, "unknown action %s: use allow, deny or human_approval", quote(r.action.v))
				}
			}
		}
	}
}

// policies converts the policies section. floored are the command names
// every allow rule must hold for approval first. The comments returned
// belong above the section.
func (c *converter) policies(pols []*policyDoc, floored []string) ([]*outPolicy, []string) {
	var comments []string
	agents := make(map[string]int)
	for _, pd := range pols {
		if pd.agent.set {
			agents[pd.agent.v]++
		}
	}
	names := make(map[string]bool)
	for _, pd := range pols {
		if pd.name.set && validPolicyName(pd.name.v) {
			names[pd.name.v] = true
		}
	}
	used := make(map[string]bool)
	var out []*outPolicy
	for i, pd := range pols {
		if why := agentProblem(pd.agent.v, agents[pd.agent.v]); why != "" {
			comments = append(comments, c.note(pd.node, pd.path, true, "the policy for agent %s is left out: %s; its agent's calls are denied", quote(pd.agent.v), why))
			continue
		}
		op := &outPolicy{principal: pd.agent.v, name: pd.name.v}
		if !pd.name.set || !validPolicyName(op.name) || used[op.name] {
			op.name = freshName(fmt.Sprintf("policy-%d", i+1), names, used)
			what := "has no name"
			if pd.name.set {
				what = fmt.Sprintf("is named %s, which this format refuses or which is taken", quote(pd.name.v))
			}
			op.comments = append(op.comments, c.note(pd.node, pd.path, false, "the policy %s; it is named %s here", what, op.name))
		}
		used[op.name] = true
		c.rules(op, pd, floored)
		out = append(out, op)
	}
	return out, comments
}

// agentProblem returns why agent cannot be a principal here, or "".
func agentProblem(agent string, count int) string {
	switch {
	case strings.ContainsAny(agent, "*?"):
		return "flux7's documentation does not say how it matches '*' or '?' in an agent, and this format reads them as wildcards, which could give the policy to more agents"
	case count > 1:
		return fmt.Sprintf("%d policies name this agent, this format gives an agent one policy, and flux7's documentation does not say how it combines them", count)
	}
	_, err := policy.New([]policy.Policy{{Name: "p", Principal: agent}}, policy.Options{})
	if err != nil {
		return "this format refuses it as a principal (" + strings.TrimPrefix(err.Error(), "policy: ") + ")"
	}
	return ""
}

func validPolicyName(name string) bool {
	_, err := policy.New([]policy.Policy{{Name: name, Principal: "p"}}, policy.Options{})
	return err == nil
}

// freshName returns base, or base with a suffix, taken by neither names
// nor used.
func freshName(base string, names, used map[string]bool) string {
	name := base
	for i := 2; names[name] || used[name]; i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	return name
}

// rules converts the rules of pd into op. Every rule keeps its place, so
// that the first rule that matches still decides. Before every allow
// rule that matches a floored command comes a require_approval rule for
// those commands.
func (c *converter) rules(op *outPolicy, pd *policyDoc, floored []string) {
	floors := 0
	var pending []string // comments of rules that were left out
	for _, r := range pd.rules {
		action := flux7Actions[r.action.v]
		var keep, comments []string
		var pre []outRule
		for _, pat := range r.tools {
			if matchesAsFlux7(pat.v, action) {
				keep = appendNew(keep, pat.v)
				continue
			}
			wider := superset(pat.v)
			switch action {
			case execgate.ActionAllow:
				comments = append(comments, c.note(pat.node, pat.path, true, "pattern %s is left out of this allow rule: this format cannot be sure to match it as flux7 does", quote(pat.v)))
			case execgate.ActionDeny:
				keep = appendNew(keep, wider)
				comments = append(comments, c.note(pat.node, pat.path, true, "pattern %s is denied as %s, which this format can match and which holds at least what it matched", quote(pat.v), wider))
			default:
				pre = append(pre, outRule{
					comments: []string{c.note(pat.node, pat.path, true, "pattern %s cannot be matched here as flux7 does, so %s is denied instead of held for approval", quote(pat.v), wider)},
					tools:    []string{wider},
					action:   execgate.ActionDeny,
				})
			}
		}
		if len(pre) > 0 {
			pre[0].comments = append(pending, pre[0].comments...)
			pending = nil
			op.rules = append(op.rules, pre...)
		}
		if len(keep) == 0 {
			if action == execgate.ActionAllow {
				comments = append(comments, c.note(r.node, r.path, true, "this allow rule is left out: none of its patterns could be carried over"))
			}
			pending = append(pending, comments...)
			continue
		}
		if action == execgate.ActionAllow {
			if held := matching(keep, floored); len(held) > 0 {
				floors++
				op.rules = append(op.rules, outRule{
					comments: append(pending, "TODO(flux7): floor: the next rule allows commands whose tools have TODOs, so they need an approval until those are done; then remove this rule"),
					name:     fmt.Sprintf("floor-%d", floors),
					tools:    held,
					action:   execgate.ActionRequireApproval,
				})
				pending = nil
			}
		}
		op.rules = append(op.rules, outRule{comments: append(pending, comments...), tools: keep, action: action})
		pending = nil
	}
	op.comments = append(op.comments, pending...)
}

func appendNew(list []string, s string) []string {
	for _, e := range list {
		if e == s {
			return list
		}
	}
	return append(list, s)
}

// matchesAsFlux7 reports whether pattern can be written as it is in a
// rule with action: the policy package accepts it, and, outside deny
// rules, it holds no '?', which flux7's documentation never uses, so that
// this format's reading of it as a wildcard cannot match more.
func matchesAsFlux7(pattern, action string) bool {
	if action != execgate.ActionDeny && strings.ContainsRune(pattern, '?') {
		return false
	}
	return validPattern(pattern)
}

func validPattern(pattern string) bool {
	_, err := policy.New([]policy.Policy{{Name: "p", Principal: "p", Rules: []policy.Rule{{Tools: []string{pattern}, Action: execgate.ActionDeny}}}}, policy.Options{})
	return err == nil
}

// superset returns a pattern this format accepts that matches every name
// pattern matches: pattern up to its first character a tool pattern may
// not hold, then '*', with runs of '*' made one.
func superset(pattern string) string {
	const maxLen = 256 // the policy package's bound on a pattern
	var b strings.Builder
	last := byte(0)
	for i := 0; i < len(pattern); i++ {
		ch := pattern[i]
		ok := ch == '*' || ch == '?' || ch == '_' || ch == '-' || ch == '.' ||
			'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9'
		if !ok || b.Len() >= maxLen-1 {
			ch = '*'
		}
		if !(ch == '*' && last == '*') {
			b.WriteByte(ch)
			last = ch
		}
		if !ok || b.Len() >= maxLen-1 {
			break
		}
	}
	s := b.String()
	if s == "" || !validPattern(s) {
		return "*"
	}
	return s
}

// matching returns the names of floored that a rule with the tool
// patterns pats matches, as the policy package matches them.
func matching(pats, floored []string) []string {
	if len(floored) == 0 {
		return nil
	}
	e, err := policy.New([]policy.Policy{{Name: "m", Principal: "*", Rules: []policy.Rule{{Tools: pats, Action: execgate.ActionAllow}}}}, policy.Options{})
	if err != nil {
		return nil // the patterns were each checked; check reports the output
	}
	var out []string
	for _, n := range floored {
		d, _ := e.Decide(context.Background(), execgate.Request{Name: n})
		if d.Action == execgate.ActionAllow {
			out = append(out, n)
		}
	}
	return out
}

// toPolicies returns ps as the policy package's values.
func toPolicies(ps []*outPolicy) []policy.Policy {
	out := make([]policy.Policy, 0, len(ps))
	for _, p := range ps {
		pp := policy.Policy{Name: p.name, Principal: p.principal, Rules: []policy.Rule{}}
		for _, r := range p.rules {
			pp.Rules = append(pp.Rules, policy.Rule{Name: r.name, Tools: r.tools, Action: r.action})
		}
		out = append(out, pp)
	}
	return out
}

// noPolicies is the note for a file without a policies section.
func (c *converter) noPolicies(root *yaml.Node) string {
	return c.note(root, "policies", true, "the file has no policies; flux7 refuses every call no policy allows, and so does the policies: [] written here: write a policy for each agent")
}
