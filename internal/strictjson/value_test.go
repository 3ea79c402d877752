package strictjson_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/internal/strictjson"
)

// withRaw and withObject are one input shape read two ways: the values of
// "flags" as JSON text checked and handed to encoding/json, and as Values
// read once. Decode must refuse exactly the same inputs with exactly the
// same problems, and accept the same values.
type withRaw struct {
	Args  []string                   `json:"args"`
	Flags map[string]json.RawMessage `json:"flags"`
	Stdin *string                    `json:"stdin"`
}

type withObject struct {
	Args  []string          `json:"args"`
	Flags strictjson.Object `json:"flags"`
	Stdin *string           `json:"stdin"`
}

// objectInputs exercise every check of a Value: syntax, depth, duplicate
// and bad keys at each level, bad strings, and every kind.
var objectInputs = []string{
	`{}`,
	`{"flags":null}`,
	`{"flags":{}}`,
	`{"flags":{"a":true,"b":false,"c":null,"d":-1.5e3,"e":"x\u00e9\ud83d\ude00\n","f":[1,"two",[3],{"k":4}],"g":{"h":{"i":[]}}}}`,
	`{"flags":{"max-count":20,"author":"Ann Lee","format":"oneline"},"args":["--since","2024-01-02","src"],"stdin":"x"}`,
	`{"flags":{"a":1,"a":2}}`,
	`{"flags":{"a b":1,"a b":2}}`,
	`{"flags":{"a":1,"\u0061":2}}`,
	`{"flags":{"\u0000":1}}`,
	"{\"flags\":{\"\xff\":1}}",
	`{"flags":{"\ud800":1}}`,
	`{"flags":{"a":"\u0000"}}`,
	"{\"flags\":{\"a\":\"\xc3\x28\"}}",
	`{"flags":{"a":"\udc00"}}`,
	`{"flags":{"a":{"k":1,"k":2}}}`,
	`{"flags":{"a":{"\u0000":1,"k":"\u0000"}}}`,
	`{"flags":{"a":[{"k":1,"k":{"j":"\ud800"}}]}}`,
	`{"flags":{"a":[[[[1]]]]}}`,
	`{"flags":{"a":[[[1]]]}}`,
	`{"flags":{"a":{"b":{"c":{}}}}}`,
	`{"flags":{"a":}}`,
	`{"flags":{"a":1`,
	`{"flags":{"a":[1,]}}`,
	`{"flags":{"a":tru}}`,
	`{"flags":{"a":01}}`,
	`{"flags":{"a":-}}`,
	`{"flags":{"a":"x}}`,
	`{"flags":{"a" 1}}`,
	`{"flags":[]}`,
	`{"flags":"x"}`,
	`{"flags":1}`,
	`{"flags":{"a":1},"flags":{}}`,
	`{"Flags":{}}`,
	`{"flags":{"a":1,"b":{"c":1,"c":2},"d":"\u0000","e":[1,2,{"f":1,"f":1}]}}`,
	`{"flags":{"a":1}} x`,
}

// problemsOf returns the problems and Partial of err, or nil.
func problemsOf(t *testing.T, err error) *strictjson.Error {
	t.Helper()
	if err == nil {
		return nil
	}
	var se *strictjson.Error
	require.ErrorAs(t, err, &se)
	return se
}

// valueAsAny turns a Value into what encoding/json with UseNumber decodes
// the same JSON text to.
func valueAsAny(v strictjson.Value) any {
	switch v.Kind {
	case strictjson.KindNull:
		return nil
	case strictjson.KindBool:
		return v.Bool
	case strictjson.KindNumber:
		return json.Number(v.Text)
	case strictjson.KindString:
		return v.Text
	case strictjson.KindArray:
		out := []any{}
		for _, e := range v.Elems {
			out = append(out, valueAsAny(e))
		}
		return out
	default:
		out := map[string]any{}
		for _, m := range v.Members {
			out[m.Key] = valueAsAny(m.Value)
		}
		return out
	}
}

