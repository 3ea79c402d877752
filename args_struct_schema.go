package execgate

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/execgate/execgate/internal/strictjson"
)

// This file derives the JSON Schema of a Struct from its type and tags.

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
		child, err := b.field(f.Type, tags, fw)
		if err != nil {
			return nil, err
		}
		if d := f.Tag.Get("desc"); d != "" {
			child.Description = d
		}
		describePath(child, f.Type, f.Tag.Get("path"))
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

// field describes a value of type t with validate tags tags. Which fields
// are required is decided apart, by asking the validator (see the schema's
// required list).
func (b *schemaBuilder) field(t reflect.Type, tags []string, where string) (*schemaNode, error) {
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
		return nil, err
	}
	defer n.dropRedundantBounds()
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
			return b.dive(n, t, tags[i+1:], where, bad)
		case "keys", "endkeys":
			return nil, bad("must come right after dive on a map")
		case "required":
			// Recognized; the required list says it.
			if !ptr && t.Kind() == reflect.String && !strictjson.Opaque(t) {
				n.MinLength = tighterBound(n.MinLength, 1, true)
			}
		case "min", "max", "len", "gt", "gte", "lt", "lte":
			if err := applyBound(n, t, name, param); err != nil {
				return nil, bad("%v", err)
			}
		case "oneof":
			if err := applyOneOf(n, t, param); err != nil {
				return nil, bad("%v", err)
			}
		case "regexp":
			if t.Kind() != reflect.String || strictjson.Opaque(t) {
				return nil, bad("applies only to strings")
			}
			if param == "" {
				return nil, bad("needs a pattern")
			}
			if _, err := compileCached(param); err != nil {
				if i+1 < len(tags) { // the rest of the pattern, if it held a comma
					return nil, bad("%v (%s)", err, tagEscapeHint)
				}
				return nil, bad("%v", err)
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
	return n, nil
}

// dive describes the items or values of n after a dive tag.
func (b *schemaBuilder) dive(n *schemaNode, t reflect.Type, rest []string, where string, bad func(string, ...any) error) (*schemaNode, error) {
	unchecked := b.unchecked
	b.unchecked = 0
	defer func() { b.unchecked = unchecked }()
	switch {
	case strictjson.Opaque(t) || t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return nil, bad("dive applies only to slices, arrays and maps")
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		items, err := b.field(t.Elem(), rest, where+"[]")
		if err != nil {
			return nil, err
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
				return nil, bad("keys without endkeys")
			}
			keys, err := b.field(t.Key(), rest[1:end], where+"[key]")
			if err != nil {
				return nil, err
			}
			n.PropertyNames = keys
			rest = rest[end+1:]
		}
		values, err := b.field(t.Elem(), rest, where+"[]")
		if err != nil {
			return nil, err
		}
		n.AdditionalProperties = values
	default:
		return nil, bad("dive applies only to slices, arrays and maps")
	}
	return n, nil
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
	n, err := b.field(t, nil, where+"[]")
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

// describePath adds to n, the schema of a field of type t with the path
// tag tag, what a Path is checked for, after any description the field
// has: a Path field is a string, or an array of them, that names
// something inside the working directory.
func describePath(n *schemaNode, t reflect.Type, tag string) {
	target := n
	switch {
	case t == pathReflectType:
	case t.Kind() == reflect.Slice && t.Elem() == pathReflectType && n.Items != nil:
		target = n.Items
	default:
		return
	}
	// A tag that does not parse is refused by NewAllowlist; described
	// here as PathRule{}.
	rule, _ := parsePathTag(tag)
	d := pathDescription(&rule, nil)
	if target.Description != "" {
		d = strings.TrimSuffix(target.Description, ".") + ". " + d
	}
	target.Description = d
	if target != n && target.MinLength == nil {
		// An element is checked whatever it holds, and "" is refused; a
		// Path field left empty is a path not given.
		one := int64(1)
		target.MinLength = &one
	}
}
