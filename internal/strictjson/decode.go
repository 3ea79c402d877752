package strictjson

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

var timeType = reflect.TypeFor[time.Time]()

// Limits Decode applies when Options leaves them zero.
const (
	// DefaultMaxSize is the largest input, in bytes, Decode reads.
	DefaultMaxSize = 1 << 20
	// DefaultMaxDepth is how deeply objects and arrays may nest.
	DefaultMaxDepth = 64
	// DefaultMaxProblems is how many problems Decode collects before it
	// stops reading.
	DefaultMaxProblems = 32
)

// Problem is one reason an input was refused.
type Problem struct {
	// Path is where the problem is, by JSON names: "max_count",
	// "paths[2]", "opts.depth", "labels[team]". It is "" for the input as
	// a whole. Unknown keys and map keys appear in a Path only when
	// PathKey shows them; otherwise the Path stops at the enclosing value.
	Path string
	// Message says what the value at Path must be. It never repeats the
	// value that was sent.
	Message string
}

// Error is returned by Decode when it refuses an input. It lists every
// problem found, in input order, up to Options.MaxProblems.
type Error struct {
	// Problems holds at least one entry.
	Problems []Problem
	// Partial reports that the input was well-formed JSON of the right
	// overall shape and that the target holds every value that decoded
	// cleanly, for reporting further problems (such as running a
	// validator to list missing fields). The target must not be used for
	// anything else. When Partial is false the target is the zero value.
	Partial bool
}

// Error implements error. The message lists every problem.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("strictjson: invalid input")
	for i, p := range e.Problems {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		if p.Path != "" {
			b.WriteString(p.Path)
			b.WriteString(": ")
		}
		b.WriteString(p.Message)
	}
	return b.String()
}

// Options sets Decode's limits. The zero Options uses the defaults.
type Options struct {
	// MaxSize is the largest input in bytes; 0 means DefaultMaxSize.
	MaxSize int
	// MaxDepth is how deeply objects and arrays may nest; 0 means
	// DefaultMaxDepth.
	MaxDepth int
	// MaxProblems is how many problems are collected before reading
	// stops; 0 means DefaultMaxProblems.
	MaxProblems int
	// MaxValues bounds how many object keys and JSON values (array
	// elements included) Value and Object fields keep, all of them
	// together; 0 means no bound. Past it, the rest of the input is still
	// checked, but nothing more is kept and the input is refused, so that
	// a small input cannot build a large tree.
	MaxValues int
	// MaxElements bounds how many array elements and object members are
	// read into slices, arrays (a Go array's too) and maps of the target,
	// all of them together; 0 means no bound. Past it, reading stops and the input
	// is refused, so that what the caller then does for each element
	// (validating it, say) is bounded too.
	MaxElements int
}

// Decode decodes the JSON object in data into the struct v points to,
// with the default Options. See Options.Decode.
func Decode(data []byte, v any) error {
	return Options{}.Decode(data, v)
}

// Decode decodes the JSON object in data into the struct v points to,
// which it first sets to its zero value. It reads the input against the
// struct's type (see Fields and Check) and refuses, with an *Error listing
// every problem: input larger than MaxSize; anything that is not exactly
// one JSON object with optional white space around it; invalid JSON;
// nesting deeper than MaxDepth; keys that are not a field's exact JSON
// name (including names that match only case-insensitively); duplicate
// keys at any depth; a value of the wrong JSON type, a fractional or
// exponent number or an out-of-range number for an integer field, an
// out-of-range number for a float field; null for a field that is not a
// pointer, slice, map or opaque type; an array of the wrong length for a
// Go array; and strings or keys that contain NUL (also as \u0000), invalid
// UTF-8 or unpaired UTF-16 surrogate escapes.
//
// A null for a pointer, slice or map leaves it nil. A []byte is a base64
// string. Opaque values (see Opaque) are checked as JSON and then handed to
// encoding/json; a null is handed over too, so a time.Time stays zero. A
// Value or Object field is checked in the same way but read by Decode
// itself, once, into a tree of untyped values.
//
// Decode returns a plain error, not an *Error, when v is not a non-nil
// pointer to a struct or Check refuses the struct's type.
func (o Options) Decode(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("strictjson: Decode needs a non-nil pointer to a struct, not %T", v)
	}
	p, err := planFor(rv.Elem().Type())
	if err != nil {
		return err
	}
	if o.MaxSize <= 0 {
		o.MaxSize = DefaultMaxSize
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	if o.MaxProblems <= 0 {
		o.MaxProblems = DefaultMaxProblems
	}
	rv.Elem().SetZero()
	d := decoder{data: data, opts: o}
	d.top(rv.Elem(), p)
	if len(d.problems) == 0 {
		return nil
	}
	if d.fatal {
		rv.Elem().SetZero()
	}
	return &Error{Problems: d.problems, Partial: !d.fatal}
}