func rawAsAny(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	return v
}

// checkObjectMatchesRaw decodes data both ways, with opts, and fails t if
// the results differ.
func checkObjectMatchesRaw(t *testing.T, opts strictjson.Options, data []byte) {
	t.Helper()
	var raw withRaw
	var obj withObject
	errRaw := opts.Decode(data, &raw)
	errObj := opts.Decode(data, &obj)
	require.Equal(t, problemsOf(t, errRaw), problemsOf(t, errObj), "input %q", data)
	if errRaw != nil {
		return
	}
	assert.Equal(t, raw.Args, obj.Args)
	assert.Equal(t, raw.Stdin, obj.Stdin)
	require.Equal(t, raw.Flags == nil, obj.Flags == nil, "input %q: null or absent flags", data)
	require.Len(t, obj.Flags, len(raw.Flags))
	for _, m := range obj.Flags {
		r, ok := raw.Flags[m.Key]
		require.True(t, ok, "input %q: key %q", data, m.Key)
		assert.Equal(t, rawAsAny(t, r), valueAsAny(m.Value), "input %q: key %q", data, m.Key)
	}
}

func TestObjectMatchesRawMessage(t *testing.T) {
	for _, opts := range []strictjson.Options{{}, {MaxDepth: 4, MaxProblems: 32}, {MaxDepth: 2, MaxProblems: 1}} {
		for _, in := range objectInputs {
			t.Run(fmt.Sprintf("depth=%d/%s", opts.MaxDepth, in), func(t *testing.T) {
				checkObjectMatchesRaw(t, opts, []byte(in))
			})
		}
	}
}

func FuzzObjectMatchesRawMessage(f *testing.F) {
	for _, in := range objectInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkObjectMatchesRaw(t, strictjson.Options{MaxDepth: 4}, data)
	})
}

func TestValueKinds(t *testing.T) {
	type target struct {
		V strictjson.Value `json:"v"`
	}
	tests := []struct {
		in   string
		want strictjson.Value
	}{
		{`null`, strictjson.Value{}},
		{`true`, strictjson.Value{Kind: strictjson.KindBool, Bool: true}},
		{`false`, strictjson.Value{Kind: strictjson.KindBool}},
		{`-1.50e+3`, strictjson.Value{Kind: strictjson.KindNumber, Text: "-1.50e+3"}},
		{`"a\"b\u00e9\ud83d\ude00"`, strictjson.Value{Kind: strictjson.KindString, Text: "a\"bé😀"}},
		{`[]`, strictjson.Value{Kind: strictjson.KindArray, Elems: []strictjson.Value{}}},
		{`[1,"x"]`, strictjson.Value{Kind: strictjson.KindArray, Elems: []strictjson.Value{
			{Kind: strictjson.KindNumber, Text: "1"}, {Kind: strictjson.KindString, Text: "x"},
		}}},
		{`{"b":1,"a":{}}`, strictjson.Value{Kind: strictjson.KindObject, Members: strictjson.Object{
			{Key: "b", Value: strictjson.Value{Kind: strictjson.KindNumber, Text: "1"}},
			{Key: "a", Value: strictjson.Value{Kind: strictjson.KindObject, Members: strictjson.Object{}}},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var got target
			require.NoError(t, strictjson.Decode([]byte(`{"v":`+tt.in+`}`), &got))
			assert.Equal(t, tt.want, got.V)
		})
	}
}

// TestObjectManyKeys checks that a long object is read in linear work
// (twice the keys allocate at most three times as much: a quadratic
// duplicate check grows fourfold) and that a key repeated far from its
// first occurrence is still caught.
func TestObjectManyKeys(t *testing.T) {
	const n = 50000
	object := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"flags":{`)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"k%d":%d`, i, i)
		}
		b.WriteString(`}}`)
		return b.String()
	}
	small, large := []byte(object(n/2)), []byte(object(n))
	var got withObject
	half := allocated(func() { require.NoError(t, strictjson.Decode(small, &got)) })
	full := allocated(func() { require.NoError(t, strictjson.Decode(large, &got)) })
	assert.LessOrEqual(t, full, 3*half, "%d keys allocated %d bytes, %d keys %d", n, full, n/2, half)
	require.Len(t, got.Flags, n)
	assert.Equal(t, "k49999", got.Flags[n-1].Key)
	assert.Equal(t, "49999", got.Flags[n-1].Value.Text)

	for _, dup := range []int{3, 20, n - 1} {
		in := strings.TrimSuffix(string(large), `}}`) + fmt.Sprintf(`,"k%d":0}}`, dup)
		err := strictjson.Decode([]byte(in), &got)
		se := problemsOf(t, err)
		require.NotNil(t, se, "k%d repeated", dup)
		assert.Equal(t, []strictjson.Problem{{Path: fmt.Sprintf("flags[k%d]", dup), Message: "appears more than once"}}, se.Problems)
	}
}

