package execgate

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// updateGolden reports whether the test binary runs with -update. The
// flag is defined once for the package's tests; it is looked up here so
// this file does not depend on where.
func updateGolden() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

type logOptions struct {
	Depth   int8              `json:"depth" validate:"gte=0,lt=50" desc:"How far to follow merges."`
	Since   *time.Time        `json:"since,omitempty"`
	Labels  map[string]string `json:"labels,omitempty" validate:"max=5,dive,keys,max=20,endkeys,required"`
	Level   uint              `json:"level,omitempty" validate:"omitempty,oneof=1 2 3"`
	Ratio   float64           `json:"ratio,omitempty" validate:"omitempty,gt=0,lte=1"`
	Timeout time.Duration     `json:"timeout,omitempty" validate:"omitempty,min=1s,max=1m"`
	Ref     string            `json:"ref,omitempty" validate:"omitempty,regexp=^[a-z]{10x2C8}$"`
}

type gitLogArgs struct {
	MaxCount int         `json:"max_count" validate:"required,min=1,max=500" desc:"How many commits to show."`
	Format   string      `json:"format,omitempty" validate:"omitempty,oneof=oneline short medium" desc:"Output format."`
	Author   *string     `json:"author,omitempty" validate:"omitempty,max=100"`
	Paths    []string    `json:"paths,omitempty" validate:"max=10,dive,required,regexp=^[^-]"`
	Opts     *logOptions `json:"opts,omitempty"`
}

func buildGitLog(a gitLogArgs) Argv {
	args := []string{"log", "--max-count=" + strconv.Itoa(a.MaxCount)}
	if a.Format != "" {
		args = append(args, "--format="+a.Format)
	}
	if a.Author != nil {
		args = append(args, "--author="+*a.Author)
	}
	if a.Opts != nil && a.Opts.Ref != "" {
		args = append(args, a.Opts.Ref)
	}
	args = append(args, "--")
	return Argv{Args: append(args, a.Paths...)}
}

type commonArgs struct {
	Verbose bool `json:"verbose" desc:"Print more."`
}

type embeddingArgs struct {
	commonArgs
	Name string `json:"name" validate:"required,alphanum"`
}

type kindsInner struct {
	ID string `json:"id" validate:"required,uuid"`
}

type kindsArgs struct {
	B       bool                `json:"b"`
	I8      int8                `json:"i8"`
	I16     int16               `json:"i16" validate:"min=-5,max=5"`
	I32     int32               `json:"i32" validate:"len=7"`
	I64     int64               `json:"i64" validate:"gt=-1"`
	U8      uint8               `json:"u8"`
	U16     uint16              `json:"u16" validate:"lte=9"`
	U32     uint32              `json:"u32"`
	U64     uint64              `json:"u64"`
	F32     float32             `json:"f32" validate:"gte=0.5"`
	F64     float64             `json:"f64" validate:"lt=1e3"`
	Str     *string             `json:"str" validate:"required,gt=2,lt=9"`
	Exact   string              `json:"exact" validate:"len=4"`
	Mail    string              `json:"mail" validate:"omitempty,email"`
	Addr    netip.Addr          `json:"addr"`
	Raw     json.RawMessage     `json:"raw"`
	Bytes   []byte              `json:"bytes" validate:"max=16"`
	Pair    [2]string           `json:"pair"`
	Counts  map[string]int      `json:"counts" validate:"min=1"`
	Matrix  [][]string          `json:"matrix" validate:"max=2,dive,max=3,dive,min=1"`
	Items   []*kindsInner       `json:"items" validate:"dive"`
	Nested  kindsInner          `json:"nested"`
	When    time.Time           `json:"when"`
	Wait    time.Duration       `json:"wait"`
	Both    string              `json:"both" validate:"regexp=^a,regexp=z$"`
	Either  string              `json:"either" validate:"oneof=a b|len=3"`
	Numbers []int               `json:"numbers" validate:"unique,dive,oneof=1 2 3"`
	Quoted  string              `json:"quoted" validate:"oneof='a b' c"`
	Deep    map[string][]string `json:"deep" validate:"dive,dive,ipv4"`
}

