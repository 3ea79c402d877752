package execgate

import (
	"fmt"
	"strconv"
)

// DefaultMaxStdin is the stdin cap, in bytes, of a [StdinSpec] whose Max is
// zero. Stdin arrives inside the JSON input, so [MaxInputSize] bounds it too.
const DefaultMaxStdin = 1 << 20

// ValueKind says whether a declared flag takes a value and which values it
// accepts.
type ValueKind int

// The value kinds of a [Flag].
const (
	// ValueNone is a boolean flag: it takes no value. It is the zero
	// ValueKind.
	ValueNone ValueKind = iota
	// ValueString takes any non-empty text that does not start with '-'
	// or '@' and holds no shell metacharacter.
	ValueString
	// ValueInt takes a decimal integer within the flag's Min and Max,
	// and emits it in its shortest form ("007" as "7"). A '+' sign is
	// refused: a program may read +N otherwise than N (tail -n +5).
	ValueInt
	// ValueEnum takes exactly one of the flag's Enum values.
	ValueEnum
	// ValuePattern takes text that the flag's Pattern matches as a whole.
	ValuePattern
	// ValuePath takes a path inside the roots of the flag's Path rule
	// (the spec's working directory when Path is nil), checked as a path
	// (see [PathRule]), and emits it cleaned.
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
// names [ValueKind.String] returns.
func ParseValueKind(s string) (ValueKind, error) {
	for k, n := range valueKindNames {
		if s == n {
			return ValueKind(k), nil
		}
	}
	return 0, fmt.Errorf("unknown value kind %q (want none, string, int, enum, pattern or path)", s)
}

// FlagSpec declares the command-line grammar a [Flags] schema accepts: fixed
// leading arguments, the flags a caller may give, the positional arguments
// that may follow them, and whether the command reads stdin.
type FlagSpec struct {
	// Leading are fixed arguments emitted first, before anything the
	// caller sends, such as a subcommand ("log") or a global option
	// ("--no-pager"). Callers can never place anything before or between
	// them. Nil means none. They must hold none of the characters [Flags]
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
// A program that reads a two-dash option's value only as the next argument
// (curl, jq) declares the flag [Flag.Separate]. Tools whose options are all
// single letters (ssh) declare each with a one-character Name.
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

	// Value is what the flag takes. The zero value, [ValueNone], makes it a
	// boolean flag.
	Value ValueKind

	// Min and Max bound the value of a [ValueInt] flag, inclusively. Nil
	// means unbounded on that side. They must be nil for other kinds.
	Min, Max *int64

	// Enum lists the values a [ValueEnum] flag accepts, compared exactly.
	// It is required for [ValueEnum] and must be empty for other kinds.
	Enum []string

	// Pattern is the RE2 regular expression a [ValuePattern] flag's value
	// must match as a whole: the gate matches it as ^(?:Pattern)$, so a
	// value that merely contains a match is refused. Write the anchors
	// anyway, so readers of the configuration see the full-match intent.
	// A value the pattern matches may hold shell metacharacters and may
	// start with '-' or '@'; the characters [Flags] refuses in a token are
	// refused whatever the pattern says. [ArgsSchema.JSONSchema] shows the
	// pattern as written when it is anchored at both ends and wrapped in
	// ^(?:...)$ otherwise, so keep to syntax that RE2 and ECMA-262 share,
	// and adds the token rule beside it (allOf). It is required for
	// [ValuePattern] and must be empty for other kinds.
	Pattern string

	// Path is the rule of a [ValuePath] flag's value: its roots and what
	// must be there (see [PathRule]). Nil means PathRule{}: anything inside
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

	// Separate, if true, emits a two-dash flag's value as the next
	// argument ("--opt", "value") instead of "--opt=value", for programs
	// that read only that form (curl, jq). A value that then starts with
	// '-' is refused whatever its kind or pattern allows, so that it can
	// never be read as a flag of its own. It needs a value kind; a
	// one-dash spelling is emitted that way already.
	Separate bool

	// Values, if not empty, makes the flag take len(Values) values, each
	// typed and checked by its own FlagValue, as jq's --arg NAME VALUE and
	// --rawfile NAME FILE do. The flag and its values are emitted as
	// separate arguments ("--rawfile", "data", "file.json"), and a value
	// that starts with '-' is refused whatever its kind allows, so that it
	// can never be read as a flag of its own. In the input's "flags" object
	// the entry is an array of exactly len(Values) values (an array of such
	// arrays when Repeat is more than one); in "args" the flag is followed
	// by exactly len(Values) tokens, and "--flag=value" is refused. Values
	// excludes Value, Min, Max, Enum, Pattern, Path, Glued and Separate on
	// the Flag itself. At most [MaxFlagValues] values; nil means the flag
	// takes one value or none, as Value says.
	Values []FlagValue
}

// MaxFlagValues is the most values one [Flag] may take through
// [Flag.Values].
const MaxFlagValues = 8

// FlagValue declares one of the values of a flag that takes several (see
// [Flag.Values]). Its fields mean what the fields of the same names mean on
// a [Flag] that takes one value.
type FlagValue struct {
	// Name names the value in descriptions and messages ("name", "file").
	// It is required, must match [A-Za-z0-9][A-Za-z0-9_-]*, at most 64
	// bytes, and must be unique within the flag.
	Name string

	// Value is the value's kind. It must not be [ValueNone].
	Value ValueKind

	// Min and Max bound a [ValueInt] value, as [Flag.Min] and [Flag.Max].
	Min, Max *int64

	// Enum lists the values a [ValueEnum] value accepts, as [Flag.Enum].
	Enum []string

	// Pattern is the expression a [ValuePattern] value must match as a
	// whole, as [Flag.Pattern].
	Pattern string

	// Path is the rule of a [ValuePath] value, as [Flag.Path].
	Path *PathRule
}

// Positionals declares the positional arguments a [Flags] schema accepts.
// They are emitted after all flags, in the caller's order.
type Positionals struct {
	// Max is how many positional arguments are accepted. Zero accepts
	// none; negative is refused.
	Max int

	// Pattern, if not empty, is an RE2 regular expression every
	// positional argument must match as a whole (see [Flag.Pattern]); it
	// may then hold what the pattern allows, shell metacharacters
	// included. Empty accepts any non-empty argument without shell
	// metacharacters. Either way a positional may not start with '@',
	// nor with '-' unless [FlagSpec.EndOfOptions] is set.
	Pattern string

	// Path, if not nil, makes every positional argument a path, checked
	// against this rule (see [PathRule]) and emitted cleaned; an empty
	// PathRule{} means anything inside the spec's working directory. A
	// path never starts with '-' or '@', whatever [FlagSpec.EndOfOptions]
	// says. It excludes Pattern.
	Path *PathRule
}

// StdinSpec declares that a command reads standard input from the
// input's "stdin" string.
type StdinSpec struct {
	// Max is the largest stdin accepted, in bytes of UTF-8. Zero means
	// [DefaultMaxStdin]; negative is refused.
	Max int
}

// Flags returns a schema that accepts a declared command-line grammar.
//
// The input is a JSON object with three optional members; absent, null or
// {} input gives no arguments beyond spec.Leading:
//
//	{"flags": {"max-count": 5, "oneline": true}, "args": ["--author", "ann", "main"], "stdin": "..."}
//
// "flags" maps declared names to values: true emits a boolean flag, false
// leaves it out; a value flag takes a string (a JSON integer for
// [ValueInt]), or an array of them when its Repeat is more than one; a flag
// of several values ([Flag.Values]) takes an array of its values. "args"
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
// Parse refuses with a [*ValidationError]. The input is first decoded as
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
// nil or over its cap; more than [MaxApprovalArgs] tokens in "args", a token
// over [MaxApprovalArgBytes], and an argv longer than [MaxApprovalArgs]; and a
// "flags" object holding more keys and values, at every depth, than
// 2*(number of declared flags + [MaxApprovalArgs]) (it is checked but not
// kept, so a small input cannot make Parse allocate much).
// Issues come in a stable order: "flags" (undeclared keys sorted, then
// declaration order), "args", "stdin"; at most 32 are listed. Stdin, which
// may hold any other character, is never repeated in a message.
//
// Mistakes in spec (a malformed or duplicate name or spelling, a pattern
// that does not compile, bounds on the wrong kind, see the field docs) make
// [NewAllowlist] refuse the spec with a [*ConfigError]. Flags copies spec;
// changing it afterwards changes nothing.
func Flags(spec FlagSpec) ArgsSchema {
	s := &flagsSchema{schema: &schemaText{}}
	s.err = s.compile(copyFlagSpec(spec))
	return s
}