// PathKey returns key as it appears in a Problem's Path: unchanged when it
// is 1 to 64 bytes of ASCII letters, digits, '_', '-', '.', ':', '/' and
// '@', and "?" otherwise, so that a Path never carries arbitrary input.
func PathKey(key string) string {
	if len(key) == 0 || len(key) > 64 {
		return "?"
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '_' || c == '-' || c == '.' || c == ':' || c == '/' || c == '@':
		default:
			return "?"
		}
	}
	return key
}

type elemKind uint8

const (
	elemField elemKind = iota // .name
	elemIndex                 // [3]
	elemKey                   // [key]
)

type pathElem struct {
	kind  elemKind
	name  string
	index int
}

// decoder reads one input. Each method that reads a value leaves pos just
// after it, or sets fatal.
type decoder struct {
	data     []byte
	pos      int
	opts     Options
	problems []Problem
	fatal    bool
	kept     int // values kept in Value and Object fields, for MaxValues
	read     int // elements and members read into the target, for MaxElements
	// The path to the value being read: its first inlinePath elements
	// in path, the rest in deep, so that the common shallow input needs
	// no allocation for it.
	path  [inlinePath]pathElem
	npath int
	deep  []pathElem
}

// inlinePath is how many path elements a decoder holds without allocating.
const inlinePath = 8

// badString says what is wrong with the content of a well-formed string.
type badString uint8

const (
	goodString badString = iota
	hasNUL
	hasBadUTF8
	hasSurrogate
)

func (b badString) valueMessage() string {
	switch b {
	case hasNUL:
		return "must not contain NUL bytes"
	case hasBadUTF8:
		return "must be valid UTF-8"
	default:
		return "must not contain unpaired UTF-16 surrogate escapes"
	}
}

func (b badString) keyMessage() string {
	switch b {
	case hasNUL:
		return "has a key that contains a NUL byte"
	case hasBadUTF8:
		return "has a key that is not valid UTF-8"
	default:
		return "has a key with an unpaired UTF-16 surrogate escape"
	}
}

func (d *decoder) pathString() string {
	var b strings.Builder
	for i := range d.npath {
		e := d.elem(i)
		switch e.kind {
		case elemField:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(e.name)
		case elemIndex:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e.index))
			b.WriteByte(']')
		case elemKey:
			b.WriteByte('[')
			b.WriteString(PathKey(e.name))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// elem returns element i of the path.
func (d *decoder) elem(i int) *pathElem {
	if i < inlinePath {
		return &d.path[i]
	}
	return &d.deep[i-inlinePath]
}

// push extends the path by e.
func (d *decoder) push(e pathElem) {
	if d.npath < inlinePath {
		d.path[d.npath] = e
	} else {
		d.deep = append(d.deep, e)
	}
	d.npath++
}

// pop removes the last element of the path.
func (d *decoder) pop() {
	d.npath--
	if d.npath >= inlinePath {
		d.deep = d.deep[:len(d.deep)-1]
	}
}

// problem records msg at the current path.
func (d *decoder) problem(msg string) {
	if d.fatal {
		return
	}
	if len(d.problems) >= d.opts.MaxProblems {
		d.problems = append(d.problems, Problem{Message: "too many problems; fix these and send the input again"})
		d.fatal = true
		return
	}
	d.problems = append(d.problems, Problem{Path: d.pathString(), Message: msg})
}

// problemAt records msg at the current path extended by e.
func (d *decoder) problemAt(e pathElem, msg string) {
	d.push(e)
	d.problem(msg)
	d.pop()
}

// fail records a problem that stops reading.
func (d *decoder) fail(msg string) {
	if d.fatal {
		return
	}
	d.problems = append(d.problems, Problem{Path: d.pathString(), Message: msg})
	d.fatal = true
}

func (d *decoder) syntax(what string) {
	d.fail(fmt.Sprintf("invalid JSON: %s (at byte %d)", what, d.pos))
}

func (d *decoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\r', '\n':
			d.pos++
		default:
			return
		}
	}
}

