package execgate_test

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

type requiredInner struct {
	ID string `json:"id" validate:"required"`
}

type optionalInner struct {
	Note string `json:"note" validate:"max=10"`
}

// requiredCases has one field per validator tag the schema's required
// list is tested on. None depends on another field, so each field is
// refused when it alone is left out exactly when it is required.
type requiredCases struct {
	Required     string            `json:"required" validate:"required"`
	StrMin1      string            `json:"str_min1" validate:"min=1"`
	StrMin0      string            `json:"str_min0" validate:"min=0"`
	StrMax       string            `json:"str_max" validate:"max=5"`
	StrLen       string            `json:"str_len" validate:"len=2"`
	StrLen0      string            `json:"str_len0" validate:"len=0"`
	StrGt0       string            `json:"str_gt0" validate:"gt=0"`
	StrGte1      string            `json:"str_gte1" validate:"gte=1"`
	StrLt        string            `json:"str_lt" validate:"lt=3"`
	OmitMin      string            `json:"omit_min" validate:"omitempty,min=2"`
	OneOf        string            `json:"one_of" validate:"oneof=a b"`
	RegexpPlus   string            `json:"regexp_plus" validate:"regexp=^[a-z]+$"`
	RegexpStar   string            `json:"regexp_star" validate:"regexp=^[a-z]*$"`
	Email        string            `json:"email" validate:"email"`
	OmitEmail    string            `json:"omit_email" validate:"omitempty,email"`
	Either       string            `json:"either" validate:"len=2|len=3"`
	EmptyOr      string            `json:"empty_or" validate:"len=0|min=3"`
	WithMin      string            `json:"with_min" validate:"required_with=Plain,min=1"`
	Plain        string            `json:"plain"`
	SliceMin     []string          `json:"slice_min" validate:"min=1"`
	SliceMax     []string          `json:"slice_max" validate:"max=2"`
	SliceReq     []string          `json:"slice_req" validate:"required"`
	SliceDive    []string          `json:"slice_dive" validate:"dive,min=1"`
	SliceMinDive []string          `json:"slice_min_dive" validate:"min=1,dive,min=1"`
	MapMin       map[string]int    `json:"map_min" validate:"min=1"`
	MapGt        map[string]int    `json:"map_gt" validate:"gt=0"`
	MapMax       map[string]int    `json:"map_max" validate:"max=2"`
	IntMin       int               `json:"int_min" validate:"min=1"`
	IntRange     int               `json:"int_range" validate:"min=-5,max=5"`
	IntGt        int               `json:"int_gt" validate:"gt=0"`
	IntGtNeg     int               `json:"int_gt_neg" validate:"gt=-1"`
	IntLt        int               `json:"int_lt" validate:"lt=0"`
	IntOneOf     int               `json:"int_one_of" validate:"oneof=1 2"`
	IntOneOf0    int               `json:"int_one_of0" validate:"oneof=0 1"`
	UintReq      uint              `json:"uint_req" validate:"required"`
	FloatGte     float64           `json:"float_gte" validate:"gte=0.5"`
	Bool         bool              `json:"bool" validate:"required"`
	PtrMin       *string           `json:"ptr_min" validate:"min=1"`
	PtrOmit      *string           `json:"ptr_omit" validate:"omitempty,min=1"`
	PtrReq       *int              `json:"ptr_req" validate:"required"`
	PtrNone      *int              `json:"ptr_none"`
	Nested       requiredInner     `json:"nested"`
	NestedOpt    optionalInner     `json:"nested_opt"`
	NestedPtr    *requiredInner    `json:"nested_ptr"`
	NestedPtrReq *requiredInner    `json:"nested_ptr_req" validate:"required"`
	When         time.Time         `json:"when" validate:"required"`
	WhenNone     time.Time         `json:"when_none"`
	Labels       map[string]string `json:"labels" validate:"dive,keys,min=1,endkeys,required"`
	Skipped      string            `json:"skipped" validate:"-"`
}

// requiredTable says, for each field of requiredCases, whether the schema
// lists it as required, and gives a value that passes.
var requiredTable = []struct {
	field    string
	required bool
	valid    string
}{
	{"required", true, `"x"`},
	{"str_min1", true, `"x"`},
	{"str_min0", false, `"x"`},
	{"str_max", false, `"x"`},
	{"str_len", true, `"ab"`},
	{"str_len0", false, `""`},
	{"str_gt0", true, `"x"`},
	{"str_gte1", true, `"x"`},
	{"str_lt", false, `"x"`},
	{"omit_min", false, `"ab"`},
	{"one_of", true, `"a"`},
	{"regexp_plus", true, `"ab"`},
	{"regexp_star", false, `"ab"`},
	{"email", true, `"a@example.com"`},
	{"omit_email", false, `"a@example.com"`},
	{"either", true, `"ab"`},
	{"empty_or", false, `"abc"`},
	{"with_min", true, `"x"`},
	{"plain", false, `"x"`},
	{"slice_min", true, `["x"]`},
	{"slice_max", false, `["x"]`},
	{"slice_req", true, `[]`},
	{"slice_dive", false, `["x"]`},
	{"slice_min_dive", true, `["x"]`},
	{"map_min", true, `{"k": 1}`},
	{"map_gt", true, `{"k": 1}`},
	{"map_max", false, `{"k": 1}`},
	{"int_min", true, `1`},
	{"int_range", false, `1`},
	{"int_gt", true, `1`},
	{"int_gt_neg", false, `1`},
	{"int_lt", true, `-1`},
	{"int_one_of", true, `1`},
	{"int_one_of0", false, `1`},
	{"uint_req", true, `1`},
	{"float_gte", true, `0.5`},
	{"bool", true, `true`},
	{"ptr_min", true, `"x"`},
	{"ptr_omit", false, `"x"`},
	{"ptr_req", true, `0`},
	{"ptr_none", false, `0`},
	{"nested", true, `{"id": "x"}`},
	{"nested_opt", false, `{"note": "x"}`},
	{"nested_ptr", false, `{"id": "x"}`},
	{"nested_ptr_req", true, `{"id": "x"}`},
	{"when", true, `"2030-01-02T15:04:05Z"`},
	{"when_none", false, `"2030-01-02T15:04:05Z"`},
	{"labels", false, `{"k": "v"}`},
	{"skipped", false, `"x"`},
}

