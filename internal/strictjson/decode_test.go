package strictjson_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/internal/strictjson"
)

type inner struct {
	Depth int      `json:"depth"`
	Tags  []string `json:"tags,omitempty"`
}

type Common struct {
	Trace bool `json:"trace"`
}

type target struct {
	Common
	N      int               `json:"n"`
	Name   string            `json:"name"`
	Tiny   int8              `json:"tiny"`
	U      uint8             `json:"u"`
	F      float32           `json:"f"`
	B      bool              `json:"b"`
	Paths  []string          `json:"paths"`
	Opts   *inner            `json:"opts"`
	Nested inner             `json:"nested"`
	Labels map[string]string `json:"labels"`
	When   time.Time         `json:"when"`
	Raw    []byte            `json:"raw"`
	Pair   [2]int            `json:"pair"`
	Any    json.RawMessage   `json:"any"`
	Go     string
	Skip   string `json:"-"`
	hidden string
}

type problem = strictjson.Problem

func TestDecodeAccepts(t *testing.T) {
	when := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	tests := []struct {
		name string
		in   string
		want target
	}{
		{"empty object", `{}`, target{}},
		{"white space around", " \t\r\n{ } \n", target{}},
		{"scalars", `{"n":-42,"name":"x\u00e9\ud83d\ude00","tiny":-128,"u":255,"f":1.5,"b":true}`,
			target{N: -42, Name: "xé😀", Tiny: -128, U: 255, F: 1.5, B: true}},
		{"negative zero and exponent float", `{"n":-0,"f":1e2}`, target{F: 100}},
		{"slices and pointers", `{"paths":["a","b"],"opts":{"depth":3,"tags":[]}}`,
			target{Paths: []string{"a", "b"}, Opts: &inner{Depth: 3, Tags: []string{}}}},
		{"nulls for pointer slice map", `{"paths":null,"opts":null,"labels":null,"raw":null}`, target{}},
		{"promoted field", `{"trace":true}`, target{Common: Common{Trace: true}}},
		{"map", `{"labels":{"team":"x","":"y"}}`, target{Labels: map[string]string{"team": "x", "": "y"}}},
		{"time", `{"when":"2024-05-06T07:08:09Z"}`, target{When: when}},
		{"bytes", `{"raw":"aGk="}`, target{Raw: []byte("hi")}},
		{"array", `{"pair":[1,2]}`, target{Pair: [2]int{1, 2}}},
		{"raw message", `{"any":{"a":[1,{"b":null}]}}`, target{Any: json.RawMessage(`{"a":[1,{"b":null}]}`)}},
		{"go name without tag", `{"Go":"g"}`, target{Go: "g"}},
		{"escaped key", `{"\u006e":1}`, target{N: 1}},
		{"escapes", `{"name":"\"\\\/\b\f\n\r\t"}`, target{Name: "\"\\/\b\f\n\r\t"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := target{Skip: "kept?", hidden: "kept?"}
			err := strictjson.Decode([]byte(tt.in), &got)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, "Decode zeroes the target first")
		})
	}
}

