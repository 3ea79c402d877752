package execgate

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/execgate/execgate/internal/strictjson"
)

// maxFlagIssues bounds how many issues one refusal lists.
const maxFlagIssues = 32

// errFlagsMisconfigured is the error of every Parse of a misconfigured
// schema, which [NewAllowlist] would have refused.
func errFlagsMisconfigured() error {
	return &ValidationError{Issues: []Issue{{Message: "the command's flag schema is misconfigured"}}}
}

// Parse implements [ArgsSchema].
func (s *flagsSchema) Parse(input json.RawMessage) (Argv, error) {
	if s.err != nil {
		return Argv{}, errFlagsMisconfigured()
	}
	p := &flagsParse{s: s}
	if len(s.rules) > len(p.counts) {
		p.moreCounts = make([]int, len(s.rules)-len(p.counts))
	}
	in, ok := p.decode(input)
	if ok {
		// Room for the usual call: every flag with its value as two
		// arguments, "--" and the positionals; no more than an argv may
		// hold, whatever the input's size.
		p.out = make([]string, 0, min(len(s.spec.Leading)+2*len(in.Flags)+2*len(in.Args)+1, MaxApprovalArgs+1))
		p.out = append(p.out, s.spec.Leading...)
		if len(in.Args) > 0 {
			p.pos = make([]string, 0, min(len(in.Args), s.spec.Positionals.Max, MaxApprovalArgs))
		}
		p.flagsObject(in.Flags)
		p.args(in.Args)
		p.stdin(in.Stdin)
		if p.issues == nil {
			n := len(p.out) + len(p.pos)
			if s.spec.EndOfOptions {
				n++
			}
			if n > MaxApprovalArgs {
				p.add("", fmt.Sprintf("the call would have %d arguments, more than %d", n, MaxApprovalArgs))
			}
		}
	}
	if p.issues != nil {
		if p.dropped > 0 {
			p.issues = append(p.issues, Issue{Message: fmt.Sprintf("and %d more issues", p.dropped)})
		}
		return Argv{}, &ValidationError{Issues: p.issues, causes: p.causes}
	}
	if s.spec.EndOfOptions {
		p.out = append(p.out, "--")
	}
	args := append(p.out, p.pos...)
	if len(args) == 0 {
		args = nil // as for any schema that emits nothing
	}
	return Argv{Args: args, Stdin: p.stdinBytes}, nil
}

// flagsParse is the state of one Parse.
type flagsParse struct {
	s          *flagsSchema
	out        []string // Leading and flags
	pos        []string // positionals
	stdinBytes []byte
	issues     []Issue
	causes     []error // see addCause
	dropped    int
	// Occurrences so far by flagRule.index: the first rules in counts,
	// the rest in moreCounts. (A slice into a buffer would make the parse
	// state escape to the heap: one allocation more per call.)
	counts     [16]int
	moreCounts []int
}

// count returns the number of occurrences of r so far.
func (p *flagsParse) count(r *flagRule) *int {
	if r.index < len(p.counts) {
		return &p.counts[r.index]
	}
	return &p.moreCounts[r.index-len(p.counts)]
}

func (p *flagsParse) add(field, msg string) {
	if len(p.issues) >= maxFlagIssues {
		p.dropped++
		return
	}
	p.issues = append(p.issues, Issue{Field: field, Message: msg})
}

// addCause is add for an issue whose cause has a type of its own (a
// *PathError), which the ValidationError unwraps to; cause may be nil.
func (p *flagsParse) addCause(field, msg string, cause error) {
	if cause != nil && len(p.issues) < maxFlagIssues {
		p.causes = append(p.causes, cause)
	}
	p.add(field, msg)
}

// flagsWire is the input's shape for strictjson. The values of "flags"
// depend on each flag's kind, so strictjson reads them as untyped values,
// checked as strictly as everything else (syntax, duplicate keys, NUL,
// UTF-8, surrogates), and flagsObject reads them by kind. A null member is
// refused like any other value of the wrong type.
type flagsWire struct {
	Args  []string          `json:"args"`
	Flags strictjson.Object `json:"flags"`
	Stdin *string           `json:"stdin"`
}

