package execgate

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-playground/validator/v10"

	"github.com/execgate/execgate/internal/inputrules"
	"github.com/execgate/execgate/internal/strictjson"
)

// Struct returns a schema that decodes JSON input strictly into a T,
// checks it with validator/v10 tags, and hands it to build, whose Argv is
// what runs. build must be deterministic: Execute builds an approved
// call's argv again and refuses the approval if it differs, so a build that
// depends on map order, time or randomness burns approvals. T must be a
// struct type; build must not be nil. Both are
// checked, with T's tags, when the Allowlist is built: a mistake there is a
// *ConfigError for the spec's Args field, never a panic at the first call.
//
// # Input
//
// Parse accepts exactly one JSON object, whose keys are T's fields by
// their exact json names (the Go name when the tag gives none). No bytes,
// white space only and null mean {}. It refuses, with a *ValidationError
// listing every problem by the field's JSON path ("max_count", "paths[2]",
// "opts.depth"): input over MaxInputSize, unknown keys, keys that match a
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
	if s.err != nil {
		s.schema = fixedJSONSchema
	}
	return s
}

// structSchema is the ArgsSchema returned by Struct.
type structSchema[T any] struct {
	build  func(T) Argv
	typ    reflect.Type
	schema json.RawMessage
	err    error // reported by check; Parse refuses everything when set
}

// check implements schemaChecker.
func (s *structSchema[T]) check() error { return s.err }

// JSONSchema implements ArgsSchema.
func (s *structSchema[T]) JSONSchema() json.RawMessage { return s.schema }

// maxStructIssues bounds how many issues one structRefusal lists.
const maxStructIssues = 32

