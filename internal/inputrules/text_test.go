package inputrules

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTypedGrammars_TokenCharactersAreRefusedByClass pins the class of the
// characters the rule is about, one sentence each on why.
//
// Invariant 12 of DESIGN.md.
func TestTypedGrammars_TokenCharactersAreRefusedByClass(t *testing.T) {
	for _, tc := range []struct {
		r    rune
		want Class
		why  string
	}{
		{0x0000, NUL, "NUL ends a C string: no argv can carry it"},
		{0x0001, Control, "C0 controls can move a terminal's cursor"},
		{0x000A, Control, "a newline can forge a second line of an approval"},
		{0x001B, Control, "ESC starts terminal escape sequences"},
		{0x007F, Control, "DEL is a control character"},
		{0x0085, Control, "C1 controls are read as line ends by some terminals"},
		{0x009F, Control, "the last C1 control"},
		{0x061C, Formatting, "the Arabic letter mark reorders text"},
		{0x200E, Formatting, "the left-to-right mark reorders text"},
		{0x202E, Formatting, "the right-to-left override makes an argument read backwards"},
		{0x2066, Formatting, "the left-to-right isolate reorders text"},
		{0x2069, Formatting, "the pop directional isolate ends one"},
		{0x2028, Formatting, "the line separator breaks a line where no newline is seen"},
		{0x2029, Formatting, "the paragraph separator does the same"},
		{0x0600, Formatting, "a prepended concatenation mark is a format character that is drawn, not default-ignorable, and still refused"},
		{0xFFF9, Formatting, "an interlinear annotation anchor can hide text between its marks"},
		{0x13430, Formatting, "an Egyptian hieroglyph format control is a format character"},
		{0x00AD, Invisible, "the soft hyphen is drawn only at a line break"},
		{0x034F, Invisible, "the combining grapheme joiner has no glyph"},
		{0x115F, Invisible, "the Hangul choseong filler renders blank"},
		{0x1160, Invisible, "the Hangul jungseong filler renders blank"},
		{0x17B4, Invisible, "the Khmer inherent vowel has no glyph"},
		{0x180E, Invisible, "the Mongolian vowel separator is drawn as nothing"},
		{0x200B, Invisible, "the zero width space is drawn as nothing"},
		{0x200D, Invisible, "the zero width joiner is drawn as nothing"},
		{0x2060, Invisible, "the word joiner is drawn as nothing"},
		{0x2064, Invisible, "the invisible plus is drawn as nothing"},
		{0x2065, Invisible, "an unassigned default-ignorable code point would be drawn as nothing once assigned"},
		{0x2800, Invisible, "the braille pattern blank is drawn as blank space, so a token of it looks empty"},
		{0x3164, Invisible, "the Hangul filler renders blank"},
		{0xFE0F, Invisible, "a variation selector changes the glyph before it and has none of its own"},
		{0xFEFF, Invisible, "the byte order mark is drawn as nothing"},
		{0xFFA0, Invisible, "the halfwidth Hangul filler renders blank"},
		{0x1D173, Invisible, "a musical symbol format character is drawn as nothing"},
		{0xE0000, Invisible, "the first code point of the tag block is default-ignorable"},
		{0xE0001, Invisible, "the language tag is drawn as nothing"},
		{0xE0041, Invisible, "tag characters can spell hidden ASCII text"},
		{0xE007F, Invisible, "the cancel tag is drawn as nothing"},
		{0xE0100, Invisible, "the supplementary variation selectors are drawn as nothing"},
		{'a', Allowed, "letters are what tokens are made of"},
		{' ', Allowed, "arguments often hold spaces, which are visible as space"},
		{'~', Allowed, "printable ASCII is never refused"},
		{0x00A0, Allowed, "a no-break space is visible as space"},
		{0x00E9, Allowed, "letters outside ASCII are allowed"},
		{0x3000, Allowed, "the ideographic space is visible as space"},
		{0x200A, Allowed, "the hair space is a space, not a format character"},
		{0x1F600, Allowed, "an emoji is visible"},
		{0x10FFFF, Allowed, "a noncharacter is not one of the refused classes"},
	} {
		t.Run(fmt.Sprintf("U+%04X", tc.r), func(t *testing.T) {
			assert.Equal(t, tc.want, ClassOf(tc.r), tc.why)
			assert.Equal(t, tc.want != Allowed, Refused(tc.r), tc.why)
		})
	}
}

// classByProperties is the rule of the package comment written directly
// with unicode.In, rune by rune: the oracle for the table, which is built
// by set arithmetic on the same properties.
func classByProperties(r rune) Class {
	ignorable := unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Cf, unicode.Variation_Selector) &&
		!unicode.In(r, unicode.White_Space, unicode.Prepended_Concatenation_Mark) &&
		!(0xfff9 <= r && r <= 0xfffb) && !(0x13430 <= r && r <= 0x1343f)
	switch {
	case r == 0:
		return NUL
	case unicode.Is(unicode.Cc, r):
		return Control
	case unicode.In(r, unicode.Bidi_Control, unicode.Zl, unicode.Zp):
		return Formatting
	case ignorable || r == 0x2800:
		return Invisible
	case unicode.Is(unicode.Cf, r):
		return Formatting
	}
	return Allowed
}