// flagsMaxDepth is the deepest nesting accepted: the input object,
// "flags", an array of values, and one more level so that a stray array
// is reported as a wrong type rather than as too deep. A schema with a flag
// of several values that may be given more than once accepts one level
// more, for its array of occurrences.
const flagsMaxDepth = 4

// decode reads the input strictly. It reports false when the input cannot
// be used at all.
func (p *flagsParse) decode(input json.RawMessage) (flagsWire, bool) {
	var w flagsWire
	if isEmptyInput(input) && len(input) <= MaxInputSize {
		return w, true
	}
	// An accepted "flags" object holds a key and a value per declared
	// flag and at most an argv's worth of elements; an input with many
	// more is refused without building it.
	opts := strictjson.Options{
		MaxSize:     MaxInputSize,
		MaxDepth:    p.s.maxDepth(),
		MaxProblems: maxFlagIssues,
		MaxValues:   2 * (len(p.s.rules) + MaxApprovalArgs),
	}
	err := opts.Decode(input, &w)
	if err == nil {
		return w, true
	}
	var se *strictjson.Error
	if !errors.As(err, &se) {
		p.add("", "input refused")
		return w, false
	}
	for _, pr := range se.Problems {
		p.add(flagsPath(pr.Path), pr.Message)
	}
	return w, false
}

// maxDepth is the deepest nesting s accepts (see flagsMaxDepth).
func (s *flagsSchema) maxDepth() int {
	for _, r := range s.rules {
		if r.values != nil && r.max > 1 {
			return flagsMaxDepth + 1
		}
	}
	return flagsMaxDepth
}

// flagsPath turns strictjson's path of a member of "flags", flags[name],
// into this schema's form, flags.name.
func flagsPath(path string) string {
	rest, ok := strings.CutPrefix(path, "flags[")
	if !ok {
		return path
	}
	key, after, ok := strings.Cut(rest, "]")
	if !ok || !validFlagName(key) {
		return path
	}
	return "flags." + key + after
}

// flagsObject reads the "flags" member: the undeclared keys in sorted
// order, then the declared flags in declaration order.
func (p *flagsParse) flagsObject(obj strictjson.Object) {
	var unknown []string
	// at maps each rule, by index, to its member's index in obj plus one.
	var atBuf [16]int
	at := atBuf[:0]
	if len(p.s.rules) <= len(atBuf) {
		at = atBuf[:len(p.s.rules)]
	} else {
		at = make([]int, len(p.s.rules))
	}
	for i := range obj {
		r := p.s.rule(p.s.byName, obj[i].Key)
		if r == nil {
			unknown = append(unknown, obj[i].Key)
			continue
		}
		at[r.index] = i + 1
	}
	slices.Sort(unknown)
	for _, key := range unknown {
		field := "flags[" + strictjson.PathKey(key) + "]"
		if validFlagName(key) {
			field = "flags." + key
		}
		p.add(field, p.s.unknownFlagKey(key))
	}
	for _, r := range p.s.rules {
		if at[r.index] == 0 {
			continue
		}
		v := &obj[at[r.index]-1].Value
		switch {
		case r.values != nil && r.max > 1:
			if v.Kind != strictjson.KindArray {
				p.add("flags."+r.Name, fmt.Sprintf("must be an array of at most %d arrays of %s", r.max, r.valuesNoun()))
				continue
			}
			if len(v.Elems) > r.max {
				p.add("flags."+r.Name, fmt.Sprintf("must hold at most %d arrays; %s may be given %d times", r.max, r.canon, r.max))
				continue
			}
			for j := range v.Elems {
				p.flagValues(flagField{name: r.Name, index: j}, r, &v.Elems[j])
			}
		case r.values != nil:
			p.flagValues(flagField{name: r.Name, index: -1}, r, v)
		case r.Value == ValueNone:
			if v.Kind != strictjson.KindBool {
				p.add("flags."+r.Name, fmt.Sprintf("must be true or false (%s takes no value)", r.canon))
				continue
			}
			if v.Bool {
				p.emit(flagField{name: r.Name, index: -1}, r, nil)
			}
		case r.max > 1:
			if v.Kind != strictjson.KindArray {
				p.add("flags."+r.Name, fmt.Sprintf("must be an array of at most %d %s", r.max, r.jsonNoun(true)))
				continue
			}
			if len(v.Elems) > r.max {
				p.add("flags."+r.Name, fmt.Sprintf("must hold at most %d values; %s may be given %d times", r.max, r.canon, r.max))
				continue
			}
			for j := range v.Elems {
				p.flagValue(flagField{name: r.Name, index: j}, r, &v.Elems[j])
			}
		default:
			p.flagValue(flagField{name: r.Name, index: -1}, r, v)
		}
	}
}

