package execgate

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-playground/validator/v10"

	"github.com/execgate/execgate/internal/strictjson"
)

// This file checks a decoded Struct value with validator/v10: the
// shared validator and its regexp tag, the issues and messages of a
// failed tag, and the probe that makes a bad tag fail when the Allowlist
// is built.

var (
	timeReflectType            = reflect.TypeFor[time.Time]()
	durationReflectType        = reflect.TypeFor[time.Duration]()
	jsonUnmarshalerReflectType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerReflectType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// structValidator is the validator every [Struct] schema shares. A Validate
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
