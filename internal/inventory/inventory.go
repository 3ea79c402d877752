// Package inventory walks the fields of Go values by reflection, for
// tests that take inventory of a struct: that a table classifies every
// field, that a clone copies every field and shares no memory with its
// original, that a record carries every field. A field added later is
// then caught by the walk instead of missed by a hand-written list.
//
// Fields are named by paths: "Confine.Limits.CPU" for a field of a
// nested struct or of a struct behind a pointer, "Flags[].Name" for a
// field of the structs in a slice. time.Time is a leaf. Only exported
// fields are walked; a struct with an unexported field (time.Time apart)
// makes the functions panic, so that a test meets it instead of skipping
// it.
package inventory

import (
	"fmt"
	"reflect"
	"slices"
	"time"
)

var timeType = reflect.TypeFor[time.Time]()

// Leaves returns the paths of the leaf fields of the struct type t, in
// declaration order: every field that is not a struct, a pointer to a
// struct or a slice of structs, whose fields are listed instead.
func Leaves(t reflect.Type) []string {
	var out []string
	walkType(t, "", func(path string, _ reflect.Type) { out = append(out, path) }, nil)
	return out
}

func walkType(t reflect.Type, path string, leaf func(string, reflect.Type), inPath []reflect.Type) {
	if slices.Contains(inPath, t) {
		panic(fmt.Sprintf("inventory: %s: recursive type %v", path, t))
	}
	switch {
	case isStruct(t):
		checkExported(t)
		for i := range t.NumField() {
			f := t.Field(i)
			walkType(f.Type, join(path, f.Name), leaf, append(inPath, t))
		}
	case t.Kind() == reflect.Pointer && isStruct(t.Elem()):
		walkType(t.Elem(), path, leaf, inPath)
	case t.Kind() == reflect.Slice && isStruct(t.Elem()):
		walkType(t.Elem(), path+"[]", leaf, inPath)
	default:
		leaf(path, t)
	}
}

func isStruct(t reflect.Type) bool { return t.Kind() == reflect.Struct && t != timeType }

func checkExported(t reflect.Type) {
	for i := range t.NumField() {
		if f := t.Field(i); !f.IsExported() {
			panic(fmt.Sprintf("inventory: %v has the unexported field %s, which no test can fill", t, f.Name))
		}
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// Filler fills and changes values. Custom gives the values of types it
// cannot make by itself, such as an interface type: called with a seed,
// it returns a value assignable to the type. Without one, interface and
// func fields are left as they are.
type Filler struct {
	Custom map[reflect.Type]func(seed int) any
}

// Fill sets every leaf reachable from ptr, a pointer, to a non-zero value
// made from seed (a positive number; for a bool, only odd seeds give
// true): two calls with the same seed give equal values, two seeds
// different values at every leaf. Pointers get a new value, slices two
// elements, maps two entries.
func Fill(ptr any, seed int) { Filler{}.Fill(ptr, seed) }

// Fill is the package's Fill with f's Custom values.
func (f Filler) Fill(ptr any, seed int) {
	f.fill(elem(ptr), seed)
}

func elem(ptr any) reflect.Value {
	v := reflect.ValueOf(ptr)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		panic(fmt.Sprintf("inventory: want a non-nil pointer, got %T", ptr))
	}
	return v.Elem()
}

func (f Filler) fill(v reflect.Value, seed int) {
	t := v.Type()
	if make := f.Custom[t]; make != nil {
		v.Set(reflect.ValueOf(make(seed)))
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if t == timeType {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 30, 12, 0, seed, seed, time.UTC)))
			return
		}
		checkExported(t)
		for i := range v.NumField() {
			f.fill(v.Field(i), seed)
		}
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		f.fill(p.Elem(), seed)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(t, 2, 2)
		for i := range 2 {
			f.fill(s.Index(i), seed)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			f.fill(v.Index(i), seed)
		}
	case reflect.Map:
		m := reflect.MakeMapWithSize(t, 2)
		for i := range 2 {
			k := reflect.New(t.Key()).Elem()
			f.fill(k, 2*seed+i)
			e := reflect.New(t.Elem()).Elem()
			f.fill(e, seed)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.String:
		v.SetString(fmt.Sprintf("v%d", seed))
	case reflect.Bool:
		v.SetBool(seed%2 == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(seed))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(uint64(seed))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(seed))
	case reflect.Interface, reflect.Func, reflect.Chan:
		// Left alone: nothing generic fits. Give a Custom value.
	default:
		panic(fmt.Sprintf("inventory: cannot fill a %v", t))
	}
}

// SetLeaf sets the leaf at path in ptr as Fill would set it for seed,
// and only that leaf (in every element, for a path through a slice),
// allocating what the path passes through if it is nil.
func (f Filler) SetLeaf(ptr any, path string, seed int) {
	found := false
	f.setLeaf(elem(ptr), "", path, seed, &found)
	if !found {
		panic(fmt.Sprintf("inventory: %T has no leaf %q", ptr, path))
	}
}

