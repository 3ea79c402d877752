package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/execgate/execgate"
	"golang.org/x/time/rate"
)

// Policy is one named set of rules for the principals its Principal
// pattern matches. The field names in the yaml tags are those of a
// "policies:" entry in a configuration file.
type Policy struct {
	// Name identifies the policy in decisions ("ops/2") and errors. It is
	// required, unique among the [Engine]'s policies, at most 64 bytes of
	// ASCII letters, digits, '_', '-' and '.', and starts with a letter
	// or digit.
	Name string `yaml:"name"`

	// Principal is the pattern of the principals this policy governs: an
	// exact principal ("ci-bot"), a glob ("team-*", "agent-?"), or "*" for
	// every principal, including the empty one of a call that carries no
	// principal. It is required, and no two policies may share a pattern.
	// See the package documentation for the precedence between patterns.
	Principal string `yaml:"principal"`

	// Rules are tried in order; the first rule with a Tools pattern that
	// matches the requested name decides. A name no rule matches is
	// denied. Nil or empty denies every call of the policy's principals.
	Rules []Rule `yaml:"rules"`

	// RateLimit bounds how many allowed calls the policy's principals
	// make. The zero [RateLimit] sets no limit.
	RateLimit RateLimit `yaml:"rate_limit"`
}

// Rule maps command-name patterns to an action.
type Rule struct {
	// Name optionally names the rule in decisions, so that Decision.Rule
	// reads "ops/no-destroy" instead of "ops/2" (the 1-based position in
	// [Policy.Rules]). If set, it is unique in its policy, at most 64 bytes
	// of ASCII letters, digits, '_' and '-', not all digits, and not
	// "default". Empty means the rule is named by its position.
	Name string `yaml:"name"`

	// Tools are patterns over requested command names: "git.log",
	// "gh.*", "kubectl.delete*". '*' matches any run of characters, dots
	// included, '?' matches one character, and a pattern must match the
	// whole name, case-sensitively. At least one is required.
	Tools []string `yaml:"tools"`

	// Action is [execgate.ActionAllow], [execgate.ActionDeny] or
	// [execgate.ActionRequireApproval] ("allow", "deny",
	// "require_approval"). It is required; anything else is refused when
	// the rules are built.
	Action string `yaml:"action"`
}

// RateLimit bounds the calls of a policy's principals. Only calls the
// policy would allow are counted and refused; see the package
// documentation. Every field's zero value turns its limit off, so the
// zero RateLimit limits nothing.
type RateLimit struct {
	// PerMinute is how many calls each principal may make per minute, as
	// a token bucket that refills at PerMinute/60 calls per second. Zero
	// means no per-principal rate; negative is refused.
	PerMinute int `yaml:"per_minute"`

	// Burst is how many calls a principal may make at once, the size of
	// its bucket. Zero means PerMinute; it needs PerMinute; negative is
	// refused.
	Burst int `yaml:"burst"`

	// Budget is how many calls all the policy's principals together may
	// make per BudgetWindow. Zero means no budget; negative is refused.
	Budget int `yaml:"budget"`

	// BudgetWindow is the fixed period after which the budget is full
	// again; a period starts with the first call counted after the last
	// one ended. Zero means the budget never refills (it lasts as long as
	// the [Engine], or until the policy is swapped out); it needs Budget;
	// negative is refused.
	BudgetWindow time.Duration `yaml:"budget_window"`

	// Loop refuses a principal that repeats the same call. The zero [Loop]
	// is off.
	Loop Loop `yaml:"loop"`
}

// MaxLoop is the largest [Loop.Max]: the [Engine] remembers that many times
// for each distinct call it watches.
const MaxLoop = 100

// Loop detects a principal that keeps making the same call: the same
// requested name with the same argv and stdin.
type Loop struct {
	// Max is how many identical calls a principal may make within Window;
	// the next one is refused until the oldest leaves the window. Zero
	// turns loop detection off; it needs Window; at most [MaxLoop].
	Max int `yaml:"max"`

	// Window is the sliding period over which identical calls are
	// counted. It needs Max; zero means off; negative is refused.
	Window time.Duration `yaml:"window"`
}

// ConfigError reports a policy, rule, grant or option that cannot be used.
// Nothing is partially applied: [New] fails, Swap keeps the rules in force,
// [Grant] creates nothing.
type ConfigError struct {
	// Path locates the offending value with the keys of a configuration
	// file: "policies[1].rules[0].action", "policies[0].principal",
	// "policies[2].rate_limit.loop.window" for rules, "grant.expires"
	// for a grant, "options.MaxGrants" for an [Options] field.
	Path string
	// Message says what is wrong.
	Message string
}

