package execgate

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/internal/inputrules"
)

// publishedString is a string node of a published JSON Schema, decoded
// as a validator decodes it, with the patterns a value must match: its
// own and those of its allOf.
type publishedString struct {
	path     string
	patterns []*regexp.Regexp
}

// accepts reports whether every pattern of the node matches s. Like a
// JSON Schema validator, it searches: the patterns carry their anchors.
func (n publishedString) accepts(s string) bool {
	for _, re := range n.patterns {
		if !re.MatchString(s) {
			return false
		}
	}
	return true
}

// publishedStrings returns the string nodes of schema that have a
// pattern, keyed by path, compiling each pattern with Go's regexp.
func publishedStrings(t *testing.T, schema json.RawMessage) map[string]publishedString {
	t.Helper()
	var root any
	require.NoError(t, json.Unmarshal(schema, &root))
	out := make(map[string]publishedString)
	var walk func(path string, v any)
	walk = func(path string, v any) {
		node, ok := v.(map[string]any)
		if !ok {
			return
		}
		var n publishedString
		n.path = path
		add := func(p any) {
			if s, ok := p.(string); ok {
				re, err := regexp.Compile(s)
				require.NoError(t, err, "%s: the published pattern does not compile as RE2", path)
				n.patterns = append(n.patterns, re)
			}
		}
		add(node["pattern"])
		if all, ok := node["allOf"].([]any); ok {
			for _, sub := range all {
				if m, ok := sub.(map[string]any); ok {
					add(m["pattern"])
				}
			}
		}
		if node["type"] == "string" && len(n.patterns) > 0 {
			out[path] = n
		}
		if props, ok := node["properties"].(map[string]any); ok {
			for k, p := range props {
				walk(path+"."+k, p)
			}
		}
		walk(path+"[]", node["items"])
	}
	walk("$", root)
	return out
}

// TestTypedGrammars_SchemaRefusesEveryRuneTheGateRefuses checks every code
// point against the JSON Schemas a model is shown for Flags and for a
// dispatcher: when the gate refuses a token because of a character in
// it, every string the schema describes (an "args" item, a string value,
// a pattern value) refuses that token too. The schemas are compiled with
// Go's regexp from their decoded JSON; inputrules'
// TestTypedGrammars_SchemaClassUnderECMAScript shows a JavaScript engine
// with the u flag, as JSON Schema specifies, refuses the same
// characters.
//
// Invariant 12 of DESIGN.md.
func TestTypedGrammars_SchemaRefusesEveryRuneTheGateRefuses(t *testing.T) {
	flags := Flags(FlagSpec{
		Flags: []Flag{
			{Name: "text", Value: ValueString},
			{Name: "any", Value: ValuePattern, Pattern: `^.*$`},
		},
		Positionals: Positionals{Max: 1},
	})
	dispatcher := Subcommands(SubcommandSpec{}).(*subcommandSchema)
	flagNodes := publishedStrings(t, flags.JSONSchema())
	dispatchNodes := publishedStrings(t, dispatcher.JSONSchema())
	require.Len(t, flagNodes, 3, "args items, flags.text and flags.any")
	require.Len(t, dispatchNodes, 1, "args items")

	// Each way a token reaches the gate, with the schema node that
	// describes it.
	paths := []struct {
		node  publishedString
		parse func(tok string) error
	}{
		{flagNodes["$.args[]"], func(tok string) error {
			_, err := flags.Parse(jsonInput(t, "args", []string{tok}))
			return err
		}},
		{flagNodes["$.flags.text"], func(tok string) error {
			_, err := flags.Parse(jsonInput(t, "flags", map[string]string{"text": tok}))
			return err
		}},
		{flagNodes["$.flags.any"], func(tok string) error {
			_, err := flags.Parse(jsonInput(t, "flags", map[string]string{"any": tok}))
			return err
		}},
		{dispatchNodes["$.args[]"], func(tok string) error {
			_, err := dispatcher.parseSubcommand("status", jsonInput(t, "args", []string{tok}))
			return err
		}},
	}
	refused := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if 0xd800 <= r && r <= 0xdfff {
			continue // not in valid UTF-8, so never in a JSON string a validator sees
		}
		tok := "a" + string(r) + "b"
		if checkArgText(tok) == "" {
			continue
		}
		refused++
		for _, p := range paths {
			require.Error(t, p.parse(tok), "%s: the gate accepts U+%04X", p.node.path, r)
			if p.node.accepts(tok) {
				t.Fatalf("%s: the gate refuses U+%04X in a token, the published schema accepts it", p.node.path, r)
			}
		}
	}
	var want int
	for _, s := range inputrules.Spans() {
		want += int(s.Hi-s.Lo) + 1
	}
	assert.Equal(t, want, refused, "the gate refuses exactly the table's characters")

	// And the schema does not refuse the characters the gate accepts, so
	// that a model is not kept from calls that would pass.
	for _, tok := range []string{"plain", "with space", "é", "日本語", "\u00a0", "\U0001f600", "x\u200ay"} {
		for _, p := range paths {
			require.NoError(t, p.parse(tok), "%s: %q", p.node.path, tok)
			assert.True(t, p.node.accepts(tok), "%s: the schema refuses %q, which the gate accepts", p.node.path, tok)
		}
	}
}