// schemaRequired returns the required list of the top level of schema.
func schemaRequired(t *testing.T, schema json.RawMessage) []string {
	t.Helper()
	var s struct {
		Required []string `json:"required"`
	}
	require.NoError(t, json.Unmarshal(schema, &s))
	return s.Required
}

// TestStructSchema_RequiredFollowsValidation checks, for each validator
// tag, that the schema lists a field as required exactly when Parse
// refuses an input that leaves that field alone out, and that {} is
// refused with one issue for each required field.
func TestStructSchema_RequiredFollowsValidation(t *testing.T) {
	schema := execgate.Struct(func(requiredCases) execgate.Argv { return execgate.Argv{} })
	_, err := execgate.NewAllowlist(execgate.CommandSpec{Name: "probe", Command: "/bin/true", Args: schema})
	require.NoError(t, err)
	listed := make(map[string]bool)
	for _, f := range schemaRequired(t, schema.JSONSchema()) {
		listed[f] = true
	}
	valid := make(map[string]json.RawMessage, len(requiredTable))
	for _, tc := range requiredTable {
		valid[tc.field] = json.RawMessage(tc.valid)
	}
	all, err := json.Marshal(valid)
	require.NoError(t, err)
	_, err = schema.Parse(all)
	require.NoError(t, err, "every field with its valid value passes")

	var want []string
	for _, tc := range requiredTable {
		t.Run(tc.field, func(t *testing.T) {
			assert.Equal(t, tc.required, listed[tc.field], "listed as required")
			rest := make(map[string]json.RawMessage, len(valid))
			for k, v := range valid {
				if k != tc.field {
					rest[k] = v
				}
			}
			input, err := json.Marshal(rest)
			require.NoError(t, err)
			_, err = schema.Parse(input)
			assert.Equal(t, listed[tc.field], err != nil, "left out, it is refused iff the schema lists it: %v", err)
		})
		if tc.required {
			want = append(want, tc.field)
		}
	}
	assert.Len(t, listed, len(want), "the schema lists only fields of the table")

	_, err = schema.Parse(json.RawMessage(`{}`))
	var ve *execgate.ValidationError
	require.True(t, errors.As(err, &ve), "{} is refused: %v", err)
	var refused []string
	for _, is := range ve.Issues {
		top, _, _ := strings.Cut(is.Field, ".")
		refused = append(refused, top)
	}
	sort.Strings(refused)
	sort.Strings(want)
	assert.Equal(t, want, refused, "{} is refused on exactly the required fields")
}

type withArgs struct {
	Other string `json:"other"`
	With  string `json:"with" validate:"required_with=Other"`
}

type withoutArgs struct {
	Other   string `json:"other"`
	Without string `json:"without" validate:"required_without=Other"`
}

type eqFieldArgs struct {
	Other string `json:"other"`
	Eq    string `json:"eq" validate:"eqfield=Other"`
}

// TestStructSchema_ConditionalTagsAreNotRequired checks that a field
// required only depending on another field is not listed as required:
// some input that leaves it out passes, and some other is refused.
func TestStructSchema_ConditionalTagsAreNotRequired(t *testing.T) {
	for _, tc := range []struct {
		name            string
		schema          execgate.ArgsSchema
		passes, refused string
	}{
		{"required_with", execgate.Struct(func(withArgs) execgate.Argv { return execgate.Argv{} }), `{}`, `{"other": "x"}`},
		{"required_without", execgate.Struct(func(withoutArgs) execgate.Argv { return execgate.Argv{} }), `{"other": "x"}`, `{}`},
		{"eqfield", execgate.Struct(func(eqFieldArgs) execgate.Argv { return execgate.Argv{} }), `{}`, `{"other": "x"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Empty(t, schemaRequired(t, tc.schema.JSONSchema()))
			_, err := tc.schema.Parse(json.RawMessage(tc.passes))
			assert.NoError(t, err)
			_, err = tc.schema.Parse(json.RawMessage(tc.refused))
			assert.Error(t, err)
		})
	}
}