// flagValues checks and emits one occurrence of r, a flag of several
// values, given in the "flags" object as an array of its values.
func (p *flagsParse) flagValues(field flagField, r *flagRule, v *strictjson.Value) {
	if v.Kind != strictjson.KindArray || len(v.Elems) != len(r.values) {
		p.add(field.String(), "must be an array of "+r.valuesNoun())
		return
	}
	vals := make([]string, 0, len(r.values))
	for k, vr := range r.values {
		ef := field
		ef.elem = k + 1
		if canon, ok := p.flagValueCheck(ef, vr, &v.Elems[k]); ok {
			vals = append(vals, canon)
		}
	}
	if len(vals) == len(r.values) {
		p.emitValues(field, r, vals)
	}
}

// valuesNoun describes the array a flag of several values takes in
// "flags", for messages: "2 values: name (a string), file (a string)".
func (r *flagRule) valuesNoun() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d values:", len(r.values))
	for k, vr := range r.values {
		if k > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %s (%s)", r.Values[k].Name, vr.jsonNoun(false))
	}
	return b.String()
}

// emitValues appends one occurrence of r, a flag of several values, and
// its values as separate arguments, unless r has already been given as
// often as it may be or a value could be read as a flag.
func (p *flagsParse) emitValues(field flagField, r *flagRule, vals []string) {
	if !p.occur(field, r) {
		return
	}
	for k, v := range vals {
		if strings.HasPrefix(v, "-") {
			p.add(field.String(), fmt.Sprintf("%s: %s is passed as its own argument and must not start with '-'", quoteArg(v), r.values[k].valueLabel()))
			return
		}
	}
	p.out = append(p.out, r.canon)
	p.out = append(p.out, vals...)
}

// flagField names a member of "flags" or a token of "args" in an Issue.
// It is built only when an Issue is, so that an accepted call formats no
// field names.
type flagField struct {
	name  string // a declared flag name in "flags", or "" for "args"
	index int    // the token in "args", the element of an array in "flags", or -1
	elem  int    // one more than the value's index in the array of a flag of several values, or 0
}

// argField names token i of "args".
func argField(i int) flagField { return flagField{index: i} }

func (f flagField) String() string {
	switch {
	case f.name == "":
		return "args[" + strconv.Itoa(f.index) + "]"
	case f.index < 0 && f.elem > 0:
		return "flags." + f.name + "[" + strconv.Itoa(f.elem-1) + "]"
	case f.index < 0:
		return "flags." + f.name
	case f.elem > 0:
		return "flags." + f.name + "[" + strconv.Itoa(f.index) + "][" + strconv.Itoa(f.elem-1) + "]"
	default:
		return "flags." + f.name + "[" + strconv.Itoa(f.index) + "]"
	}
}

// flagValue checks and emits one value of r given in the "flags" object.
func (p *flagsParse) flagValue(field flagField, r *flagRule, v *strictjson.Value) {
	if canon, ok := p.flagValueCheck(field, r, v); ok {
		p.emit(field, r, &canon)
	}
}