func (f Filler) setLeaf(v reflect.Value, at, path string, seed int, found *bool) {
	t := v.Type()
	switch {
	case at == path:
		f.fill(v, seed)
		*found = true
	case isStruct(t):
		for i := range t.NumField() {
			f.setLeaf(v.Field(i), join(at, t.Field(i).Name), path, seed, found)
		}
	case t.Kind() == reflect.Pointer && isStruct(t.Elem()):
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		f.setLeaf(v.Elem(), at, path, seed, found)
	case t.Kind() == reflect.Slice && isStruct(t.Elem()):
		for i := range v.Len() {
			f.setLeaf(v.Index(i), at+"[]", path, seed, found)
		}
	}
}

// Mutate changes, in place, every value that ptr reaches through a
// pointer, a slice or a map, as Fill with seed would set it: what a copy
// that shares memory with ptr's value would see change. What ptr's value
// holds directly, and so shares with no copy, is left as it was.
func (f Filler) Mutate(ptr any, seed int) {
	f.mutate(elem(ptr), seed, false)
}

// mutate changes v in place where it is reached through a reference
// (viaRef), and follows every reference it holds.
func (f Filler) mutate(v reflect.Value, seed int, viaRef bool) {
	t := v.Type()
	switch t.Kind() {
	case reflect.Struct:
		if t == timeType {
			if viaRef {
				f.fill(v, seed)
			}
			return
		}
		for i := range v.NumField() {
			f.mutate(v.Field(i), seed, viaRef)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			f.mutate(v.Elem(), seed, true)
		}
	case reflect.Slice:
		for i := range v.Len() {
			f.mutate(v.Index(i), seed, true)
		}
	case reflect.Array:
		for i := range v.Len() {
			f.mutate(v.Index(i), seed, viaRef)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(t.Elem()).Elem()
			e.Set(v.MapIndex(k))
			f.mutate(e, seed, true)
			v.SetMapIndex(k, e)
		}
	case reflect.Interface, reflect.Func, reflect.Chan:
	default:
		if viaRef {
			f.fill(v, seed)
		}
	}
}

// Diff returns the paths at which a and b, values of one type, differ.
// Times are compared as instants; nil and empty slices and maps are
// equal; interface and func values are compared with reflect.DeepEqual
// and by nilness.
func Diff(a, b any) []string {
	var out []string
	diff(reflect.ValueOf(a), reflect.ValueOf(b), "", &out)
	return out
}

func diff(a, b reflect.Value, path string, out *[]string) {
	t := a.Type()
	differ := func() { *out = append(*out, path) }
	switch t.Kind() {
	case reflect.Struct:
		if t == timeType {
			if !a.Interface().(time.Time).Equal(b.Interface().(time.Time)) {
				differ()
			}
			return
		}
		checkExported(t)
		for i := range t.NumField() {
			diff(a.Field(i), b.Field(i), join(path, t.Field(i).Name), out)
		}
	case reflect.Pointer:
		switch {
		case a.IsNil() != b.IsNil():
			differ()
		case !a.IsNil():
			diff(a.Elem(), b.Elem(), path, out)
		}
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			differ()
			return
		}
		elemPath := path // a leaf, as Leaves names it
		if isStruct(t.Elem()) {
			elemPath = path + "[]"
		}
		for i := range a.Len() {
			n := len(*out)
			diff(a.Index(i), b.Index(i), elemPath, out)
			if len(*out) > n {
				return // one element's differences are enough
			}
		}
	case reflect.Map:
		if a.Len() != b.Len() {
			differ()
			return
		}
		for _, k := range a.MapKeys() {
			bv := b.MapIndex(k)
			if !bv.IsValid() {
				differ()
				return
			}
			n := len(*out)
			diff(a.MapIndex(k), bv, path, out)
			if len(*out) > n {
				return
			}
		}
	case reflect.Func, reflect.Chan:
		if a.IsNil() != b.IsNil() {
			differ()
		}
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			differ()
		}
	}
}

// CloneProblems fills a value of type T with f, clones it, and returns
// what is wrong with the clone: the paths at which it differs from the
// original (a field the clone forgot), and the paths at which changing
// the clone through its pointers, slices and maps changed the original
// (memory the clone shares with it). Nil means a faithful deep copy.
func CloneProblems[T any](f Filler, clone func(T) T) []string {
	var orig, want T
	f.Fill(&orig, 1)
	f.Fill(&want, 1)
	var problems []string
	c := clone(orig)
	for _, p := range Diff(c, orig) {
		problems = append(problems, "the clone differs from the original at "+name(p))
	}
	f.Mutate(&c, 2)
	for _, p := range Diff(orig, want) {
		problems = append(problems, "changing the clone changed the original at "+name(p))
	}
	return problems
}

func name(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}