// peek returns the byte at pos, or 0 at the end of the input.
func (d *decoder) peek() byte {
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}

// sentKind names the JSON type of the value starting at pos.
func (d *decoder) sentKind() string {
	switch c := d.peek(); {
	case c == '"':
		return "a string"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	default:
		return "a number"
	}
}

func (d *decoder) top(v reflect.Value, p *plan) {
	if len(d.data) > d.opts.MaxSize {
		if d.opts.MaxSize%(1<<20) == 0 {
			d.fail(fmt.Sprintf("input is larger than %d MiB", d.opts.MaxSize>>20))
		} else {
			d.fail(fmt.Sprintf("input is larger than %d bytes", d.opts.MaxSize))
		}
		return
	}
	d.ws()
	switch c := d.peek(); {
	case d.pos == len(d.data):
		d.fail("input is empty; send a JSON object")
		return
	case c == '{':
	case c == '"' || c == '[' || c == 't' || c == 'f' || c == 'n' || c == '-' || '0' <= c && c <= '9':
		d.fail("input must be a JSON object, not " + d.sentKind())
		return
	default:
		d.syntax("unexpected character")
		return
	}
	d.value(v, p, 0)
	if d.fatal {
		return
	}
	d.ws()
	if d.pos < len(d.data) {
		d.fail(fmt.Sprintf("input has data after the JSON object (at byte %d)", d.pos))
	}
}

// mismatch reports a value of the wrong JSON type and skips it.
func (d *decoder) mismatch(want string, depth int) {
	d.problem("must be " + want + ", not " + d.sentKind())
	d.skip(depth, false)
}

// value reads one JSON value into v, whose plan is p.
//
// It is one switch over the plan's op, each case a few lines for one
// kind of Go value, kept together so that every kind is read in one
// place and the decoder makes one call per value.
func (d *decoder) value(v reflect.Value, p *plan, depth int) {
	d.ws()
	if d.pos >= len(d.data) {
		d.syntax("unexpected end of input")
		return
	}
	c := d.data[d.pos]
	switch p.op {
	case opOpaque:
		d.opaque(v, depth)
	case opValue:
		x := d.anyValue(depth)
		if v.CanAddr() && v.CanInterface() {
			*v.Addr().Interface().(*Value) = x
		} else {
			v.Set(reflect.ValueOf(x))
		}
	case opObject:
		if c != '{' && c != 'n' {
			d.mismatch("an object", depth)
			return
		}
		obj := d.objectField(depth)
		if v.CanAddr() && v.CanInterface() {
			*v.Addr().Interface().(*Object) = obj
		} else {
			v.Set(reflect.ValueOf(obj))
		}
	case opPointer:
		if c == 'n' {
			d.literal("null")
			return
		}
		ptr := reflect.New(p.t.Elem())
		d.value(ptr.Elem(), p.elem, depth)
		v.Set(ptr)
	case opStruct:
		if c != '{' {
			d.mismatch("an object", depth)
			return
		}
		d.object(v, p.info, depth)
	case opMap:
		switch c {
		case 'n':
			d.literal("null")
		case '{':
			d.mapObject(v, p, depth)
		default:
			d.mismatch("an object", depth)
		}
	case opBytes:
		if c == 'n' {
			d.literal("null")
			return
		}
		d.bytes(v, depth)
	case opSlice:
		switch c {
		case 'n':
			d.literal("null")
		case '[':
			d.slice(v, p, depth)
		default:
			d.mismatch("an array", depth)
		}
	case opArray:
		if c != '[' {
			d.mismatch("an array", depth)
			return
		}
		d.array(v, p, depth)
	case opString:
		if c != '"' {
			d.mismatch("a string", depth)
			return
		}
		s, bad, ok := d.str()
		switch {
		case !ok:
		case bad != goodString:
			d.problem(bad.valueMessage())
		default:
			v.SetString(s)
		}
	case opBool:
		switch c {
		case 't':
			if d.literal("true") {
				v.SetBool(true)
			}
		case 'f':
			d.literal("false")
		default:
			d.mismatch("true or false", depth)
		}
	case opInt:
		tok, ok := d.integerFor(depth)
		if !ok {
			return
		}
		n, ok := parseInt(tok, p.bits)
		if !ok {
			lo := int64(-1) << (p.bits - 1)
			d.problem(fmt.Sprintf("must be between %d and %d", lo, -(lo + 1)))
			return
		}
		v.SetInt(n)
	case opUint:
		tok, ok := d.integerFor(depth)
		if !ok {
			return
		}
		n, ok := parseUint(tok, p.bits)
		if !ok {
			d.problem(fmt.Sprintf("must be between 0 and %d", ^uint64(0)>>(64-p.bits)))
			return
		}
		v.SetUint(n)
	case opFloat:
		tok, ok := d.numberFor("a number", depth)
		if !ok {
			return
		}
		f, err := strconv.ParseFloat(string(tok), 64)
		if err != nil || v.OverflowFloat(f) {
			d.problem("is out of range for a number")
			return
		}
		v.SetFloat(f)
	default:
		// Check refuses every other kind before decoding starts.
		d.fail("cannot be decoded")
	}
}

