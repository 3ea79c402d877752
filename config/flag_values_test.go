package config_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// Invariant 12 of DESIGN.md.
func TestTypedGrammars_FlagValuesDeclaredInYAML(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "data.json"), []byte("{}\n"), 0o644))
	l := mustLoad(t, `version: 1
tools:
  - name: jq
    bin: /bin/echo
    working_dir: `+root+`
    bare:
      description: Filter JSON.
      flags:
        - name: arg
          values: [{name: name, value: pattern, pattern: '^[A-Za-z_][A-Za-z0-9_]*$'}, {name: value, value: string}]
        - name: rawfile
          repeat: 2
          values:
            - {name: name, value: pattern, pattern: '^[A-Za-z_][A-Za-z0-9_]*$'}
            - {name: file, value: path, path: {must: file}}
        - name: indent
          values: [{name: n, value: int, min: 0, max: 7}]
`)
	p := execgate.NewProposer(l.Allowlist)
	for _, c := range []struct {
		name, input string
		argv        []string // nil: refused
		issue       string
	}{
		{"--arg name value from YAML is emitted as three arguments", `{"flags":{"arg":["who","ann"]}}`, []string{"--arg", "who", "ann"}, ""},
		{"--rawfile name path inside the root is passed cleaned", `{"args":["--rawfile","d","./x/../data.json"]}`, []string{"--rawfile", "d", "data.json"}, ""},
		{"repeat applies to occurrences of the whole flag", `{"flags":{"rawfile":[["a","data.json"],["b","data.json"]]}}`,
			[]string{"--rawfile", "a", "data.json", "--rawfile", "b", "data.json"}, ""},
		{"a path outside the root is refused", `{"flags":{"rawfile":[["a","../etc/passwd"]]}}`, nil, "the file value of --rawfile"},
		{"an int value keeps its bounds from YAML", `{"flags":{"indent":[9]}}`, nil, "from 0 to 7"},
		{"a value that starts with '-' is refused", `{"flags":{"arg":["who","-x"]}}`, nil, "must not start with '-'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			prop, err := p.Check("jq.run", json.RawMessage(c.input))
			if c.argv == nil {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.issue)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.argv, prop.Args)
		})
	}
}

func TestFlags_ValuesMistakesAreReportedOnTheirLine(t *testing.T) {
	for _, c := range []struct {
		name, entry, want string
	}{
		{"values excludes value on the flag", `{name: f, value: string, values: [{name: a, value: string}]}`,
			"4:22: tools[0].bare.flags[0].value: values excludes value on the flag"},
		{"values excludes pattern on the flag", `{name: f, pattern: '^a$', values: [{name: a, value: string}]}`,
			"tools[0].bare.flags[0].pattern: values excludes pattern on the flag"},
		{"glued is refused with values", `{name: f, short: x, glued: true, values: [{name: a, value: string}]}`,
			"tools[0].bare.flags[0].glued: glued does not apply to a flag with values"},
		{"separate is refused with values", `{name: f, separate: true, values: [{name: a, value: string}]}`,
			"tools[0].bare.flags[0].separate: separate does not apply"},
		{"an empty values list is refused", `{name: f, values: []}`, "tools[0].bare.flags[0].values: must list at least one value"},
		{"a value needs a name", `{name: f, values: [{value: string}]}`, "tools[0].bare.flags[0].values[0].name: required"},
		{"a value needs a kind", `{name: f, values: [{name: a}]}`, "tools[0].bare.flags[0].values[0].value: required"},
		{"a value's kind is not none", `{name: f, values: [{name: a, value: none}]}`, "tools[0].bare.flags[0].values[0].value: a value's kind must take a value"},
		{"an unknown kind is refused", `{name: f, values: [{name: a, value: float}]}`, `unknown value kind "float"`},
		{"value names are unique", `{name: f, values: [{name: a, value: string}, {name: a, value: int}]}`, "tools[0].bare.flags[0].values[1].name: value name \"a\" is used twice"},
		{"a value's rules follow its kind", `{name: f, values: [{name: a, value: string, min: 1}]}`, "tools[0].bare.flags[0].values[0].min: min and max apply only to value: int"},
		{"an enum value needs its list", `{name: f, values: [{name: a, value: enum}]}`, "tools[0].bare.flags[0].values[0].enum: required for value: enum"},
		{"a path value's rule is checked", `{name: f, values: [{name: a, value: path, path: {must: maybe}}]}`, "tools[0].bare.flags[0].values[0].path.must: must be exists, file or dir"},
		{"a flag-only key is unknown on a value", `{name: f, values: [{name: a, value: string, repeat: 2}]}`, `unknown key "repeat"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			list := loadErrors(t, "version: 1\ntools:\n  - {name: x, bin: /bin/echo, description: d, bare: {flags: [\n    "+c.entry+"]}}\n")
			var all []string
			for _, e := range list {
				all = append(all, e.Error())
			}
			assert.Contains(t, strings.Join(all, "\n"), c.want)
		})
	}
}
