package execgate

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/execgate/execgate/internal/inputrules"
	"github.com/execgate/execgate/internal/strictjson"
)

// Struct returns a schema that decodes JSON input strictly into a T,
// checks it with validator/v10 tags, and hands it to build, whose [Argv] is
// what runs. build must be deterministic: Execute builds an approved
// call's argv again and refuses the approval if it differs, so a build that
// depends on map order, time or randomness burns approvals. T must be a
// struct type; build must not be nil. Both are
// checked, with T's tags, when the [Allowlist] is built: a mistake there is a
// [*ConfigError] for the spec's Args field, never a panic at the first call.
//
// # Input
//
// Parse accepts exactly one JSON object, whose keys are T's fields by
// their exact json names (the Go name when the tag gives none). No bytes,
// white space only and null mean {}. It refuses, with a [*ValidationError]
// listing every problem by the field's JSON path ("max_count", "paths[2]",
// "opts.depth"): input over [MaxInputSize], unknown keys, keys that match a
// field only case-insensitively, duplicate keys at any depth, data after
// the object, values of the wrong JSON type (a string or a fractional
// number for an integer, a number out of the field's range), null for a
// field that is not a pointer, slice or map, NUL bytes (also as \u0000),
// invalid UTF-8 and unpaired surrogate escapes in strings and keys, and
// nesting deeper than 64 levels. Messages never repeat a submitted value;
// an unknown key is named only when it is a short identifier-like string.
//
// Fields may be strings, booleans, integers, unsigned integers and floats
// of any size (a time.Duration is an integer number of nanoseconds),
// pointers, slices ([]byte is a base64 string), arrays (exact length),
// maps with string keys, nested structs, embedded structs (their fields
// are promoted, as encoding/json does), and types that decode themselves
// such as time.Time. Interfaces, channels, functions, complex numbers,
// embedded struct pointers, the ",string" json option, json names other
// than letters, digits, '_' and '-', two fields with one json name, and
// recursive types are refused when the Allowlist is built.
//
// # Validation
//
// An input whose arrays and objects decoded into slices, arrays and maps
// of T hold more than [MaxStructElements] elements and members in all is
// refused before it is checked: checking each one (a dive over a list,
// say) costs memory, and refusing 1 MiB of "{}" items once took hundreds
// of megabytes.
//
// After decoding, T is checked with validator/v10 (with required structs
// enabled) and every failing field is reported. Note validator's meaning
// of required: a non-pointer field must be non-zero, so a required int
// refuses 0 and a required bool refuses false; use a pointer to require
// only that the field is present. Struct adds one tag, regexp=PATTERN,
// which requires a string field to match the RE2 pattern (Go's regexp
// syntax) as written: it is not anchored unless the pattern says so, as
// in regexp=^[a-z]+$. Because validator splits tags on ',' and '|', a
// comma or a pipe inside any tag parameter, including a pattern, must be
// written 0x2C or 0x7C: regexp=^[a-z]{10x2C8}$ and regexp=^(a0x7Cb)$.
// Validator replaces those four-character sequences everywhere in a
// parameter, so a pattern cannot contain them literally.
//
// # JSON Schema
//
// JSONSchema describes T as the model should see it: an object with
// "additionalProperties": false, a property per field by json name with
// its type, a "description" from the field's desc:"..." tag, "required"
// listing every field that Parse refuses to see left out (see below), and
// the constraints of the tags min, max, len, gt, gte, lt, lte (as
// minLength and maxLength for strings,
// minItems and maxItems for slices, minProperties and maxProperties for
// maps, minimum, maximum, exclusiveMinimum and exclusiveMaximum for
// numbers), oneof (an enum, with numbers for integer fields), regexp (a
// pattern), unique on a slice (uniqueItems), and email, url, uri, uuid,
// ipv4 and ipv6 (a format). Tags
// after dive describe the items of a slice or the values of a map, and
// keys ... endkeys its property names. Other tags and alternatives (a|b)
// are enforced but not described. The schema is computed once, by Struct.
//
// A field left out of the input holds its zero value (nil for a
// pointer), and it is listed as required when its tags refuse that
// value: required, and also min=1 or len=4 or gt=0 on a string, slice or
// map, min=1 on a number, a oneof that does not list the zero value, a
// regexp that "" does not match, email, a pointer whose tags do not start
// with omitempty or omitnil, a struct with a required field, and so on;
// Struct asks validator itself, once. Tags whose verdict depends on
// another field (required_with, required_if, excluded_unless,
// skip_unless, eqfield, gtcsfield, ...) are left out of that question:
// a field they make required only sometimes is not listed, and Parse
// refuses it where they say.
//
// Parse and JSONSchema may be called concurrently. build is called once
// per accepted input and may be called concurrently; a panic in build is
// a structRefusal, not a crash.
func Struct[T any](build func(T) Argv) ArgsSchema {
	s := &structSchema[T]{build: build, typ: reflect.TypeFor[T]()}
	s.schema, s.err = s.prepare()
	if s.err == nil {
		s.paths, s.err = structPaths(s.typ)
	}
	if s.err != nil {
		s.schema = fixedJSONSchema
	}
	return s
}

// structSchema is the [ArgsSchema] returned by [Struct].
type structSchema[T any] struct {
	build  func(T) Argv
	typ    reflect.Type
	schema json.RawMessage
	err    error        // reported by check; Parse refuses everything when set
	paths  []structPath // the Path fields, bound by bindDir
}

