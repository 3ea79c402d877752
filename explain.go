package execgate

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ArgNote says why one argument of a validated call's argv is there.
type ArgNote struct {
	// Arg is the argument, as it would reach the program.
	Arg string `json:"arg"`
	// Why names the part of the spec that accepted or placed it: a fixed
	// leading argument, a declared flag and the rule its value passed
	// (each value by its own rule for a flag of several values), a
	// positional and its pattern or path rule (roots, what must be there,
	// globs, symbolic links), the subcommand of a dispatcher, or the build
	// function of a [Struct] schema.
	Why string `json:"why"`
}

// argExplainer is implemented by schemas that can say why each argument
// of an argv they built is there.
type argExplainer interface {
	explainArgs(args []string) []string
}

// Explain validates input for name exactly as Check does and, for an
// accepted call, returns one [ArgNote] per argument of its argv, saying
// which part of the spec accepted or placed it. It starts nothing and asks
// no [Policy]. A refused call returns the same error as Check, whose Issues
// name each refused token and why.
func (p *Proposer) Explain(name string, input json.RawMessage) ([]ArgNote, error) {
	c, err := prepare(p.allowlist(), name, input)
	if err != nil {
		return nil, err
	}
	var why []string
	if ex, ok := c.e.spec.Args.(argExplainer); ok {
		why = ex.explainArgs(c.argv.Args)
	}
	notes := make([]ArgNote, len(c.argv.Args))
	for i, a := range c.argv.Args {
		notes[i] = ArgNote{Arg: a, Why: "built by the spec's schema from the validated input"}
		if i < len(why) && why[i] != "" {
			notes[i].Why = why[i]
		}
	}
	return notes, nil
}

func (f fixedSchema) explainArgs(args []string) []string {
	why := make([]string, len(args))
	for i := range why {
		why[i] = "fixed argument of the spec"
	}
	return why
}

func (s *subcommandSchema) explainArgs(args []string) []string {
	why := make([]string, len(args))
	for i := range why {
		switch {
		case i < len(s.leading):
			why[i] = "fixed leading argument of the dispatcher"
		case i == len(s.leading):
			why[i] = "the subcommand, from the requested name"
		default:
			why[i] = "token passed to the dispatched subcommand (token checks only, no flag allowlist)"
		}
	}
	return why
}

// explainArgs reads an argv this schema built, which is canonical: the
// leading arguments, then declared flags in their one spelling, then "--"
// if the spec asks for it, then positionals.
func (s *flagsSchema) explainArgs(args []string) []string {
	byCanon := make(map[string]*flagRule, len(s.rules))
	for _, r := range s.rules {
		byCanon[r.canon] = r
	}
	why := make([]string, len(args))
	i := 0
	for ; i < len(args) && i < len(s.spec.Leading); i++ {
		why[i] = "fixed leading argument of the spec"
	}
	for i < len(args) {
		tok := args[i]
		name, value, glued := tok, "", false
		if strings.HasPrefix(tok, "--") {
			name, value, glued = strings.Cut(tok, "=")
		}
		r := byCanon[name]
		if r == nil || tok == "--" {
			break
		}
		if r.Value == ValueNone && r.values == nil {
			why[i] = "declared flag " + r.canon
			i++
			continue
		}
		if r.values != nil {
			// A flag of several values: the flag, then each value as an
			// argument of its own, each with its own rule.
			why[i] = fmt.Sprintf("declared flag %s, taking %d values", r.canon, len(r.values))
			for j, vr := range r.values {
				if i+1+j < len(args) {
					why[i+1+j] = vr.label + ", " + vr.valueRule()
				}
			}
			i += 1 + len(r.values)
			continue
		}
		rule := r.valueRule()
		if glued {
			why[i] = fmt.Sprintf("declared flag %s with its value %s, %s", r.canon, quoteArg(value), rule)
			i++
			continue
		}
		why[i] = "declared flag " + r.canon
		if i+1 < len(args) {
			why[i+1] = "value of " + r.canon + ", " + rule
		}
		i += 2
	}
	if i < len(args) && args[i] == "--" && s.spec.EndOfOptions {
		why[i] = "end of options, placed by the spec"
		i++
	}
	for ; i < len(args); i++ {
		if s.spec.Positionals.Path != nil {
			why[i] = "positional argument, " + pathRuleText(s.posPath, s.spec.Positionals.Path)
		} else if s.spec.Positionals.Pattern != "" {
			why[i] = "positional argument, matching " + s.spec.Positionals.Pattern
		} else {
			why[i] = "positional argument (plain text: no shell metacharacters, no leading '-' or '@')"
		}
	}
	return why
}

// valueRule says what a flag's value had to be.
func (r *flagRule) valueRule() string {
	switch r.Value {
	case ValueInt:
		return "an integer" + r.boundsText()
	case ValueEnum:
		return "one of " + flagEnumText(r.Enum)
	case ValuePattern:
		return "matching " + r.Pattern
	case ValuePath:
		return pathRuleText(r.path, r.Path)
	default:
		return "plain text (no shell metacharacters, no leading '-' or '@')"
	}
}

// pathRuleText says what a path argument had to be: its roots, what had to
// be there, whether it could hold globs and whether symbolic links were
// resolved. b is rule bound to the working directory, nil before that; a
// nil rule is PathRule{}.
func pathRuleText(b *boundPathRule, rule *PathRule) string {
	if b != nil {
		rule = &b.rule
	} else if rule == nil {
		rule = &PathRule{}
	}
	var d strings.Builder
	d.WriteString("a path inside ")
	switch {
	case b != nil:
		d.WriteString(b.rootsText())
	case len(rule.Roots) > 0:
		d.WriteString("the roots " + strings.Join(rule.Roots, ", "))
	default:
		d.WriteString("the working directory")
	}
	d.WriteString(", passed cleaned")
	switch rule.Must {
	case PathExists:
		d.WriteString("; it must exist")
	case PathFile:
		d.WriteString("; it must be a regular file")
	case PathDir:
		d.WriteString("; it must be a directory")
	}
	if rule.Glob {
		d.WriteString("; glob characters * ? [ allowed after the part checked as a path, for the program to expand")
	} else {
		d.WriteString("; no glob characters")
	}
	if rule.Lexical {
		d.WriteString("; checked as text: symbolic links are not resolved")
	} else {
		d.WriteString("; symbolic links resolved: none may lead outside")
	}
	return d.String()
}