func TestDecodeRefuses(t *testing.T) {
	deep := strings.Repeat("[", 100000)
	manyKeys := func(n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"k`)
			b.WriteString(strings.Repeat("x", i%7))
			b.WriteString(`":1`)
		}
		b.WriteString("}")
		return b.String()
	}
	tests := []struct {
		name    string
		in      string
		want    []problem // Path and a substring of Message
		partial bool
	}{
		{"empty input", ``, []problem{{"", "empty"}}, false},
		{"top-level array", `[]`, []problem{{"", "must be a JSON object, not an array"}}, false},
		{"top-level string", `"x"`, []problem{{"", "not a string"}}, false},
		{"top-level number", `12`, []problem{{"", "not a number"}}, false},
		{"top-level null", `null`, []problem{{"", "not null"}}, false},
		{"garbage", `x`, []problem{{"", "invalid JSON"}}, false},
		{"trailing object", `{"n":1} {"n":2}`, []problem{{"", "data after the JSON object"}}, false},
		{"trailing garbage", `{"n":1}x`, []problem{{"", "data after the JSON object"}}, false},
		{"unterminated", `{"n":1`, []problem{{"", "invalid JSON"}}, false},
		{"trailing comma", `{"n":1,}`, []problem{{"", "expected a string key"}}, false},
		{"unknown field", `{"nope":1}`, []problem{{"nope", "unknown field; allowed: trace, n, name"}}, true},
		{"unknown field with odd name", `{"a b\"c":1}`, []problem{{"", "unknown field (name not shown)"}}, true},
		{"case-folded key", `{"N":1}`, []problem{{"n", "must be spelled exactly n"}}, true},
		{"unicode-folded key", `{"ſkip":1,"nAME":"x"}`, []problem{{"", "unknown field"}, {"name", "spelled exactly"}}, true},
		{"duplicate key", `{"n":1,"n":2}`, []problem{{"n", "appears more than once"}}, true},
		{"duplicate via escape", `{"n":1,"\u006e":2}`, []problem{{"n", "appears more than once"}}, true},
		{"nested duplicate", `{"opts":{"depth":1,"depth":2}}`, []problem{{"opts.depth", "more than once"}}, true},
		{"duplicate map key", `{"labels":{"a":"x","a":"y"}}`, []problem{{"labels[a]", "more than once"}}, true},
		{"duplicate inside raw", `{"any":{"a":1,"a":2}}`, []problem{{"any[a]", "more than once"}}, true},
		{"NUL escape in value", `{"name":"a\u0000b"}`, []problem{{"name", "NUL"}}, true},
		{"NUL escape in key", `{"\u0000":1}`, []problem{{"", "key that contains a NUL"}}, true},
		{"raw NUL", "{\"name\":\"a\x00\"}", []problem{{"name", "NUL"}}, false},
		{"control character", "{\"name\":\"a\n\"}", []problem{{"name", "control character"}}, false},
		{"invalid UTF-8 in value", "{\"name\":\"a\xffb\"}", []problem{{"name", "valid UTF-8"}}, true},
		{"invalid UTF-8 in key", "{\"\xc3\x28\":1}", []problem{{"", "not valid UTF-8"}}, true},
		{"UTF-8 surrogate bytes", "{\"name\":\"\xed\xa0\x80\"}", []problem{{"name", "valid UTF-8"}}, true},
		{"lone surrogate escape", `{"name":"\ud800x"}`, []problem{{"name", "surrogate"}}, true},
		{"NUL in raw message", `{"any":["\u0000"]}`, []problem{{"any[0]", "NUL"}}, true},
		{"string for int", `{"n":"1"}`, []problem{{"n", "must be an integer, not a string"}}, true},
		{"float for int", `{"n":1.5}`, []problem{{"n", "without a fraction"}}, true},
		{"exponent for int", `{"n":1e2}`, []problem{{"n", "without a fraction"}}, true},
		{"overflow int8", `{"tiny":128}`, []problem{{"tiny", "between -128 and 127"}}, true},
		{"negative uint", `{"u":-1}`, []problem{{"u", "between 0 and 255"}}, true},
		{"overflow int", `{"n":99999999999999999999}`, []problem{{"n", "between"}}, true},
		{"overflow float32", `{"f":1e39}`, []problem{{"f", "out of range"}}, true},
		{"array for string", `{"name":["x"]}`, []problem{{"name", "must be a string, not an array"}}, true},
		{"object for string", `{"name":{}}`, []problem{{"name", "not an object"}}, true},
		{"null for string", `{"name":null}`, []problem{{"name", "not null"}}, true},
		{"number for bool", `{"b":1}`, []problem{{"b", "true or false"}}, true},
		{"string for struct", `{"nested":"x"}`, []problem{{"nested", "must be an object"}}, true},
		{"object for slice", `{"paths":{}}`, []problem{{"paths", "must be an array"}}, true},
		{"bad element", `{"paths":["a","b",3]}`, []problem{{"paths[2]", "must be a string"}}, true},
		{"bad nested", `{"opts":{"depth":"x","zz":1}}`, []problem{{"opts.depth", "integer"}, {"opts.zz", "unknown field; allowed: depth, tags"}}, true},
		{"bad map value", `{"labels":{"team":1}}`, []problem{{"labels[team]", "must be a string"}}, true},
		{"map key hidden", `{"labels":{"a b":1}}`, []problem{{"labels[?]", "must be a string"}}, true},
		{"bad time", `{"when":"yesterday"}`, []problem{{"when", "RFC 3339"}}, true},
		{"bad base64", `{"raw":"!!"}`, []problem{{"raw", "base64"}}, true},
		{"array of numbers for bytes", `{"raw":[1]}`, []problem{{"raw", "base64"}}, true},
		{"short array", `{"pair":[1]}`, []problem{{"pair", "exactly 2 items"}}, true},
		{"long array", `{"pair":[1,2,3]}`, []problem{{"pair", "exactly 2 items"}}, true},
		{"ignored field by its Go name", `{"Skip":"x"}`, []problem{{"Skip", "unknown field"}}, true},
		{"unexported field", `{"hidden":"x"}`, []problem{{"hidden", "unknown field"}}, true},
		{"bad literal", `{"b":tru}`, []problem{{"b", "invalid JSON"}}, false},
		{"leading zero", `{"n":01}`, []problem{{"", "expected ',' or '}'"}}, false},
		{"bare minus", `{"n":-}`, []problem{{"n", "invalid number"}}, false},
		{"deep nesting bomb", deep, []problem{{"", "not an array"}}, false},
		{"deep nesting in a field", `{"any":` + deep, []problem{{"any" + strings.Repeat("[0]", 63), "deeper than 64"}}, false},
		{"deep nesting in unknown field", `{"zz":` + deep, []problem{{"zz", "unknown field"}, {"", "deeper than 64"}}, false},
		{"oversized", `{"name":"` + strings.Repeat("a", strictjson.DefaultMaxSize) + `"}`, []problem{{"", "larger than 1 MiB"}}, false},
	}
	// Too many problems stop reading, with a final problem saying so.
	tests = append(tests, struct {
		name    string
		in      string
		want    []problem
		partial bool
	}{"huge number of keys", manyKeys(100000), nil, false})

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got target
			err := strictjson.Decode([]byte(tt.in), &got)
			var se *strictjson.Error
			require.True(t, errors.As(err, &se), "want *strictjson.Error, got %v", err)
			if tt.want == nil {
				// Only the huge-keys case: capped problems.
				require.Len(t, se.Problems, strictjson.DefaultMaxProblems+1)
				assert.Contains(t, se.Problems[len(se.Problems)-1].Message, "too many problems")
				assert.False(t, se.Partial)
				return
			}
			require.Len(t, se.Problems, len(tt.want), "problems: %+v", se.Problems)
			for i, w := range tt.want {
				assert.Equal(t, w.Path, se.Problems[i].Path, "problem %d", i)
				assert.Contains(t, se.Problems[i].Message, w.Message, "problem %d", i)
			}
			assert.Equal(t, tt.partial, se.Partial)
			if !tt.partial {
				assert.Equal(t, target{}, got, "the target stays zero after a fatal problem")
			}
		})
	}
}

