package execgate

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/execgate/execgate/internal/inputrules"
	"github.com/execgate/execgate/internal/pattern"
)

// flagsSchema is the compiled form of a FlagSpec. It is immutable after
// [Flags] returns.
type flagsSchema struct {
	spec     FlagSpec
	rules    []*flagRule
	byName   spellings        // the "flags" key
	long     spellings        // spelled "--" + key
	single   spellings        // spelled "-" + key: Shorts, one-character and SingleDash names
	posRe    *pattern.Matcher // full-match form of Positionals.Pattern, or nil
	posPath  *boundPathRule   // Positionals.Path bound to the working directory, or nil
	stdinMax int              // 0: stdin refused
	err      error            // construction mistake, reported by check
	schema   *schemaText      // built on first use, see JSONSchema
}

// schemaText is the JSON Schema of a flagsSchema, built the first time
// it is asked for: a configuration of thousands of tools loads without
// the text of any, and a program that never lists its tools (an
// executor behind its own API) never builds one.
type schemaText struct {
	once sync.Once
	raw  json.RawMessage
}

// flagRule is a checked Flag with what matching needs. The Flag is the
// schema's own copy (an element of flagsSchema.spec.Flags, or a value's
// own), shared rather than copied again, and never changed.
type flagRule struct {
	*Flag
	canon string           // the one emitted spelling
	max   int              // occurrences allowed, at least 1
	re    *pattern.Matcher // full-match form of Pattern, or nil
	path  *boundPathRule   // a ValuePath flag's rule bound to the working directory, or nil before bindDir
	index int              // position in flagsSchema.rules
	// values are the rules of Flag.Values, one per value, with the
	// flag's canonical spelling; nil for a flag of one value or none.
	values []*flagRule
	label  string // how a value rule names its value in messages; "" for a flag
}

func (s *flagsSchema) check() error { return s.err }

func copyFlagSpec(spec FlagSpec) FlagSpec {
	out := spec
	out.Leading = append([]string(nil), spec.Leading...)
	out.Flags = make([]Flag, len(spec.Flags))
	for i, f := range spec.Flags {
		f.Enum = append([]string(nil), f.Enum...)
		if f.Min != nil {
			v := *f.Min
			f.Min = &v
		}
		if f.Max != nil {
			v := *f.Max
			f.Max = &v
		}
		f.Path = f.Path.clone()
		f.Values = copyFlagValues(f.Values)
		out.Flags[i] = f
	}
	out.Positionals.Path = spec.Positionals.Path.clone()
	if spec.Stdin != nil {
		st := *spec.Stdin
		out.Stdin = &st
	}
	return out
}

func copyFlagValues(vals []FlagValue) []FlagValue {
	if vals == nil {
		return nil
	}
	out := make([]FlagValue, len(vals))
	for i, v := range vals {
		v.Enum = append([]string(nil), v.Enum...)
		if v.Min != nil {
			n := *v.Min
			v.Min = &n
		}
		if v.Max != nil {
			n := *v.Max
			v.Max = &n
		}
		v.Path = v.Path.clone()
		out[i] = v
	}
	return out
}

// compile checks spec and fills in s. It returns the first mistake.
func (s *flagsSchema) compile(spec FlagSpec) error {
	s.spec = spec
	if len(spec.Leading) >= MaxApprovalArgs {
		return fmt.Errorf("Leading holds %d arguments; at most %d fit in a call", len(spec.Leading), MaxApprovalArgs-1)
	}
	for i, a := range spec.Leading {
		if msg := checkArgText(a); msg != "" {
			return fmt.Errorf("Leading[%d] %s", i, msg)
		}
	}
	if err := s.compileFlags(spec.Flags); err != nil {
		return err
	}
	if err := s.compilePositionals(spec.Positionals); err != nil {
		return err
	}
	if spec.Stdin != nil {
		switch {
		case spec.Stdin.Max < 0:
			return errors.New("Stdin.Max must not be negative")
		case spec.Stdin.Max == 0:
			s.stdinMax = DefaultMaxStdin
		default:
			s.stdinMax = spec.Stdin.Max
		}
	}
	return nil
}

// spellings finds a rule by a key (a flag's name, or a spelling without
// its dashes). Each element is a rule's index in flagsSchema.rules times
// two, plus one when the key is the rule's Short rather than its Name,
// and the elements are sorted by their keys. It keeps a schema's lookups
// at four bytes a key, a fraction of a map's, and holds no pointer to a
// rule, so that a copy of the schema with other rules of the same names
// (see bindDir) shares it.
type spellings []int32

