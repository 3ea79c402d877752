package execgate

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jqValuesAllowlist declares jq's --arg NAME VALUE, --rawfile NAME FILE
// (given up to twice) and --indent N, bound to root.
func jqValuesAllowlist(t *testing.T, root string) *Allowlist {
	t.Helper()
	zero, seven := int64(0), int64(7)
	a, err := NewAllowlist(CommandSpec{
		Name: "jq.run", Command: "/bin/echo", Dir: root,
		Args: Flags(FlagSpec{Flags: []Flag{
			{Name: "arg", Values: []FlagValue{
				{Name: "name", Value: ValuePattern, Pattern: `^[A-Za-z_][A-Za-z0-9_]{0,63}$`},
				{Name: "value", Value: ValueString},
			}},
			{Name: "rawfile", Repeat: 2, Values: []FlagValue{
				{Name: "name", Value: ValuePattern, Pattern: `^[A-Za-z_][A-Za-z0-9_]{0,63}$`},
				{Name: "file", Value: ValuePath, Path: &PathRule{Must: PathFile}},
			}},
			{Name: "pad", Values: []FlagValue{
				{Name: "width", Value: ValueInt, Min: &zero, Max: &seven},
				{Name: "fill", Value: ValueEnum, Enum: []string{"space", "tab"}},
			}},
		}}),
	})
	require.NoError(t, err)
	return a
}

// Invariant 12 of DESIGN.md.
func TestTypedGrammars_FlagsWithSeveralValuesCheckEachValue(t *testing.T) {
	root, outside := pathScratch(t)
	p := NewProposer(jqValuesAllowlist(t, root))
	cases := []struct {
		name  string
		input string
		argv  []string // nil when refused
		issue string   // part of the refusal's message
	}{
		{"jq --arg name value, from the flags object, is emitted as three arguments",
			`{"flags":{"arg":["who","ann"]}}`, []string{"--arg", "who", "ann"}, ""},
		{"jq --arg name value, from args, is emitted the same way",
			`{"args":["--arg","who","ann"]}`, []string{"--arg", "who", "ann"}, ""},
		{"--rawfile name path inside the root is passed cleaned",
			`{"flags":{"rawfile":[["src","src/./deep/../a.go"]]}}`, []string{"--rawfile", "src", "src/a.go"}, ""},
		{"--rawfile given twice (Repeat 2) emits each occurrence with its values",
			`{"flags":{"rawfile":[["a","src/a.go"],["b","link-in"]]}}`, []string{"--rawfile", "a", "src/a.go", "--rawfile", "b", "link-in"}, ""},
		{"Repeat counts occurrences over flags and args",
			`{"flags":{"rawfile":[["a","src/a.go"]]},"args":["--rawfile","b","src/a.go"]}`, []string{"--rawfile", "a", "src/a.go", "--rawfile", "b", "src/a.go"}, ""},
		{"a third occurrence is refused", `{"flags":{"rawfile":[["a","src/a.go"]]},"args":["--rawfile","b","src/a.go","--rawfile","c","src/a.go"]}`,
			nil, "may be given at most 2 times"},
		{"int and enum values are each checked by their own kind",
			`{"flags":{"pad":[3,"tab"]}}`, []string{"--pad", "3", "tab"}, ""},
		{"an int value out of its bounds is refused, naming the value", `{"flags":{"pad":[9,"tab"]}}`, nil, "the width value of --pad must be an integer from 0 to 7"},
		{"an enum value not listed is refused, naming the value", `{"args":["--pad","1","dots"]}`, nil, "the fill value of --pad must be one of"},
		{"a path value that climbs out of the root is refused", `{"flags":{"rawfile":[["s","../secret.txt"]]}}`, nil, "the file value of --rawfile"},
		{"an absolute path outside the root is refused", `{"args":["--rawfile","s","` + outside + `"]}`, nil, "is outside"},
		{"a link inside the root that points outside is refused", `{"flags":{"rawfile":[["s","link-out"]]}}`, nil, "symbolic link"},
		{"a path value that must be a file is refused when it is a directory", `{"flags":{"rawfile":[["s","src"]]}}`, nil, "is not a regular file"},
		{"the name value is checked by its pattern", `{"flags":{"arg":["1x","ann"]}}`, nil, "the name value of --arg does not match its pattern"},
		{"a string value that starts with '-' is refused: as its own argument it would be read as a flag",
			`{"flags":{"arg":["who","--output"]}}`, nil, "must not start with '-'"},
		{"in args, a value that starts with '-' is read as a flag, so the flag lacks its values",
			`{"args":["--arg","who","--rawfile"]}`, nil, "needs 2 values"},
		{"a negative int value is refused for the same reason", `{"args":["--pad","-1","tab"]}`, nil, ""},
		{"too few values in the flags object are refused", `{"flags":{"arg":["who"]}}`, nil, "must be an array of 2 values: name (a string), value (a string)"},
		{"too many values in the flags object are refused", `{"flags":{"arg":["who","ann","x"]}}`, nil, "must be an array of 2 values"},
		{"a single string in the flags object is refused", `{"flags":{"arg":"who"}}`, nil, "must be an array of 2 values"},
		{"with Repeat, the entry must be an array of arrays", `{"flags":{"rawfile":["a","src/a.go"]}}`, nil, "flags.rawfile[0]"},
		{"a stray array inside an occurrence is a wrong type, named by occurrence and value", `{"flags":{"rawfile":[[["a"],"src/a.go"]]}}`, nil, "flags.rawfile[0][0]"},
		{"a value of the wrong JSON type is refused, naming its element", `{"flags":{"pad":["3","tab"]}}`, nil, "flags.pad[0]"},
		{"too few tokens in args are refused", `{"args":["--arg","who"]}`, nil, "needs 2 values"},
		{"an extra token in args is a positional, which this command refuses", `{"args":["--arg","who","ann","x"]}`, nil, "takes no positional arguments"},
		{"--flag=value is refused for a flag of several values", `{"args":["--arg=who","ann"]}`, nil, "give the 2 values of --arg as the next 2 tokens"},
		{"shell metacharacters in a string value are refused", `{"flags":{"arg":["who","a;b"]}}`, nil, "the value value of --arg"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prop, err := p.Check("jq.run", json.RawMessage(c.input))
			if c.argv == nil {
				var ve *ValidationError
				require.ErrorAs(t, err, &ve)
				assert.Contains(t, err.Error(), c.issue)
				assert.NotContains(t, err.Error(), "canary")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.argv, prop.Args)
		})
	}
}

