package execgate

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/execgate/execgate/internal/inputrules"
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
	// it, when stdin is UTF-8 text (all of it, not only its start: valid
	// UTF-8 without NUL): control, formatting and invisible characters
	// (those an argument may not hold, the Hangul fillers among them),
	// combining marks and spaces other than U+0020 (a line break
	// included, so that a preview can neither lay out text of its own
	// around it nor hide what it holds) are written as Go escapes ("\n",
	// "\x1b", "\u202e"), and a backslash and a double quote as "\\" and
	// "\"": it is the body of a Go string literal. It is "" when stdin
	// is not UTF-8 text: then only its size and SHA-256 are shown.
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
	if !utf8.Valid(stdin) || bytes.IndexByte(stdin, 0) >= 0 {
		// Not text: a preview of its start would show the approver text
		// where the command reads something else.
		return info
	}
	head := stdin
	if len(head) > MaxStdinPreview {
		head = cutUTF8(head[:MaxStdinPreview])
		info.PreviewCut = true
	}
	info.Preview = escapePreview(string(head))
	return info
}

// escapePreview writes s as the body of a quoted string an approver is
// shown: see escapeShown.
func escapePreview(s string) string { return escapeShown(s, true) }

// escapeShown writes s for an approver to read: control, formatting and
// invisible characters (those a token may not hold, the Hangul fillers
// among them), combining marks and spaces other than U+0020 as Go
// escapes, a byte that is not UTF-8 as "\xff", the
// backslash as "\\" and, when quoted (s will be shown between double
// quotes), the double quote as "\"". Nothing in s can then break a line,
// end a quoted value early or pass for an escape of its own.
func escapeShown(s string, quoted bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			fmt.Fprintf(&b, `\x%02x`, s[i])
			i++
			continue
		}
		i += size
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '"' && quoted:
			b.WriteString(`\"`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case inputrules.Refused(r) || unicode.In(r, unicode.Mn, unicode.Me) || unicode.Is(unicode.Zs, r) && r != ' ':
			// What a token may not hold (controls, formatting and
			// invisible characters, the Hangul fillers among them), and
			// what could join or space text in ways a reader misses.
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
