package execgate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

type manyItems struct {
	Items []struct {
		S string `json:"s" validate:"required"`
	} `json:"items" validate:"dive"`
}

// TestBoundedEverything_LargeFailingInputIsRefusedQuickly sends the largest input
// the gate accepts, made of as many failing fields as fit, and the same
// input at half that size. Refusing it must cost work linear in its size:
// the full input may allocate at most three times what the half does (a
// quadratic implementation took minutes, and its cost grew fourfold with
// each doubling), and the issues reported stay capped.
//
// Invariant 6 of DESIGN.md.
func TestBoundedEverything_LargeFailingInputIsRefusedQuickly(t *testing.T) {
	failing := func(size int) json.RawMessage {
		var b bytes.Buffer
		b.WriteString(`{"items":[{}`)
		for b.Len() < size-8 {
			b.WriteString(`,{}`)
		}
		b.WriteString(`]}`)
		require.LessOrEqual(t, b.Len(), execgate.MaxInputSize)
		return b.Bytes()
	}
	x, rec := newGate(t, execgate.Config{}, execgate.CommandSpec{
		Name: "many", Command: "/bin/echo",
		Args: execgate.Struct(func(manyItems) execgate.Argv { return execgate.Argv{} }),
	})
	// refuse runs the call once and returns the bytes it allocated.
	refuse := func(input json.RawMessage) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := x.Run(context.Background(), "many", input)
		runtime.ReadMemStats(&after)
		var ve *execgate.ValidationError
		require.ErrorAs(t, err, &ve)
		assert.LessOrEqual(t, len(ve.Issues), 33, "issues are capped")
		return after.TotalAlloc - before.TotalAlloc
	}
	refuse(failing(1 << 10)) // the gate's first-call set-up is not the input's cost
	half := refuse(failing(execgate.MaxInputSize / 2))
	full := refuse(failing(execgate.MaxInputSize))
	assert.LessOrEqual(t, full, 3*half,
		"refusing twice the input allocated %d bytes against %d: the cost grows faster than the input", full, half)
	assert.Zero(t, rec.Count())
}

// TestBoundedEverything_FlagsInputBuildsNoLargeTree sends Flags inputs of almost
// 1 MiB that are cheap to write and would be costly to keep: hundreds of
// thousands of values in an undeclared member, in a declared repeatable
// flag, nested, or as distinct keys. Each is refused, and refusing it
// allocates a small multiple of the input, not a tree of every value
// (which took 70 to 200 MB).
//
// Invariant 6 of DESIGN.md.
func TestBoundedEverything_FlagsInputBuildsNoLargeTree(t *testing.T) {
	spec := execgate.CommandSpec{
		Name: "log", Command: "/usr/bin/git",
		Args: execgate.Flags(execgate.FlagSpec{
			Leading: []string{"log"},
			Flags: []execgate.Flag{
				{Name: "oneline"},
				{Name: "grep", Value: execgate.ValueString, Repeat: 4},
			},
			Positionals: execgate.Positionals{Max: 4},
		}),
	}
	a, err := execgate.NewAllowlist(spec)
	require.NoError(t, err)
	p := execgate.NewProposer(a)

	// fill repeats unit, separated by commas, between open and close, up
	// to just under the input limit.
	fill := func(open, unit, close string) string {
		n := (execgate.MaxInputSize - len(open) - len(close)) / (len(unit) + 1)
		return open + strings.Repeat(unit+",", n-1) + unit + close
	}
	var keys strings.Builder
	keys.WriteString(`{"flags":{`)
	for i := 0; keys.Len() < execgate.MaxInputSize-32; i++ {
		if i > 0 {
			keys.WriteByte(',')
		}
		keys.WriteString(`"k` + strconv.Itoa(i) + `":0`)
	}
	keys.WriteString(`}}`)
	cases := []struct{ name, input string }{
		{"undeclared member, numbers", fill(`{"flags":{"zz":[`, `0`, `]}}`)},
		{"undeclared member, empty arrays", fill(`{"flags":{"zz":[`, `[]`, `]}}`)},
		{"undeclared member, empty objects", fill(`{"flags":{"zz":[`, `{}`, `]}}`)},
		{"declared repeatable flag", fill(`{"flags":{"grep":[`, `""`, `]}}`)},
		{"nested member", fill(`{"flags":{"grep":[[`, `0`, `]]}}`)},
		{"distinct keys", keys.String()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.LessOrEqual(t, len(tc.input), execgate.MaxInputSize)
			require.True(t, json.Valid([]byte(tc.input)))
			input := json.RawMessage(tc.input)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := p.Check("log", input)
			runtime.ReadMemStats(&after)
			var ve *execgate.ValidationError
			require.ErrorAs(t, err, &ve)
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("allocated %d bytes for %d bytes of input", allocated, len(input))
			assert.Less(t, allocated, uint64(8*execgate.MaxInputSize))
		})
	}
}