// Parse implements ArgsSchema.
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
	if err := (strictjson.Options{MaxSize: MaxInputSize}).Decode(data, &v); err != nil {
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
	if len(issues) > 0 {
		return Argv{}, structRefusal(issues)
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

// Validation.

var (
	timeReflectType            = reflect.TypeFor[time.Time]()
	durationReflectType        = reflect.TypeFor[time.Duration]()
	jsonUnmarshalerReflectType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerReflectType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// structValidator is the validator every Struct schema shares. A Validate
// is safe for concurrent use once configured.
var structValidator = sync.OnceValue(func() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled(), validator.WithTagNameFuncBlankOmit())
	v.RegisterTagNameFunc(jsonFieldName)
	if err := v.RegisterValidation("regexp", matchesRegexp); err != nil {
		panic("execgate: registering the regexp tag: " + err.Error())
	}
	return v
})

// jsonFieldName names fields by their json name in validator's errors.
// Embedded structs without a json name get "", which leaves them out of
// the path, as their fields are promoted in the JSON.
func jsonFieldName(sf reflect.StructField) string {
	tag := sf.Tag.Get("json")
	name, _, _ := strings.Cut(tag, ",")
	switch {
	case tag == "-":
		return sf.Name
	case name != "":
		return name
	case sf.Anonymous && sf.Type.Kind() == reflect.Struct && !strictjson.Opaque(sf.Type):
		return ""
	default:
		return sf.Name
	}
}

// regexpCache maps a pattern to its *regexp.Regexp or error.
var regexpCache sync.Map

func compileCached(pattern string) (*regexp.Regexp, error) {
	if v, ok := regexpCache.Load(pattern); ok {
		if re, ok := v.(*regexp.Regexp); ok {
			return re, nil
		}
		return nil, v.(error)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		regexpCache.Store(pattern, err)
		return nil, err
	}
	v, _ := regexpCache.LoadOrStore(pattern, re)
	return v.(*regexp.Regexp), nil
}

// matchesRegexp implements the regexp tag.
func matchesRegexp(fl validator.FieldLevel) bool {
	f := fl.Field()
	if f.Kind() != reflect.String {
		return false
	}
	re, err := compileCached(fl.Param())
	return err == nil && re.MatchString(f.String())
}

// validateStruct runs the validator on v, a pointer to a struct of type t,
// and returns an issue per failing field.
func validateStruct(v any, t reflect.Type) []Issue {
	err := structValidator().Struct(v)
	if err == nil {
		return nil
	}
	var ves validator.ValidationErrors
	if !errors.As(err, &ves) {
		return []Issue{{Message: "input refused: the command's schema could not check it"}}
	}
	issues := make([]Issue, 0, len(ves))
	for _, fe := range ves {
		issues = append(issues, Issue{Field: issuePath(fe.Namespace(), t), Message: ruleMessage(fe)})
	}
	return issues
}

// issuePath turns a validator namespace ("T.opts.labels[team]") into a
// JSON path ("opts.labels[team]"). Map keys are kept only when
// strictjson.PathKey shows them; the path stops at the first one it hides.
func issuePath(ns string, t reflect.Type) string {
	if name := t.Name(); name != "" {
		if ns == name {
			return ""
		}
		ns = strings.TrimPrefix(ns, name+".")
	}
	var b strings.Builder
	for i := 0; i < len(ns); {
		if ns[i] != '[' {
			b.WriteByte(ns[i])
			i++
			continue
		}
		j := strings.IndexByte(ns[i:], ']')
		if j < 0 {
			b.WriteString("[?]")
			break
		}
		key, next := ns[i+1:i+j], i+j+1
		if strictjson.PathKey(key) != key || next < len(ns) && ns[next] != '.' && ns[next] != '[' {
			b.WriteString("[?]")
			break
		}
		b.WriteString(ns[i:next])
		i = next
	}
	return b.String()
}

// ruleMessage says what a failed validator tag requires, from the tag and
// its parameter, never from the value.
func ruleMessage(fe validator.FieldError) string {
	tag, param, kind, typ := fe.Tag(), fe.Param(), fe.Kind(), fe.Type()
	switch {
	case tag == "required" || strings.HasPrefix(tag, "required_"):
		return "is required"
	case strings.HasPrefix(tag, "excluded_"):
		return "must be left out"
	}
	switch tag {
	case "min", "max", "len", "gt", "gte", "lt", "lte":
		return boundMessage(tag, param, kind, typ)
	case "eq":
		return "must equal " + param
	case "ne":
		return "must not equal " + param
	case "oneof":
		return "must be one of: " + strings.Join(oneOfValues(param), " ")
	case "regexp":
		return "must match the pattern " + param
	}
	if m, ok := tagMessages[tag]; ok {
		return m
	}
	if param != "" {
		return fmt.Sprintf("fails the %q rule", tag+"="+param)
	}
	return fmt.Sprintf("fails the %q rule", tag)
}

// tagMessages explains common parameterless validator tags.
var tagMessages = map[string]string{
	"email":       "must be an email address",
	"url":         "must be a URL",
	"uri":         "must be a URI",
	"uuid":        "must be a UUID",
	"uuid4":       "must be a version 4 UUID",
	"ip":          "must be an IP address",
	"ipv4":        "must be an IPv4 address",
	"ipv6":        "must be an IPv6 address",
	"hostname":    "must be a host name",
	"alpha":       "must contain only ASCII letters",
	"alphanum":    "must contain only ASCII letters and digits",
	"numeric":     "must be a decimal number",
	"number":      "must contain only digits",
	"lowercase":   "must be lower case",
	"uppercase":   "must be upper case",
	"ascii":       "must contain only ASCII characters",
	"printascii":  "must contain only printable ASCII characters",
	"hexadecimal": "must be a hexadecimal number",
	"semver":      "must be a semantic version",
	"isdefault":   "must be left out",
	"dirpath":     "must be a directory path",
	"filepath":    "must be a file path",
	"unique":      "must not contain duplicates",
	"boolean":     "must be a boolean",
	"json":        "must be valid JSON",
	"base64":      "must be base64",
	"cidr":        "must be a CIDR network",
	"fqdn":        "must be a fully qualified domain name",
	"http_url":    "must be an HTTP or HTTPS URL",
	"https_url":   "must be an HTTPS URL",
}

func boundMessage(tag, param string, kind reflect.Kind, typ reflect.Type) string {
	words := map[string][2]string{
		"min": {"at least", "at least"}, "gte": {"at least", "at least"},
		"max": {"at most", "at most"}, "lte": {"at most", "at most"},
		"len": {"exactly", "exactly"},
		"gt":  {"more than", "greater than"}, "lt": {"fewer than", "less than"},
	}[tag]
	switch kind {
	case reflect.String:
		switch tag {
		case "gt":
			return "must be longer than " + param + " characters"
		case "lt":
			return "must be shorter than " + param + " characters"
		}
		return "must be " + words[0] + " " + param + " characters long"
	case reflect.Slice, reflect.Array:
		return "must have " + words[0] + " " + param + " items"
	case reflect.Map:
		return "must have " + words[0] + " " + param + " entries"
	case reflect.Struct:
		if typ == timeReflectType && param == "" {
			return map[string]string{
				"gt": "must be later than now", "gte": "must be now or later",
				"lt": "must be earlier than now", "lte": "must be now or earlier",
			}[tag]
		}
	}
	if typ == durationReflectType {
		if d, err := time.ParseDuration(param); err == nil {
			param = fmt.Sprintf("%d nanoseconds (%v)", int64(d), d)
		}
	}
	if tag == "len" {
		return "must equal " + param
	}
	return "must be " + words[1] + " " + param
}

// oneOfValues splits a oneof parameter as validator does: on white space,
// with 'single quotes' around values that contain it; quotes are dropped.
func oneOfValues(param string) []string {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }
	var out []string
	for i := 0; i < len(param); {
		if isSpace(param[i]) {
			i++
			continue
		}
		end := -1
		if param[i] == '\'' {
			if j := strings.IndexByte(param[i+1:], '\''); j >= 0 {
				end = i + 1 + j + 1
			}
		}
		if end < 0 {
			end = i
			for end < len(param) && !isSpace(param[end]) {
				end++
			}
		}
		out = append(out, strings.ReplaceAll(param[i:end], "'", ""))
		i = end
	}
	return out
}

