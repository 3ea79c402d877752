package execgate

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/execgate/execgate/internal/inputrules"
	"github.com/execgate/execgate/internal/strictjson"
)

// DefaultMaxStdin is the stdin cap, in bytes, of a StdinSpec whose Max is
// zero. Stdin arrives inside the JSON input, so MaxInputSize bounds it too.
const DefaultMaxStdin = 1 << 20

// ValueKind says whether a declared flag takes a value and which values it
// accepts.
type ValueKind int

// The value kinds of a Flag.
const (
	// ValueNone is a boolean flag: it takes no value. It is the zero
	// ValueKind.
	ValueNone ValueKind = iota
	// ValueString takes any non-empty text that does not start with '-'
	// or '@' and holds no shell metacharacter.
	ValueString
	// ValueInt takes a decimal integer within the flag's Min and Max.
	ValueInt
	// ValueEnum takes exactly one of the flag's Enum values.
	ValueEnum
	// ValuePattern takes text that the flag's Pattern matches as a whole.
	ValuePattern
	// ValuePath takes a path inside the roots of the flag's Path rule
	// (the spec's working directory when Path is nil), checked as a path
	// (see PathRule), and emits it cleaned.
	ValuePath
)

var valueKindNames = [...]string{
	ValueNone:    "none",
	ValueString:  "string",
	ValueInt:     "int",
	ValueEnum:    "enum",
	ValuePattern: "pattern",
	ValuePath:    "path",
}

// String returns the kind's name as configuration files spell it: "none",
// "string", "int", "enum", "pattern" or "path".
func (k ValueKind) String() string {
	if k >= 0 && int(k) < len(valueKindNames) {
		return valueKindNames[k]
	}
	return "ValueKind(" + strconv.Itoa(int(k)) + ")"
}

// ParseValueKind returns the ValueKind named s, which must be one of the
// names String returns.
func ParseValueKind(s string) (ValueKind, error) {
	for k, n := range valueKindNames {
		if s == n {
			return ValueKind(k), nil
		}
	}
	return 0, fmt.Errorf("unknown value kind %q (want none, string, int, enum, pattern or path)", s)
}

// FlagSpec declares the command-line grammar a Flags schema accepts: fixed
// leading arguments, the flags a caller may give, the positional arguments
// that may follow them, and whether the command reads stdin.
type FlagSpec struct {
	// Leading are fixed arguments emitted first, before anything the
	// caller sends, such as a subcommand ("log") or a global option
	// ("--no-pager"). Callers can never place anything before or between
	// them. Nil means none. They must hold none of the characters Flags
	// refuses in a token.
	Leading []string

	// Flags are the flags a caller may give, in the order they are
	// emitted when given in the input's "flags" object. Nil means the
	// command takes no flags.
	Flags []Flag

	// Positionals says how many positional arguments are accepted and
	// what they must look like. The zero value accepts none.
	Positionals Positionals

	// Stdin, if not nil, lets the caller send standard input as the
	// input's "stdin" string. Nil refuses any stdin.
	Stdin *StdinSpec

	// EndOfOptions, if true, emits "--" after the flags and before the
	// positional arguments, so that the command cannot read a positional
	// as an option. It is then emitted whether or not positionals were
	// given. False emits no "--".
	EndOfOptions bool
}