// TestBoundedEverything_StructElementsAreBounded sends a Struct schema
// inputs of failing list items: as many as MaxStructElements allows,
// which are checked and refused for what they lack, and one more, which
// is refused before any is checked, saying why. Refusing the largest
// input of such items the gate accepts allocates a small multiple of its
// size: checking each of its 350,000 items took 200 MB or more, so that a
// few calls at once could exhaust the gate's memory.
//
// Invariant 6 of DESIGN.md.
func TestBoundedEverything_StructElementsAreBounded(t *testing.T) {
	x, rec := newGate(t, execgate.Config{}, execgate.CommandSpec{
		Name: "many", Command: "/bin/echo",
		Args: execgate.Struct(func(manyItems) execgate.Argv { return execgate.Argv{} }),
	})
	items := func(n int) json.RawMessage {
		return json.RawMessage(`{"items":[` + strings.TrimSuffix(strings.Repeat(`{},`, n), ",") + `]}`)
	}
	refusal := func(input json.RawMessage) string {
		_, err := x.Run(context.Background(), "many", input)
		var ve *execgate.ValidationError
		require.ErrorAs(t, err, &ve)
		return ve.Error()
	}
	assert.Contains(t, refusal(items(execgate.MaxStructElements)), "required", "items up to the bound are checked")
	over := refusal(items(execgate.MaxStructElements + 1))
	assert.Contains(t, over, fmt.Sprintf("at most %d are read", execgate.MaxStructElements))
	assert.NotContains(t, over, "required", "items past the bound are not checked")

	var b bytes.Buffer
	b.WriteString(`{"items":[{}`)
	for b.Len() < execgate.MaxInputSize-8 {
		b.WriteString(`,{}`)
	}
	b.WriteString(`]}`)
	require.LessOrEqual(t, b.Len(), execgate.MaxInputSize)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	refusal(b.Bytes())
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	assert.Less(t, allocated, uint64(8*execgate.MaxInputSize), "refusing %d bytes allocated %d", b.Len(), allocated)
	assert.Zero(t, rec.Count())
}

type arrayItem struct {
	S string `json:"s" validate:"required"`
}

// arraysOfItems holds its items in Go arrays inside a slice.
type arraysOfItems struct {
	Items [][32]arrayItem `json:"items" validate:"dive,dive"`
}

// TestBoundedEverything_StructElementsInGoArraysAreBounded sends a Struct
// schema whose list holds Go arrays of 32 items fewer than
// MaxStructElements such arrays, 320,000 failing items in all: they are
// refused before any is checked, and refusing them costs no more than
// refusing MaxStructElements plain items. A Go array's items were not
// counted, and refusing this input allocated 225 MB.
//
// Invariant 6 of DESIGN.md.
func TestBoundedEverything_StructElementsInGoArraysAreBounded(t *testing.T) {
	var b bytes.Buffer
	arr := "[" + strings.TrimSuffix(strings.Repeat("{},", 32), ",") + "]"
	b.WriteString(`{"items":[` + arr)
	for n := 1; n < execgate.MaxStructElements-1; n++ {
		b.WriteString("," + arr)
	}
	b.WriteString(`]}`)
	require.LessOrEqual(t, b.Len(), execgate.MaxInputSize)
	x, _ := newGate(t, execgate.Config{},
		execgate.CommandSpec{Name: "arrays", Command: "/bin/echo",
			Args: execgate.Struct(func(arraysOfItems) execgate.Argv { return execgate.Argv{} })},
		execgate.CommandSpec{Name: "plain", Command: "/bin/echo",
			Args: execgate.Struct(func(manyItems) execgate.Argv { return execgate.Argv{} })},
	)
	refuse := func(name string, in json.RawMessage) (uint64, *execgate.ValidationError) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := x.Run(context.Background(), name, in)
		runtime.ReadMemStats(&after)
		var ve *execgate.ValidationError
		require.ErrorAs(t, err, &ve)
		return after.TotalAlloc - before.TotalAlloc, ve
	}
	refuse("plain", json.RawMessage(`{"items":[{}]}`)) // the first call's set-up
	refuse("arrays", json.RawMessage(`{"items":[`+arr+`]}`))
	plain, _ := refuse("plain", json.RawMessage(`{"items":[{}`+strings.Repeat(`,{}`, execgate.MaxStructElements-1)+`]}`))
	cost, ve := refuse("arrays", b.Bytes())
	assert.Contains(t, ve.Error(), "too many array elements and object members")
	assert.LessOrEqual(t, cost, 3*plain, "refusing items held in Go arrays allocated %d bytes against %d for MaxStructElements plain items", cost, plain)
}