// spellingKey returns the key of the element v, with rules the schema's rules.
func spellingKey(rules []*flagRule, v int32) string {
	if v&1 == 1 {
		return rules[v>>1].Short
	}
	return rules[v>>1].Name
}

// search returns where key is, or would be inserted, in sp, and whether
// it is there.
func (sp spellings) search(rules []*flagRule, key string) (int, bool) {
	return slices.BinarySearchFunc(sp, key, func(v int32, k string) int { return strings.Compare(spellingKey(rules, v), k) })
}

// add inserts the Name (or, when short is set, the Short) of the rule at
// index rule, or reports the index of the rule that has that key
// already.
func (sp *spellings) add(rules []*flagRule, rule int, short bool) (other int, dup bool) {
	v := int32(rule) << 1
	if short {
		v |= 1
	}
	i, found := sp.search(rules, spellingKey(rules, v))
	if found {
		return int((*sp)[i] >> 1), true
	}
	*sp = slices.Insert(*sp, i, v)
	return 0, false
}

// trimmed returns sp without the spare capacity its growth left, which
// a schema would otherwise keep for its whole life.
func (sp spellings) trimmed() spellings {
	if cap(sp) == len(sp) {
		return sp
	}
	return append(spellings(nil), sp...)
}

// rule returns the rule sp gives key, or nil.
func (s *flagsSchema) rule(sp spellings, key string) *flagRule {
	if i, found := sp.search(s.rules, key); found {
		return s.rules[sp[i]>>1]
	}
	return nil
}

// compileFlags compiles flags, in declaration order, into s.rules and the
// indexes of their names and spellings. It returns the first mistake.
func (s *flagsSchema) compileFlags(flags []Flag) error {
	s.byName, s.long, s.single = nil, nil, nil
	s.rules = make([]*flagRule, 0, len(flags))
	for i := range flags {
		r, err := compileFlag(&flags[i])
		if err != nil {
			if flags[i].Name != "" && validFlagName(flags[i].Name) {
				return fmt.Errorf("flag %q: %v", flags[i].Name, err)
			}
			return fmt.Errorf("Flags[%d]: %v", i, err)
		}
		r.index = len(s.rules)
		if len(s.rules) >= math.MaxInt32/2 {
			return fmt.Errorf("Flags holds more than %d flags", math.MaxInt32/2)
		}
		s.rules = append(s.rules, r) // before its keys, which refer to it
		if _, dup := s.byName.add(s.rules, r.index, false); dup {
			return fmt.Errorf("flag %q is declared twice", r.Name)
		}
		if r.Short != "" && r.Short == r.Name {
			return fmt.Errorf("flag %q: Short repeats the one-character Name", r.Name)
		}
		for _, short := range []bool{false, true} {
			key := r.Name
			if short {
				key = r.Short
			}
			if key == "" {
				continue
			}
			m, dashes := &s.long, "--"
			if key == r.Short || r.SingleDash || len(key) == 1 {
				m, dashes = &s.single, "-"
			}
			if other, dup := m.add(s.rules, r.index, short); dup {
				return fmt.Errorf("flag %q: spelling %s is already used by flag %q", r.Name, dashes+key, s.rules[other].Name)
			}
		}
	}
	s.byName, s.long, s.single = s.byName.trimmed(), s.long.trimmed(), s.single.trimmed()
	return nil
}

// compilePositionals checks p and compiles its pattern into s.posRe. It
// returns the first mistake.
func (s *flagsSchema) compilePositionals(p Positionals) error {
	if p.Max < 0 {
		return errors.New("Positionals.Max must not be negative")
	}
	if p.Pattern != "" {
		if p.Max == 0 {
			return errors.New("Positionals.Pattern is set but Positionals.Max is 0, so no positional is accepted")
		}
		re, err := compileFlagPattern(p.Pattern)
		if err != nil {
			return fmt.Errorf("Positionals.Pattern: %v", err)
		}
		s.posRe = re
	}
	if p.Path != nil {
		switch {
		case p.Max == 0:
			return errors.New("Positionals.Path is set but Positionals.Max is 0, so no positional is accepted")
		case p.Pattern != "":
			return errors.New("Positionals.Path and Positionals.Pattern exclude each other: a path is checked as a path")
		}
		if err := p.Path.validate(); err != nil {
			return fmt.Errorf("Positionals.Path: %v", err)
		}
	}
	return nil
}