// jsonInput returns {key: value} as JSON.
func jsonInput(t *testing.T, key string, value any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(map[string]any{key: value})
	require.NoError(t, err)
	return b
}

// codePointRe finds "U+XXXX" and "U+XXXX–U+YYYY" in documentation.
var codePointRe = regexp.MustCompile(`U\+([0-9A-F]{4,6})(?:–U\+([0-9A-F]{4,6}))?`)

// namedCodePoints returns every code point text names, ranges expanded.
func namedCodePoints(t *testing.T, text string) []rune {
	t.Helper()
	var out []rune
	for _, m := range codePointRe.FindAllStringSubmatch(text, -1) {
		lo, err := strconv.ParseUint(m[1], 16, 32)
		require.NoError(t, err)
		hi := lo
		if m[2] != "" {
			hi, err = strconv.ParseUint(m[2], 16, 32)
			require.NoError(t, err)
		}
		for r := lo; r <= hi; r++ {
			out = append(out, rune(r))
		}
	}
	return out
}

// funcDoc returns the doc comment of the function name in file.
func funcDoc(t *testing.T, file, name string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	require.NoError(t, err)
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == name {
			return fd.Doc.Text()
		}
	}
	t.Fatalf("%s: no function %s", file, name)
	return ""
}

// TestTypedGrammars_DocsListOnlyRefusedCharacters checks the documentation
// that lists characters against the table: every code point the Flags doc
// comment and the README's note on what changed name as refused is
// refused. (inputrules' TestTypedGrammars_PackageCommentMatchesTable checks
// the package comment that defines the rule, class by class.)
//
// Invariant 12 of DESIGN.md.
func TestTypedGrammars_DocsListOnlyRefusedCharacters(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, note, ok := strings.Cut(string(readme), "**More invisible characters are refused.**")
	require.True(t, ok, "README has no note on the characters refused")
	note, _, _ = strings.Cut(note, "\n- ")
	for _, tc := range []struct {
		what, text string
		atLeast    int
	}{
		{"the Flags doc comment", funcDoc(t, "args_flags.go", "Flags"), 10},
		{"the README note", note, 10},
	} {
		t.Run(tc.what, func(t *testing.T) {
			named := namedCodePoints(t, tc.text)
			assert.GreaterOrEqual(t, len(named), tc.atLeast, "the text lists fewer characters than it used to: is the test reading the right place?")
			for _, r := range named {
				assert.True(t, inputrules.Refused(r), "%s names U+%04X, which the gate accepts", tc.what, r)
			}
		})
	}
}