func TestStructJSONSchemaGolden(t *testing.T) {
	tests := []struct {
		name   string
		schema ArgsSchema
	}{
		{"git_log", Struct(buildGitLog)},
		{"empty", Struct(func(struct{}) Argv { return Argv{} })},
		{"embedding", Struct(func(embeddingArgs) Argv { return Argv{} })},
		{"kinds", Struct(func(kindsArgs) Argv { return Argv{} })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := tt.schema.(schemaChecker)
			require.True(t, ok)
			require.NoError(t, c.check())
			got := tt.schema.JSONSchema()
			require.True(t, json.Valid(got))
			var compact bytes.Buffer
			require.NoError(t, json.Compact(&compact, got))
			assert.Equal(t, compact.String(), string(got), "the schema is compact")
			var indented bytes.Buffer
			require.NoError(t, json.Indent(&indented, got, "", "  "))
			indented.WriteByte('\n')
			path := filepath.Join("testdata", "schema", tt.name+".json")
			if updateGolden() {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, indented.Bytes(), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test -update to create the golden file")
			assert.Equal(t, string(want), indented.String(), "run go test -update if the change is intended")
		})
	}
}

func TestStructJSONSchemaIsDeterministic(t *testing.T) {
	first := Struct(func(kindsArgs) Argv { return Argv{} }).JSONSchema()
	for range 20 {
		assert.Equal(t, string(first), string(Struct(func(kindsArgs) Argv { return Argv{} }).JSONSchema()))
	}
}

func TestStructJSONSchemaShape(t *testing.T) {
	var s struct {
		Type                 string                     `json:"type"`
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties bool                       `json:"additionalProperties"`
	}
	s.AdditionalProperties = true
	require.NoError(t, json.Unmarshal(Struct(buildGitLog).JSONSchema(), &s))
	assert.Equal(t, "object", s.Type)
	assert.False(t, s.AdditionalProperties)
	assert.Equal(t, []string{"max_count"}, s.Required)
	assert.JSONEq(t, `{"type":"integer","description":"How many commits to show.","minimum":1,"maximum":500}`, string(s.Properties["max_count"]))
	assert.JSONEq(t, `{"type":"string","description":"Output format.","enum":["oneline","short","medium"]}`, string(s.Properties["format"]))
	assert.JSONEq(t, `{"type":"array","items":{"type":"string","pattern":"^[^-]","minLength":1},"maxItems":10}`, string(s.Properties["paths"]))
}

func TestStructParseAccepts(t *testing.T) {
	schema := Struct(buildGitLog)
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"minimal", `{"max_count":5}`, []string{"log", "--max-count=5", "--"}},
		{"all fields", `{"max_count":500,"format":"oneline","author":"ann","paths":["a.go","dir/b.go"],"opts":{"depth":3,"labels":{"team":"x"},"level":2,"ratio":0.5,"timeout":2000000000,"ref":"main","since":"2024-01-02T03:04:05Z"}}`,
			[]string{"log", "--max-count=500", "--format=oneline", "--author=ann", "main", "--", "a.go", "dir/b.go"}},
		{"white space", " \n{ \"max_count\" : 1 }\t", []string{"log", "--max-count=1", "--"}},
		{"null optional fields", `{"max_count":1,"author":null,"paths":null,"opts":null}`, []string{"log", "--max-count=1", "--"}},
		{"unicode", `{"max_count":1,"author":"Zoë \ud83d\ude00"}`, []string{"log", "--max-count=1", "--author=Zoë 😀", "--"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			argv, err := schema.Parse(json.RawMessage(tt.in))
			require.NoError(t, err)
			assert.Equal(t, tt.want, argv.Args)
		})
	}
}

func TestStructEmptyInputMeansEmptyObject(t *testing.T) {
	type opt struct {
		N *int `json:"n"`
	}
	calls := 0
	schema := Struct(func(o opt) Argv {
		calls++
		assert.Nil(t, o.N)
		return Argv{Args: []string{"ok"}}
	})
	for _, in := range []string{"", "  \n\t", "null", " null ", "{}", "{ }"} {
		argv, err := schema.Parse(json.RawMessage(in))
		require.NoError(t, err, "%q", in)
		assert.Equal(t, []string{"ok"}, argv.Args)
	}
	assert.Equal(t, 6, calls)
	_, err := schema.Parse(nil)
	require.NoError(t, err)

	// Required fields are still required.
	_, err = Struct(buildGitLog).Parse(nil)
	assertIssues(t, err, []Issue{{"max_count", "is required"}})
}