// parseInt parses tok, a JSON number token without a fraction or an
// exponent, as a signed integer of the given size in bits, as
// strconv.ParseInt does, and reports false when it is out of range.
func parseInt(tok []byte, bits int) (int64, bool) {
	neg := tok[0] == '-'
	if neg {
		tok = tok[1:]
	}
	u, ok := parseUint(tok, 64)
	limit := uint64(1) << (bits - 1) // the magnitude of the lowest value
	switch {
	case !ok, neg && u > limit, !neg && u >= limit:
		return 0, false
	case neg:
		return int64(-u), true
	default:
		return int64(u), true
	}
}

// parseUint parses tok, a JSON number token without a fraction or an
// exponent, as an unsigned integer of the given size in bits, and reports
// false when it is out of range (a negative number included).
func parseUint(tok []byte, bits int) (uint64, bool) {
	if len(tok) == 0 || tok[0] == '-' {
		// JSON allows -0, which strconv.ParseUint refuses too.
		return 0, false
	}
	var n uint64
	for _, c := range tok {
		if n > (1<<64-1)/10 {
			return 0, false
		}
		n *= 10
		if n+uint64(c-'0') < n {
			return 0, false
		}
		n += uint64(c - '0')
	}
	if bits < 64 && n >= 1<<bits {
		return 0, false
	}
	return n, true
}

// numberFor reads a number token where want is expected.
func (d *decoder) numberFor(want string, depth int) ([]byte, bool) {
	c := d.peek()
	if c != '-' && (c < '0' || c > '9') {
		d.mismatch(want, depth)
		return nil, false
	}
	return d.number()
}

// integerFor reads a number for an integer field and reports a problem
// unless it is written without a fraction or exponent.
func (d *decoder) integerFor(depth int) ([]byte, bool) {
	tok, ok := d.numberFor("an integer", depth)
	if ok && !isIntegerToken(tok) {
		d.problem("must be an integer, without a fraction or exponent")
		return nil, false
	}
	return tok, ok
}

func isIntegerToken(tok []byte) bool {
	return !bytes.ContainsAny(tok, ".eE")
}

// object reads a JSON object into struct v, whose fields si describes.
func (d *decoder) object(v reflect.Value, si *structInfo, depth int) {
	if !d.enter(depth) {
		return
	}
	// The fields already read, as bits by index (more only for structs of
	// over 64 fields), and the other keys already seen.
	var seenBits uint64
	var seenMore []bool
	var seenOther map[string]bool
	d.members(func(kb []byte, bad badString) {
		if bad != goodString {
			d.problem(bad.keyMessage())
			d.skip(depth+1, false)
			return
		}
		if i, ok := si.byName[string(kb)]; ok {
			f := &si.fields[i]
			if i < 64 {
				if seenBits&(1<<i) != 0 {
					d.duplicate(f.Name, elemField)
					d.skip(depth+1, false)
					return
				}
				seenBits |= 1 << i
			} else {
				if seenMore == nil {
					seenMore = make([]bool, len(si.fields))
				}
				if seenMore[i] {
					d.duplicate(f.Name, elemField)
					d.skip(depth+1, false)
					return
				}
				seenMore[i] = true
			}
			d.push(pathElem{kind: elemField, name: f.Name})
			d.value(v.FieldByIndex(f.Index), f.plan, depth+1)
			d.pop()
			return
		}
		key := string(kb)
		if seenOther[key] {
			d.duplicate(key, elemField)
			d.skip(depth+1, false)
			return
		}
		if seenOther == nil {
			seenOther = make(map[string]bool)
		}
		seenOther[key] = true
		for _, name := range si.names {
			if strings.EqualFold(name, key) {
				d.problemAt(pathElem{kind: elemField, name: name},
					"must be spelled exactly "+name+" (field names are case-sensitive)")
				d.skip(depth+1, false)
				return
			}
		}
		if PathKey(key) == key {
			d.problemAt(pathElem{kind: elemField, name: key}, "unknown field; "+si.allowed)
		} else {
			d.problem("has an unknown field (name not shown); " + si.allowed)
		}
		d.skip(depth+1, false)
	})
}