// Error implements error.
func (e *ConfigError) Error() string {
	return "policy: " + e.Path + ": " + e.Message
}

// DefaultRule is the Decision.Rule of a call that no policy governs. A
// call whose policy has no matching rule is denied by the rule named
// "<policy>/default".
const DefaultRule = "default"

// Rule names of rate-limit refusals, after "<policy>/".
const (
	ruleLoop      = "rate_limit.loop"
	ruleBudget    = "rate_limit.budget"
	rulePerMinute = "rate_limit.per_minute"
)

// ruleSet is an immutable, checked list of policies, swapped in whole.
type ruleSet struct {
	exact map[string]*compiled // by exact principal
	globs []*compiled          // by precedence: longest literal prefix, then declaration order
	star  *compiled            // principal "*"
	names map[string]*compiled // by policy name
}

// compiled is one checked policy.
type compiled struct {
	name        string
	principal   glob
	rules       []compiledRule
	defaultRule string // "<name>/default"
	limit       *compiledLimit
}

type compiledRule struct {
	id     string // "<policy>/<name or position>"
	tools  []glob
	action string
}

type compiledLimit struct {
	perMinute  rate.Limit
	burst      int
	budget     int
	budgetSpan time.Duration
	loopMax    int
	loopWindow time.Duration
	// Decision rules of the three refusals.
	loopRule, budgetRule, perMinuteRule string
}

// compile checks policies and builds a ruleSet. It returns the first
// problem as a *ConfigError.
func compile(policies []Policy) (*ruleSet, error) {
	rs := &ruleSet{exact: make(map[string]*compiled), names: make(map[string]*compiled, len(policies))}
	byPattern := make(map[string]string, len(policies))
	order := make(map[*compiled]int, len(policies))
	for i := range policies {
		p := &policies[i]
		path := "policies[" + strconv.Itoa(i) + "]"
		if msg := checkName(p.Name, true); msg != "" {
			return nil, &ConfigError{Path: path + ".name", Message: msg}
		}
		if rs.names[p.Name] != nil {
			return nil, &ConfigError{Path: path + ".name", Message: fmt.Sprintf("%q is already the name of another policy", p.Name)}
		}
		pg, err := compilePrincipalGlob(p.Principal)
		if err != nil {
			return nil, &ConfigError{Path: path + ".principal", Message: err.Error()}
		}
		if other, ok := byPattern[p.Principal]; ok {
			return nil, &ConfigError{Path: path + ".principal", Message: fmt.Sprintf("%q is already the principal of policy %q", p.Principal, other)}
		}
		byPattern[p.Principal] = p.Name
		c := &compiled{name: p.Name, principal: pg, defaultRule: p.Name + "/" + DefaultRule}
		rs.names[p.Name] = c
		ruleNames := make(map[string]bool)
		for j := range p.Rules {
			r := &p.Rules[j]
			rpath := path + ".rules[" + strconv.Itoa(j) + "]"
			cr := compiledRule{id: p.Name + "/" + strconv.Itoa(j+1), action: r.Action}
			if r.Name != "" {
				if msg := checkRuleName(r.Name); msg != "" {
					return nil, &ConfigError{Path: rpath + ".name", Message: msg}
				}
				if ruleNames[r.Name] {
					return nil, &ConfigError{Path: rpath + ".name", Message: fmt.Sprintf("%q is already the name of another rule of this policy", r.Name)}
				}
				ruleNames[r.Name] = true
				cr.id = p.Name + "/" + r.Name
			}
			switch r.Action {
			case execgate.ActionAllow, execgate.ActionDeny, execgate.ActionRequireApproval:
			case "":
				return nil, &ConfigError{Path: rpath + ".action", Message: "required: allow, deny or require_approval"}
			default:
				return nil, &ConfigError{Path: rpath + ".action", Message: fmt.Sprintf("unknown action %q; want allow, deny or require_approval", r.Action)}
			}
			if len(r.Tools) == 0 {
				return nil, &ConfigError{Path: rpath + ".tools", Message: "at least one tool pattern is required"}
			}
			for k, t := range r.Tools {
				g, err := compileToolGlob(t)
				if err != nil {
					return nil, &ConfigError{Path: rpath + ".tools[" + strconv.Itoa(k) + "]", Message: err.Error()}
				}
				cr.tools = append(cr.tools, g)
			}
			c.rules = append(c.rules, cr)
		}
		lim, err := compileLimit(p.Name, p.RateLimit, path+".rate_limit")
		if err != nil {
			return nil, err
		}
		c.limit = lim
		switch {
		case pg.literal:
			rs.exact[p.Principal] = c
		case pg.isStar():
			rs.star = c
		default:
			order[c] = i
			rs.globs = append(rs.globs, c)
		}
	}
	slices.SortFunc(rs.globs, func(a, b *compiled) int {
		if c := cmp.Compare(b.principal.prefix, a.principal.prefix); c != 0 {
			return c
		}
		return cmp.Compare(order[a], order[b])
	})
	return rs, nil
}

