package strictjson

import "fmt"

// Kind is the JSON type of a Value.
type Kind uint8

// The kinds of JSON value.
const (
	KindNull Kind = iota
	KindBool
	KindNumber
	KindString
	KindArray
	KindObject
)

// Value is one JSON value read without a Go type to guide it, for a field
// whose shape depends on other data (the values of a flags object depend
// on each flag's declaration). Decode reads it once and checks it as it
// checks the value of a json.RawMessage field: syntax, nesting depth,
// duplicate keys at any depth, and NUL, invalid UTF-8 and unpaired
// surrogate escapes in every string and key, with the same Problems. A
// JSON null is a Value of KindNull, as a json.RawMessage field would hold
// "null".
type Value struct {
	// Kind is the value's JSON type.
	Kind Kind
	// Bool is the value of a KindBool.
	Bool bool
	// Text is the unescaped content of a KindString, or the literal of a
	// KindNumber as it was written.
	Text string
	// Elems are the elements of a KindArray, in input order.
	Elems []Value
	// Members are the members of a KindObject, in input order, each key
	// once.
	Members Object
}

// Member is one member of a JSON object.
type Member struct {
	Key   string
	Value Value
}

// Object is a JSON object read without a Go type to guide it: its members
// in input order, each key once. As a field, it reads what a
// map[string]json.RawMessage field reads and refuses what that field
// refuses, with the same Problems: a null leaves it nil, and keys that are
// repeated, invalid UTF-8 or hold NUL or an unpaired surrogate escape are
// reported; every value is a Value.
type Object []Member

// objectField reads an Object field whose first byte, at pos, is '{' or
// 'n'. It reads what mapObject reads for a map of opaque values and reports
// the same problems at the same paths.
func (d *decoder) objectField(depth int) Object {
	if d.data[d.pos] == 'n' {
		d.literal("null")
		return nil
	}
	if !d.enter(depth) {
		return nil
	}
	obj := make(Object, 0, 4)
	var index map[string]bool // the keys of obj, once it is long
	d.members(func(kb []byte, bad badString) {
		switch {
		case bad != goodString:
			d.problem(bad.keyMessage())
		case obj.has(kb, index):
			d.duplicate(string(kb), elemKey)
		default:
			key := string(kb)
			d.push(pathElem{kind: elemKey, name: key})
			if !d.keep() {
				// Past MaxValues: check the rest, keep nothing.
				d.skip(depth+1, true)
				d.pop()
				return
			}
			// As value does before an opaque value.
			d.ws()
			var v Value
			if d.pos >= len(d.data) {
				d.syntax("unexpected end of input")
			} else {
				v = d.anyValue(depth + 1)
			}
			d.pop()
			obj = append(obj, Member{Key: key, Value: v})
			switch {
			case index != nil:
				index[key] = true
			case len(obj) > linearKeys:
				index = make(map[string]bool, 2*len(obj))
				for _, m := range obj {
					index[m.Key] = true
				}
			}
			return
		}
		d.skip(depth+1, false)
	})
	return obj
}

// keep counts one more key or value kept in a Value or Object field and
// reports whether Options.MaxValues allows it. The first one past the bound
// is reported as a problem at its path.
func (d *decoder) keep() bool {
	if d.opts.MaxValues <= 0 || d.kept < d.opts.MaxValues {
		d.kept++
		return true
	}
	if d.kept == d.opts.MaxValues {
		d.kept++
		d.problem(fmt.Sprintf("too many values: at most %d are read", d.opts.MaxValues))
	}
	return false
}

// overBound reports whether more values were met than Options.MaxValues
// allows; the input is then refused, and nothing more needs keeping.
func (d *decoder) overBound() bool {
	return d.opts.MaxValues > 0 && d.kept > d.opts.MaxValues
}

// linearKeys is how many members an Object may have before objectField
// indexes its keys in a map rather than searching them.
const linearKeys = 16

// has reports whether o holds a member with key kb; index holds o's keys
// when it is not nil.
func (o Object) has(kb []byte, index map[string]bool) bool {
	if index != nil {
		return index[string(kb)]
	}
	for i := range o {
		if o[i].Key == string(kb) {
			return true
		}
	}
	return false
}

// anyValue reads any JSON value and keeps it. It reports exactly what
// skip reports when loud, at the same paths.
func (d *decoder) anyValue(depth int) Value {
	var v Value
	d.ws()
	if !d.keep() {
		d.skip(depth, true)
		return v
	}
	switch c := d.peek(); {
	case c == '{':
		v.Kind = KindObject
		if !d.enter(depth) {
			return v
		}
		var seen map[string]bool
		v.Members = Object{}
		d.members(func(kb []byte, bad badString) {
			key := string(kb)
			keep := d.newKey(&seen, key, bad)
			d.push(pathElem{kind: elemKey, name: key})
			if keep && !d.keep() {
				keep = false
			}
			m := d.anyValue(depth + 1)
			d.pop()
			if keep && !d.overBound() {
				v.Members = append(v.Members, Member{Key: key, Value: m})
			}
		})
	case c == '[':
		v.Kind = KindArray
		if !d.enter(depth) {
			return v
		}
		v.Elems = []Value{}
		d.elements(func(i int) {
			d.push(pathElem{kind: elemIndex, index: i})
			e := d.anyValue(depth + 1)
			d.pop()
			if !d.overBound() {
				v.Elems = append(v.Elems, e)
			}
		})
	case c == '"':
		v.Kind = KindString
		s, bad, ok := d.str()
		if ok && bad != goodString {
			d.problem(bad.valueMessage())
		}
		v.Text = s
	case c == 't':
		v.Kind, v.Bool = KindBool, d.literal("true")
	case c == 'f':
		v.Kind = KindBool
		d.literal("false")
	case c == 'n':
		d.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		v.Kind = KindNumber
		if tok, ok := d.number(); ok {
			v.Text = string(tok)
		}
	case d.pos >= len(d.data):
		d.syntax("unexpected end of input")
	default:
		d.syntax("unexpected character")
	}
	return v
}
