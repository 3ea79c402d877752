package execgate

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxStdinPreview bounds [StdinInfo.Preview]: the bytes of stdin it shows.
const MaxStdinPreview = 4096

// StdinInfo describes the stdin of a held call for whoever approves it: an
// approver sees what the command will read, not only its argv. An
// [Approval] carries it when the call has stdin.
type StdinInfo struct {
	// Bytes is the size of stdin.
	Bytes int `json:"bytes"`
	// SHA256 is its lowercase hex SHA-256.
	SHA256 string `json:"sha256"`
	// Preview is the start of stdin, at most [MaxStdinPreview] bytes of
	// it, when that is UTF-8 text: control and formatting characters,
	// combining marks, spaces other than U+0020 and the Hangul fillers
	// (a line break included, so that a preview can neither lay out text
	// of its own around it nor hide what it holds) are written as Go
	// escapes ("\n", "\x1b", "\u202e"), and a backslash and a double quote as "\\" and "\"":
	// it is the body of a Go string literal. It is "" when stdin is not
	// UTF-8 text.
	Preview string `json:"preview,omitempty"`
	// PreviewCut reports that Preview shows only the start of stdin.
	PreviewCut bool `json:"previewCut,omitempty"`
}

// stdinInfo describes stdin, or returns nil when there is none.
func stdinInfo(stdin []byte) *StdinInfo {
	if len(stdin) == 0 {
		return nil
	}
	info := &StdinInfo{Bytes: len(stdin), SHA256: stdinSHA256(stdin)}
	head := stdin
	if len(head) > MaxStdinPreview {
		head = cutUTF8(head[:MaxStdinPreview])
		info.PreviewCut = true
	}
	if !utf8.Valid(head) || strings.ContainsRune(string(head), 0) {
		return info
	}
	info.Preview = escapePreview(string(head))
	return info
}

// escapePreview writes control and formatting characters, and the
// backslash, as Go escapes.
func escapePreview(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Mn, unicode.Me, unicode.Zl, unicode.Zp) ||
			unicode.Is(unicode.Zs, r) && r != ' ' || r == '\u3164' || r == '\u115f' || r == '\u1160' || r == '\uffa0':
			if r > 0xffff {
				fmt.Fprintf(&b, `\U%08x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// clone returns a copy of s, or nil.
func (s *StdinInfo) clone() *StdinInfo {
	if s == nil {
		return nil
	}
	c := *s
	return &c
}
