package inputrules

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"regexp"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// publishedTokenPattern is the pattern "^[^" + SchemaClass() + "]*$" as a
// validator receives it: encoded as JSON the way schemas are sent
// (EscapeJSON), then decoded.
func publishedTokenPattern(t *testing.T) (jsonText []byte, pattern string) {
	t.Helper()
	raw, err := json.Marshal("^[^" + SchemaClass() + "]*$")
	require.NoError(t, err)
	jsonText = EscapeJSON(raw)
	require.NoError(t, json.Unmarshal(jsonText, &pattern))
	return jsonText, pattern
}

// TestTypedGrammars_SchemaClassRefusesEveryRefusedRune compiles the
// published token pattern with Go's regexp (RE2, as Go validators do) and
// checks every code point: the pattern accepts a character exactly when a
// token may hold it.
//
// Invariant 12 of DESIGN.md.
func TestTypedGrammars_SchemaClassRefusesEveryRefusedRune(t *testing.T) {
	jsonText, pattern := publishedTokenPattern(t)
	for i := 0; i < len(jsonText); {
		r, n := utf8.DecodeRune(jsonText[i:])
		require.False(t, Refused(r), "the pattern's JSON carries U+%04X raw", r)
		i += n
	}
	re, err := regexp.Compile(pattern)
	require.NoError(t, err)
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if 0xd800 <= r && r <= 0xdfff {
			continue // not in valid UTF-8
		}
		s := "a" + string(r) + "b"
		if re.MatchString(s) == Refused(r) {
			t.Fatalf("U+%04X: refused by the gate: %v, accepted by the pattern: %v", r, Refused(r), re.MatchString(s))
		}
	}
}

// nodeCheck reads a JSON string holding a pattern on stdin, compiles it
// as a JavaScript engine does for JSON Schema (the u flag), and prints the
// code points the pattern refuses as [lo, hi] ranges, then whether the
// pattern compiles without the u flag.
const nodeCheck = `
let src = '';
process.stdin.on('data', d => src += d);
process.stdin.on('end', () => {
  const pattern = JSON.parse(src);
  const re = new RegExp(pattern, 'u');
  const ranges = [];
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    if (re.test('a' + String.fromCodePoint(cp) + 'b')) continue;
    const last = ranges[ranges.length - 1];
    if (last && last[1] === cp - 1) last[1] = cp; else ranges.push([cp, cp]);
  }
  let plain = 'compiles';
  try { new RegExp(pattern); } catch (e) { plain = 'SyntaxError'; }
  console.log(JSON.stringify({ranges, plain}));
});
`

// TestTypedGrammars_SchemaClassUnderECMAScript runs the published token
// pattern through a JavaScript engine, when node is installed: with the u
// flag, which JSON Schema specifies and validators such as Ajv use, it
// refuses exactly the characters the gate refuses, those above U+FFFF
// included; without it, the pattern does not compile, so such a validator
// rejects the schema rather than accepting a refused character.
//
// Invariant 12 of DESIGN.md.
func TestTypedGrammars_SchemaClassUnderECMAScript(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	jsonText, _ := publishedTokenPattern(t)
	cmd := exec.Command(node, "-e", nodeCheck)
	cmd.Stdin = bytes.NewReader(jsonText)
	out, err := cmd.Output()
	require.NoError(t, err)
	var got struct {
		Ranges [][2]rune `json:"ranges"`
		Plain  string    `json:"plain"`
	}
	require.NoError(t, json.Unmarshal(out, &got))
	var want [][2]rune
	for _, s := range mergedSpans() {
		want = append(want, [2]rune{s.lo, s.hi})
	}
	assert.Equal(t, want, got.Ranges)
	assert.Equal(t, "SyntaxError", got.Plain)
}

// TestEscapeJSON pins how schema bytes are escaped, one sentence a case.
func TestEscapeJSON(t *testing.T) {
	for _, tc := range []struct {
		in, want, why string
	}{
		{`{"a":"b"}`, `{"a":"b"}`, "text without refused characters is returned as is"},
		{"{\"a\":\"x\u200by\"}", `{"a":"x\u200by"}`, "a refused character in a value is escaped"},
		{"{\"x\u00ady\":1}", `{"x\u00ady":1}`, "and in a key"},
		{"{\"a\":\"\U000e0041\"}", `{"a":"\udb40\udc41"}`, "above U+FFFF it becomes a surrogate pair, as JSON writes it"},
		{"{\"a\":\"\x7f\"}", `{"a":"\u007f"}`, "DEL, which encoding/json leaves raw, is escaped"},
		{"{\n  \"a\": \"\u2028\"\n}", "{\n  \"a\": \"\\u2028\"\n}", "white space between tokens is left alone"},
		{`{"a":"\"` + "\u200b" + `\\"}`, `{"a":"\"\u200b\\"}`, "escaped quotes and backslashes do not end the string early"},
		{`{"a":"é ü"}`, `{"a":"é ü"}`, "characters a token may hold are left raw"},
	} {
		t.Run(tc.why, func(t *testing.T) {
			got := EscapeJSON([]byte(tc.in))
			assert.Equal(t, tc.want, string(got))
			var before, after any
			require.NoError(t, json.Unmarshal([]byte(tc.in), &before))
			require.NoError(t, json.Unmarshal(got, &after))
			assert.Equal(t, before, after, "escaping changes no value")
		})
	}
}