// Flag declares one flag a caller may give.
//
// A flag is emitted in one canonical spelling: "-" + Name when SingleDash
// is set or Name is one character, "--" + Name otherwise. A value goes
// with its flag in one argument, "--name=value", for a two-dash spelling:
// every getopt_long, argparse, pflag and Go flag parser accepts that form,
// it is the only form a tool reads for an option whose value is optional
// (git log --format=oneline), and no value can then be read as an operand
// or a flag of its own. A one-dash spelling takes its value as the next
// argument ("-n", "5"; "-name", "*.go"), the form those parsers expect.
// Tools whose options are all single letters (ssh) declare each with a
// one-character Name.
type Flag struct {
	// Name is the flag's name without dashes: the key of the input's
	// "flags" object and the long spelling ("max-count" is --max-count).
	// It is required and must match [A-Za-z0-9][A-Za-z0-9_-]*, at most 64
	// bytes. A one-character Name is spelled with one dash, like a Short.
	Name string

	// Short is an optional one-character alias, an ASCII letter or digit,
	// spelled with one dash ("n" is -n). It is accepted in "args" and
	// never emitted. Empty means no alias.
	Short string

	// SingleDash, if true, spells the long name with one dash, as find
	// (-name) and go (-run) do; then only that spelling is accepted and
	// "--" + Name is refused. False spells it with two dashes.
	SingleDash bool

	// Value is what the flag takes. The zero value, ValueNone, makes it a
	// boolean flag.
	Value ValueKind

	// Min and Max bound the value of a ValueInt flag, inclusively. Nil
	// means unbounded on that side. They must be nil for other kinds.
	Min, Max *int64

	// Enum lists the values a ValueEnum flag accepts, compared exactly.
	// It is required for ValueEnum and must be empty for other kinds.
	Enum []string

	// Pattern is the RE2 regular expression a ValuePattern flag's value
	// must match as a whole: the gate matches it as ^(?:Pattern)$, so a
	// value that merely contains a match is refused. Write the anchors
	// anyway, so readers of the configuration see the full-match intent.
	// A value the pattern matches may hold shell metacharacters and may
	// start with '-' or '@'; the characters Flags refuses in a token are
	// refused whatever the pattern says. JSONSchema shows the pattern as
	// written when it is anchored at both ends and wrapped in ^(?:...)$
	// otherwise, so keep to syntax that RE2 and ECMA-262 share, and adds
	// the token rule beside it (allOf). It is required for ValuePattern
	// and must be empty for other kinds.
	Pattern string

	// Path is the rule of a ValuePath flag's value: its roots and what
	// must be there (see PathRule). Nil means PathRule{}: anything inside
	// the spec's working directory. It must be nil for other kinds.
	Path *PathRule

	// Repeat is how many times the flag may occur in one call, counted
	// over both "flags" and "args". Zero means once. When Repeat is more
	// than one, a value flag's entry in "flags" is an array of values; a
	// boolean flag's entry stays a boolean and adds one occurrence.
	// Negative is refused.
	Repeat int

	// Glued, if true, also accepts a value glued to the flag's
	// one-character spelling in "args" (-n5). It needs a value kind and a
	// one-character spelling (Short, or a one-character Name). False
	// refuses glued values, so that -oProxyCommand=x can never pass. The
	// long spelling always accepts "=value" (--max-count=5, -run=X)
	// whatever Glued says.
	Glued bool
}

// Positionals declares the positional arguments a Flags schema accepts.
// They are emitted after all flags, in the caller's order.
type Positionals struct {
	// Max is how many positional arguments are accepted. Zero accepts
	// none; negative is refused.
	Max int

	// Pattern, if not empty, is an RE2 regular expression every
	// positional argument must match as a whole (see Flag.Pattern); it
	// may then hold what the pattern allows, shell metacharacters
	// included. Empty accepts any non-empty argument without shell
	// metacharacters. Either way a positional may not start with '@',
	// nor with '-' unless EndOfOptions is set.
	Pattern string

	// Path, if not nil, makes every positional argument a path, checked
	// against this rule (see PathRule) and emitted cleaned; an empty
	// PathRule{} means anything inside the spec's working directory. A
	// path never starts with '-' or '@', whatever EndOfOptions says. It
	// excludes Pattern.
	Path *PathRule
}

// StdinSpec declares that a command reads standard input from the
// input's "stdin" string.
type StdinSpec struct {
	// Max is the largest stdin accepted, in bytes of UTF-8. Zero means
	// DefaultMaxStdin; negative is refused.
	Max int
}

// argShellMeta are the bytes refused in string values and in positionals
// without a pattern. No shell ever sees them; refusing them is defence in
// depth against a command that hands its arguments to one.
const argShellMeta = ";&|$`<>(){}\n"

// maxFlagIssues bounds how many issues one refusal lists.
const maxFlagIssues = 32

