package inputrules

import (
	"fmt"
	"sort"
	"unicode"
	"unicode/utf8"
)

// MaxTokenBytes is the longest token, in bytes: the longest argument an
// approval may carry.
const MaxTokenBytes = 32 << 10

// Class says why a character may not appear in a token. The zero Class
// allows it.
type Class uint8

// The classes of refused characters, in the order a character is
// classified: a character with more than one of the properties gets the
// first class that has it.
const (
	// Allowed is a character a token may hold.
	Allowed Class = iota
	// NUL is U+0000, which no argv can carry.
	NUL
	// Control is a control character (general category Cc) other than
	// NUL.
	Control
	// Formatting is a bidirectional control (Bidi_Control), a line or
	// paragraph separator (Zl, Zp), or a format character (Cf) that is
	// not default-ignorable.
	Formatting
	// Invisible is a default-ignorable code point that is not a
	// bidirectional control, or U+2800 BRAILLE PATTERN BLANK.
	Invisible
)

// noun is the Class as messages name it.
func (c Class) noun() string {
	switch c {
	case Control:
		return "control character"
	case Formatting:
		return "formatting character"
	case Invisible:
		return "invisible character"
	}
	return "character"
}

// String returns the Class's name.
func (c Class) String() string {
	switch c {
	case Allowed:
		return "allowed"
	case NUL:
		return "NUL"
	}
	return c.noun()
}

// Span is an inclusive range of code points, Lo to Hi.
type Span struct {
	Lo, Hi rune
	Class  Class
}

// table is every refused character by class: sorted, disjoint spans, each
// of one class, adjacent spans of one class merged. latin1 is the class of
// each character below U+0100 and bmpPages says which 256-character pages
// of the Basic Multilingual Plane hold a refused character at all: the
// fast paths of ClassOf, so that the text of most scripts is judged
// without a search.
var (
	table    = buildTable()
	latin1   = buildLatin1()
	bmpPages = buildBMPPages()
)

// Spans returns the refused characters as sorted, disjoint spans, each of
// one class. The slice is a copy.
func Spans() []Span {
	return append([]Span(nil), table...)
}

// ClassOf returns the class of r, Allowed for a character a token may
// hold. Code points outside Unicode's range and surrogates, which valid
// UTF-8 cannot hold, are Allowed here; TextProblem refuses them as
// invalid UTF-8.
func ClassOf(r rune) Class {
	if uint32(r) < uint32(len(latin1)) {
		return latin1[r]
	}
	if uint32(r) < 0x10000 && !bmpPages[r>>8] {
		return Allowed
	}
	// The first span that ends at or after r.
	lo, hi := 0, len(table)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if table[m].Hi < r {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(table) && table[lo].Lo <= r {
		return table[lo].Class
	}
	return Allowed
}

// Refused reports whether r may not appear in a token.
func Refused(r rune) bool { return ClassOf(r) != Allowed }

// TextProblem returns why s may not be a token's text, or "": "not valid
// UTF-8", "contains NUL", or "contains the <class> U+XXXX" for the first
// refused character. It does not bound the length; TokenProblem does.
func TextProblem(s string) string {
	if isPrintableASCII(s) {
		return "" // no printable ASCII character is refused
	}
	return textProblem(s)
}

// textProblem is TextProblem without its fast path: one pass that decodes
// and classifies each character. Invalid UTF-8 anywhere wins over a
// refused character, so the rest of s is checked when one is found.
func textProblem(s string) string {
	for i := 0; i < len(s); {
		var r rune
		n := 1
		if c := s[i]; c < utf8.RuneSelf {
			r = rune(c)
		} else if r, n = utf8.DecodeRuneInString(s[i:]); r == utf8.RuneError && n == 1 {
			return "not valid UTF-8"
		}
		i += n
		if c := ClassOf(r); c != Allowed {
			if !utf8.ValidString(s[i:]) {
				return "not valid UTF-8"
			}
			return CharProblem(r, c)
		}
	}
	return ""
}

// CharProblem is the message for the refused character r of class c:
// "contains NUL" or "contains the <class> U+XXXX".
func CharProblem(r rune, c Class) string {
	if c == NUL {
		return "contains NUL"
	}
	return fmt.Sprintf("contains the %s U+%04X", c.noun(), r)
}

// TokenProblem returns why s may not be a token, or "": longer than
// MaxTokenBytes, or a TextProblem.
func TokenProblem(s string) string {
	if len(s) > MaxTokenBytes {
		return tokenTooLong()
	}
	if isPrintableASCII(s) {
		return "" // no printable ASCII character is refused
	}
	return textProblem(s)
}

func tokenTooLong() string { return fmt.Sprintf("longer than %d bytes", MaxTokenBytes) }

// isPrintableASCII reports whether s holds only bytes from ' ' to '~'.
func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' {
			return false
		}
	}
	return true
}

