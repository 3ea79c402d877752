package inputrules

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxPrincipalBytes bounds a principal's length.
const MaxPrincipalBytes = 256

// principalRule is the tail of every message of PrincipalProblem.
var principalRule = fmt.Sprintf("a principal is 1 to %d bytes of UTF-8 without white space, control, formatting or invisible characters", MaxPrincipalBytes)

// PrincipalProblem returns why p may not be a principal, or "". The empty
// principal is the unknown one and is accepted; a place where one must be
// named (a configuration file) refuses it itself. A principal is valid
// UTF-8 of at most MaxPrincipalBytes bytes holding no white space
// (unicode.IsSpace) and none of the characters a token may not hold (see
// the package comment): it is written into audit records, rate-limit
// state and approval reasons, and must read the same to everyone who sees
// it there.
func PrincipalProblem(p string) string {
	switch {
	case len(p) > MaxPrincipalBytes:
		return principalRule + fmt.Sprintf("; this one has %d bytes", len(p))
	case !utf8.ValidString(p):
		return principalRule + "; this one is not valid UTF-8"
	}
	for _, r := range p {
		if r < utf8.RuneSelf && r > ' ' && r != 0x7f {
			continue
		}
		if c := ClassOf(r); c != Allowed {
			return principalRule + "; this one " + CharProblem(r, c)
		}
		if unicode.IsSpace(r) {
			return principalRule + fmt.Sprintf("; this one contains the white space character U+%04X", r)
		}
	}
	return ""
}