// TestMaxValuesBoundsWhatIsKept checks Options.MaxValues: an input with no
// more keys and values than the bound reads as without it; one with more
// is refused with one problem at the first key or value past the bound,
// however they are nested, what was read keeps no more than the bound,
// and what follows is still checked.
func TestMaxValuesBoundsWhatIsKept(t *testing.T) {
	const bound = 6
	cases := []struct {
		name    string
		input   string
		refused bool
		path    string // of the problem, when refused
	}{
		{"at the bound", `{"flags":{"a":1,"b":[2,3]}}`, false, ""},
		{"array past the bound", `{"flags":{"a":[0,0,0,0,0,0,0,0,0]}}`, true, "flags[a][4]"},
		{"keys past the bound", `{"flags":{"a":1,"b":2,"c":3,"d":4,"e":5}}`, true, "flags[d]"},
		{"nested objects past the bound", `{"flags":{"a":{"x":{"y":{"z":[1,2,3]}}}}}`, true, "flags[a][x][y][z]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var bounded, free withObject
			err := strictjson.Options{MaxValues: bound}.Decode([]byte(tc.input), &bounded)
			require.NoError(t, strictjson.Decode([]byte(tc.input), &free), "the input itself is fine")
			if !tc.refused {
				require.NoError(t, err)
				assert.Equal(t, free, bounded)
				return
			}
			var se *strictjson.Error
			require.ErrorAs(t, err, &se)
			require.NotEmpty(t, se.Problems)
			assert.Equal(t, tc.path, se.Problems[0].Path)
			assert.Equal(t, fmt.Sprintf("too many values: at most %d are read", bound), se.Problems[0].Message)
			assert.LessOrEqual(t, countValues(bounded.Flags), bound)
		})
	}
	t.Run("a bad string past the bound is still refused", func(t *testing.T) {
		var v withObject
		err := strictjson.Options{MaxValues: bound}.Decode([]byte(`{"flags":{"a":[0,0,0,0,0,0,0,"\u0000",{"k":1,"k":2}]}}`), &v)
		var se *strictjson.Error
		require.ErrorAs(t, err, &se)
		var msgs []string
		for _, p := range se.Problems {
			msgs = append(msgs, p.Path+": "+p.Message)
		}
		assert.Len(t, msgs, 3, "the bound, the NUL and the duplicate key: %q", msgs)
	})
}

// countValues counts the keys and values held in o, at every depth.
func countValues(o strictjson.Object) int {
	n := 0
	var walk func(v strictjson.Value)
	walk = func(v strictjson.Value) {
		n++
		for _, e := range v.Elems {
			walk(e)
		}
		for _, m := range v.Members {
			n++
			walk(m.Value)
		}
	}
	for _, m := range o {
		n++
		walk(m.Value)
	}
	return n
}

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