func TestDecodeNeverRepeatsValues(t *testing.T) {
	const canary = "SECRETcanary42"
	inputs := []string{
		`{"n":"` + canary + `"}`,
		`{"n":1` + canary + `}`,
		`{"name":["` + canary + `"]}`,
		`{"when":"` + canary + `"}`,
		`{"raw":"` + canary + `!"}`,
		`{"name":"` + canary + `\u0000"}`,
		"{\"name\":\"" + canary + "\xff\"}",
		`{"labels":{"` + canary + ` x":1}}`,
		`{"opts":{"depth":1},"n":1}` + canary,
		`{"` + canary + ` key":1}`,
		`"` + canary + `"`,
		`{"name":"` + canary + `` + "\n" + `"}`,
	}
	for _, in := range inputs {
		var got target
		err := strictjson.Decode([]byte(in), &got)
		require.Error(t, err, in)
		assert.NotContains(t, err.Error(), canary, in)
	}
}

func TestDecodePartial(t *testing.T) {
	var got target
	err := strictjson.Decode([]byte(`{"n":"x","name":"ok","zz":1,"opts":{"depth":2}}`), &got)
	var se *strictjson.Error
	require.ErrorAs(t, err, &se)
	assert.True(t, se.Partial)
	assert.Equal(t, "ok", got.Name, "clean values are decoded for further reporting")
	assert.Equal(t, 0, got.N)
	require.NotNil(t, got.Opts)
	assert.Equal(t, 2, got.Opts.Depth)
}