// bindDir implements dirBinder: a schema with Path fields checks them
// against the spec's working directory.
func (s *structSchema[T]) bindDir(dir string, memo *allowMemo) (ArgsSchema, error) {
	if s.err != nil || len(s.paths) == 0 {
		return s, nil
	}
	c := *s
	var err error
	if c.paths, err = bindPaths(s.paths, dir, memo); err != nil {
		return nil, err
	}
	return &c, nil
}

// check implements schemaChecker.
func (s *structSchema[T]) check() error { return s.err }

// JSONSchema implements [ArgsSchema].
func (s *structSchema[T]) JSONSchema() json.RawMessage { return s.schema }

// MaxStructElements is how many array elements and object members, all
// together, an input of a [Struct] schema may hold in the slices, arrays
// and maps of its type. No command's arguments need more; an input that has more
// is refused with a [ValidationError].
const MaxStructElements = 10_000

// maxStructIssues bounds how many issues one structRefusal lists.
const maxStructIssues = 32

// Parse implements [ArgsSchema].
func (s *structSchema[T]) Parse(input json.RawMessage) (argv Argv, err error) {
	defer func() {
		if r := recover(); r != nil {
			// The panic value is not shown: it may quote the input.
			argv, err = Argv{}, &ValidationError{Issues: []Issue{{Message: "input refused: the command's schema failed on it"}}}
		}
	}()
	if s.err != nil {
		return Argv{}, &ValidationError{Issues: []Issue{{Message: "input refused: the command's schema is misconfigured"}}}
	}
	if msg := inputrules.InputSizeProblem(len(input)); msg != "" {
		return Argv{}, &ValidationError{Issues: []Issue{{Message: msg}}}
	}
	data := []byte(input)
	if t := trimJSONSpace(data); len(t) == 0 || string(t) == "null" {
		data = []byte("{}")
	}
	var v T
	var issues []Issue
	if err := (strictjson.Options{MaxSize: MaxInputSize, MaxElements: MaxStructElements}).Decode(data, &v); err != nil {
		var se *strictjson.Error
		if !errors.As(err, &se) {
			return Argv{}, &ValidationError{Issues: []Issue{{Message: "input refused: the command's schema is misconfigured"}}}
		}
		for _, p := range se.Problems {
			issues = append(issues, Issue{Field: p.Path, Message: p.Message})
		}
		if !se.Partial {
			return Argv{}, structRefusal(issues)
		}
	}
	// Only the decoding issues (at most strictjson's problem cap) can cover
	// a validator issue, so this stays linear in the number of failing
	// fields however many there are.
	decoded := issues
	for _, is := range validateStruct(&v, s.typ) {
		if !coveredBy(is.Field, decoded) {
			issues = append(issues, is)
		}
	}
	var causes []error
	if len(issues) == 0 && len(s.paths) > 0 {
		issues, causes = checkPaths(s.paths, reflect.ValueOf(&v).Elem())
	}
	if len(issues) > 0 {
		ve := structRefusal(issues)
		if len(causes) > maxStructIssues {
			causes = causes[:maxStructIssues]
		}
		ve.causes = causes
		return Argv{}, ve
	}
	return s.build(v), nil
}

// structRefusal sorts issues by field, stably, and bounds their number.
func structRefusal(issues []Issue) *ValidationError {
	sort.SliceStable(issues, func(i, j int) bool { return pathLess(issues[i].Field, issues[j].Field) })
	if n := len(issues); n > maxStructIssues {
		issues = append(issues[:maxStructIssues:maxStructIssues], Issue{Message: fmt.Sprintf("and %d more problems", n-maxStructIssues)})
	}
	return &ValidationError{Issues: issues}
}

// coveredBy reports whether a decoding issue already concerns field or
// a value that contains it, so that a value refused while decoding is not
// reported again as, say, missing.
func coveredBy(field string, issues []Issue) bool {
	for _, is := range issues {
		p := is.Field
		if p == field {
			return true
		}
		if p != "" && len(field) > len(p) && strings.HasPrefix(field, p) && (field[len(p)] == '.' || field[len(p)] == '[') {
			return true
		}
	}
	return false
}

// pathLess orders JSON paths, comparing runs of digits by value so that
// paths[2] comes before paths[10].
func pathLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := leadingDigits(a), leadingDigits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func leadingDigits(s string) int {
	n := 0
	for n < len(s) && '0' <= s[n] && s[n] <= '9' {
		n++
	}
	return n
}

// prepare checks T and build and computes the JSON Schema.
func (s *structSchema[T]) prepare() (json.RawMessage, error) {
	t := s.typ
	if s.build == nil {
		return nil, errors.New("Struct: the build function is nil")
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("Struct needs a struct type, not %v", t)
	}
	if strictjson.Opaque(t) {
		return nil, fmt.Errorf("Struct needs a plain struct type; %v decodes itself (UnmarshalJSON or UnmarshalText)", t)
	}
	if err := strictjson.Check(t); err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "strictjson: "))
	}
	b := schemaBuilder{inPath: map[reflect.Type]bool{}}
	root, err := b.object(t, t.String())
	if err != nil {
		return nil, err
	}
	if err := probeTags(t); err != nil {
		return nil, err
	}
	return marshalSchema(root)
}