// flagValueCheck checks one value of r given in the "flags" object and
// returns the form to emit.
func (p *flagsParse) flagValueCheck(field flagField, r *flagRule, v *strictjson.Value) (string, bool) {
	text := v.Text
	switch {
	case r.Value == ValueInt && v.Kind == strictjson.KindNumber:
	case r.Value != ValueInt && v.Kind == strictjson.KindString:
		if msg := checkArgText(text); msg != "" {
			p.add(field.String(), msg)
			return "", false
		}
	default:
		p.add(field.String(), "must be "+r.jsonNoun(false))
		return "", false
	}
	canon, msg, cause := r.checkValue(text)
	if msg != "" {
		p.addCause(field.String(), msg, cause)
		return "", false
	}
	return canon, true
}

// jsonNoun names the JSON type of r's value, for messages.
func (r *flagRule) jsonNoun(plural bool) string {
	switch {
	case r.Value == ValueInt && plural:
		return "integers"
	case r.Value == ValueInt:
		return "an integer"
	case plural:
		return "strings"
	default:
		return "a string"
	}
}

// emit appends one occurrence of r, with its value if it takes one, unless
// r has already been given as often as it may be.
func (p *flagsParse) emit(field flagField, r *flagRule, value *string) {
	if !p.occur(field, r) {
		return
	}
	switch {
	case value == nil:
		p.out = append(p.out, r.canon)
	case r.Separate && strings.HasPrefix(*value, "-"):
		// As its own argument, the value could be read as a flag.
		p.add(field.String(), fmt.Sprintf("%s: the value of %s is passed as its own argument and must not start with '-'", quoteArg(*value), r.canon))
	case r.Separate:
		p.out = append(p.out, r.canon, *value)
	case strings.HasPrefix(r.canon, "--"):
		// One element: a tool whose option takes an optional value
		// (git's --format, --color) would read a separate value as an
		// operand, and no value can be read as a flag of its own.
		p.out = append(p.out, r.canon+"="+*value)
	default:
		p.out = append(p.out, r.canon, *value)
	}
}

// occur counts one occurrence of r and reports whether it is allowed.
func (p *flagsParse) occur(field flagField, r *flagRule) bool {
	n := p.count(r)
	*n++
	if *n > r.max {
		if r.max == 1 {
			p.add(field.String(), fmt.Sprintf("%s may be given only once", r.canon))
		} else {
			p.add(field.String(), fmt.Sprintf("%s may be given at most %d times", r.canon, r.max))
		}
		return false
	}
	return true
}

// unknownFlagKey says why key is not a declared name in "flags".
func (s *flagsSchema) unknownFlagKey(key string) string {
	for _, r := range s.rules {
		if strings.EqualFold(key, r.Name) {
			return fmt.Sprintf("%s: undeclared flag; names are case-sensitive: use %q", quoteArg(key), r.Name)
		}
	}
	bare := strings.TrimLeft(key, "-")
	if bare != key {
		if r := s.rule(s.byName, bare); r != nil {
			return fmt.Sprintf("%s: undeclared flag; use the name without dashes: %q", quoteArg(key), r.Name)
		}
		if r := s.rule(s.single, bare); r != nil {
			return fmt.Sprintf("%s: undeclared flag; use the name %q", quoteArg(key), r.Name)
		}
	}
	return quoteArg(key) + ": undeclared flag"
}