// duplicate reports a repeated key.
func (d *decoder) duplicate(key string, kind elemKind) {
	if PathKey(key) == key {
		d.problemAt(pathElem{kind: kind, name: key}, "appears more than once")
	} else {
		d.problem("has a key that appears more than once")
	}
}

// enter checks the depth limit before reading into an object or array.
func (d *decoder) enter(depth int) bool {
	if depth >= d.opts.MaxDepth {
		d.fail(fmt.Sprintf("nesting is deeper than %d levels", d.opts.MaxDepth))
		return false
	}
	return true
}

// members reads an object whose '{' is at pos, calling member for each key
// with pos at the start of its value; member must read the value. The key
// is valid only during the call: it may share memory with the input.
func (d *decoder) members(member func(key []byte, bad badString)) {
	d.pos++ // '{'
	d.ws()
	if d.peek() == '}' {
		d.pos++
		return
	}
	for {
		d.ws()
		if d.peek() != '"' {
			d.syntax("expected a string key")
			return
		}
		key, bad, ok := d.strBytes()
		if !ok {
			return
		}
		d.ws()
		if d.peek() != ':' {
			d.syntax("expected ':' after a key")
			return
		}
		d.pos++
		member(key, bad)
		if d.fatal {
			return
		}
		d.ws()
		switch d.peek() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return
		default:
			d.syntax("expected ',' or '}'")
			return
		}
	}
}

// element counts one more element or member read into the target and
// reports whether Options.MaxElements allows it; past the bound it stops
// reading, with a problem at the element's container.
func (d *decoder) element() bool {
	d.read++
	if d.opts.MaxElements > 0 && d.read > d.opts.MaxElements {
		d.fail(fmt.Sprintf("too many array elements and object members: at most %d are read; send fewer", d.opts.MaxElements))
		return false
	}
	return true
}

// elements reads an array whose '[' is at pos, calling element for each
// index with pos at the start of its value; element must read the value.
func (d *decoder) elements(element func(i int)) {
	d.pos++ // '['
	d.ws()
	if d.peek() == ']' {
		d.pos++
		return
	}
	for i := 0; ; i++ {
		element(i)
		if d.fatal {
			return
		}
		d.ws()
		switch d.peek() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return
		default:
			d.syntax("expected ',' or ']'")
			return
		}
	}
}

// mapObject reads a JSON object into map v, whose plan is p.
func (d *decoder) mapObject(v reflect.Value, p *plan, depth int) {
	if !d.enter(depth) {
		return
	}
	m := reflect.MakeMap(p.t)
	var seen map[string]bool
	d.members(func(kb []byte, bad badString) {
		key := string(kb)
		if !d.newKey(&seen, key, bad) {
			d.skip(depth+1, false)
			return
		}
		if !d.element() {
			return
		}
		elem := reflect.New(p.t.Elem()).Elem()
		d.push(pathElem{kind: elemKey, name: key})
		d.value(elem, p.elem, depth+1)
		d.pop()
		m.SetMapIndex(reflect.ValueOf(key).Convert(p.t.Key()), elem)
	})
	v.Set(m)
}

// slice reads a JSON array into slice v, whose plan is p. The elements are
// read in place, in the slice's own backing array. An empty array gives an
// empty slice, not nil.
func (d *decoder) slice(v reflect.Value, p *plan, depth int) {
	if !d.enter(depth) {
		return
	}
	v.SetZero()
	d.elements(func(i int) {
		if !d.element() {
			return
		}
		if i == v.Cap() {
			v.Grow(max(i, 4))
		}
		v.SetLen(i + 1)
		d.push(pathElem{kind: elemIndex, index: i})
		d.value(v.Index(i), p.elem, depth+1)
		d.pop()
	})
	if v.IsNil() {
		v.Set(reflect.MakeSlice(p.t, 0, 0))
	}
}