// probeTags validates a zero T, and Ts whose pointers, slices and maps are
// filled to reach every nested type with zero and with non-zero leaves, so
// that a tag validator would panic on (an unknown tag, a malformed
// parameter) panics now, when the Allowlist is built.
func probeTags(t reflect.Type) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("validate tags: %v", r)
			if strings.Contains(err.Error(), "Undefined validation function") {
				err = fmt.Errorf("%w (%s)", err, tagEscapeHint)
			}
		}
	}()
	v := structValidator()
	for fill := range 3 {
		p := reflect.New(t)
		if fill > 0 {
			fillProbe(p.Elem(), fill == 2, map[reflect.Type]bool{})
		}
		_ = v.Struct(p.Interface())
	}
	return nil
}

// tagEscapeHint explains the tag errors that an unescaped ',' or '|' in
// a parameter causes: validator splits tags on both, so the rest of a
// pattern reads as a tag of its own.
const tagEscapeHint = "a ',' or '|' inside a tag parameter, such as a regexp pattern, must be written 0x2C or 0x7C"

func fillProbe(v reflect.Value, nonZero bool, inPath map[reflect.Type]bool) {
	t := v.Type()
	if !v.CanSet() || strictjson.Opaque(t) || inPath[t] {
		return
	}
	inPath[t] = true
	defer delete(inPath, t)
	switch t.Kind() {
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		fillProbe(p.Elem(), nonZero, inPath)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			fillProbe(v.Field(i), nonZero, inPath)
		}
	case reflect.Slice:
		e := reflect.New(t.Elem()).Elem()
		fillProbe(e, nonZero, inPath)
		v.Set(reflect.Append(reflect.MakeSlice(t, 0, 1), e))
	case reflect.Array:
		for i := range v.Len() {
			fillProbe(v.Index(i), nonZero, inPath)
		}
	case reflect.Map:
		if t.Key().Kind() == reflect.String {
			e := reflect.New(t.Elem()).Elem()
			fillProbe(e, nonZero, inPath)
			m := reflect.MakeMap(t)
			m.SetMapIndex(reflect.ValueOf("x").Convert(t.Key()), e)
			v.Set(m)
		}
	case reflect.String:
		if nonZero {
			v.SetString("x")
		}
	case reflect.Bool:
		v.SetBool(nonZero)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if nonZero {
			v.SetInt(1)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if nonZero {
			v.SetUint(1)
		}
	case reflect.Float32, reflect.Float64:
		if nonZero {
			v.SetFloat(1)
		}
	}
}

