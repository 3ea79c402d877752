package inventory_test

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/execgate/execgate/internal/inventory"
)

type inner struct {
	List []string
	N    int64
}

type item struct {
	Name string
	Max  *int64
}

type sample struct {
	S     string
	B     bool
	D     time.Duration
	T     time.Time
	Bytes []byte
	Env   map[string]string
	In    *inner
	Items []item
	Flag  *bool
	Any   fmt.Stringer
}

func TestLeaves(t *testing.T) {
	got := inventory.Leaves(reflect.TypeFor[sample]())
	want := []string{"S", "B", "D", "T", "Bytes", "Env", "In.List", "In.N", "Items[].Name", "Items[].Max", "Flag", "Any"}
	if !slices.Equal(got, want) {
		t.Errorf("Leaves = %q, want %q", got, want)
	}
}

func TestLeaves_PanicsOnUnexportedFields(t *testing.T) {
	type hidden struct {
		A string
		b string
	}
	defer func() {
		if recover() == nil {
			t.Error("an unexported field was skipped silently")
		}
	}()
	inventory.Leaves(reflect.TypeFor[hidden]())
}

type name string

func (n name) String() string { return string(n) }

var filler = inventory.Filler{Custom: map[reflect.Type]func(int) any{
	reflect.TypeFor[fmt.Stringer](): func(seed int) any { return name(fmt.Sprint(seed)) },
}}

func TestFill_SetsEveryLeafAndSeedsDiffer(t *testing.T) {
	var a, b, c sample
	filler.Fill(&a, 1)
	filler.Fill(&b, 1)
	filler.Fill(&c, 2)
	if d := inventory.Diff(a, b); d != nil {
		t.Errorf("one seed gave different values at %q", d)
	}
	leaves := inventory.Leaves(reflect.TypeFor[sample]())
	if d := inventory.Diff(a, c); !slices.Equal(d, leaves) {
		t.Errorf("two seeds differ at %q, want every leaf %q", d, leaves)
	}
	fields := []string{"S", "B", "D", "T", "Bytes", "Env", "In", "Items", "Flag", "Any"}
	if d := inventory.Diff(a, sample{}); !slices.Equal(d, fields) {
		t.Errorf("a filled value differs from the zero value at %q, want every field %q", d, fields)
	}
}

func TestSetLeaf_ChangesOnlyThatLeaf(t *testing.T) {
	for _, leaf := range inventory.Leaves(reflect.TypeFor[sample]()) {
		var base, changed sample
		filler.Fill(&base, 1)
		filler.Fill(&changed, 1)
		filler.SetLeaf(&changed, leaf, 2)
		if d := inventory.Diff(base, changed); !slices.Equal(d, []string{leaf}) {
			t.Errorf("SetLeaf(%s) changed %q", leaf, d)
		}
	}
}

func deepCopy(s sample) sample {
	s.Bytes = slices.Clone(s.Bytes)
	s.Env = maps.Clone(s.Env)
	if s.In != nil {
		in := *s.In
		in.List = slices.Clone(in.List)
		s.In = &in
	}
	s.Items = slices.Clone(s.Items)
	for i, it := range s.Items {
		if it.Max != nil {
			v := *it.Max
			s.Items[i].Max = &v
		}
	}
	if s.Flag != nil {
		v := *s.Flag
		s.Flag = &v
	}
	return s
}

func TestCloneProblems(t *testing.T) {
	if p := inventory.CloneProblems(filler, deepCopy); p != nil {
		t.Errorf("a deep copy has problems: %q", p)
	}
	for _, tc := range []struct {
		name  string
		clone func(sample) sample
		want  string
	}{
		{"shallow copy", func(s sample) sample { return s }, "changing the clone changed the original at Bytes"},
		{"shared map", func(s sample) sample { c := deepCopy(s); c.Env = s.Env; return c }, "changing the clone changed the original at Env"},
		{"shared pointer", func(s sample) sample { c := deepCopy(s); c.Flag = s.Flag; return c }, "changing the clone changed the original at Flag"},
		{"copied struct, shared slice in it", func(s sample) sample { c := deepCopy(s); c.In.List = s.In.List; return c }, "changing the clone changed the original at In.List"},
		{"shared pointer in a copied slice", func(s sample) sample { c := deepCopy(s); c.Items[1].Max = s.Items[1].Max; return c }, "changing the clone changed the original at Items[].Max"},
		{"forgotten field", func(s sample) sample { c := deepCopy(s); c.D = 0; return c }, "the clone differs from the original at D"},
		{"forgotten pointer", func(s sample) sample { c := deepCopy(s); c.In = nil; return c }, "the clone differs from the original at In"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p := inventory.CloneProblems(filler, tc.clone); !slices.Contains(p, tc.want) {
				t.Errorf("problems %q, want %q among them", p, tc.want)
			}
		})
	}
}

func TestDiff_NilAndEmptyAreEqual(t *testing.T) {
	a := sample{Bytes: nil, Env: nil}
	b := sample{Bytes: []byte{}, Env: map[string]string{}}
	if d := inventory.Diff(a, b); d != nil {
		t.Errorf("nil and empty differ at %q", d)
	}
	z := time.FixedZone("X", 3600)
	now := time.Now()
	if d := inventory.Diff(sample{T: now}, sample{T: now.In(z)}); d != nil {
		t.Errorf("one instant in two zones differs at %q", d)
	}
}