// array reads a JSON array into Go array v, whose plan is p.
func (d *decoder) array(v reflect.Value, p *plan, depth int) {
	if !d.enter(depth) {
		return
	}
	n := 0
	d.elements(func(i int) {
		if !d.element() {
			return
		}
		n = i + 1
		d.push(pathElem{kind: elemIndex, index: i})
		if i < v.Len() {
			d.value(v.Index(i), p.elem, depth+1)
		} else {
			d.skip(depth+1, false)
		}
		d.pop()
	})
	if !d.fatal && n != v.Len() {
		d.problem(fmt.Sprintf("must have exactly %d items", v.Len()))
	}
}

// bytes reads a base64 string into a byte slice.
func (d *decoder) bytes(v reflect.Value, depth int) {
	if d.peek() != '"' {
		d.mismatch("a base64-encoded string", depth)
		return
	}
	s, bad, ok := d.str()
	if !ok {
		return
	}
	if bad != goodString {
		d.problem(bad.valueMessage())
		return
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		d.problem("must be a base64-encoded string")
		return
	}
	v.SetBytes(b)
}

// opaque checks an opaque value as JSON, then hands it to encoding/json.
func (d *decoder) opaque(v reflect.Value, depth int) {
	start, before := d.pos, len(d.problems)
	d.skip(depth, true)
	if d.fatal || len(d.problems) > before {
		return
	}
	p := reflect.New(v.Type())
	if err := json.Unmarshal(d.data[start:d.pos], p.Interface()); err != nil {
		// The error is not shown: it may quote the value.
		if v.Type() == timeType {
			d.problem("must be a date-time string in RFC 3339 format")
		} else {
			d.problem("must be a valid " + v.Type().String())
		}
		return
	}
	v.Set(p.Elem())
}

// newKey checks one key of a map, or of an object read without a Go type:
// it reports a bad key or a key already in *seen, and otherwise adds the
// key to *seen (made on first use) and reports true.
func (d *decoder) newKey(seen *map[string]bool, key string, bad badString) bool {
	switch {
	case bad != goodString:
		d.problem(bad.keyMessage())
		return false
	case (*seen)[key]:
		d.duplicate(key, elemKey)
		return false
	}
	if *seen == nil {
		*seen = make(map[string]bool)
	}
	(*seen)[key] = true
	return true
}

// skip reads any JSON value. When loud, it reports duplicate keys and bad
// strings inside it; otherwise only what stops reading.
func (d *decoder) skip(depth int, loud bool) {
	d.ws()
	switch c := d.peek(); {
	case c == '{':
		if !d.enter(depth) {
			return
		}
		var seen map[string]bool
		d.members(func(kb []byte, bad badString) {
			if loud {
				key := string(kb)
				d.newKey(&seen, key, bad)
				d.push(pathElem{kind: elemKey, name: key})
				defer d.pop()
			}
			d.skip(depth+1, loud)
		})
	case c == '[':
		if !d.enter(depth) {
			return
		}
		d.elements(func(i int) {
			if loud {
				d.push(pathElem{kind: elemIndex, index: i})
				defer d.pop()
			}
			d.skip(depth+1, loud)
		})
	case c == '"':
		_, bad, ok := d.strBytes()
		if ok && loud && bad != goodString {
			d.problem(bad.valueMessage())
		}
	case c == 't':
		d.literal("true")
	case c == 'f':
		d.literal("false")
	case c == 'n':
		d.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		d.number()
	case d.pos >= len(d.data):
		d.syntax("unexpected end of input")
	default:
		d.syntax("unexpected character")
	}
}

// literal reads lit, which must be at pos.
func (d *decoder) literal(lit string) bool {
	if !bytes.HasPrefix(d.data[d.pos:], []byte(lit)) {
		d.syntax("unexpected character")
		return false
	}
	d.pos += len(lit)
	return true
}

