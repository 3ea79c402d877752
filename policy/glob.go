package policy

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxPatternLen bounds the length of a principal or tool pattern, in bytes.
const maxPatternLen = 256

// glob is a checked pattern. '*' matches any run of characters, dots
// included, and '?' matches exactly one character; every other character
// matches itself. A pattern matches a whole string, case-sensitively.
type glob struct {
	pat     string
	literal bool // no wildcard: matching is string equality
	prefix  int  // bytes before the first wildcard
}

// compileToolGlob checks a pattern over command names. Besides '*' and '?',
// it may hold only the characters a CommandSpec name may hold: ASCII
// letters, digits, '_', '-' and '.'.
func compileToolGlob(pat string) (glob, error) {
	if err := checkPatternShape(pat); err != nil {
		return glob{}, err
	}
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		if c == '*' || c == '?' || isNameByte(c) {
			continue
		}
		return glob{}, fmt.Errorf("%q: character %q is not allowed; a tool pattern holds letters, digits, '_', '-', '.', '*' and '?'", pat, rune(c))
	}
	return newGlob(pat), nil
}

// compilePrincipalGlob checks a pattern over principals. Principals are
// opaque strings chosen by the embedding program, so any printable
// character is allowed except white space and the reserved '[', ']', '{',
// '}' and '\', which are refused so that a pattern written for another
// glob dialect fails instead of matching something unexpected.
func compilePrincipalGlob(pat string) (glob, error) {
	if err := checkPatternShape(pat); err != nil {
		return glob{}, err
	}
	if !utf8.ValidString(pat) {
		return glob{}, fmt.Errorf("%q: not valid UTF-8", pat)
	}
	for _, r := range pat {
		switch {
		case strings.ContainsRune(`[]{}\`, r):
			return glob{}, fmt.Errorf("%q: character %q is reserved; patterns support only '*' and '?'", pat, r)
		case unicode.IsSpace(r) || !unicode.IsPrint(r):
			return glob{}, fmt.Errorf("%q: white space and control characters are not allowed", pat)
		}
	}
	return newGlob(pat), nil
}

// checkPatternShape applies the rules common to both kinds of pattern.
func checkPatternShape(pat string) error {
	switch {
	case pat == "":
		return fmt.Errorf("empty pattern; use \"*\" to match everything")
	case len(pat) > maxPatternLen:
		return fmt.Errorf("pattern is %d bytes long; at most %d", len(pat), maxPatternLen)
	case strings.Contains(pat, "**"):
		return fmt.Errorf("%q: \"**\" is not a pattern here; a single '*' already matches any characters, dots included", pat)
	}
	return nil
}

func newGlob(pat string) glob {
	i := strings.IndexAny(pat, "*?")
	if i < 0 {
		return glob{pat: pat, literal: true, prefix: len(pat)}
	}
	return glob{pat: pat, prefix: i}
}

// exactGlob returns the glob that matches s and nothing else, whatever
// characters s holds.
func exactGlob(s string) glob {
	return glob{pat: s, literal: true, prefix: len(s)}
}

// isNameByte reports whether c may appear in a command name.
func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// isStar reports whether g matches every string.
func (g glob) isStar() bool { return g.pat == "*" }

// match reports whether g matches the whole of s. It does not allocate and
// runs in O(len(pattern) * len(s)) time at worst.
func (g glob) match(s string) bool {
	if g.literal {
		return g.pat == s
	}
	if len(s) < g.prefix || s[:g.prefix] != g.pat[:g.prefix] {
		return false
	}
	p, n := g.pat[g.prefix:], s[g.prefix:]
	pi, ni := 0, 0
	// The position after the last '*' seen, and where in n its match
	// currently ends; -1 before any '*'.
	star, starN := -1, 0
	for ni < len(n) {
		if pi < len(p) {
			switch c := p[pi]; c {
			case '*':
				star, starN = pi+1, ni
				pi++
				continue
			case '?':
				_, size := utf8.DecodeRuneInString(n[ni:])
				pi++
				ni += size
				continue
			default:
				if c == n[ni] {
					pi++
					ni++
					continue
				}
			}
		}
		if star < 0 {
			return false
		}
		// Let the last '*' swallow one more character and retry.
		_, size := utf8.DecodeRuneInString(n[starN:])
		starN += size
		pi, ni = star, starN
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
