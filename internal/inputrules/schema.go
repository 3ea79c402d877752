package inputrules

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// schemaClass is SchemaClass's result, built once from the table.
var schemaClass = buildSchemaClass()

// SchemaClass returns the characters Refused reports as the body of a
// regular expression character class, without the brackets: "[^" +
// SchemaClass() + "]*" matches the text a token may hold. Each character
// is written as itself, one range per span of the table.
//
// Written as itself, a character means the same to RE2 (Go's regexp) and
// to ECMA-262 with the u flag, which JSON Schema specifies for "pattern":
// both read a pattern as code points, and a character other than \ ] ^ -
// stands for itself in a class (none of those four is refused). The JSON
// a schema is sent as carries these characters as \uXXXX escapes (see
// EscapeJSON), which a JSON decoder turns back into the characters, so
// the pattern a validator compiles is the one above. The ranges above
// U+FFFF, such as the tag characters, arrive in a JavaScript string as
// surrogate pairs: with the u flag they are code points again; a
// validator that compiles patterns without the u flag reads such a range
// as a range between two surrogates in the wrong order and refuses the
// pattern as a syntax error rather than accepting what the gate refuses.
func SchemaClass() string { return schemaClass }

func buildSchemaClass() string {
	var b strings.Builder
	for _, s := range mergedSpans() {
		b.WriteRune(s.lo)
		if s.hi == s.lo {
			continue
		}
		if s.hi > s.lo+1 {
			b.WriteByte('-')
		}
		b.WriteRune(s.hi)
	}
	return b.String()
}

// mergedSpans returns the refused characters, whatever their class, as
// sorted, disjoint, non-adjacent ranges.
func mergedSpans() runeSet {
	s := make(runeSet, 0, len(table))
	for _, t := range table {
		s = append(s, runeRange{t.Lo, t.Hi})
	}
	return s.normalize()
}

// EscapeJSON returns the JSON text b with every character Refused reports
// inside a string written as a \uXXXX escape (two, a surrogate pair, above
// U+FFFF), so that a schema's bytes never carry such a character raw:
// what the JSON means is unchanged, and a person reading it sees where
// each one is. White space between tokens is left as it is. When b holds
// nothing to escape, it is returned as is.
func EscapeJSON(b []byte) []byte {
	var out []byte // nil until something is escaped
	inString, escaped := false, false
	done := 0 // b[:done] is in out
	for i := 0; i < len(b); {
		c := b[i]
		if !inString || c < utf8.RuneSelf {
			switch {
			case !inString:
				inString = c == '"'
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			case latin1[c] != Allowed:
				out = append(out, b[done:i]...)
				out = appendUnicodeEscape(out, rune(c))
				done = i + 1
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError && Refused(r) {
			out = append(out, b[done:i]...)
			if r >= 0x10000 {
				hi, lo := utf16.EncodeRune(r)
				out = appendUnicodeEscape(appendUnicodeEscape(out, hi), lo)
			} else {
				out = appendUnicodeEscape(out, r)
			}
			done = i + n
		}
		i += n
	}
	if out == nil {
		return b
	}
	return append(out, b[done:]...)
}

func appendUnicodeEscape(out []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(out, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}