// compileFlag checks f and returns its rule, which refers to f.
func compileFlag(f *Flag) (*flagRule, error) {
	if f.Values != nil {
		return compileMultiFlag(f)
	}
	switch {
	case f.Name == "" || len(f.Name) > inputrules.MaxFlagNameBytes:
		return nil, errors.New("Name " + inputrules.FlagNameProblem(f.Name))
	case !validFlagName(f.Name):
		return nil, fmt.Errorf("Name %q %s", f.Name, inputrules.FlagNameProblem(f.Name))
	case f.Short != "" && inputrules.ShortProblem(f.Short) != "":
		return nil, fmt.Errorf("Short %q %s", f.Short, inputrules.ShortProblem(f.Short))
	case f.Value < ValueNone || f.Value > ValuePath:
		return nil, fmt.Errorf("unknown Value kind %d", int(f.Value))
	case f.Repeat < 0:
		return nil, errors.New("Repeat must not be negative")
	case (f.Min != nil || f.Max != nil) && f.Value != ValueInt:
		return nil, fmt.Errorf("Min and Max apply only to int values, not %s", f.Value)
	case f.Min != nil && f.Max != nil && *f.Min > *f.Max:
		return nil, fmt.Errorf("Min %d is greater than Max %d", *f.Min, *f.Max)
	case len(f.Enum) > 0 && f.Value != ValueEnum:
		return nil, fmt.Errorf("Enum applies only to enum values, not %s", f.Value)
	case len(f.Enum) == 0 && f.Value == ValueEnum:
		return nil, errors.New("Enum is required for an enum value")
	case f.Pattern != "" && f.Value != ValuePattern:
		return nil, fmt.Errorf("Pattern applies only to pattern values, not %s", f.Value)
	case f.Pattern == "" && f.Value == ValuePattern:
		return nil, errors.New("Pattern is required for a pattern value")
	case f.Glued && f.Value == ValueNone:
		return nil, errors.New("Glued needs a flag that takes a value")
	case f.Separate && f.Value == ValueNone:
		return nil, errors.New("Separate needs a flag that takes a value")
	case f.Path != nil && f.Value != ValuePath:
		return nil, fmt.Errorf("Path applies only to path values, not %s", f.Value)
	}
	if f.Value == ValuePath {
		if err := f.Path.validate(); err != nil {
			return nil, fmt.Errorf("Path: %v", err)
		}
	}
	r := &flagRule{Flag: f, max: max(f.Repeat, 1)}
	switch {
	case f.SingleDash || len(f.Name) == 1:
		r.canon = "-" + f.Name
	default:
		r.canon = "--" + f.Name
	}
	if f.Glued && f.Short == "" && len(f.Name) != 1 {
		return nil, errors.New("Glued needs a one-character spelling (Short, or a one-character Name)")
	}
	seen := make(map[string]bool, len(f.Enum))
	for _, v := range f.Enum {
		if msg := checkArgText(v); msg != "" {
			return nil, fmt.Errorf("Enum value %s", msg)
		}
		if seen[v] {
			return nil, fmt.Errorf("Enum value %s is listed twice", quoteArg(v))
		}
		seen[v] = true
	}
	if f.Pattern != "" {
		re, err := compileFlagPattern(f.Pattern)
		if err != nil {
			return nil, fmt.Errorf("Pattern: %v", err)
		}
		r.re = re
	}
	return r, nil
}