// maxArgInMessage bounds how much of a caller's token a message repeats.
const maxArgInMessage = 64

// Flags returns a schema that accepts a declared command-line grammar.
//
// The input is a JSON object with three optional members; absent, null or
// {} input gives no arguments beyond spec.Leading:
//
//	{"flags": {"max-count": 5, "oneline": true}, "args": ["--author", "ann", "main"], "stdin": "..."}
//
// "flags" maps declared names to values: true emits a boolean flag, false
// leaves it out; a value flag takes a string (a JSON integer for
// ValueInt), or an array of them when its Repeat is more than one. "args"
// holds command-line tokens: declared flags in any accepted spelling
// (--max-count 5, --max-count=5, -n 5, and -n5 only when Glued) and
// positional arguments. In "args", every token longer than one byte that
// starts with '-' is read as a flag, so positionals cannot start with '-';
// a value flag takes the next token as its value unless that token starts
// with '-' (a negative number for a ValueInt flag excepted), in which case
// use the "=value" spelling. "stdin" is the child's standard input.
//
// The argv is built deterministically: spec.Leading; then the flags in
// "flags", in declaration order; then the flags in "args", in the caller's
// order; then "--" if spec.EndOfOptions; then the positionals, in the
// caller's order. Every flag is emitted in its canonical spelling with its
// value (see Flag: "--name=value", or "-n" and the value as the next
// argument), so the argv holds nothing
// that was not declared and no value can be read as a flag.
//
// Parse refuses with a *ValidationError. The input is first decoded as
// strictly as every other input of the gate: unknown, duplicate or
// case-mismatched keys, wrong JSON types, trailing data, invalid UTF-8,
// unpaired surrogate escapes and NUL are reported on their own, each
// naming the member without repeating its value; a null member counts as
// absent. Every later Issue names the offending member ("args[3]",
// "flags.max-count") and quotes the token, shortened to 64 bytes:
// undeclared flags; abbreviations of declared long flags; bundled short
// flags (-abc); glued values unless declared; "=value" on a boolean flag;
// a value flag without a value; values that fail their kind; a flag given
// more often than its Repeat; positionals starting with '@', or with '-'
// unless EndOfOptions is set, more than Positionals.Max, or failing
// Positionals.Pattern; "--" from the caller; anywhere in a token, value or
// key, the characters no argv token may hold, decided by Unicode
// properties: control characters (Cc: C0, DEL, C1), format characters
// (Cf, the bidirectional controls U+061C, U+200E, U+200F, U+202A–U+202E
// and U+2066–U+2069 among them), the line and paragraph separators
// U+2028 and U+2029, the default-ignorable code points, which are drawn
// as nothing (U+00AD, U+034F, U+115F, U+1160, U+17B4, U+180E,
// U+200B–U+200D, U+2060–U+2064, U+3164, the variation selectors
// U+FE00–U+FE0F, U+FEFF, U+FFA0 and the Tags block U+E0000–U+E007F among
// them), and U+2800 BRAILLE PATTERN BLANK, which is drawn blank; shell
// metacharacters (; & | $ ` < > ( ) { } and newline) in string values and
// in positionals unless a Pattern matched them; stdin when spec.Stdin is
// nil or over its cap; more than MaxApprovalArgs tokens in "args", a token
// over MaxApprovalArgBytes, and an argv longer than MaxApprovalArgs; and a
// "flags" object holding more keys and values, at every depth, than
// 2*(number of declared flags + MaxApprovalArgs) (it is checked but not
// kept, so a small input cannot make Parse allocate much).
// Issues come in a stable order: "flags" (undeclared keys sorted, then
// declaration order), "args", "stdin"; at most 32 are listed. Stdin, which
// may hold any other character, is never repeated in a message.
//
// Mistakes in spec (a malformed or duplicate name or spelling, a pattern
// that does not compile, bounds on the wrong kind, see the field docs) make
// NewAllowlist refuse the spec with a *ConfigError. Flags copies spec;
// changing it afterwards changes nothing.
func Flags(spec FlagSpec) ArgsSchema {
	s := &flagsSchema{}
	s.err = s.compile(copyFlagSpec(spec))
	if s.err != nil {
		s.schema = flagsRefuseAllSchema
		return s
	}
	s.schema = s.buildJSONSchema()
	return s
}

