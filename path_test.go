package execgate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pathScratch makes a root with a file, a directory, a link to each inside
// the root, a link that points outside, a dangling link, and a secret file
// beside the root.
func pathScratch(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "root")
	outside = filepath.Join(base, "secret.txt")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "src", "deep"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "src", "a.go"), []byte("package a\n"), 0o644))
	require.NoError(t, os.WriteFile(outside, []byte("canary\n"), 0o600))
	require.NoError(t, os.Symlink("src/a.go", filepath.Join(root, "link-in")))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "link-out")))
	require.NoError(t, os.Symlink(base, filepath.Join(root, "src", "dir-out")))
	require.NoError(t, os.Symlink(filepath.Join(base, "nothing"), filepath.Join(root, "dangling")))
	return root, outside
}

// Invariant 12 of DESIGN.md.
func TestTypedGrammars_PathsStayInsideTheirRoots(t *testing.T) {
	root, outside := pathScratch(t)
	cases := []struct {
		name  string
		rule  PathRule
		token string
		want  string // the argv form; "" when refused
	}{
		{"a plain relative path inside the root is passed cleaned", PathRule{}, "src/./deep//", "src/deep"},
		{"a path that goes up and back in stays inside and is passed cleaned", PathRule{}, "src/deep/../a.go", "src/a.go"},
		{"the root itself is inside", PathRule{}, ".", "."},
		{"an absolute path inside the root is kept absolute", PathRule{}, filepath.Join(root, "src"), filepath.Join(root, "src")},
		{"'..' that climbs out of the root is refused (the git diff --no-index leak)", PathRule{}, "src/../../secret.txt", ""},
		{"a bare '..' is refused", PathRule{}, "..", ""},
		{"an absolute path outside the root is refused", PathRule{}, outside, ""},
		{"/etc/passwd is refused", PathRule{}, "/etc/passwd", ""},
		{"a leading '-' is refused, it would be an option", PathRule{}, "-rf", ""},
		{"a leading '@' is refused, it would be a file of arguments", PathRule{}, "@args", ""},
		{"'./-x' is refused: cleaned, it starts with '-'", PathRule{}, "./-x", ""},
		{"a control character is refused", PathRule{}, "src/\x1b[2J", ""},
		{"an invisible character is refused", PathRule{}, "src/a\u200b.go", ""},
		{"an empty path is refused", PathRule{}, "", ""},
		{"a shell metacharacter is refused, as in every value without a pattern", PathRule{}, "main; rm -rf /", ""},
		{"a symbolic link inside the root to a file inside it is followed and accepted", PathRule{}, "link-in", "link-in"},
		{"a symbolic link inside the root that points outside is refused", PathRule{}, "link-out", ""},
		{"a path through a linked directory that points outside is refused", PathRule{}, "src/dir-out/secret.txt", ""},
		{"a dangling symbolic link is refused: where it would write is unknown", PathRule{}, "dangling", ""},
		{"a path that does not exist yet is accepted without Must", PathRule{}, "src/new.txt", "src/new.txt"},
		{"Lexical does not resolve links: the link out is accepted as text", PathRule{Lexical: true}, "link-out", "link-out"},
		{"Lexical still refuses '..' out of the root", PathRule{Lexical: true}, "../secret.txt", ""},
		{"Must exists refuses what is not there", PathRule{Must: PathExists}, "src/new.txt", ""},
		{"Must file accepts a regular file", PathRule{Must: PathFile}, "src/a.go", "src/a.go"},
		{"Must file refuses a directory", PathRule{Must: PathFile}, "src", ""},
		{"Must dir accepts a directory", PathRule{Must: PathDir}, "src/deep", "src/deep"},
		{"Must dir refuses a file", PathRule{Must: PathDir}, "src/a.go", ""},
		{"a glob character is refused without Glob", PathRule{}, "src/*.go", ""},
		{"with Glob, a pattern inside the root is passed to the program", PathRule{Glob: true}, "src/*.go", "src/*.go"},
		{"with Glob, a pattern whose fixed part is outside the root is refused", PathRule{Glob: true}, "../*", ""},
		{"with Glob, '..' after the pattern is refused", PathRule{Glob: true}, "*/../../x", ""},
		{"a second root admits paths inside it", PathRule{Roots: []string{root, filepath.Dir(outside)}}, outside, outside},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := bindPath(c.rule, root, nil)
			require.NoError(t, err)
			got, err := b.check(c.token)
			if c.want == "" {
				var pe *PathError
				require.True(t, errors.As(err, &pe), "want a refusal, got %q, %v", got, err)
				assert.Equal(t, c.token, pe.Token)
				assert.NotEmpty(t, pe.Reason)
				assert.NotContains(t, err.Error(), "canary")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestBindPath_RefusesBadRules(t *testing.T) {
	_, err := bindPath(PathRule{Roots: []string{"relative/dir"}}, "/", nil)
	assert.ErrorContains(t, err, "not absolute")
	_, err = bindPath(PathRule{Must: "maybe"}, "/", nil)
	assert.ErrorContains(t, err, "unknown Must")
}

// Invariant 12 of DESIGN.md.
func TestTypedGrammars_FlagsPathArgumentsStayInsideTheirRoots(t *testing.T) {
	root, outside := pathScratch(t)
	a, err := NewAllowlist(CommandSpec{
		Name: "git.diff", Command: "/bin/echo", Dir: root,
		Args: Flags(FlagSpec{
			Leading: []string{"diff"},
			Flags: []Flag{
				{Name: "output", Value: ValuePath, Path: &PathRule{Must: PathDir}},
				{Name: "stat"},
			},
			Positionals:  Positionals{Max: 2, Path: &PathRule{}},
			EndOfOptions: true,
		}),
	})
	require.NoError(t, err)
	p := NewProposer(a)
	cases := []struct {
		name  string
		input string
		argv  []string // nil when refused
		issue string   // part of the refusal's message
	}{
		{"paths inside the working directory are passed cleaned, after --",
			`{"args":["src/./a.go","src/deep/.."]}`, []string{"diff", "--", "src/a.go", "src"}, ""},
		{"the git diff leak: a path that climbs out of the work tree is refused before git can switch to --no-index",
			`{"args":["src/../../secret.txt","README"]}`, nil, "is outside the working directory"},
		{"an absolute path outside the root is refused", `{"args":["` + outside + `"]}`, nil, "is outside"},
		{"a link inside the root that points outside is refused", `{"args":["link-out"]}`, nil, "symbolic link"},
		{"a path value of a flag is checked the same way", `{"flags":{"output":"../"}}`, nil, "the value of --output"},
		{"a path value that must be a directory is refused when it is a file", `{"flags":{"output":"src/a.go"}}`, nil, "is not a directory"},
		{"a path value inside the root is passed cleaned", `{"flags":{"output":"src/deep/"}}`, []string{"diff", "--output=src/deep", "--"}, ""},
		{"with EndOfOptions a path still may not start with '-'", `{"args":["--", "-x"]}`, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prop, err := p.Check("git.diff", json.RawMessage(c.input))
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

	// The schema a model is shown says what a path argument may be.
	spec, _ := a.Lookup("git.diff")
	assert.Contains(t, string(spec.Args.JSONSchema()), "A path inside the working directory "+root)
}

func TestFlags_PathRulesAreCheckedWhenDeclared(t *testing.T) {
	for _, c := range []struct {
		name string
		spec FlagSpec
		want string
	}{
		{"a root must be absolute", FlagSpec{Positionals: Positionals{Max: 1, Path: &PathRule{Roots: []string{"rel"}}}}, "not absolute"},
		{"Path and Pattern exclude each other", FlagSpec{Positionals: Positionals{Max: 1, Pattern: "^a$", Path: &PathRule{}}}, "exclude each other"},
		{"a path rule needs positionals", FlagSpec{Positionals: Positionals{Path: &PathRule{}}}, "Max is 0"},
		{"Path belongs to path values only", FlagSpec{Flags: []Flag{{Name: "f", Value: ValueString, Path: &PathRule{}}}}, "only to path values"},
		{"an unknown Must is refused", FlagSpec{Flags: []Flag{{Name: "f", Value: ValuePath, Path: &PathRule{Must: "maybe"}}}}, "unknown Must"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewAllowlist(CommandSpec{Name: "x", Command: "/bin/echo", Dir: "/", Args: Flags(c.spec)})
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	// A schema used outside an Allowlist has no working directory, and
	// refuses path arguments rather than guessing one.
	_, err := Flags(FlagSpec{Positionals: Positionals{Max: 1, Path: &PathRule{}}}).Parse(json.RawMessage(`{"args":["a"]}`))
	assert.ErrorContains(t, err, "working directory")
}

// Invariant 12 of DESIGN.md.
func TestTypedGrammars_StructPathFieldsStayInsideTheWorkingDirectory(t *testing.T) {
	root, outside := pathScratch(t)
	type catInput struct {
		File  Path   `json:"file" path:"file"`
		More  []Path `json:"more" validate:"max=4"`
		Lines int    `json:"lines" validate:"min=0,max=100"`
	}
	a, err := NewAllowlist(CommandSpec{
		Name: "cat", Command: "/bin/cat", Dir: root,
		Args: Struct(func(in catInput) Argv {
			args := []string{"--", string(in.File)}
			for _, m := range in.More {
				args = append(args, string(m))
			}
			return Argv{Args: args}
		}),
	})
	require.NoError(t, err)
	p := NewProposer(a)
	for _, c := range []struct {
		name, input string
		argv        []string // nil: refused
		issue       string
	}{
		{"a file inside the working directory is passed cleaned to the build function",
			`{"file":"src/./a.go","more":["src/deep/.."]}`, []string{"--", "src/a.go", "src"}, ""},
		{"a Path field that climbs out is refused, naming the field",
			`{"file":"../secret.txt"}`, nil, "file: path"},
		{"an element of a []Path field that is absolute outside is refused, naming the element",
			`{"file":"src/a.go","more":["` + outside + `"]}`, nil, "more[0]"},
		{"a Path through a link out is refused", `{"file":"link-out"}`, nil, "symbolic link"},
		{"the path tag's must is applied", `{"file":"src"}`, nil, "is not a regular file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			prop, err := p.Check("cat", json.RawMessage(c.input))
			if c.argv == nil {
				var ve *ValidationError
				require.ErrorAs(t, err, &ve)
				assert.Contains(t, err.Error(), c.issue)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.argv, prop.Args)
		})
	}
	// Outside an Allowlist there is no working directory to check against.
	_, err = Struct(func(in catInput) Argv { return Argv{} }).Parse(json.RawMessage(`{"file":"a"}`))
	assert.ErrorContains(t, err, "working directory")
	// A bad path tag is refused when the schema is built.
	type bad struct {
		F Path `json:"f" path:"maybe"`
	}
	_, err = NewAllowlist(CommandSpec{Name: "b", Command: "/bin/cat", Dir: root, Args: Struct(func(bad) Argv { return Argv{} })})
	assert.ErrorContains(t, err, `unknown option "maybe"`)
}

// pathTagSchema is a Struct schema of T, a struct whose first field is
// a Path, whose argv is that field.
func pathTagSchema[T any]() ArgsSchema {
	return Struct(func(in T) Argv { return Argv{Args: []string{reflect.ValueOf(in).Field(0).String()}} })
}

// Invariant 12 of DESIGN.md: a Path field's tag sets the same PathRule
// options a Flags path has (what must be there, globs, lexical checks),
// and the rule is checked by the same code.
func TestTypedGrammars_StructPathTagOptions(t *testing.T) {
	root, _ := pathScratch(t)
	type plain struct {
		F Path `json:"f"`
	}
	type file struct {
		F Path `json:"f" path:"file"`
	}
	type glob struct {
		F Path `json:"f" path:"glob"`
	}
	type fileGlob struct {
		F Path `json:"f" path:"file,glob"`
	}
	type lexical struct {
		F Path `json:"f" path:"lexical"`
	}
	type fileLexical struct {
		F Path `json:"f" path:"file,lexical"`
	}
	type globLexical struct {
		F Path `json:"f" path:"glob,lexical"`
	}
	for _, c := range []struct {
		why   string
		args  ArgsSchema
		token string
		want  string // the argv; "" when refused
		issue string
	}{
		{"With glob, a pattern inside the root is passed to the program.", pathTagSchema[glob](), "src/*.go", "src/*.go", ""},
		{"Without glob, the same pattern is refused.", pathTagSchema[plain](), "src/*.go", "", "holds the glob character"},
		{"A Must alone does not allow globs.", pathTagSchema[file](), "src/*.go", "", "holds the glob character"},
		{"With file,glob, a pattern is accepted.", pathTagSchema[fileGlob](), "src/*.go", "src/*.go", ""},
		{"With file,glob, a path without glob characters must still be a file.", pathTagSchema[fileGlob](), "src", "", "is not a regular file"},
		{"With glob, a pattern whose fixed part climbs out is refused.", pathTagSchema[glob](), "../*", "", "is outside"},
		{"With glob, a pattern under a link out is refused: links are resolved.", pathTagSchema[glob](), "src/dir-out/*", "", "symbolic link"},
		{"With glob,lexical, the same pattern is checked as text and accepted.", pathTagSchema[globLexical](), "src/dir-out/*", "src/dir-out/*", ""},
		{"Without lexical, a link that points out is refused.", pathTagSchema[plain](), "link-out", "", "symbolic link"},
		{"With lexical, a link that points out is accepted as text.", pathTagSchema[lexical](), "link-out", "link-out", ""},
		{"With lexical, '..' out of the root is still refused.", pathTagSchema[lexical](), "../secret.txt", "", "is outside"},
		{"With file,lexical, the link itself is not a regular file.", pathTagSchema[fileLexical](), "link-out", "", "is not a regular file"},
	} {
		t.Run(c.why, func(t *testing.T) {
			a, err := NewAllowlist(CommandSpec{Name: "cat", Command: "/bin/cat", Dir: root, Args: c.args})
			require.NoError(t, err)
			prop, err := NewProposer(a).Check("cat", json.RawMessage(`{"f":"`+c.token+`"}`))
			if c.want == "" {
				var ve *ValidationError
				require.ErrorAs(t, err, &ve)
				assert.Equal(t, "f", ve.Issues[0].Field)
				assert.Contains(t, err.Error(), c.issue)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []string{c.want}, prop.Args)
		})
	}

	// The JSON Schema says what the tag allows.
	var schema struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(pathTagSchema[fileGlob]().JSONSchema(), &schema))
	assert.Contains(t, schema.Properties["f"].Description, "must be a regular file")
	assert.Contains(t, schema.Properties["f"].Description, "glob characters")

	type twoMusts struct {
		F Path `json:"f" path:"file,dir"`
	}
	type twice struct {
		F Path `json:"f" path:"glob,glob"`
	}
	type unknown struct {
		F Path `json:"f" path:"globs"`
	}
	type spaced struct {
		F Path `json:"f" path:"file, glob"`
	}
	for _, c := range []struct {
		why  string
		args ArgsSchema
		want string
	}{
		{"Two options that say what must be there are refused.", pathTagSchema[twoMusts](), `"file" and "dir" both say what must be there`},
		{"An option given twice is refused.", pathTagSchema[twice](), `"glob" is given twice`},
		{"An unknown option is refused.", pathTagSchema[unknown](), `unknown option "globs"`},
		{"Options are separated by commas alone.", pathTagSchema[spaced](), `unknown option " glob"`},
	} {
		t.Run(c.why, func(t *testing.T) {
			_, err := NewAllowlist(CommandSpec{Name: "cat", Command: "/bin/cat", Dir: root, Args: c.args})
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// Invariant 12 of DESIGN.md: a Path the gate would not check is refused
// when the schema is built, wherever it hides.
func TestTypedGrammars_StructPathOnlyWhereItIsChecked(t *testing.T) {
	root, _ := pathScratch(t)
	type inner struct {
		F Path `json:"f"`
	}
	type nested struct {
		In inner `json:"in"`
	}
	type pointer struct {
		F *Path `json:"f"`
	}
	type mapped struct {
		M map[string]Path `json:"m"`
	}
	type sliceOfSlices struct {
		S [][]Path `json:"s"`
	}
	for _, c := range []struct {
		why  string
		args ArgsSchema
	}{
		{"a Path in a nested struct", Struct(func(nested) Argv { return Argv{} })},
		{"a pointer to a Path", Struct(func(pointer) Argv { return Argv{} })},
		{"a Path as a map value", Struct(func(mapped) Argv { return Argv{} })},
		{"a Path in a slice of slices", Struct(func(sliceOfSlices) Argv { return Argv{} })},
	} {
		_, err := NewAllowlist(CommandSpec{Name: "c", Command: "/bin/cat", Dir: root, Args: c.args})
		var ce *ConfigError
		require.ErrorAs(t, err, &ce, c.why)
		assert.Contains(t, err.Error(), "would not be checked", c.why)
	}
}

// Invariant 14 of DESIGN.md: the JSON Schema a model reads says what the
// gate checks a Path field for.
func TestSameTruth_StructPathFieldsAreDescribedInTheSchema(t *testing.T) {
	type in struct {
		File Path   `json:"file" path:"file" desc:"The file to print"`
		More []Path `json:"more"`
	}
	var schema struct {
		Properties map[string]struct {
			Type        string `json:"type"`
			Description string `json:"description"`
			MinLength   *int   `json:"minLength"`
			Items       *struct {
				Type        string `json:"type"`
				Description string `json:"description"`
				MinLength   *int   `json:"minLength"`
			} `json:"items"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(Struct(func(in) Argv { return Argv{} }).JSONSchema(), &schema))
	file := schema.Properties["file"]
	assert.Equal(t, "string", file.Type)
	assert.True(t, strings.HasPrefix(file.Description, "The file to print. A path inside the working directory"), file.Description)
	assert.Contains(t, file.Description, "must be a regular file")
	assert.Nil(t, file.MinLength, "an empty Path field is a path not given")
	more := schema.Properties["more"]
	require.NotNil(t, more.Items)
	assert.Contains(t, more.Items.Description, "no symbolic link out of it")
	require.NotNil(t, more.Items.MinLength)
	assert.Equal(t, 1, *more.Items.MinLength, "an empty element is refused")
}

// Invariants 12 and 14 of DESIGN.md: the schema says a symbolic link out
// of the roots is refused only where the gate checks for one. A Lexical
// rule checks the text, and its description says so, both for a Path
// field's tag and for a Flags path bound to its working directory.
func TestSameTruth_LexicalPathsAreNotDescribedAsRefusingLinks(t *testing.T) {
	root, _ := pathScratch(t)
	type resolved struct {
		F Path `json:"f" path:"file"`
	}
	type lexical struct {
		F Path `json:"f" path:"file,lexical"`
	}
	structDescription := func(args ArgsSchema) string {
		var schema struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		}
		require.NoError(t, json.Unmarshal(args.JSONSchema(), &schema))
		return schema.Properties["f"].Description
	}
	flagsDescription := func(rule *PathRule) string {
		a, err := NewAllowlist(CommandSpec{Name: "cat", Command: "/bin/cat", Dir: root, Args: Flags(FlagSpec{
			Flags: []Flag{{Name: "file", Value: ValuePath, Path: rule}},
		})})
		require.NoError(t, err)
		spec, ok := a.Lookup("cat")
		require.True(t, ok)
		var schema struct {
			Properties struct {
				Flags struct {
					Properties map[string]struct {
						Description string `json:"description"`
					} `json:"properties"`
				} `json:"flags"`
			} `json:"properties"`
		}
		require.NoError(t, json.Unmarshal(spec.Args.JSONSchema(), &schema))
		d := schema.Properties.Flags.Properties["file"].Description
		require.NotEmpty(t, d, "%s", spec.Args.JSONSchema())
		return d
	}
	for _, c := range []struct {
		why     string
		desc    string
		lexical bool
	}{
		{"a Path field whose links are resolved", structDescription(Struct(func(resolved) Argv { return Argv{} })), false},
		{"a lexical Path field", structDescription(Struct(func(lexical) Argv { return Argv{} })), true},
		{"a bound Flags path whose links are resolved", flagsDescription(&PathRule{}), false},
		{"a bound lexical Flags path", flagsDescription(&PathRule{Lexical: true}), true},
	} {
		t.Run(c.why, func(t *testing.T) {
			assert.Contains(t, c.desc, `no ".." out of it`)
			if c.lexical {
				assert.NotContains(t, c.desc, "no symbolic link out of it", "a lexical rule does not check where links lead")
				assert.Contains(t, c.desc, "a symbolic link in it is not resolved")
				return
			}
			assert.Contains(t, c.desc, "no symbolic link out of it")
			assert.NotContains(t, c.desc, "not resolved")
		})
	}
}