// JSON Schema.

// schemaNode is one JSON Schema; its fields are written in this order.
type schemaNode struct {
	Type                 string                     `json:"type,omitempty"`
	Description          string                     `json:"description,omitempty"`
	Format               string                     `json:"format,omitempty"`
	ContentEncoding      string                     `json:"contentEncoding,omitempty"`
	Enum                 []any                      `json:"enum,omitempty"`
	Pattern              string                     `json:"pattern,omitempty"`
	MinLength            *int64                     `json:"minLength,omitempty"`
	MaxLength            *int64                     `json:"maxLength,omitempty"`
	Minimum              json.Number                `json:"minimum,omitempty"`
	ExclusiveMinimum     json.Number                `json:"exclusiveMinimum,omitempty"`
	Maximum              json.Number                `json:"maximum,omitempty"`
	ExclusiveMaximum     json.Number                `json:"exclusiveMaximum,omitempty"`
	Items                *schemaNode                `json:"items,omitempty"`
	MinItems             *int64                     `json:"minItems,omitempty"`
	MaxItems             *int64                     `json:"maxItems,omitempty"`
	UniqueItems          bool                       `json:"uniqueItems,omitempty"`
	Properties           *orderedProps[*schemaNode] `json:"properties,omitempty"`
	Required             []string                   `json:"required,omitempty"`
	PropertyNames        *schemaNode                `json:"propertyNames,omitempty"`
	AdditionalProperties any                        `json:"additionalProperties,omitempty"` // false or *schemaNode
	MinProperties        *int64                     `json:"minProperties,omitempty"`
	MaxProperties        *int64                     `json:"maxProperties,omitempty"`
	AllOf                []*schemaNode              `json:"allOf,omitempty"`
}

// tagFormats maps validator tags to the JSON Schema format they enforce.
var tagFormats = map[string]string{
	"email": "email",
	"url":   "uri",
	"uri":   "uri",
	"uuid":  "uuid",
	"ipv4":  "ipv4",
	"ipv6":  "ipv6",
}

// schemaBuilder derives a JSON Schema from a struct type and its tags,
// and refuses tags whose parameters do not fit the field.
type schemaBuilder struct {
	inPath map[reflect.Type]bool // structs being described, to refuse recursion
	// unchecked counts the enclosing slices, arrays and maps whose
	// elements validator does not visit, because their field has no dive.
	unchecked int
}

func (b *schemaBuilder) object(t reflect.Type, where string) (*schemaNode, error) {
	if b.inPath[t] {
		return nil, fmt.Errorf("%s: recursive type %v is not supported", where, t)
	}
	b.inPath[t] = true
	defer delete(b.inPath, t)
	if err := checkInertTags(t, where); err != nil {
		return nil, err
	}
	fs, err := strictjson.Fields(t)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "strictjson: "))
	}
	n := &schemaNode{Type: "object", Properties: &orderedProps[*schemaNode]{}, AdditionalProperties: false}
	for _, f := range fs {
		fw := where + "." + f.GoName
		var tags []string
		if vt := f.Tag.Get("validate"); vt != "" && vt != "-" {
			tags = strings.Split(vt, ",")
			if b.unchecked > 0 {
				return nil, fmt.Errorf("%s: validate tags here are never checked: add dive to the tags of the enclosing slice, array or map field", fw)
			}
		}
		child, _, err := b.field(f.Type, tags, fw)
		if err != nil {
			return nil, err
		}
		if d := f.Tag.Get("desc"); d != "" {
			child.Description = d
		}
		n.Properties.add(f.Name, child)
		// Inside a slice, array or map without dive, validator checks
		// nothing.
		if b.unchecked == 0 && missingRefused(f.Type, f.Tag.Get("validate")) {
			n.Required = append(n.Required, f.Name)
		}
	}
	return n, nil
}