// TestTypedGrammars_TableAgreesWithUnicodeProperties checks every code
// point: the table gives each the class the properties give it.
//
// Invariant 12 of DESIGN.md.
func TestTypedGrammars_TableAgreesWithUnicodeProperties(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if want := classByProperties(r); ClassOf(r) != want {
			t.Fatalf("U+%04X: table says %v, the properties say %v", r, ClassOf(r), want)
		}
	}
	for i, s := range table {
		require.LessOrEqual(t, s.Lo, s.Hi, "span %d", i)
		if i > 0 {
			require.Less(t, table[i-1].Hi, s.Lo, "spans %d and %d overlap or are out of order", i-1, i)
		}
	}
}

// TestDefaultIgnorableIsUnicodes compares the derived
// Default_Ignorable_Code_Point with the list Unicode publishes for the
// version of Go's tables (DerivedCoreProperties.txt), so that a mistake in
// the derivation, or a new Unicode version that changes the property, is
// seen here and reviewed rather than passed on silently.
func TestDefaultIgnorableIsUnicodes(t *testing.T) {
	if unicode.Version != "15.0.0" {
		t.Fatalf("Go's unicode tables are now version %s: compare Default_Ignorable_Code_Point in that version's DerivedCoreProperties.txt with defaultIgnorable, then update this list", unicode.Version)
	}
	want := runeSet{
		{0x00ad, 0x00ad}, {0x034f, 0x034f}, {0x061c, 0x061c}, {0x115f, 0x1160},
		{0x17b4, 0x17b5}, {0x180b, 0x180f}, {0x200b, 0x200f}, {0x202a, 0x202e},
		{0x2060, 0x206f}, {0x3164, 0x3164}, {0xfe00, 0xfe0f}, {0xfeff, 0xfeff},
		{0xffa0, 0xffa0}, {0xfff0, 0xfff8}, {0x1bca0, 0x1bca3}, {0x1d173, 0x1d17a},
		{0xe0000, 0xe0fff},
	}
	assert.Equal(t, want, defaultIgnorable())
}

// slowTextProblem is TextProblem without the ASCII fast path.
func slowTextProblem(s string) string {
	if !utf8.ValidString(s) {
		return "not valid UTF-8"
	}
	for _, r := range s {
		if c := ClassOf(r); c != Allowed {
			return CharProblem(r, c)
		}
	}
	return ""
}

// TestTextProblemFastPath checks that the printable-ASCII shortcut agrees
// with the character-by-character check on every byte, alone and among
// other text, and on characters outside ASCII.
func TestTextProblemFastPath(t *testing.T) {
	var inputs []string
	for c := range 256 {
		b := string([]byte{byte(c)})
		inputs = append(inputs, b, "ab"+b, b+"cd", "a b"+b+"~")
	}
	inputs = append(inputs,
		"", " ", "~", "plain text/with-ascii_punctuation.!#%*+,:=?@[]^", "é", "a\u0085b", "a\u061cb",
		"a\u200eb", "a\u2028b", "a\u202eb", "a\u2066b", "a\u00adb", "a\u200bb", "a\u2060b", "a\ufeffb",
		"日本語", "a\U0001f600b", "\xc3\x28", "a\x00b", "a\U000e0041b", "\u2800",
	)
	for _, s := range inputs {
		assert.Equal(t, slowTextProblem(s), TextProblem(s), "input %q", s)
		if isPrintableASCII(s) {
			assert.Empty(t, TextProblem(s), "input %q is printable ASCII", s)
		}
	}
}

// TestTokenProblemMessages pins the messages, which the root package
// quotes after the token and config shows at the token's line.
func TestTokenProblemMessages(t *testing.T) {
	for _, tc := range []struct {
		in, want, why string
	}{
		{"git", "", "plain ASCII passes"},
		{"", "", "the empty token is a grammar's business, not a character rule's"},
		{"a\x00b", "contains NUL", "NUL has a message of its own"},
		{"a\nb", "contains the control character U+000A", "controls are named by code point"},
		{"a\u202eb", "contains the formatting character U+202E", "bidirectional controls are formatting characters"},
		{"a\u200bb", "contains the invisible character U+200B", "default-ignorable characters are invisible"},
		{"a\U000e0041b", "contains the invisible character U+E0041", "code points above U+FFFF are named in full"},
		{"\xff", "not valid UTF-8", "invalid UTF-8 is refused before any character is looked at"},
		{"\xff\n", "not valid UTF-8", "and wins over a control character"},
		{strings.Repeat("a", MaxTokenBytes), "", "a token of exactly the bound passes"},
		{strings.Repeat("a", MaxTokenBytes+1), "longer than 32768 bytes", "one byte more does not"},
	} {
		t.Run(tc.why, func(t *testing.T) {
			assert.Equal(t, tc.want, TokenProblem(tc.in))
		})
	}
}