// flagsSchema is the compiled form of a FlagSpec. It is immutable after
// Flags returns.
type flagsSchema struct {
	spec     FlagSpec
	rules    []*flagRule
	byName   map[string]*flagRule // the "flags" key
	long     map[string]*flagRule // spelled "--" + key
	single   map[string]*flagRule // spelled "-" + key: Shorts, one-character and SingleDash names
	posRe    *regexp.Regexp       // full-match form of Positionals.Pattern, or nil
	posPath  *boundPathRule       // Positionals.Path bound to the working directory, or nil
	dir      string               // the working directory path rules are bound to; "" before bindDir
	stdinMax int                  // 0: stdin refused
	err      error                // construction mistake, reported by check
	schema   json.RawMessage
}

// flagRule is a checked Flag with what matching needs.
type flagRule struct {
	Flag
	canon string         // the one emitted spelling
	max   int            // occurrences allowed, at least 1
	re    *regexp.Regexp // full-match form of Pattern, or nil
	path  *boundPathRule // a ValuePath flag's rule bound to the working directory, or nil before bindDir
	index int            // position in flagsSchema.rules
}

// flagsRefuseAllSchema is the JSON Schema of a misconfigured Flags schema,
// which accepts nothing.
var flagsRefuseAllSchema = json.RawMessage(`{"type":"object","not":{}}`)

// errFlagsMisconfigured is the error of every Parse of a misconfigured
// schema, which NewAllowlist would have refused.
func errFlagsMisconfigured() error {
	return &ValidationError{Issues: []Issue{{Message: "the command's flag schema is misconfigured"}}}
}

func (s *flagsSchema) check() error { return s.err }