// assertIssues checks that err is a *ValidationError with exactly want.
func assertIssues(t *testing.T, err error, want []Issue) {
	t.Helper()
	var ve *ValidationError
	require.True(t, errors.As(err, &ve), "want *ValidationError, got %v", err)
	assert.Equal(t, want, ve.Issues)
}

func TestStructParseListsEveryFailingField(t *testing.T) {
	schema := Struct(buildGitLog)
	tests := []struct {
		name string
		in   string
		want []Issue
	}{
		{"validator only",
			`{"max_count":0,"format":"long","paths":["-rf","ok"],"opts":{"depth":60,"labels":{"a":""},"level":7,"ratio":2,"timeout":5,"ref":"ABC"}}`,
			[]Issue{
				{"format", "must be one of: oneline short medium"},
				{"max_count", "is required"},
				{"opts.depth", "must be less than 50"},
				{"opts.labels[a]", "is required"},
				{"opts.level", "must be one of: 1 2 3"},
				{"opts.ratio", "must be at most 1"},
				{"opts.ref", "must match the pattern ^[a-z]{1,8}$"},
				{"opts.timeout", "must be at least 1000000000 nanoseconds (1s)"},
				{"paths[0]", "must match the pattern ^[^-]"},
			}},
		{"decoding and validation together",
			`{"max_count":"5","Format":"x","zz":true,"paths":["ok",""],"opts":{"depth":1.5}}`,
			[]Issue{
				{"format", "must be spelled exactly format (field names are case-sensitive)"},
				{"max_count", "must be an integer, not a string"},
				{"opts.depth", "must be an integer, without a fraction or exponent"},
				{"paths[1]", "is required"},
				{"zz", "unknown field; allowed: max_count, format, author, paths, opts"},
			}},
		{"numeric order of indexes",
			`{"max_count":1,"paths":["a","b","c","d","e","f","g","h","i","-j"],"opts":{"labels":{"a":"","b":""}}}`,
			[]Issue{
				{"opts.labels[a]", "is required"},
				{"opts.labels[b]", "is required"},
				{"paths[9]", "must match the pattern ^[^-]"},
			}},
		{"fatal decoding problem stops before validation",
			`{"max_count":0} x`,
			[]Issue{{"", "input has data after the JSON object (at byte 16)"}}},
		{"top level not an object", `[1]`, []Issue{{"", "input must be a JSON object, not an array"}}},
		{"length bounds",
			`{"max_count":1,"author":"` + strings.Repeat("é", 101) + `","paths":["1","2","3","4","5","6","7","8","9","10","11"]}`,
			[]Issue{{"author", "must be at most 100 characters long"}, {"paths", "must have at most 10 items"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := schema.Parse(json.RawMessage(tt.in))
			assertIssues(t, err, tt.want)
		})
	}
}

func TestStructIssuesAreBounded(t *testing.T) {
	type many struct {
		Vals []string `json:"vals" validate:"dive,len=1"`
	}
	vals := make([]string, 100)
	for i := range vals {
		vals[i] = "xx"
	}
	in, err := json.Marshal(many{Vals: vals})
	require.NoError(t, err)
	_, err = Struct(func(many) Argv { return Argv{} }).Parse(in)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Len(t, ve.Issues, maxStructIssues+1)
	assert.Equal(t, "vals[0]", ve.Issues[0].Field)
	assert.Equal(t, "vals[31]", ve.Issues[maxStructIssues-1].Field)
	assert.Equal(t, Issue{Message: "and 68 more problems"}, ve.Issues[maxStructIssues])
}

func TestStructEmbeddedAndAnonymousTypes(t *testing.T) {
	schema := Struct(func(a embeddingArgs) Argv {
		return Argv{Args: []string{a.Name, strconv.FormatBool(a.Verbose)}}
	})
	argv, err := schema.Parse(json.RawMessage(`{"verbose":true,"name":"abc1"}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"abc1", "true"}, argv.Args)
	_, err = schema.Parse(json.RawMessage(`{"name":"a-b","commonArgs":{}}`))
	assertIssues(t, err, []Issue{
		{"commonArgs", "unknown field; allowed: verbose, name"},
		{"name", "must contain only ASCII letters and digits"},
	})

	type levelArgs struct {
		Level int `json:"level" validate:"max=3"`
	}
	type embedsValidated struct {
		levelArgs
		Tagged levelArgs `json:"tagged"`
	}
	_, err = Struct(func(embedsValidated) Argv { return Argv{} }).Parse(json.RawMessage(`{"level":4,"tagged":{"level":5}}`))
	assertIssues(t, err, []Issue{{"level", "must be at most 3"}, {"tagged.level", "must be at most 3"}})

	anon := Struct(func(a struct {
		N int `json:"n" validate:"max=3"`
	}) Argv {
		return Argv{Args: []string{strconv.Itoa(a.N)}}
	})
	_, err = anon.Parse(json.RawMessage(`{"n":4}`))
	assertIssues(t, err, []Issue{{"n", "must be at most 3"}})
}

func TestStructRegexpTag(t *testing.T) {
	type args struct {
		Sub   string `json:"sub" validate:"omitempty,regexp=b"`
		Alt   string `json:"alt" validate:"omitempty,regexp=^(red0x7Cgreen)$"`
		Count string `json:"count" validate:"omitempty,regexp=^x{20x2C3}$"`
		Eq    string `json:"eq" validate:"omitempty,regexp=^a=b$"`
	}
	schema := Struct(func(args) Argv { return Argv{} })
	require.NoError(t, schema.(schemaChecker).check())
	for _, in := range []string{`{"sub":"abc"}`, `{"alt":"red"}`, `{"alt":"green"}`, `{"count":"xx"}`, `{"count":"xxx"}`, `{"eq":"a=b"}`} {
		_, err := schema.Parse(json.RawMessage(in))
		assert.NoError(t, err, in)
	}
	for in, field := range map[string]string{
		`{"sub":"xyz"}`:    "sub",
		`{"alt":"blue"}`:   "alt",
		`{"alt":"redred"}`: "alt",
		`{"count":"x"}`:    "count",
		`{"count":"xxxx"}`: "count",
	} {
		_, err := schema.Parse(json.RawMessage(in))
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, in)
		assert.Equal(t, field, ve.Issues[0].Field)
		assert.True(t, strings.HasPrefix(ve.Issues[0].Message, "must match the pattern "), in)
	}
	assert.Contains(t, string(schema.JSONSchema()), `"pattern":"^(red|green)$"`)
	assert.Contains(t, string(schema.JSONSchema()), `"pattern":"^x{2,3}$"`)
}

func TestStructConfigErrors(t *testing.T) {
	type unknownTag struct {
		N int `json:"n" validate:"required,nosuchtag"`
	}
	type badMin struct {
		N int `json:"n" validate:"min=abc"`
	}
	type negativeLength struct {
		S string `json:"s" validate:"max=-1"`
	}
	type oneofFloat struct {
		F float64 `json:"f" validate:"oneof=1 2"`
	}
	type oneofBadInt struct {
		N int `json:"n" validate:"oneof=1 two"`
	}
	type regexpOnInt struct {
		N int `json:"n" validate:"regexp=^1$"`
	}
	type badPattern struct {
		S string `json:"s" validate:"regexp=a("`
	}
	type unescapedComma struct {
		S string `json:"s" validate:"regexp=^a{1,3}$"`
	}
	type hiddenBadTag struct {
		Inner *struct {
			List []struct {
				S string `json:"s" validate:"nosuchtag"`
			} `json:"list" validate:"dive"`
		} `json:"inner"`
	}
	type neverChecked struct {
		List []struct {
			S string `json:"s" validate:"required"`
		} `json:"list"`
	}
	type badParamBehindOmitempty struct {
		N int `json:"n" validate:"omitempty,ne=abc"`
	}
	type recursive struct {
		Next *recursive `json:"next"`
	}
	type chanField struct {
		C chan int `json:"c"`
	}
	type ignoredButValidated struct {
		S string `json:"-" validate:"required"`
	}
	type keysWithoutDive struct {
		M map[string]string `json:"m" validate:"keys,endkeys"`
	}
	type diveOnString struct {
		S string `json:"s" validate:"dive,required"`
	}
	type minOnBool struct {
		B bool `json:"b" validate:"min=1"`
	}
	type dupName struct {
		A string `json:"X"`
		X string
	}
	tests := []struct {
		name   string
		schema ArgsSchema
		want   string
	}{
		{"not a struct", Struct(func(string) Argv { return Argv{} }), "struct type"},
		{"pointer to struct", Struct(func(*gitLogArgs) Argv { return Argv{} }), "struct type"},
		{"decodes itself", Struct(func(time.Time) Argv { return Argv{} }), "decodes itself"},
		{"nil build", Struct[gitLogArgs](nil), "build function is nil"},
		{"unknown tag", Struct(func(unknownTag) Argv { return Argv{} }), "nosuchtag"},
		{"bad min", Struct(func(badMin) Argv { return Argv{} }), "needs an integer"},
		{"negative length", Struct(func(negativeLength) Argv { return Argv{} }), "non-negative"},
		{"oneof on float", Struct(func(oneofFloat) Argv { return Argv{} }), "does not apply"},
		{"oneof bad int", Struct(func(oneofBadInt) Argv { return Argv{} }), "decimal integer"},
		{"regexp on int", Struct(func(regexpOnInt) Argv { return Argv{} }), "only to strings"},
		{"bad pattern", Struct(func(badPattern) Argv { return Argv{} }), "missing closing )"},
		{"unescaped comma", Struct(func(unescapedComma) Argv { return Argv{} }), "validate tags"},
		{"bad tag in a nested type", Struct(func(hiddenBadTag) Argv { return Argv{} }), "nosuchtag"},
		{"bad parameter behind omitempty", Struct(func(badParamBehindOmitempty) Argv { return Argv{} }), "validate tags"},
		{"tags that validator never runs", Struct(func(neverChecked) Argv { return Argv{} }), "add dive"},
		{"recursive type", Struct(func(recursive) Argv { return Argv{} }), "recursive"},
		{"channel field", Struct(func(chanField) Argv { return Argv{} }), "not supported"},
		{"tags on an ignored field", Struct(func(ignoredButValidated) Argv { return Argv{} }), "never set from JSON"},
		{"keys without dive", Struct(func(keysWithoutDive) Argv { return Argv{} }), "right after dive"},
		{"dive on a string", Struct(func(diveOnString) Argv { return Argv{} }), "only to slices"},
		{"min on bool", Struct(func(minOnBool) Argv { return Argv{} }), "does not apply"},
		{"duplicate JSON name", Struct(func(dupName) Argv { return Argv{} }), "both have the JSON name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewAllowlist(CommandSpec{Name: "bad", Command: "/bin/echo", Args: tt.schema})
			var ce *ConfigError
			require.True(t, errors.As(err, &ce), "want *ConfigError, got %v", err)
			assert.Equal(t, "bad", ce.Spec)
			assert.Equal(t, "Args", ce.Field)
			assert.Contains(t, ce.Message, tt.want)
			assert.NotContains(t, ce.Message, "strictjson", "internal package names stay out of messages")

			// A misconfigured schema used anyway refuses, without panicking.
			_, perr := tt.schema.Parse(json.RawMessage(`{}`))
			var ve *ValidationError
			assert.ErrorAs(t, perr, &ve)
			assert.True(t, json.Valid(tt.schema.JSONSchema()))
		})
	}
}

func TestStructRecoversFromPanickingBuild(t *testing.T) {
	const canary = "SECRET-in-panic"
	schema := Struct(func(a struct {
		S string `json:"s"`
	}) Argv {
		panic(a.S)
	})
	_, err := schema.Parse(json.RawMessage(`{"s":"` + canary + `"}`))
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.NotContains(t, err.Error(), canary)
}

func TestStructRequiredSemantics(t *testing.T) {
	type args struct {
		Ptr   *int  `json:"ptr" validate:"required"`
		Val   int   `json:"val" validate:"required"`
		Flag  *bool `json:"flag" validate:"required"`
		Slice []int `json:"slice" validate:"required"`
	}
	schema := Struct(func(args) Argv { return Argv{} })
	_, err := schema.Parse(json.RawMessage(`{"ptr":0,"val":1,"flag":false,"slice":[]}`))
	assert.NoError(t, err, "a required pointer or slice needs only to be present")
	_, err = schema.Parse(json.RawMessage(`{"ptr":null,"val":0,"slice":null}`))
	assertIssues(t, err, []Issue{{"flag", "is required"}, {"ptr", "is required"}, {"slice", "is required"}, {"val", "is required"}})
}

func TestStructParseDoesNotRetainInput(t *testing.T) {
	schema := Struct(buildGitLog)
	in := []byte(`{"max_count":1,"paths":["abc"],"author":"def"}`)
	argv, err := schema.Parse(in)
	require.NoError(t, err)
	for i := range in {
		in[i] = 'X'
	}
	assert.Equal(t, []string{"log", "--max-count=1", "--author=def", "--", "abc"}, argv.Args)
}

func TestStructConcurrentUse(t *testing.T) {
	schema := Struct(buildGitLog)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				in := fmt.Sprintf(`{"max_count":%d,"opts":{"ref":"abc"}}`, 1+(i*50+j)%500)
				argv, err := schema.Parse(json.RawMessage(in))
				if assert.NoError(t, err) {
					assert.Equal(t, "--max-count="+strconv.Itoa(1+(i*50+j)%500), argv.Args[1])
				}
				_, err = schema.Parse(json.RawMessage(`{"max_count":0}`))
				assert.Error(t, err)
				_ = schema.JSONSchema()
			}
		}()
	}
	wg.Wait()
}

func TestIssuePath(t *testing.T) {
	named := reflect.TypeFor[gitLogArgs]()
	for ns, want := range map[string]string{
		"gitLogArgs.max_count":            "max_count",
		"gitLogArgs":                      "",
		"gitLogArgs.paths[3]":             "paths[3]",
		"gitLogArgs.opts.labels[team]":    "opts.labels[team]",
		"gitLogArgs.opts.labels[a b]":     "opts.labels[?]",
		"gitLogArgs.opts.labels[a]b].x":   "opts.labels[?]",
		"gitLogArgs.opts.labels[a]SECRET": "opts.labels[?]",
		"gitLogArgs.m[k][2].x":            "m[k][2].x",
		"gitLogArgs.m[unterminated":       "m[?]",
	} {
		assert.Equal(t, want, issuePath(ns, named), ns)
	}
}

func TestPathLess(t *testing.T) {
	ordered := []string{"", "a", "a.b", "a[2]", "a[10]", "a[10].x", "ab", "b[0]", "b[01]x", "b[9]"}
	for i := range ordered {
		for j := range ordered {
			assert.Equal(t, i < j, pathLess(ordered[i], ordered[j]), "%q < %q", ordered[i], ordered[j])
		}
	}
}

func TestOneOfValues(t *testing.T) {
	assert.Equal(t, []string{"a", "b c", "d"}, oneOfValues("a 'b c'  d"))
	assert.Equal(t, []string{"ab", "c"}, oneOfValues("a'b c'"))
	assert.Equal(t, []string{"x"}, oneOfValues("'x"))
	assert.Empty(t, oneOfValues("  "))
}

// FuzzStructParse checks that Parse never panics and that whatever it
// accepts is valid JSON.
func FuzzStructParse(f *testing.F) {
	for _, seed := range []string{
		`{"max_count":5}`, `{"max_count":5,"opts":{"labels":{"a":"b"},"since":"2024-01-02T03:04:05Z"}}`,
		`{"max_count":5,"paths":["a",""]}`, `null`, ``, `{"n":1,"n":2}`, `[[[`, `{"max_count":1e400}`,
	} {
		f.Add([]byte(seed))
	}
	schema := Struct(buildGitLog)
	f.Fuzz(func(t *testing.T, in []byte) {
		argv, err := schema.Parse(in)
		if err != nil {
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.NotEmpty(t, ve.Issues)
			return
		}
		require.NotEmpty(t, argv.Args)
		if len(bytes.TrimSpace(in)) > 0 {
			require.True(t, json.Valid(in))
		}
	})
}