func TestDecodeOptions(t *testing.T) {
	var got target
	err := strictjson.Options{MaxDepth: 2}.Decode([]byte(`{"opts":{"tags":[]}}`), &got)
	var se *strictjson.Error
	require.ErrorAs(t, err, &se)
	assert.Contains(t, se.Problems[0].Message, "deeper than 2")

	err = strictjson.Options{MaxSize: 10}.Decode([]byte(`{"name":"abcdefgh"}`), &got)
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "input is larger than 10 bytes", se.Problems[0].Message)

	err = strictjson.Options{MaxProblems: 1}.Decode([]byte(`{"a":1,"b":2}`), &got)
	require.ErrorAs(t, err, &se)
	require.Len(t, se.Problems, 2)
	assert.Contains(t, se.Problems[1].Message, "too many problems")
}

// approval mirrors the shape of execgate's Approval envelope, the other
// intended caller of Decode.
type approval struct {
	ID        string    `json:"id"`
	Args      []string  `json:"args"`
	CreatedAt time.Time `json:"createdAt"`
}

func TestDecodeEnvelope(t *testing.T) {
	var ap approval
	require.NoError(t, strictjson.Decode([]byte(`{"id":"x","args":["a"],"createdAt":"2024-01-02T03:04:05Z"}`), &ap))
	assert.Equal(t, approval{ID: "x", Args: []string{"a"}, CreatedAt: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}, ap)

	err := strictjson.Decode([]byte(`{"id":"x","ID":"y"}`), &ap)
	var se *strictjson.Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, []problem{{Path: "id", Message: "must be spelled exactly id (field names are case-sensitive)"}}, se.Problems)
}

func TestDecodeTargetErrors(t *testing.T) {
	var s string
	var nilPtr *target
	var ch struct {
		C chan int `json:"c"`
	}
	var tm time.Time
	for name, v := range map[string]any{
		"nil":            nil,
		"non-pointer":    target{},
		"pointer to int": &s,
		"nil pointer":    nilPtr,
		"unsupported":    &ch,
		"opaque":         &tm,
	} {
		err := strictjson.Decode([]byte(`{}`), v)
		require.Error(t, err, name)
		var se *strictjson.Error
		assert.False(t, errors.As(err, &se), "%s: a target mistake is not an input problem", name)
	}
}

func TestErrorMessage(t *testing.T) {
	e := &strictjson.Error{Problems: []problem{{"a", "is bad"}, {"", "input is bad"}}}
	assert.Equal(t, "strictjson: invalid input: a: is bad; input is bad", e.Error())
}

func TestPathKey(t *testing.T) {
	for key, want := range map[string]string{
		"team":                     "team",
		"app.kubernetes.io/name":   "app.kubernetes.io/name",
		"a@b:c_d-e":                "a@b:c_d-e",
		"":                         "?",
		"a b":                      "?",
		"a]b":                      "?",
		"é":                        "?",
		strings.Repeat("a", 64):    strings.Repeat("a", 64),
		strings.Repeat("a", 65):    "?",
		"quote\"":                  "?",
		"\x00":                     "?",
		"ends-with-bracket[":       "?",
		"x.y.z/1:2@3_4-5.ABC.0123": "x.y.z/1:2@3_4-5.ABC.0123",
	} {
		assert.Equal(t, want, strictjson.PathKey(key), "key %q", key)
	}
}