// args reads the "args" member.
func (p *flagsParse) args(toks []string) {
	if len(toks) > MaxApprovalArgs {
		p.add("args", fmt.Sprintf("must hold at most %d tokens", MaxApprovalArgs))
		return
	}
	for i := 0; i < len(toks); i++ {
		tok, field := toks[i], argField(i)
		if msg := checkArgText(tok); msg != "" {
			p.add(field.String(), msg)
			continue
		}
		if tok == "--" {
			p.add(field.String(), `"--": not accepted from the caller`+p.s.endOfOptionsNote())
			continue
		}
		if len(tok) < 2 || tok[0] != '-' {
			p.positional(field, tok)
			continue
		}
		r, value, hasValue, msg := p.s.lookupFlag(tok)
		if msg != "" {
			p.add(field.String(), msg)
			continue
		}
		if r.values != nil {
			i = p.argsValues(toks, i, r)
			continue
		}
		if r.Value == ValueNone {
			p.emit(field, r, nil)
			continue
		}
		valueField := field
		if !hasValue {
			if i+1 == len(toks) || r.looksLikeFlag(toks[i+1]) {
				p.add(field.String(), fmt.Sprintf("%s: needs a value", quoteArg(tok)))
				continue
			}
			i++
			value, valueField = toks[i], argField(i)
			if msg := checkArgText(value); msg != "" {
				p.add(valueField.String(), msg)
				continue
			}
		}
		canon, msg, cause := r.checkValue(value)
		if msg != "" {
			p.addCause(valueField.String(), msg, cause)
			continue
		}
		p.emit(field, r, &canon)
	}
}

// argsValues reads the values of r, a flag of several values given as
// toks[i], from the tokens after it. It returns the index of the last token
// it read.
func (p *flagsParse) argsValues(toks []string, i int, r *flagRule) int {
	field, n := argField(i), len(r.values)
	if i+n >= len(toks) {
		p.add(field.String(), fmt.Sprintf("%s: needs %s", quoteArg(toks[i]), r.valuesNoun()))
		return len(toks) - 1
	}
	for k, vr := range r.values {
		if vr.looksLikeFlag(toks[i+1+k]) {
			p.add(field.String(), fmt.Sprintf("%s: needs %s", quoteArg(toks[i]), r.valuesNoun()))
			return i + k
		}
	}
	vals := make([]string, 0, n)
	for k, vr := range r.values {
		tok, vf := toks[i+1+k], argField(i+1+k)
		if msg := checkArgText(tok); msg != "" {
			p.add(vf.String(), msg)
			continue
		}
		canon, msg, cause := vr.checkValue(tok)
		if msg != "" {
			p.addCause(vf.String(), msg, cause)
			continue
		}
		vals = append(vals, canon)
	}
	if len(vals) == n {
		p.emitValues(field, r, vals)
	}
	return i + n
}

func (s *flagsSchema) endOfOptionsNote() string {
	if s.spec.EndOfOptions {
		return "; the command places it before the positional arguments itself"
	}
	return ""
}

// looksLikeFlag reports whether tok, following r in "args", is a flag
// rather than r's value.
func (r *flagRule) looksLikeFlag(tok string) bool {
	if len(tok) < 2 || tok[0] != '-' {
		return false
	}
	if r.Value == ValueInt {
		if _, err := strconv.ParseInt(tok, 10, 64); err == nil {
			return false
		}
	}
	return true
}