// compileLimit checks a RateLimit. It returns nil for one that limits
// nothing.
func compileLimit(policy string, rl RateLimit, path string) (*compiledLimit, error) {
	bad := func(field, msg string) error { return &ConfigError{Path: path + "." + field, Message: msg} }
	switch {
	case rl.PerMinute < 0:
		return nil, bad("per_minute", "must not be negative")
	case rl.Burst < 0:
		return nil, bad("burst", "must not be negative")
	case rl.Burst > 0 && rl.PerMinute == 0:
		return nil, bad("burst", "needs per_minute")
	case rl.Budget < 0:
		return nil, bad("budget", "must not be negative")
	case rl.BudgetWindow < 0:
		return nil, bad("budget_window", "must not be negative")
	case rl.BudgetWindow > 0 && rl.Budget == 0:
		return nil, bad("budget_window", "needs budget")
	case rl.Loop.Max < 0:
		return nil, bad("loop.max", "must not be negative")
	case rl.Loop.Max > MaxLoop:
		return nil, bad("loop.max", fmt.Sprintf("must be at most %d", MaxLoop))
	case rl.Loop.Window < 0:
		return nil, bad("loop.window", "must not be negative")
	case rl.Loop.Max > 0 && rl.Loop.Window == 0:
		return nil, bad("loop.window", "needs to be set when loop.max is")
	case rl.Loop.Window > 0 && rl.Loop.Max == 0:
		return nil, bad("loop.max", "needs to be set when loop.window is")
	}
	if rl == (RateLimit{}) {
		return nil, nil
	}
	l := &compiledLimit{
		budget:        rl.Budget,
		budgetSpan:    rl.BudgetWindow,
		loopMax:       rl.Loop.Max,
		loopWindow:    rl.Loop.Window,
		loopRule:      policy + "/" + ruleLoop,
		budgetRule:    policy + "/" + ruleBudget,
		perMinuteRule: policy + "/" + rulePerMinute,
	}
	if rl.PerMinute > 0 {
		l.perMinute = rate.Limit(float64(rl.PerMinute) / 60)
		l.burst = cmp.Or(rl.Burst, rl.PerMinute)
	}
	return l, nil
}

// checkName checks a policy name and returns why it is refused, or "".
func checkName(name string, dots bool) string {
	if name == "" {
		return "required"
	}
	if len(name) > 64 {
		return "must be at most 64 bytes"
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !isNameByte(c) || (c == '.' && !dots) {
			if dots {
				return fmt.Sprintf("%q: only ASCII letters, digits, '_', '-' and '.' are allowed", name)
			}
			return fmt.Sprintf("%q: only ASCII letters, digits, '_' and '-' are allowed", name)
		}
	}
	if c := name[0]; c == '_' || c == '-' || c == '.' {
		return fmt.Sprintf("%q: must start with a letter or digit", name)
	}
	return ""
}

// checkRuleName checks a rule name and returns why it is refused, or "".
// Rule names cannot be mistaken for a position, for the default rule or
// for a rate-limit refusal.
func checkRuleName(name string) string {
	if msg := checkName(name, false); msg != "" {
		return msg
	}
	if name == DefaultRule {
		return `"default" is reserved for calls no rule matches`
	}
	if allDigits(name) {
		return fmt.Sprintf("%q: must not be all digits; rules without a name are named by their position", name)
	}
	return ""
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// byName returns the policy called name, or nil.
func (rs *ruleSet) byName(name string) *compiled { return rs.names[name] }

// policyFor returns the policy that governs principal, or nil.
func (rs *ruleSet) policyFor(principal string) *compiled {
	if c, ok := rs.exact[principal]; ok {
		return c
	}
	for _, c := range rs.globs {
		if c.principal.match(principal) {
			return c
		}
	}
	return rs.star
}

// ruleFor returns the first rule of c matching name, or nil.
func (c *compiled) ruleFor(name string) *compiledRule {
	for i := range c.rules {
		r := &c.rules[i]
		for _, g := range r.tools {
			if g.match(name) {
				return r
			}
		}
	}
	return nil
}