// number reads a number token as the JSON grammar defines it. The token
// shares memory with the input.
func (d *decoder) number() ([]byte, bool) {
	start := d.pos
	digits := func() int {
		n := 0
		for d.pos < len(d.data) && '0' <= d.data[d.pos] && d.data[d.pos] <= '9' {
			d.pos++
			n++
		}
		return n
	}
	if d.peek() == '-' {
		d.pos++
	}
	switch c := d.peek(); {
	case c == '0':
		d.pos++
	case '1' <= c && c <= '9':
		digits()
	default:
		d.syntax("invalid number")
		return nil, false
	}
	if d.peek() == '.' {
		d.pos++
		if digits() == 0 {
			d.syntax("invalid number")
			return nil, false
		}
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		d.pos++
		if c := d.peek(); c == '+' || c == '-' {
			d.pos++
		}
		if digits() == 0 {
			d.syntax("invalid number")
			return nil, false
		}
	}
	return d.data[start:d.pos], true
}

// str reads the string whose opening quote is at pos and returns it
// unescaped, with what is wrong with its content if anything. ok is false
// after a syntax error.
func (d *decoder) str() (s string, bad badString, ok bool) {
	b, bad, ok := d.strBytes()
	if !ok {
		return "", bad, false
	}
	return string(b), bad, true
}

// strBytes is str without the string: the content, unescaped, shares
// memory with the input when the string holds no escape, so it is valid
// only until the input changes and must not be modified.
//
// It is one loop with its state in locals (where the current unescaped
// run starts, the buffer once an escape is seen), which a string without
// escapes never leaves; split, that state would travel between functions
// on the decoder's hottest path.
func (d *decoder) strBytes() (s []byte, bad badString, ok bool) {
	d.pos++ // opening quote
	start := d.pos
	var buf []byte
	note := func(b badString) {
		if bad == goodString {
			bad = b
		}
	}
	for d.pos < len(d.data) {
		// Plain printable ASCII, the common case, needs no other check.
		for d.pos < len(d.data) {
			if c := d.data[d.pos]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
				break
			}
			d.pos++
		}
		if d.pos == len(d.data) {
			break
		}
		c := d.data[d.pos]
		switch {
		case c == '"':
			if buf == nil {
				s = d.data[start:d.pos]
			} else {
				s = append(buf, d.data[start:d.pos]...)
			}
			d.pos++
			return s, bad, true
		case c == '\\':
			buf = append(buf, d.data[start:d.pos]...)
			d.pos++
			switch d.peek() {
			case '"', '\\', '/':
				buf = append(buf, d.data[d.pos])
				d.pos++
			case 'b':
				buf = append(buf, '\b')
				d.pos++
			case 'f':
				buf = append(buf, '\f')
				d.pos++
			case 'n':
				buf = append(buf, '\n')
				d.pos++
			case 'r':
				buf = append(buf, '\r')
				d.pos++
			case 't':
				buf = append(buf, '\t')
				d.pos++
			case 'u':
				r, ok := d.hex4(d.pos + 1)
				if !ok {
					d.syntax("invalid \\u escape")
					return nil, bad, false
				}
				d.pos += 5
				switch {
				case r == 0:
					note(hasNUL)
				case utf16.IsSurrogate(r):
					if r < 0xdc00 && d.pos+1 < len(d.data) && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
						if r2, ok := d.hex4(d.pos + 2); ok && 0xdc00 <= r2 && r2 <= 0xdfff {
							r = utf16.DecodeRune(r, r2)
							d.pos += 6
							break
						}
					}
					note(hasSurrogate)
					r = utf8.RuneError
				}
				buf = utf8.AppendRune(buf, r)
			default:
				d.syntax("invalid escape in a string")
				return nil, bad, false
			}
			start = d.pos
		case c == 0:
			d.syntax("a string contains a raw NUL byte")
			return nil, bad, false
		case c < 0x20:
			d.syntax("a string contains an unescaped control character")
			return nil, bad, false
		default: // past the scan above, c is not ASCII
			r, size := utf8.DecodeRune(d.data[d.pos:])
			if r == utf8.RuneError && size == 1 {
				note(hasBadUTF8)
			}
			d.pos += size
		}
	}
	d.syntax("unterminated string")
	return nil, bad, false
}

// hex4 parses the four hex digits at i.
func (d *decoder) hex4(i int) (rune, bool) {
	if i+4 > len(d.data) {
		return 0, false
	}
	var r rune
	for _, c := range d.data[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
