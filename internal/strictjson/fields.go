package strictjson

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode"
)

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// Opaque reports whether values of t decode through their own UnmarshalJSON
// or UnmarshalText method, as time.Time does. Decode treats such values as
// leaves: it checks their JSON text (syntax, duplicate keys, NUL bytes,
// UTF-8) but leaves their shape to the method. Pointer types are never
// opaque themselves; Decode looks through them.
func Opaque(t reflect.Type) bool {
	if t == nil || t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface {
		return false
	}
	pt := reflect.PointerTo(t)
	return pt.Implements(jsonUnmarshalerType) || pt.Implements(textUnmarshalerType)
}

// Field is one JSON member of a struct type, as Decode and encoding/json
// see it.
type Field struct {
	// Name is the exact JSON name: the json tag's name, or the Go name
	// when the tag gives none.
	Name string
	// GoName is the Go field name.
	GoName string
	// Index is the index sequence for reflect.Value.FieldByIndex. It is
	// longer than one for fields promoted from embedded structs.
	Index []int
	// Type is the field's Go type.
	Type reflect.Type
	// Tag is the field's whole struct tag.
	Tag reflect.StructTag
	// OmitEmpty reports the json tag's omitempty option.
	OmitEmpty bool
}

// fieldsCache maps a struct reflect.Type to its fieldsResult.
var fieldsCache sync.Map

type fieldsResult struct {
	fields []Field
	err    error
}

// Fields returns the JSON members of struct type t in declaration order,
// with the fields of embedded structs promoted in place, as encoding/json
// decodes them. Unexported fields and fields tagged json:"-" are left out.
//
// Fields refuses, rather than resolves, what encoding/json would resolve
// silently or surprisingly: two fields with the same JSON name at any
// depth, an embedded pointer to a struct, the ",string" option, and JSON
// names other than letters, digits, '_' and '-'. The result is cached and
// must not be modified.
func Fields(t reflect.Type) ([]Field, error) {
	if t == nil || t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("strictjson: %v is not a struct type", t)
	}
	if r, ok := fieldsCache.Load(t); ok {
		r := r.(*fieldsResult)
		return r.fields, r.err
	}
	var fs []Field
	err := collectFields(t, nil, &fs, map[reflect.Type]bool{t: true})
	if err == nil {
		seen := make(map[string]string, len(fs))
		for _, f := range fs {
			if prev, dup := seen[f.Name]; dup {
				err = fmt.Errorf("strictjson: %v: fields %s and %s both have the JSON name %q", t, prev, f.GoName, f.Name)
				break
			}
			seen[f.Name] = f.GoName
		}
	}
	if err != nil {
		fs = nil
	}
	r, _ := fieldsCache.LoadOrStore(t, &fieldsResult{fields: fs, err: err})
	res := r.(*fieldsResult)
	return res.fields, res.err
}

// collectFields appends the JSON members of struct type t, whose fields
// sit at index prefix in the outermost struct. inPath guards against
// embedding cycles.
func collectFields(t reflect.Type, prefix []int, out *[]Field, inPath map[reflect.Type]bool) error {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		index := append(append([]int(nil), prefix...), i)
		if sf.Anonymous && name == "" {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				if ft.Elem().Kind() == reflect.Struct {
					return fmt.Errorf("strictjson: %v: embedded pointer %s is not supported; embed the struct itself or give it a json name", t, sf.Name)
				}
			} else if ft.Kind() == reflect.Struct && !Opaque(ft) {
				if inPath[ft] {
					return fmt.Errorf("strictjson: %v: embedding cycle through %s", t, sf.Name)
				}
				inPath[ft] = true
				err := collectFields(ft, index, out, inPath)
				delete(inPath, ft)
				if err != nil {
					return err
				}
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if err := checkName(name); err != nil {
			return fmt.Errorf("strictjson: %v: field %s: %v", t, sf.Name, err)
		}
		omitEmpty := false
		for opt := range strings.SplitSeq(opts, ",") {
			switch opt {
			case "string":
				return fmt.Errorf("strictjson: %v: field %s: the \",string\" option is not supported", t, sf.Name)
			case "omitempty":
				omitEmpty = true
			}
		}
		*out = append(*out, Field{
			Name:      name,
			GoName:    sf.Name,
			Index:     index,
			Type:      sf.Type,
			Tag:       sf.Tag,
			OmitEmpty: omitEmpty,
		})
	}
	return nil
}

// checkName accepts the JSON names Decode supports: letters, digits, '_'
// and '-', which encoding/json also accepts as written.
func checkName(name string) error {
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '-' {
			return fmt.Errorf("JSON name %q may hold only letters, digits, '_' and '-'", name)
		}
	}
	return nil
}

// checkCache maps a reflect.Type to the error of Check, or nil.
var checkCache sync.Map

// Check reports whether Decode supports every type reachable from t. It
// accepts booleans, strings, integers, unsigned integers and floats of
// every size, pointers, slices (a []byte is a base64 string), arrays,
// maps with string keys, structs (see Fields), Value, Object and opaque
// types (see Opaque). It refuses interfaces, channels, functions, complex
// numbers, uintptr and unsafe pointers, and maps with other keys.
func Check(t reflect.Type) error {
	if t == nil {
		return fmt.Errorf("strictjson: nil type")
	}
	if err, ok := checkCache.Load(t); ok {
		if err == nil {
			return nil
		}
		return err.(error)
	}
	err := checkType(t, t.String(), map[reflect.Type]bool{})
	if err == nil {
		checkCache.Store(t, nil)
	} else {
		checkCache.Store(t, err)
	}
	return err
}

func checkType(t reflect.Type, where string, done map[reflect.Type]bool) error {
	if done[t] {
		return nil
	}
	done[t] = true
	if t == valueType || t == objectType || Opaque(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return nil
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return checkType(t.Elem(), where+"[]", done)
	case reflect.Map:
		k := t.Key()
		if k.Kind() != reflect.String || Opaque(k) {
			return fmt.Errorf("strictjson: %s: map key type %v is not supported; use a string kind", where, k)
		}
		return checkType(t.Elem(), where+"[]", done)
	case reflect.Struct:
		fs, err := Fields(t)
		if err != nil {
			return err
		}
		for _, f := range fs {
			if err := checkType(f.Type, where+"."+f.GoName, done); err != nil {
				return err
			}
		}
		return nil
	default:
		return fmt.Errorf("strictjson: %s: type %v is not supported", where, t)
	}
}