// missingRefused reports whether validation refuses a field of type t
// with the validate tag vt when the input leaves the field out, so that
// it holds its zero value: validator itself is asked, about a struct
// holding only that field. It is what makes a field required in the
// schema: the tag required, and every other tag its zero value fails
// (min=1 on a string, slice or map, len=4, gt=0, oneof without the zero
// value, a regexp "" does not match, email, ...), also in a nested
// struct. Tags that depend on other fields are left out (see
// unconditionalTags), so a field that is required only with others is
// not listed. A tag validator cannot use is reported by probeTags, not
// here.
func missingRefused(t reflect.Type, vt string) (refused bool) {
	if vt == "-" {
		return false
	}
	defer func() {
		if recover() != nil {
			refused = false
		}
	}()
	var tag reflect.StructTag
	if vt = unconditionalTags(vt); vt != "" {
		tag = reflect.StructTag("validate:" + strconv.Quote(vt))
	}
	probe := reflect.StructOf([]reflect.StructField{{Name: "F", Type: t, Tag: tag}})
	return structValidator().Struct(reflect.New(probe).Interface()) != nil
}

// unconditionalTags returns the validate tag vt without the tags whose
// verdict depends on other fields: the required_*, excluded_* and
// skip_unless families and the cross-field comparisons (eqfield,
// gtcsfield, fieldcontains, ...). An alternative (a|b) goes when any of
// its parts does. The rest all hold whatever the other fields are, so
// that when they refuse a value, the whole tag does.
func unconditionalTags(vt string) string {
	var kept []string
	for _, tag := range strings.Split(vt, ",") {
		conditional := false
		for _, alt := range strings.Split(tag, "|") {
			name, _, _ := strings.Cut(alt, "=")
			conditional = conditional || strings.HasPrefix(name, "required_") || strings.HasPrefix(name, "excluded_") ||
				name == "skip_unless" || strings.Contains(name, "field")
		}
		if !conditional {
			kept = append(kept, tag)
		}
	}
	return strings.Join(kept, ",")
}