// lookupFlag reads tok, which starts with '-' and is longer than one
// byte, as a flag. It returns the rule, the value given with "=" or glued,
// or a message saying why tok is refused.
func (s *flagsSchema) lookupFlag(tok string) (r *flagRule, value string, hasValue bool, msg string) {
	if strings.HasPrefix(tok, "--") {
		name, val, eq := strings.Cut(tok[2:], "=")
		if r := s.rule(s.long, name); r != nil {
			if eq && r.values != nil {
				return nil, "", false, r.valuesApartText(tok)
			}
			if eq && r.Value == ValueNone {
				return nil, "", false, fmt.Sprintf("%s: %s takes no value", quoteArg(tok), r.canon)
			}
			return r, val, eq, ""
		}
		if r := s.rule(s.single, name); r != nil {
			return nil, "", false, fmt.Sprintf("%s: undeclared flag; it is spelled -%s", quoteArg(tok), name)
		}
		if name != "" {
			if m := s.abbreviationOf(name); m != "" {
				return nil, "", false, fmt.Sprintf("%s: abbreviation of %s is not accepted; spell the flag out", quoteArg(tok), m)
			}
		}
		return nil, "", false, quoteArg(tok) + ": undeclared flag"
	}
	rest := tok[1:]
	name, val, eq := strings.Cut(rest, "=")
	if r := s.rule(s.single, name); r != nil && len(name) > 1 {
		// A single-dash long name: -name, -name=value.
		if eq && r.values != nil {
			return nil, "", false, r.valuesApartText(tok)
		}
		if eq && r.Value == ValueNone {
			return nil, "", false, fmt.Sprintf("%s: %s takes no value", quoteArg(tok), r.canon)
		}
		return r, val, eq, ""
	}
	if r := s.rule(s.single, rest[:1]); r != nil {
		switch {
		case len(rest) == 1:
			return r, "", false, ""
		case r.values != nil:
			return nil, "", false, r.valuesApartText(tok)
		case r.Value == ValueNone && rest[1] == '=':
			return nil, "", false, fmt.Sprintf("%s: -%s takes no value", quoteArg(tok), rest[:1])
		case r.Value == ValueNone:
			return nil, "", false, fmt.Sprintf("%s: bundled short flags are not accepted; give each flag as its own token", quoteArg(tok))
		case rest[1] == '=':
			return nil, "", false, fmt.Sprintf("%s: give the value of -%s as the next token", quoteArg(tok), rest[:1])
		case !r.Glued:
			return nil, "", false, fmt.Sprintf("%s: a value glued to -%s is not accepted; give it as the next token", quoteArg(tok), rest[:1])
		default:
			return r, rest[1:], true, ""
		}
	}
	if r := s.rule(s.long, name); r != nil {
		return nil, "", false, fmt.Sprintf("%s: undeclared flag; it is spelled %s", quoteArg(tok), r.canon)
	}
	if m := s.abbreviationOf(name); m != "" {
		return nil, "", false, fmt.Sprintf("%s: abbreviation of %s is not accepted; spell the flag out", quoteArg(tok), m)
	}
	return nil, "", false, quoteArg(tok) + ": undeclared flag"
}

// valuesApartText says that the values of r, a flag of several values,
// follow it as tokens of their own.
func (r *flagRule) valuesApartText(tok string) string {
	return fmt.Sprintf("%s: give the %d values of %s as the next %d tokens", quoteArg(tok), len(r.values), r.canon, len(r.values))
}

// abbreviationOf returns the canonical spellings of the long flags whose
// names start with prefix, joined with " or ", or "".
func (s *flagsSchema) abbreviationOf(prefix string) string {
	var m []string
	for _, r := range s.rules {
		if len(r.Name) > 1 && len(prefix) < len(r.Name) && strings.HasPrefix(r.Name, prefix) {
			m = append(m, r.canon)
		}
	}
	return strings.Join(m, " or ")
}

// checkValue checks one value of r, which has passed checkArgText, and
// returns the form to emit, or a message saying why it is refused and,
// for a path refused, the *PathError behind the message.
func (r *flagRule) checkValue(v string) (canon, msg string, cause error) {
	switch r.Value {
	case ValueInt:
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case strings.HasPrefix(v, "+"):
			// Emitted as N, +N would mean something else to a program
			// that reads the sign (tail -n +5 starts at line 5).
			return "", fmt.Sprintf("%s: %s must be an integer written without '+'%s", quoteArg(v), r.valueLabel(), r.boundsText()), nil
		case err != nil:
			return "", fmt.Sprintf("%s: %s must be an integer%s", quoteArg(v), r.valueLabel(), r.boundsText()), nil
		case r.Min != nil && n < *r.Min, r.Max != nil && n > *r.Max:
			return "", fmt.Sprintf("%s: %s must be an integer%s", quoteArg(v), r.valueLabel(), r.boundsText()), nil
		}
		return strconv.FormatInt(n, 10), "", nil
	case ValueEnum:
		for _, e := range r.Enum {
			if v == e {
				return v, "", nil
			}
		}
		return "", fmt.Sprintf("%s: %s must be one of %s", quoteArg(v), r.valueLabel(), flagEnumText(r.Enum)), nil
	case ValuePattern:
		if !r.re.MatchString(v) {
			return "", fmt.Sprintf("%s: %s does not match its pattern", quoteArg(v), r.valueLabel()), nil
		}
		return v, "", nil
	case ValuePath:
		if r.path == nil {
			return "", errUnboundPath, nil
		}
		out, err := r.path.check(v)
		if err != nil {
			return "", fmt.Sprintf("%s: %v", r.valueLabel(), err), err
		}
		return out, "", nil
	default: // ValueString
		if p := plainArgProblem(v); p != "" {
			return "", fmt.Sprintf("%s: %s %s", quoteArg(v), r.valueLabel(), p), nil
		}
		return v, "", nil
	}
}