// Invariant 12 of DESIGN.md.
func TestTypedGrammars_FlagsWithSeveralValuesSchemaShowsEachValue(t *testing.T) {
	root, _ := pathScratch(t)
	spec, _ := jqValuesAllowlist(t, root).Lookup("jq.run")
	var doc struct {
		Properties struct {
			Flags struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"flags"`
			Args struct {
				Description string `json:"description"`
			} `json:"args"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(spec.Args.JSONSchema(), &doc))
	type item struct {
		Type        string `json:"type"`
		Description string `json:"description"`
		Minimum     *int64 `json:"minimum"`
		AllOf       []struct {
			Pattern string `json:"pattern"`
		} `json:"allOf"`
	}
	type values struct {
		Type        string `json:"type"`
		Description string `json:"description"`
		PrefixItems []item `json:"prefixItems"`
		MinItems    int    `json:"minItems"`
		MaxItems    int    `json:"maxItems"`
	}

	var arg values
	require.NoError(t, json.Unmarshal(doc.Properties.Flags.Properties["arg"], &arg))
	assert.Equal(t, "array", arg.Type, "one occurrence is an array of its values")
	assert.Equal(t, 2, arg.MinItems, "exactly as many values as declared")
	assert.Equal(t, 2, arg.MaxItems, "exactly as many values as declared")
	require.Len(t, arg.PrefixItems, 2, "one schema per value")
	assert.Contains(t, arg.Description, "--arg NAME VALUE", "the description names each value")
	assert.Contains(t, arg.PrefixItems[0].Description, "name")
	assert.Contains(t, arg.PrefixItems[1].Description, "value")
	assert.Equal(t, flagNoDashSchemaPattern, arg.PrefixItems[1].AllOf[len(arg.PrefixItems[1].AllOf)-1].Pattern,
		"the schema refuses a leading '-', as the gate does")

	var pad values
	require.NoError(t, json.Unmarshal(doc.Properties.Flags.Properties["pad"], &pad))
	require.Len(t, pad.PrefixItems, 2)
	assert.Equal(t, "integer", pad.PrefixItems[0].Type, "each value keeps its own kind")
	require.NotNil(t, pad.PrefixItems[0].Minimum)
	assert.Equal(t, int64(0), *pad.PrefixItems[0].Minimum)

	var rawfile struct {
		Type     string `json:"type"`
		MaxItems int    `json:"maxItems"`
		Items    values `json:"items"`
	}
	require.NoError(t, json.Unmarshal(doc.Properties.Flags.Properties["rawfile"], &rawfile))
	assert.Equal(t, "array", rawfile.Type, "with Repeat 2 the entry is an array of occurrences")
	assert.Equal(t, 2, rawfile.MaxItems)
	assert.Equal(t, 2, rawfile.Items.MinItems)
	assert.Contains(t, rawfile.Items.PrefixItems[1].Description, "A path inside the working directory", "a path value is described as a path")
	assert.Contains(t, doc.Properties.Args.Description, "--rawfile NAME FILE", "args lists the spelling with its values")
}

func TestFlags_ValuesMisconfigurationsAreRefused(t *testing.T) {
	two := []FlagValue{{Name: "a", Value: ValueString}, {Name: "b", Value: ValueString}}
	for _, c := range []struct {
		name string
		flag Flag
		want string
	}{
		{"an empty, non-nil Values is refused", Flag{Name: "f", Values: []FlagValue{}}, "Values is empty"},
		{"Values excludes Value on the flag", Flag{Name: "f", Value: ValueString, Values: two}, "Values excludes Value"},
		{"Values excludes Pattern on the flag", Flag{Name: "f", Pattern: "^a$", Values: two}, "Values excludes Min, Max, Enum, Pattern and Path"},
		{"Values excludes Path on the flag", Flag{Name: "f", Path: &PathRule{}, Values: two}, "Values excludes Min, Max, Enum, Pattern and Path"},
		{"Glued is refused with Values", Flag{Name: "f", Glued: true, Values: two}, "Glued does not apply"},
		{"Separate is refused with Values", Flag{Name: "f", Separate: true, Values: two}, "Separate does not apply"},
		{"a value needs a name", Flag{Name: "f", Values: []FlagValue{{Value: ValueString}}}, "Values[0]: Name"},
		{"value names are unique", Flag{Name: "f", Values: []FlagValue{{Name: "a", Value: ValueString}, {Name: "a", Value: ValueInt}}}, `Name "a" is used twice`},
		{"a value must take a value", Flag{Name: "f", Values: []FlagValue{{Name: "a"}}}, "not none"},
		{"a value's own rules are checked", Flag{Name: "f", Values: []FlagValue{{Name: "a", Value: ValueEnum}}}, `value "a": Enum is required`},
		{"a path value's rule is checked", Flag{Name: "f", Values: []FlagValue{{Name: "a", Value: ValuePath, Path: &PathRule{Must: "maybe"}}}}, "unknown Must"},
		{"at most MaxFlagValues values", Flag{Name: "f", Values: make([]FlagValue, MaxFlagValues+1)}, "at most 8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewAllowlist(CommandSpec{Name: "x", Command: "/bin/echo", Dir: "/", Args: Flags(FlagSpec{Flags: []Flag{c.flag}})})
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestFlags_ValuesAreCopied(t *testing.T) {
	vals := []FlagValue{{Name: "a", Value: ValueEnum, Enum: []string{"x"}}}
	s := Flags(FlagSpec{Flags: []Flag{{Name: "f", Values: vals}}})
	vals[0].Enum[0] = "y"
	vals[0].Name = "b"
	argv, err := s.Parse(json.RawMessage(`{"flags":{"f":["x"]}}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"-f", "x"}, argv.Args)
}
