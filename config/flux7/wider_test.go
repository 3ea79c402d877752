package flux7_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
)

// This file checks that a converted file never allows more than the
// flux7 file did: for every principal and name worth asking about, the
// output's decision (allowlist, policy, then the spec's floor) is at
// least as strict as flux7's, read as its documentation describes it.
// Where the documentation leaves a reading open ('?' in a pattern, '*'
// as an agent, two policies for one agent), both readings are tried.

// model is a flux7 file as its documentation describes it.
type model struct {
	Tools []struct {
		Name          string              `yaml:"name"`
		DefaultAction string              `yaml:"default_action"`
		Strict        bool                `yaml:"strict"`
		Commands      map[string]struct{} `yaml:"commands"`
		Bare          *struct{}           `yaml:"bare"`
	} `yaml:"cli_tools"`
	Policies []struct {
		Agent string `yaml:"agent"`
		Rules []struct {
			Tools  []string `yaml:"tools"`
			Action string   `yaml:"action"`
		} `yaml:"rules"`
	} `yaml:"policies"`
}

// reading picks how the model settles what the documentation leaves open.
type reading struct {
	questionIsWildcard bool // '?' matches one character, else itself
	starAgent          bool // agent "*" governs agents without a policy of their own
	lastPolicy         bool // of two policies for one agent the last decides, else the first
}

var readings = []reading{{}, {questionIsWildcard: true, starAgent: true, lastPolicy: true}}

func strictness(action string) int {
	switch action {
	case execgate.ActionAllow:
		return 0
	case execgate.ActionRequireApproval, "human_approval":
		return 1
	}
	return 2
}

// flux7Glob matches name against a flux7 pattern: '*' matches any run of
// characters, dots included (the documentation's "gh.*" allows
// gh.pr.list).
func flux7Glob(pat, name string, r reading) bool {
	if pat == "" {
		return name == ""
	}
	switch pat[0] {
	case '*':
		for i := 0; i <= len(name); i++ {
			if flux7Glob(pat[1:], name[i:], r) {
				return true
			}
		}
		return false
	case '?':
		if r.questionIsWildcard {
			return name != "" && flux7Glob(pat[1:], name[1:], r)
		}
	}
	return name != "" && name[0] == pat[0] && flux7Glob(pat[1:], name[1:], r)
}

// decide returns flux7's action for principal calling name.
func (m *model) decide(principal, name string, r reading) string {
	served, floor := false, "deny"
	for _, t := range m.Tools {
		if !strings.HasPrefix(name, t.Name+".") {
			continue
		}
		sub := strings.TrimPrefix(name, t.Name+".")
		_, declared := t.Commands[sub]
		switch {
		case t.Bare != nil:
			served, floor = sub == "run", "allow"
		case declared:
			served, floor = true, "allow"
		case !t.Strict:
			served, floor = true, t.DefaultAction
			if floor == "" {
				floor = "deny"
			}
		}
	}
	if !served {
		return "deny"
	}
	pol := -1
	for i, p := range m.Policies {
		if p.Agent == principal && (pol < 0 || r.lastPolicy) {
			pol = i
		}
	}
	if pol < 0 && r.starAgent {
		for i, p := range m.Policies {
			if p.Agent == "*" {
				pol = i
			}
		}
	}
	action := "deny"
	if pol >= 0 {
	rules:
		for _, rule := range m.Policies[pol].Rules {
			for _, pat := range rule.Tools {
				if flux7Glob(pat, name, r) {
					action = rule.Action
					break rules
				}
			}
		}
	}
	if strictness(floor) > strictness(action) {
		return floor
	}
	return action
}

// ours returns the output's action for principal calling name.
func ours(t *testing.T, l *config.Loaded, principal, name string) string {
	spec, ok := l.Allowlist.Lookup(name)
	if !ok {
		return execgate.ActionDeny
	}
	action := execgate.ActionAllow
	if l.Policy != nil {
		d, err := l.Policy.Decide(context.Background(), execgate.Request{Op: execgate.OpRun, Principal: principal, Name: name, Spec: spec})
		require.NoError(t, err)
		action = d.Action
	}
	if strictness(spec.Floor) > strictness(action) {
		return spec.Floor
	}
	return action
}

// requireNoWider checks the converted l against the flux7 file in.
func requireNoWider(t *testing.T, in []byte, l *config.Loaded) {
	t.Helper()
	var m model
	require.NoError(t, yaml.Unmarshal(in, &m))
	principals := []string{"", "*", "someone-else"}
	names := []string{"x.run", "mcp.x"}
	for _, p := range m.Policies {
		principals = append(principals, p.Agent)
		for _, r := range p.Rules {
			for _, pat := range r.Tools {
				names = append(names, pat, strings.NewReplacer("*", "x", "?", "y").Replace(pat), strings.ReplaceAll(pat, "*", ""))
			}
		}
	}
	for _, tool := range m.Tools {
		names = append(names, tool.Name, tool.Name+".run", tool.Name+".other", tool.Name+".a.b")
		for c := range tool.Commands {
			names = append(names, tool.Name+"."+c)
		}
	}
	for _, r := range readings {
		for _, p := range principals {
			for _, n := range names {
				got, want := ours(t, l, p, n), m.decide(p, n, r)
				require.GreaterOrEqual(t, strictness(got), strictness(want),
					"principal %q calling %q: the output says %s where flux7 says %s (reading %+v)", p, n, got, want, r)
			}
		}
	}
}