// compileMultiFlag compiles a flag that takes several values: the flag
// itself as a boolean one, and each value as a rule of its own.
func compileMultiFlag(f *Flag) (*flagRule, error) {
	switch {
	case len(f.Values) == 0:
		return nil, errors.New("Values is empty: leave it nil for a flag of one value or none")
	case len(f.Values) > MaxFlagValues:
		return nil, fmt.Errorf("Values holds %d values; at most %d are accepted", len(f.Values), MaxFlagValues)
	case f.Value != ValueNone:
		return nil, errors.New("Values excludes Value: each value declares its own kind")
	case f.Min != nil || f.Max != nil || len(f.Enum) > 0 || f.Pattern != "" || f.Path != nil:
		return nil, errors.New("Values excludes Min, Max, Enum, Pattern and Path on the flag: declare them on each value")
	case f.Glued:
		return nil, errors.New("Glued does not apply to a flag with Values: its values are separate arguments")
	case f.Separate:
		return nil, errors.New("Separate does not apply to a flag with Values: its values are separate arguments already")
	}
	base := *f
	base.Values = nil
	r, err := compileFlag(&base)
	if err != nil {
		return nil, err
	}
	r.Flag = f // checked without its values, which are checked below
	seen := make(map[string]bool, len(f.Values))
	for i, v := range f.Values {
		switch {
		case v.Name == "" || len(v.Name) > inputrules.MaxFlagNameBytes || !validFlagName(v.Name):
			return nil, fmt.Errorf("Values[%d]: Name %s", i, inputrules.FlagNameProblem(v.Name))
		case seen[v.Name]:
			return nil, fmt.Errorf("Values[%d]: Name %q is used twice", i, v.Name)
		case v.Value == ValueNone:
			return nil, fmt.Errorf("value %q: Value must be a kind that takes a value, not none", v.Name)
		}
		seen[v.Name] = true
		vr, err := compileFlag(&Flag{Name: f.Name, SingleDash: f.SingleDash, Value: v.Value,
			Min: v.Min, Max: v.Max, Enum: v.Enum, Pattern: v.Pattern, Path: v.Path})
		if err != nil {
			return nil, fmt.Errorf("value %q: %v", v.Name, err)
		}
		vr.label = "the " + v.Name + " value of " + r.canon
		r.values = append(r.values, vr)
	}
	return r, nil
}

// compileFlagPattern compiles p so that it matches only whole strings.
// The matcher is shared with every other schema of the same pattern (see
// package internal/pattern), which compiles a pattern once however many
// flags and commands give it.
func compileFlagPattern(p string) (*pattern.Matcher, error) {
	return pattern.Compile(p)
}

func validFlagName(name string) bool { return inputrules.ValidWord(name) }

// dirBinder is an ArgsSchema that checks arguments against the command's
// working directory, and so must be bound to it: [NewAllowlist] calls
// bindDir with the spec's resolved Dir and keeps what it returns.
type dirBinder interface {
	bindDir(dir string, memo *allowMemo) (ArgsSchema, error)
}

// bindDir returns a copy of s whose path rules check against dir.
func (s *flagsSchema) bindDir(dir string, memo *allowMemo) (ArgsSchema, error) {
	if s.err != nil {
		return s, nil
	}
	c := *s
	c.schema = &schemaText{}
	if !s.hasPathRule() {
		// Nothing to bind but the positionals: the rules, immutable
		// after Flags, are shared with s.
		return c.bindPositionals(dir, memo)
	}
	c.rules = make([]*flagRule, len(s.rules)) // the indexes of spellings still hold
	for i, r := range s.rules {
		if !r.hasPathRule() {
			c.rules[i] = r
			continue
		}
		nr := *r
		if r.Value == ValuePath {
			rule := PathRule{}
			if r.Path != nil {
				rule = *r.Path
			}
			b, err := bindPath(rule, dir, memo)
			if err != nil {
				return nil, fmt.Errorf("flag %q: Path: %v", r.Name, err)
			}
			nr.path = b
		}
		if r.values != nil {
			nr.values = make([]*flagRule, len(r.values))
			for j, vr := range r.values {
				nv := *vr
				if vr.Value == ValuePath {
					rule := PathRule{}
					if vr.Path != nil {
						rule = *vr.Path
					}
					b, err := bindPath(rule, dir, memo)
					if err != nil {
						return nil, fmt.Errorf("flag %q: value %q: Path: %v", r.Name, r.Values[j].Name, err)
					}
					nv.path = b
				}
				nr.values[j] = &nv
			}
		}
		c.rules[i] = &nr
	}
	return c.bindPositionals(dir, memo)
}

// hasPathRule reports whether a flag of s, or a value of one, takes a
// path, which bindDir must bind.
func (s *flagsSchema) hasPathRule() bool {
	for _, r := range s.rules {
		if r.hasPathRule() {
			return true
		}
	}
	return false
}

// hasPathRule reports whether r, or one of its values, takes a path.
func (r *flagRule) hasPathRule() bool {
	if r.Value == ValuePath {
		return true
	}
	for _, v := range r.values {
		if v.Value == ValuePath {
			return true
		}
	}
	return false
}

// bindPositionals binds the path rule of the positionals of s, a copy
// bindDir made, to dir, and returns s.
func (s *flagsSchema) bindPositionals(dir string, memo *allowMemo) (ArgsSchema, error) {
	if p := s.spec.Positionals.Path; p != nil {
		b, err := bindPath(*p, dir, memo)
		if err != nil {
			return nil, fmt.Errorf("Positionals.Path: %v", err)
		}
		s.posPath = b
	}
	return s, nil
}
