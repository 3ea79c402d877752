package strictjson

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// op says how the decoder reads a value of one Go type.
type op uint8

const (
	opOpaque  op = iota // checked as JSON, then handed to encoding/json
	opValue             // a Value
	opObject            // an Object
	opPointer           // a pointer: null, or the element
	opStruct            // a struct, by its JSON fields
	opMap               // a map with string keys
	opBytes             // a []byte, as a base64 string
	opSlice             // any other slice
	opArray             // a Go array
	opString
	opBool
	opInt
	opUint
	opFloat
	opInvalid // refused by Check; never reached
)

// plan is how the decoder reads values of one Go type, worked out once per
// type so that reading a value asks reflect nothing about its type.
type plan struct {
	t    reflect.Type
	op   op
	elem *plan       // opPointer, opSlice, opArray, opMap: the element's plan
	info *structInfo // opStruct
	bits int         // opInt, opUint, opFloat: the size in bits
}

// structInfo is what the decoder needs about a struct type.
type structInfo struct {
	fields  []fieldPlan
	byName  map[string]int // JSON name to index in fields
	names   []string       // JSON names in declaration order
	allowed string         // "allowed: a, b, c", for messages
}

// fieldPlan is one JSON member of a struct with the plan of its type.
type fieldPlan struct {
	Field
	plan *plan
}

// maxNamesInMessage bounds the list of allowed names in an unknown-field
// message.
const maxNamesInMessage = 24

var (
	valueType  = reflect.TypeFor[Value]()
	objectType = reflect.TypeFor[Object]()
)

// planCache maps a struct reflect.Type that Decode accepts to its *plan.
var planCache sync.Map

// planFor returns the plan of t, the type of Decode's target, or the error
// Decode returns for it.
func planFor(t reflect.Type) (*plan, error) {
	if p, ok := planCache.Load(t); ok {
		return p.(*plan), nil
	}
	if Opaque(t) {
		return nil, fmt.Errorf("strictjson: %v decodes itself (UnmarshalJSON or UnmarshalText); Decode needs a plain struct", t)
	}
	if err := Check(t); err != nil {
		return nil, err
	}
	p := buildPlan(t, map[reflect.Type]*plan{})
	v, _ := planCache.LoadOrStore(t, p)
	return v.(*plan), nil
}

// buildPlan works out the plan of t, which Check has accepted. building
// holds the plans under construction, so that recursive types end in a
// cycle of plans rather than in endless recursion.
func buildPlan(t reflect.Type, building map[reflect.Type]*plan) *plan {
	if p := building[t]; p != nil {
		return p
	}
	p := &plan{t: t}
	building[t] = p
	switch {
	case t == valueType:
		p.op = opValue
		return p
	case t == objectType:
		p.op = opObject
		return p
	case Opaque(t):
		p.op = opOpaque
		return p
	}
	switch t.Kind() {
	case reflect.Pointer:
		p.op, p.elem = opPointer, buildPlan(t.Elem(), building)
	case reflect.Struct:
		p.op, p.info = opStruct, buildInfo(t, building)
	case reflect.Map:
		p.op, p.elem = opMap, buildPlan(t.Elem(), building)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			p.op = opBytes
		} else {
			p.op, p.elem = opSlice, buildPlan(t.Elem(), building)
		}
	case reflect.Array:
		p.op, p.elem = opArray, buildPlan(t.Elem(), building)
	case reflect.String:
		p.op = opString
	case reflect.Bool:
		p.op = opBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		p.op, p.bits = opInt, t.Bits()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		p.op, p.bits = opUint, t.Bits()
	case reflect.Float32, reflect.Float64:
		p.op, p.bits = opFloat, t.Bits()
	default:
		p.op = opInvalid
	}
	return p
}

// buildInfo works out the structInfo of struct type t.
func buildInfo(t reflect.Type, building map[reflect.Type]*plan) *structInfo {
	fs, _ := Fields(t)
	si := &structInfo{byName: make(map[string]int, len(fs))}
	for _, f := range fs {
		si.byName[f.Name] = len(si.fields)
		si.fields = append(si.fields, fieldPlan{Field: f, plan: buildPlan(f.Type, building)})
		si.names = append(si.names, f.Name)
	}
	switch {
	case len(si.names) == 0:
		si.allowed = "this object takes no fields"
	case len(si.names) > maxNamesInMessage:
		si.allowed = "allowed: " + strings.Join(si.names[:maxNamesInMessage], ", ") +
			fmt.Sprintf(", and %d more", len(si.names)-maxNamesInMessage)
	default:
		si.allowed = "allowed: " + strings.Join(si.names, ", ")
	}
	return si
}