// JSONSchema implements ArgsSchema. The bytes are computed once, by Flags.
func (s *flagsSchema) JSONSchema() json.RawMessage { return s.schema }

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
		out.Flags[i] = f
	}
	out.Positionals.Path = spec.Positionals.Path.clone()
	if spec.Stdin != nil {
		st := *spec.Stdin
		out.Stdin = &st
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
	s.byName = make(map[string]*flagRule, len(spec.Flags))
	s.long = make(map[string]*flagRule)
	s.single = make(map[string]*flagRule)
	for i := range spec.Flags {
		r, err := compileFlag(spec.Flags[i])
		if err != nil {
			if spec.Flags[i].Name != "" && validFlagName(spec.Flags[i].Name) {
				return fmt.Errorf("flag %q: %v", spec.Flags[i].Name, err)
			}
			return fmt.Errorf("Flags[%d]: %v", i, err)
		}
		if _, dup := s.byName[r.Name]; dup {
			return fmt.Errorf("flag %q is declared twice", r.Name)
		}
		r.index = len(s.rules)
		s.byName[r.Name] = r
		if r.Short != "" && r.Short == r.Name {
			return fmt.Errorf("flag %q: Short repeats the one-character Name", r.Name)
		}
		for _, key := range []string{r.Name, r.Short} {
			if key == "" {
				continue
			}
			m, spelled := s.long, "--"+key
			if key == r.Short || r.SingleDash || len(key) == 1 {
				m, spelled = s.single, "-"+key
			}
			if other, dup := m[key]; dup {
				return fmt.Errorf("flag %q: spelling %s is already used by flag %q", r.Name, spelled, other.Name)
			}
			m[key] = r
		}
		s.rules = append(s.rules, r)
	}
	p := spec.Positionals
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

func compileFlag(f Flag) (*flagRule, error) {
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

// compileFlagPattern compiles pattern so that it matches only whole strings.
func compileFlagPattern(pattern string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(pattern); err != nil {
		return nil, err
	}
	return regexp.Compile(`^(?:` + pattern + `)$`)
}

func validFlagName(name string) bool { return inputrules.ValidWord(name) }

// checkArgText returns why s may not appear in an argv, or "". The message
// starts with s quoted. The rule is inputrules.TokenProblem.
func checkArgText(s string) string {
	if msg := inputrules.TokenProblem(s); msg != "" {
		return quoteArg(s) + ": " + msg
	}
	return ""
}

// quoteArg quotes a caller's token for a message, shortened to
// maxArgInMessage bytes at a character boundary.
func quoteArg(s string) string {
	if len(s) <= maxArgInMessage {
		return strconv.Quote(s)
	}
	cut := maxArgInMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}

// shellMetaIn returns the first shell metacharacter in s, or -1.
func shellMetaIn(s string) int {
	if i := strings.IndexAny(s, argShellMeta); i >= 0 {
		return int(s[i])
	}
	return -1
}

// Parse implements ArgsSchema.
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
		return Argv{}, &ValidationError{Issues: p.issues}
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
// is reported as a wrong type rather than as too deep.
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
		MaxDepth:    flagsMaxDepth,
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
		r := p.s.byName[obj[i].Key]
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

// flagField names a member of "flags" or a token of "args" in an Issue.
// It is built only when an Issue is, so that an accepted call formats no
// field names.
type flagField struct {
	name  string // a declared flag name in "flags", or "" for "args"
	index int    // the token in "args", the element of an array in "flags", or -1
}

// argField names token i of "args".
func argField(i int) flagField { return flagField{index: i} }

func (f flagField) String() string {
	switch {
	case f.name == "":
		return "args[" + strconv.Itoa(f.index) + "]"
	case f.index < 0:
		return "flags." + f.name
	default:
		return "flags." + f.name + "[" + strconv.Itoa(f.index) + "]"
	}
}

// flagValue checks and emits one value of r given in the "flags" object.
func (p *flagsParse) flagValue(field flagField, r *flagRule, v *strictjson.Value) {
	text := v.Text
	switch {
	case r.Value == ValueInt && v.Kind == strictjson.KindNumber:
	case r.Value != ValueInt && v.Kind == strictjson.KindString:
		if msg := checkArgText(text); msg != "" {
			p.add(field.String(), msg)
			return
		}
	default:
		p.add(field.String(), "must be "+r.jsonNoun(false))
		return
	}
	canon, msg := r.checkValue(text)
	if msg != "" {
		p.add(field.String(), msg)
		return
	}
	p.emit(field, r, &canon)
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
	n := p.count(r)
	*n++
	if *n > r.max {
		if r.max == 1 {
			p.add(field.String(), fmt.Sprintf("%s may be given only once", r.canon))
		} else {
			p.add(field.String(), fmt.Sprintf("%s may be given at most %d times", r.canon, r.max))
		}
		return
	}
	switch {
	case value == nil:
		p.out = append(p.out, r.canon)
	case strings.HasPrefix(r.canon, "--"):
		// One element: a tool whose option takes an optional value
		// (git's --format, --color) would read a separate value as an
		// operand, and no value can be read as a flag of its own.
		p.out = append(p.out, r.canon+"="+*value)
	default:
		p.out = append(p.out, r.canon, *value)
	}
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
		if r := s.byName[bare]; r != nil {
			return fmt.Sprintf("%s: undeclared flag; use the name without dashes: %q", quoteArg(key), r.Name)
		}
		if r := s.single[bare]; r != nil {
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
		canon, msg := r.checkValue(value)
		if msg != "" {
			p.add(valueField.String(), msg)
			continue
		}
		p.emit(field, r, &canon)
	}
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
		if r := s.long[name]; r != nil {
			if eq && r.Value == ValueNone {
				return nil, "", false, fmt.Sprintf("%s: %s takes no value", quoteArg(tok), r.canon)
			}
			return r, val, eq, ""
		}
		if r := s.single[name]; r != nil {
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
	if r := s.single[name]; r != nil && len(name) > 1 {
		// A single-dash long name: -name, -name=value.
		if eq && r.Value == ValueNone {
			return nil, "", false, fmt.Sprintf("%s: %s takes no value", quoteArg(tok), r.canon)
		}
		return r, val, eq, ""
	}
	if r := s.single[rest[:1]]; r != nil {
		switch {
		case len(rest) == 1:
			return r, "", false, ""
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
	if r := s.long[name]; r != nil {
		return nil, "", false, fmt.Sprintf("%s: undeclared flag; it is spelled %s", quoteArg(tok), r.canon)
	}
	if m := s.abbreviationOf(name); m != "" {
		return nil, "", false, fmt.Sprintf("%s: abbreviation of %s is not accepted; spell the flag out", quoteArg(tok), m)
	}
	return nil, "", false, quoteArg(tok) + ": undeclared flag"
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
// returns the form to emit, or a message saying why it is refused.
func (r *flagRule) checkValue(v string) (string, string) {
	switch r.Value {
	case ValueInt:
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil:
			return "", fmt.Sprintf("%s: the value of %s must be an integer%s", quoteArg(v), r.canon, r.boundsText())
		case r.Min != nil && n < *r.Min, r.Max != nil && n > *r.Max:
			return "", fmt.Sprintf("%s: the value of %s must be an integer%s", quoteArg(v), r.canon, r.boundsText())
		}
		return strconv.FormatInt(n, 10), ""
	case ValueEnum:
		for _, e := range r.Enum {
			if v == e {
				return v, ""
			}
		}
		return "", fmt.Sprintf("%s: the value of %s must be one of %s", quoteArg(v), r.canon, flagEnumText(r.Enum))
	case ValuePattern:
		if !r.re.MatchString(v) {
			return "", fmt.Sprintf("%s: the value of %s does not match its pattern", quoteArg(v), r.canon)
		}
		return v, ""
	case ValuePath:
		if r.path == nil {
			return "", errUnboundPath
		}
		out, err := r.path.check(v)
		if err != nil {
			return "", fmt.Sprintf("the value of %s: %v", r.canon, err)
		}
		return out, ""
	default: // ValueString
		if msg := plainArgProblem(v); msg != "" {
			return "", fmt.Sprintf("%s: the value of %s %s", quoteArg(v), r.canon, msg)
		}
		return v, ""
	}
}

// plainArgProblem applies the rules for text no pattern vouches for.
func plainArgProblem(v string) string {
	switch {
	case v == "":
		return "must not be empty"
	case v[0] == '-':
		return "must not start with '-'"
	case v[0] == '@':
		return "must not start with '@'"
	}
	if c := shellMetaIn(v); c >= 0 {
		return fmt.Sprintf("must not contain the shell metacharacter %q", rune(c))
	}
	return ""
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
			p.add(field.String(), "a positional argument: "+err.Error())
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

// The JSON Schema.

// flagSchemaNode is one JSON Schema object. Its fields are written in this
// order, which keeps the bytes deterministic.
type flagSchemaNode struct {
	Type                 string                         `json:"type,omitempty"`
	Description          string                         `json:"description,omitempty"`
	Properties           *orderedProps[*flagSchemaNode] `json:"properties,omitempty"`
	Items                *flagSchemaNode                `json:"items,omitempty"`
	Enum                 []string                       `json:"enum,omitempty"`
	Pattern              string                         `json:"pattern,omitempty"`
	AllOf                []*flagSchemaNode              `json:"allOf,omitempty"`
	Minimum              *int64                         `json:"minimum,omitempty"`
	Maximum              *int64                         `json:"maximum,omitempty"`
	MinLength            *int                           `json:"minLength,omitempty"`
	MaxLength            *int                           `json:"maxLength,omitempty"`
	MaxItems             *int                           `json:"maxItems,omitempty"`
	AdditionalProperties *bool                          `json:"additionalProperties,omitempty"`
}

// The patterns of the JSON Schema, generated from the rules they publish
// so that a schema never accepts a character the gate refuses. Each is
// written in the syntax RE2 and ECMA-262 with the u flag share (see
// inputrules.SchemaClass); the refused characters stand for themselves,
// and the schema's JSON carries them as \uXXXX escapes.
var (
	// flagTokenClass is every character checkArgText refuses, as a
	// character class body.
	flagTokenClass = inputrules.SchemaClass()
	// flagSchemaForbidden is every character plain text (string values,
	// positionals without a pattern) may not hold: those and the shell
	// metacharacters.
	flagSchemaForbidden = schemaClassOf(argShellMeta) + flagTokenClass
	// flagPlainSchemaPattern is what plainArgProblem and checkArgText
	// accept.
	flagPlainSchemaPattern = `^[^\-@` + flagSchemaForbidden + `][^` + flagSchemaForbidden + `]*$`
	// flagTokenSchemaPattern is what checkArgText accepts: a token in
	// "args", and the value of a pattern flag besides its pattern.
	flagTokenSchemaPattern = `^[^` + flagTokenClass + `]*$`
)

// schemaClassOf writes the characters of chars that no token may hold
// anyway as a character class body, with a backslash before each one
// that ECMA-262's u flag or RE2 reads as syntax.
func schemaClassOf(chars string) string {
	var b strings.Builder
	for _, r := range chars {
		if inputrules.Refused(r) {
			continue // in flagTokenClass
		}
		if strings.ContainsRune(`^$\.*+?()[]{}|/-`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (s *flagsSchema) buildJSONSchema() json.RawMessage {
	f := false
	maxArgs, maxBytes := MaxApprovalArgs, MaxApprovalArgBytes

	flagProps := &orderedProps[*flagSchemaNode]{}
	for _, r := range s.rules {
		flagProps.add(r.Name, r.jsonSchema())
	}
	top := &orderedProps[*flagSchemaNode]{}
	top.add("flags", &flagSchemaNode{
		Type:                 "object",
		Description:          `Flags by declared name. A boolean flag is true (add it) or false (leave it out); a value flag takes its value, which becomes its own argument.`,
		Properties:           flagProps,
		AdditionalProperties: &f,
	})
	top.add("args", &flagSchemaNode{
		Type:        "array",
		Description: s.argsDescription(),
		Items:       &flagSchemaNode{Type: "string", Pattern: flagTokenSchemaPattern, MaxLength: &maxBytes},
		MaxItems:    &maxArgs,
	})
	if s.stdinMax > 0 {
		top.add("stdin", &flagSchemaNode{
			Type:        "string",
			Description: fmt.Sprintf("Standard input for the command, at most %d bytes of UTF-8, without NUL.", s.stdinMax),
			MaxLength:   &s.stdinMax,
		})
	}
	root := &flagSchemaNode{
		Type:                 "object",
		Description:          `Arguments for the command, which runs without a shell. Give flags by name in "flags", or as command-line tokens in "args" together with the positional arguments.`,
		Properties:           top,
		AdditionalProperties: &f,
	}
	b, err := marshalSchema(root)
	if err != nil {
		// Only strings, integers and booleans are encoded.
		panic("execgate: encoding a flags JSON Schema: " + err.Error())
	}
	return b
}

// jsonSchema describes r's entry in the "flags" object.
func (r *flagRule) jsonSchema() *flagSchemaNode {
	if r.Value == ValueNone {
		d := fmt.Sprintf("true adds %s; false leaves it out.", r.canon)
		if r.max > 1 {
			d += fmt.Sprintf(" It may appear up to %d times in all; repeat it in args.", r.max)
		}
		return &flagSchemaNode{Type: "boolean", Description: d}
	}
	one := r.valueSchema()
	desc := fmt.Sprintf("Emitted as %s VALUE.", r.canon)
	if r.Value == ValueInt {
		desc = fmt.Sprintf("Emitted as %s N.", r.canon)
	}
	if r.max == 1 {
		if one.Description != "" {
			desc += " " + one.Description
		}
		one.Description = desc
		return one
	}
	return &flagSchemaNode{
		Type:        "array",
		Description: desc + fmt.Sprintf(" Up to %d values in all, each emitted with the flag.", r.max),
		Items:       one,
		MaxItems:    &r.max,
	}
}

// valueSchema describes one value of r.
func (r *flagRule) valueSchema() *flagSchemaNode {
	switch r.Value {
	case ValueInt:
		return &flagSchemaNode{Type: "integer", Minimum: r.Min, Maximum: r.Max}
	case ValueEnum:
		return &flagSchemaNode{Type: "string", Enum: r.Enum}
	case ValuePattern:
		// The gate refuses what no token may hold whatever the pattern
		// says, and so does the schema.
		return &flagSchemaNode{Type: "string", Pattern: flagAnchoredPattern(r.Pattern), AllOf: []*flagSchemaNode{{Pattern: flagTokenSchemaPattern}}}
	case ValuePath:
		one, maxBytes := 1, MaxApprovalArgBytes
		return &flagSchemaNode{Type: "string", Pattern: flagTokenSchemaPattern, MinLength: &one, MaxLength: &maxBytes,
			Description: pathDescription(r.Path, r.path)}
	default:
		one, maxBytes := 1, MaxApprovalArgBytes
		return &flagSchemaNode{Type: "string", Pattern: flagPlainSchemaPattern, MinLength: &one, MaxLength: &maxBytes}
	}
}

// flagAnchoredPattern returns pattern as written when it is anchored at both
// ends, and ^(?:pattern)$ otherwise, so that a JSON Schema validator,
// which searches, agrees with the gate, which matches whole values.
func flagAnchoredPattern(pattern string) string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err == nil && re.Op == syntax.OpConcat && len(re.Sub) >= 2 &&
		re.Sub[0].Op == syntax.OpBeginText && re.Sub[len(re.Sub)-1].Op == syntax.OpEndText {
		return pattern
	}
	return `^(?:` + pattern + `)$`
}

// argsDescription tells a model which tokens "args" accepts.
func (s *flagsSchema) argsDescription() string {
	var b strings.Builder
	b.WriteString("Command-line tokens, each one argument.")
	if len(s.rules) > 0 {
		b.WriteString(" Declared flags and their accepted spellings:")
		for i, r := range s.rules {
			if i > 0 {
				b.WriteString(";")
			}
			b.WriteString(" ")
			b.WriteString(strings.Join(r.spellings(), " | "))
		}
		b.WriteString(".")
	}
	ps := s.spec.Positionals
	switch {
	case ps.Max == 0:
		b.WriteString(" No positional arguments.")
	case ps.Max == 1:
		b.WriteString(" At most 1 positional argument")
	default:
		fmt.Fprintf(&b, " At most %d positional arguments", ps.Max)
	}
	if ps.Max > 0 {
		if ps.Path != nil {
			b.WriteString(", each a path (" + strings.TrimSuffix(pathDescription(ps.Path, s.posPath), ".") + ")")
		} else if ps.Pattern != "" {
			fmt.Fprintf(&b, ", each matching %s", flagAnchoredPattern(ps.Pattern))
		} else {
			b.WriteString(", each without shell metacharacters")
		}
		if s.spec.EndOfOptions {
			b.WriteString(", not starting with '@' or '-' (except \"-\" itself); they are placed after \"--\"")
		} else {
			b.WriteString(", not starting with '-' or '@'")
		}
		b.WriteString(".")
	}
	b.WriteString(` Undeclared, abbreviated or bundled flags, glued values not listed above, and "--" are refused.`)
	return b.String()
}

// spellings lists the accepted spellings of r in "args", for descriptions.
func (r *flagRule) spellings() []string {
	v := ""
	switch r.Value {
	case ValueNone:
	case ValueInt:
		v = "N"
	default:
		v = "VALUE"
	}
	if v == "" {
		out := []string{r.canon}
		if r.Short != "" {
			out = append(out, "-"+r.Short)
		}
		return out
	}
	var out []string
	out = append(out, r.canon+" "+v)
	if len(r.Name) > 1 {
		out = append(out, r.canon+"="+v)
	}
	if r.Short != "" {
		out = append(out, "-"+r.Short+" "+v)
	}
	if r.Glued {
		if len(r.Name) == 1 {
			out = append(out, r.canon+v)
		}
		if r.Short != "" {
			out = append(out, "-"+r.Short+v)
		}
	}
	return out
}
