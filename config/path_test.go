package config_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

func TestPaths_DeclaredInYAML(t *testing.T) {
	root := t.TempDir()
	l := mustLoad(t, `version: 1
tools:
  - name: cat
    bin: /bin/cat
    working_dir: `+root+`
    bare:
      description: Print files.
      flags:
        - {name: out, value: path, path: {must: dir}}
        - {name: include, value: path, path: {glob: true}}
        - {name: exclude, value: path, path: {glob: false}}
        - {name: file, value: path}
      positionals: {max: 4, path: {roots: [`+root+`], lexical: true}}
      end_of_options: true
`)
	p := execgate.NewProposer(l.Allowlist)
	prop, err := p.Check("cat.run", json.RawMessage(`{"args":["./a/../b.txt"]}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"--", "b.txt"}, prop.Args, "a path is passed cleaned")
	_, err = p.Check("cat.run", json.RawMessage(`{"args":["../etc/passwd"]}`))
	assert.ErrorContains(t, err, "is outside the roots "+root)
	_, err = p.Check("cat.run", json.RawMessage(`{"flags":{"out":"nothing-here"}}`))
	assert.ErrorContains(t, err, "does not exist")

	// glob: true lets a path hold a pattern for the program to expand;
	// without it (false, or left out) the same token is refused.
	prop, err = p.Check("cat.run", json.RawMessage(`{"flags":{"include":"src/*.go"}}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"--include=src/*.go", "--"}, prop.Args)
	for _, flag := range []string{"exclude", "file"} {
		_, err = p.Check("cat.run", json.RawMessage(`{"flags":{"`+flag+`":"src/*.go"}}`))
		assert.ErrorContains(t, err, `holds the glob character "*"`, flag)
	}
	_, err = p.Check("cat.run", json.RawMessage(`{"flags":{"include":"../*.go"}}`))
	assert.ErrorContains(t, err, "is outside", "a pattern is still a path inside the working directory")
}

func TestPaths_MistakesAreReportedOnTheirLine(t *testing.T) {
	for _, c := range []struct {
		name, entry, want string
	}{
		{"a relative root is refused", `positionals: {max: 1, path: {roots: [rel]}}`, "4:42: tools[0].bare.positionals.path.roots[0]: a root must be an absolute path"},
		{"an unknown must is refused", `positionals: {max: 1, path: {must: maybe}}`, "4:40: tools[0].bare.positionals.path.must: must be exists, file or dir"},
		{"path and pattern exclude each other", `positionals: {max: 1, pattern: '^a$', path: {}}`, "path and pattern exclude each other"},
		{"a path needs positionals", `positionals: {path: {}}`, "a path needs positionals.max of at least 1"},
		{"path belongs to value: path", `flags: [{name: f, value: string, path: {}}]`, "path applies only to value: path"},
		{"an unknown key of a path rule is refused", `positionals: {max: 1, path: {follow: true}}`, "follow"},
	} {
		t.Run(c.name, func(t *testing.T) {
			list := loadErrors(t, "version: 1\ntools:\n  - {name: x, bin: /bin/echo, description: d, bare: {\n    "+c.entry+"}}\n")
			var all []string
			for _, e := range list {
				all = append(all, e.Error())
			}
			assert.Contains(t, strings.Join(all, "\n"), c.want)
		})
	}
}

func TestFlags_SeparateInYAML(t *testing.T) {
	l := mustLoad(t, `version: 1
tools:
  - name: curl
    bin: /bin/echo
    bare:
      description: Fetch.
      flags: [{name: max-time, value: int, min: 1, max: 60, separate: true}]
`)
	prop, err := execgate.NewProposer(l.Allowlist).Check("curl.run", json.RawMessage(`{"flags":{"max-time":5}}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"--max-time", "5"}, prop.Args)

	list := loadErrors(t, "version: 1\ntools:\n  - {name: x, bin: /bin/echo, description: d, bare: {flags: [{name: v, separate: true}]}}\n")
	require.Len(t, list, 1)
	assert.Contains(t, list[0].Error(), "separate needs a flag that takes a value")
}