// checkInertTags refuses validate tags on fields that JSON never sets
// (json:"-" or unexported): a required tag there could never pass.
func checkInertTags(t reflect.Type, where string) error {
	for i := range t.NumField() {
		sf := t.Field(i)
		vt := sf.Tag.Get("validate")
		jt := sf.Tag.Get("json")
		if vt != "" && vt != "-" && (jt == "-" || !sf.IsExported() && !sf.Anonymous) {
			return fmt.Errorf("%s.%s: has validate tags but is never set from JSON", where, sf.Name)
		}
		if sf.Anonymous && jt == "" && sf.Type.Kind() == reflect.Struct && !strictjson.Opaque(sf.Type) {
			if err := checkInertTags(sf.Type, where+"."+sf.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// field describes a value of type t with validate tags tags, and reports
// whether the tags make it required.
func (b *schemaBuilder) field(t reflect.Type, tags []string, where string) (*schemaNode, bool, error) {
	ptr := false
	for t.Kind() == reflect.Pointer {
		t, ptr = t.Elem(), true
	}
	dives := false
	for _, tag := range tags {
		dives = dives || tag == "dive"
	}
	n, err := b.typeNode(t, where, dives)
	if err != nil {
		return nil, false, err
	}
	defer n.dropRedundantBounds()
	required := false
	for i, tag := range tags {
		if strings.Contains(tag, "|") {
			continue // alternatives are enforced, not described
		}
		name, param, _ := strings.Cut(tag, "=")
		param = strings.ReplaceAll(strings.ReplaceAll(param, "0x2C", ","), "0x7C", "|")
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%s: tag %q: %s", where, tag, fmt.Sprintf(format, args...))
		}
		switch name {
		case "dive":
			return b.dive(n, t, tags[i+1:], where, required, bad)
		case "keys", "endkeys":
			return nil, false, bad("must come right after dive on a map")
		case "required":
			required = true
			if !ptr && t.Kind() == reflect.String && !strictjson.Opaque(t) {
				n.MinLength = tighterBound(n.MinLength, 1, true)
			}
		case "min", "max", "len", "gt", "gte", "lt", "lte":
			if err := applyBound(n, t, name, param); err != nil {
				return nil, false, bad("%v", err)
			}
		case "oneof":
			if err := applyOneOf(n, t, param); err != nil {
				return nil, false, bad("%v", err)
			}
		case "regexp":
			if t.Kind() != reflect.String || strictjson.Opaque(t) {
				return nil, false, bad("applies only to strings")
			}
			if param == "" {
				return nil, false, bad("needs a pattern")
			}
			if _, err := compileCached(param); err != nil {
				if i+1 < len(tags) { // the rest of the pattern, if it held a comma
					return nil, false, bad("%v (%s)", err, tagEscapeHint)
				}
				return nil, false, bad("%v", err)
			}
			if n.Pattern == "" {
				n.Pattern = param
			} else {
				n.AllOf = append(n.AllOf, &schemaNode{Pattern: param})
			}
		case "unique":
			if k := t.Kind(); (k == reflect.Slice || k == reflect.Array) && n.Type == "array" {
				switch t.Elem().Kind() {
				case reflect.Struct, reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
					// validator compares these differently from JSON equality
				default:
					n.UniqueItems = !strictjson.Opaque(t.Elem())
				}
			}
		default:
			if f, ok := tagFormats[name]; ok && t.Kind() == reflect.String && !strictjson.Opaque(t) {
				n.Format = f
			}
		}
	}
	return n, required, nil
}

// dive describes the items or values of n after a dive tag.
func (b *schemaBuilder) dive(n *schemaNode, t reflect.Type, rest []string, where string, required bool, bad func(string, ...any) error) (*schemaNode, bool, error) {
	unchecked := b.unchecked
	b.unchecked = 0
	defer func() { b.unchecked = unchecked }()
	switch {
	case strictjson.Opaque(t) || t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return nil, false, bad("dive applies only to slices, arrays and maps")
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		items, _, err := b.field(t.Elem(), rest, where+"[]")
		if err != nil {
			return nil, false, err
		}
		n.Items = items
	case t.Kind() == reflect.Map:
		if len(rest) > 0 && rest[0] == "keys" {
			end := -1
			for j, tg := range rest {
				if tg == "endkeys" {
					end = j
					break
				}
			}
			if end < 0 {
				return nil, false, bad("keys without endkeys")
			}
			keys, _, err := b.field(t.Key(), rest[1:end], where+"[key]")
			if err != nil {
				return nil, false, err
			}
			n.PropertyNames = keys
			rest = rest[end+1:]
		}
		values, _, err := b.field(t.Elem(), rest, where+"[]")
		if err != nil {
			return nil, false, err
		}
		n.AdditionalProperties = values
	default:
		return nil, false, bad("dive applies only to slices, arrays and maps")
	}
	return n, required, nil
}

// typeNode describes type t, which is not a pointer, without tags. When
// dives is set, the items or values of a slice, array or map are left for
// the dive tag to describe.
func (b *schemaBuilder) typeNode(t reflect.Type, where string, dives bool) (*schemaNode, error) {
	if t == timeReflectType {
		return &schemaNode{Type: "string", Format: "date-time"}, nil
	}
	if strictjson.Opaque(t) {
		pt := reflect.PointerTo(t)
		if pt.Implements(textUnmarshalerReflectType) && !pt.Implements(jsonUnmarshalerReflectType) {
			return &schemaNode{Type: "string"}, nil
		}
		return &schemaNode{}, nil // any JSON the type accepts
	}
	switch t.Kind() {
	case reflect.Bool:
		return &schemaNode{Type: "boolean"}, nil
	case reflect.String:
		return &schemaNode{Type: "string"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := &schemaNode{Type: "integer"}
		if bits := t.Bits(); bits < 64 {
			lo := int64(-1) << (bits - 1)
			n.Minimum, n.Maximum = json.Number(strconv.FormatInt(lo, 10)), json.Number(strconv.FormatInt(-(lo+1), 10))
		}
		return n, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n := &schemaNode{Type: "integer", Minimum: "0"}
		if bits := t.Bits(); bits < 64 {
			n.Maximum = json.Number(strconv.FormatUint(^uint64(0)>>(64-bits), 10))
		}
		return n, nil
	case reflect.Float32, reflect.Float64:
		return &schemaNode{Type: "number"}, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return &schemaNode{Type: "string", ContentEncoding: "base64"}, nil
		}
		items, err := b.elements(t.Elem(), where, dives)
		if err != nil {
			return nil, err
		}
		return &schemaNode{Type: "array", Items: items}, nil
	case reflect.Array:
		items, err := b.elements(t.Elem(), where, dives)
		if err != nil {
			return nil, err
		}
		l := int64(t.Len())
		return &schemaNode{Type: "array", Items: items, MinItems: &l, MaxItems: &l}, nil
	case reflect.Map:
		values, err := b.elements(t.Elem(), where, dives)
		if err != nil {
			return nil, err
		}
		return &schemaNode{Type: "object", AdditionalProperties: values}, nil
	case reflect.Struct:
		return b.object(t, where)
	}
	// strictjson.Check refuses every other kind first.
	return nil, fmt.Errorf("%s: type %v is not supported", where, t)
}

// elements describes the items of a slice or array, or the values of a map,
// that validator does not visit; nil when a dive tag will describe them.
func (b *schemaBuilder) elements(t reflect.Type, where string, dives bool) (*schemaNode, error) {
	if dives {
		return nil, nil
	}
	b.unchecked++
	defer func() { b.unchecked-- }()
	n, _, err := b.field(t, nil, where+"[]")
	return n, err
}

// tighterBound returns the stricter of the bound at cur and v: the larger for
// a lower bound, the smaller for an upper one.
func tighterBound(cur *int64, v int64, lower bool) *int64 {
	if cur == nil || lower && v > *cur || !lower && v < *cur {
		return &v
	}
	return cur
}

// tighterNumber is tighterBound for JSON numbers.
func tighterNumber(cur, v json.Number, lower bool) json.Number {
	if cur == "" {
		return v
	}
	if c := compareNumbers(v, cur); lower && c > 0 || !lower && c < 0 {
		return v
	}
	return cur
}

// compareNumbers compares two JSON numbers by value.
func compareNumbers(a, b json.Number) int {
	x, _, errX := big.ParseFloat(string(a), 10, 256, big.ToNearestEven)
	y, _, errY := big.ParseFloat(string(b), 10, 256, big.ToNearestEven)
	if errX != nil || errY != nil {
		return strings.Compare(string(a), string(b))
	}
	return x.Cmp(y)
}

// dropRedundantBounds removes a minimum or maximum (typically the range of
// a sized integer type) that an exclusive bound already implies.
func (n *schemaNode) dropRedundantBounds() {
	if n == nil {
		return
	}
	if n.Minimum != "" && n.ExclusiveMinimum != "" && compareNumbers(n.Minimum, n.ExclusiveMinimum) <= 0 {
		n.Minimum = ""
	}
	if n.Maximum != "" && n.ExclusiveMaximum != "" && compareNumbers(n.Maximum, n.ExclusiveMaximum) >= 0 {
		n.Maximum = ""
	}
}

// applyBound translates min, max, len, gt, gte, lt and lte, and checks the
// parameter as validator will read it.
func applyBound(n *schemaNode, t reflect.Type, tag, param string) error {
	switch k := t.Kind(); {
	case strictjson.Opaque(t):
		if t == timeReflectType && param == "" && tag != "min" && tag != "max" && tag != "len" {
			return nil // compares with the current time
		}
		if t == timeReflectType || k != reflect.String {
			return fmt.Errorf("does not apply to %v", t)
		}
		return nil
	case k == reflect.String || k == reflect.Slice || k == reflect.Array || k == reflect.Map:
		p, err := strconv.ParseInt(param, 0, 64)
		if err != nil || p < 0 {
			return errors.New("needs a non-negative integer length")
		}
		lo, hi := (*int64)(nil), (*int64)(nil)
		switch tag {
		case "min", "gte":
			lo = &p
		case "max", "lte":
			hi = &p
		case "len":
			lo, hi = &p, &p
		case "gt":
			q := p + 1
			lo = &q
		case "lt":
			if p == 0 {
				return errors.New("lt=0 can never pass")
			}
			q := p - 1
			hi = &q
		}
		var minP, maxP **int64
		switch {
		case k == reflect.String:
			minP, maxP = &n.MinLength, &n.MaxLength
		case k == reflect.Map:
			minP, maxP = &n.MinProperties, &n.MaxProperties
		case k == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
			return nil // counts decoded bytes, not base64 characters
		default:
			minP, maxP = &n.MinItems, &n.MaxItems
		}
		if lo != nil {
			*minP = tighterBound(*minP, *lo, true)
		}
		if hi != nil {
			*maxP = tighterBound(*maxP, *hi, false)
		}
		return nil
	default:
		num, err := boundNumber(t, param)
		if err != nil {
			return err
		}
		switch tag {
		case "min", "gte":
			n.Minimum = tighterNumber(n.Minimum, num, true)
		case "max", "lte":
			n.Maximum = tighterNumber(n.Maximum, num, false)
		case "len":
			n.Minimum = tighterNumber(n.Minimum, num, true)
			n.Maximum = tighterNumber(n.Maximum, num, false)
		case "gt":
			n.ExclusiveMinimum = tighterNumber(n.ExclusiveMinimum, num, true)
		case "lt":
			n.ExclusiveMaximum = tighterNumber(n.ExclusiveMaximum, num, false)
		}
		return nil
	}
}

// boundNumber parses a numeric tag parameter for a field of type t the way
// validator does, as a JSON number.
func boundNumber(t reflect.Type, param string) (json.Number, error) {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if t == durationReflectType {
			if d, err := time.ParseDuration(param); err == nil {
				return json.Number(strconv.FormatInt(int64(d), 10)), nil
			}
		}
		v, err := strconv.ParseInt(param, 0, 64)
		if err != nil {
			return "", errors.New("needs an integer")
		}
		return json.Number(strconv.FormatInt(v, 10)), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v, err := strconv.ParseUint(param, 0, 64)
		if err != nil {
			return "", errors.New("needs a non-negative integer")
		}
		return json.Number(strconv.FormatUint(v, 10)), nil
	case reflect.Float32, reflect.Float64:
		v, err := strconv.ParseFloat(param, t.Bits())
		if err != nil {
			return "", errors.New("needs a number")
		}
		return json.Number(strconv.FormatFloat(v, 'g', -1, t.Bits())), nil
	}
	return "", fmt.Errorf("does not apply to %v", t)
}

// applyOneOf translates oneof into an enum of the field's JSON type.
func applyOneOf(n *schemaNode, t reflect.Type, param string) error {
	vals := oneOfValues(param)
	if len(vals) == 0 {
		return errors.New("needs at least one value")
	}
	enum := make([]any, 0, len(vals))
	for _, v := range vals {
		switch t.Kind() {
		case reflect.String:
			if strictjson.Opaque(t) {
				return fmt.Errorf("does not apply to %v", t)
			}
			enum = append(enum, v)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			i, err := strconv.ParseInt(v, 10, t.Bits())
			if err != nil || strconv.FormatInt(i, 10) != v {
				return fmt.Errorf("value %q is not a decimal integer that fits %v", v, t)
			}
			enum = append(enum, json.Number(v))
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			u, err := strconv.ParseUint(v, 10, t.Bits())
			if err != nil || strconv.FormatUint(u, 10) != v {
				return fmt.Errorf("value %q is not a decimal integer that fits %v", v, t)
			}
			enum = append(enum, json.Number(v))
		default:
			return fmt.Errorf("does not apply to %v", t)
		}
	}
	if n.Enum == nil {
		n.Enum = enum
	} else {
		n.AllOf = append(n.AllOf, &schemaNode{Enum: enum})
	}
	return nil
}