// braillePatternBlank is refused as Invisible although Unicode does not
// call it default-ignorable: it is drawn as blank space (see the package
// comment).
const braillePatternBlank = 0x2800

// defaultIgnorableExceptions are the code points Unicode removes from
// Other_Default_Ignorable_Code_Point + Cf + Variation_Selector, besides
// White_Space and Prepended_Concatenation_Mark, when it derives
// Default_Ignorable_Code_Point (DerivedCoreProperties.txt): the
// interlinear annotation and the Egyptian hieroglyph format characters,
// which are meant to be seen.
var defaultIgnorableExceptions = runeSet{{0xfff9, 0xfffb}, {0x13430, 0x1343f}}

// defaultIgnorable returns Unicode's Default_Ignorable_Code_Point, built
// from the properties it is derived from.
func defaultIgnorable() runeSet {
	return setOf(unicode.Other_Default_Ignorable_Code_Point).
		union(setOf(unicode.Cf)).
		union(setOf(unicode.Variation_Selector)).
		minus(setOf(unicode.White_Space)).
		minus(defaultIgnorableExceptions).
		minus(setOf(unicode.Prepended_Concatenation_Mark))
}

// classSets returns the refused set of each class, each without the
// characters of the classes before it.
func classSets() [Invisible + 1]runeSet {
	var sets [Invisible + 1]runeSet
	nul := runeSet{{0, 0}}
	control := setOf(unicode.Cc).minus(nul)
	ignorable := defaultIgnorable()
	formatting := setOf(unicode.Bidi_Control).
		union(setOf(unicode.Zl)).
		union(setOf(unicode.Zp)).
		union(setOf(unicode.Cf).minus(ignorable))
	invisible := ignorable.union(runeSet{{braillePatternBlank, braillePatternBlank}})
	sets[NUL] = nul
	sets[Control] = control.minus(nul)
	sets[Formatting] = formatting.minus(nul).minus(control)
	sets[Invisible] = invisible.minus(nul).minus(control).minus(formatting)
	return sets
}

func buildTable() []Span {
	var out []Span
	for c, set := range classSets() {
		for _, s := range set {
			out = append(out, Span{Lo: s.lo, Hi: s.hi, Class: Class(c)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Lo < out[j].Lo })
	merged := out[:0]
	for _, s := range out {
		if n := len(merged); n > 0 && merged[n-1].Class == s.Class && merged[n-1].Hi+1 == s.Lo {
			merged[n-1].Hi = s.Hi
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

func buildLatin1() [0x100]Class {
	var a [0x100]Class
	for _, s := range table {
		for r := s.Lo; r <= s.Hi && r < 0x100; r++ {
			a[r] = s.Class
		}
	}
	return a
}

func buildBMPPages() [0x100]bool {
	var p [0x100]bool
	for _, s := range table {
		for page := s.Lo >> 8; page <= s.Hi>>8 && page < 0x100; page++ {
			p[page] = true
		}
	}
	return p
}