func TestDecodeIsSafeForConcurrentUse(t *testing.T) {
	done := make(chan struct{})
	for range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 50 {
				var got target
				_ = strictjson.Decode([]byte(`{"n":1,"opts":{"depth":2},"labels":{"a":"b"}}`), &got)
				_, _ = strictjson.Fields(reflect.TypeFor[inner]())
			}
		}()
	}
	for range 8 {
		<-done
	}
}

// TestDecodeRefusalsAreLinear checks that refusing the costly inputs of
// TestDecodeProblems is linear work: twice the input allocates at most
// three times as much.
func TestDecodeRefusalsAreLinear(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	tests := []struct {
		name  string
		input func(n int) string
	}{
		{"many unknown keys, each a problem", func(n int) string {
			return `{` + strings.TrimSuffix(strings.Repeat(`"zz":1,`, n), ",") + `}`
		}},
		{"deep nesting in a field", func(n int) string { return `{"any":` + deep(n) + `}` }},
		{"a long string for a number", func(n int) string { return `{"n":"` + strings.Repeat("a", n) + `"}` }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			small, large := []byte(tt.input(50000)), []byte(tt.input(100000))
			var got target
			half := allocated(func() { require.Error(t, strictjson.Decode(small, &got)) })
			full := allocated(func() { require.Error(t, strictjson.Decode(large, &got)) })
			assert.LessOrEqual(t, full, 3*half+64<<10, "twice the input allocated %d bytes against %d", full, half)
		})
	}
}

// TestDecodeMaxElements reads inputs whose slices and maps hold, in all,
// as many elements and members as Options.MaxElements allows, and one
// more: the first is read, the second refused with reading stopped, the
// count taken across every slice, Go array and map of the target, nested
// ones included.
func TestDecodeMaxElements(t *testing.T) {
	type nested struct {
		Lists  [][]string        `json:"lists"`
		Map    map[string]string `json:"map"`
		Paths  []string          `json:"paths"`
		Arrays [][2]string       `json:"arrays"`
	}
	opts := strictjson.Options{MaxElements: 6}
	for _, c := range []struct {
		why, input string
		ok         bool
	}{
		{"six in one slice", `{"paths":["a","b","c","d","e","f"]}`, true},
		{"seven in one slice", `{"paths":["a","b","c","d","e","f","g"]}`, false},
		{"six across a slice and a map", `{"paths":["a","b","c"],"map":{"x":"1","y":"2","z":"3"}}`, true},
		{"seven across a slice and a map", `{"paths":["a","b","c"],"map":{"x":"1","y":"2","z":"3","w":"4"}}`, false},
		{"an outer list's items count with their own", `{"lists":[["a","b"],["c","d"]]}`, true},
		{"and past the bound are refused", `{"lists":[["a","b"],["c","d","e"]]}`, false},
		{"a Go array's items count too", `{"arrays":[["a","b"],["c","d"]]}`, true},
		{"and past the bound are refused too", `{"arrays":[["a","b"],["c","d"],["e","f"]]}`, false},
	} {
		var v nested
		err := opts.Decode([]byte(c.input), &v)
		if c.ok {
			assert.NoError(t, err, c.why)
			continue
		}
		var se *strictjson.Error
		require.ErrorAs(t, err, &se, c.why)
		assert.False(t, se.Partial, "%s: reading stops", c.why)
		assert.Contains(t, se.Error(), "at most 6 are read", c.why)
	}
	var v nested
	assert.NoError(t, strictjson.Options{}.Decode([]byte(`{"paths":["a","b","c","d","e","f","g"]}`), &v), "no bound by default")
}