// valueLabel names r's value in messages: "the value of --max-count", or
// "the file value of --rawfile" for one of several values.
func (r *flagRule) valueLabel() string {
	if r.label != "" {
		return r.label
	}
	return "the value of " + r.canon
}

func (r *flagRule) boundsText() string {
	switch {
	case r.Min != nil && r.Max != nil:
		return fmt.Sprintf(" from %d to %d", *r.Min, *r.Max)
	case r.Min != nil:
		return fmt.Sprintf(" of at least %d", *r.Min)
	case r.Max != nil:
		return fmt.Sprintf(" of at most %d", *r.Max)
	}
	return ""
}

// flagEnumText lists enum values for a message, at most eight of them.
func flagEnumText(vals []string) string {
	const show = 8
	var b strings.Builder
	for i, v := range vals {
		if i == show {
			fmt.Fprintf(&b, " and %d more", len(vals)-show)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteArg(v))
	}
	return b.String()
}

// positional checks and keeps one positional argument from "args".
func (p *flagsParse) positional(field flagField, tok string) {
	ps := p.s.spec.Positionals
	switch {
	case len(p.pos) >= ps.Max && ps.Max == 0:
		p.add(field.String(), quoteArg(tok)+": undeclared argument; this command takes no positional arguments")
		return
	case len(p.pos) >= ps.Max:
		p.add(field.String(), fmt.Sprintf("%s: too many positional arguments; at most %d are accepted", quoteArg(tok), ps.Max))
		return
	case strings.HasPrefix(tok, "@"):
		p.add(field.String(), quoteArg(tok)+": a positional argument must not start with '@'")
		return
	case strings.HasPrefix(tok, "-") && !p.s.spec.EndOfOptions:
		p.add(field.String(), quoteArg(tok)+": a positional argument must not start with '-'")
		return
	}
	if ps.Path != nil {
		if p.s.posPath == nil {
			p.add(field.String(), errUnboundPath)
			return
		}
		out, err := p.s.posPath.check(tok)
		if err != nil {
			p.addCause(field.String(), "a positional argument: "+err.Error(), err)
			return
		}
		p.pos = append(p.pos, out)
		return
	}
	if p.s.posRe != nil {
		if !p.s.posRe.MatchString(tok) {
			p.add(field.String(), quoteArg(tok)+": does not match the pattern for positional arguments")
			return
		}
	} else if tok != "-" {
		if msg := plainArgProblem(tok); msg != "" {
			p.add(field.String(), quoteArg(tok)+": a positional argument "+msg)
			return
		}
	}
	p.pos = append(p.pos, tok)
}

// stdin reads the "stdin" member. Its content is never repeated.
func (p *flagsParse) stdin(in *string) {
	switch {
	case in == nil:
	case p.s.stdinMax == 0:
		p.add("stdin", "not accepted: this command does not read standard input")
	case len(*in) > p.s.stdinMax:
		p.add("stdin", fmt.Sprintf("must be at most %d bytes", p.s.stdinMax))
	default:
		// strictjson has refused NUL.
		p.stdinBytes = []byte(*in)
	}
}
