package execgate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStdinInfo_ShowsTextSafely(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		stdin    string
		preview  string
		cut      bool
	}{
		{"plain text is shown as it is", "kind: ClusterRoleBinding", "kind: ClusterRoleBinding", false},
		{"line breaks and tabs are escaped, so a preview lays out nothing of its own", "a\nb\tc\r\n", `a\nb\tc\r\n`, false},
		{"a terminal escape is escaped", "x\x1b[2Jy", `x\x1b[2Jy`, false},
		{"a bidirectional override is escaped", "abc\u202edef", `abc\u202edef`, false},
		{"a combining mark is escaped, so it cannot attach to the quote after a preview", "a\u0301", `a\u0301`, false},
		{"a space other than the ASCII one is escaped", "a\u00a0b\u3000c d", `a\u00a0b\u3000c d`, false},
		{"a Hangul filler is escaped", "x\u3164y", `x\u3164y`, false},
		{"a tag character beyond the BMP is escaped as one", "t\U000e0041", `t\U000e0041`, false},
		{"a backslash is escaped, so an escape in the text cannot pass for one of ours", `a\nb`, `a\\nb`, false},
		{"a double quote is escaped, so the preview is the body of a quoted string", `say "hi"`, `say \"hi\"`, false},
		{"bytes that are not UTF-8 show no preview", "a\xffb", "", false},
		{"a NUL shows no preview", "a\x00b", "", false},
		{"text whose bytes past the preview are not UTF-8 shows no preview: what is shown is text only when the command reads text", strings.Repeat("y", MaxStdinPreview+10) + "\xff", "", false},
		{"a NUL past the preview shows no preview either", strings.Repeat("y", MaxStdinPreview+10) + "\x00", "", false},
		{"a character drawn as nothing is escaped, as an argument may not hold it", "a\u2800b\u200bc", `a\u2800b\u200bc`, false},
		{"a long stdin is cut at MaxStdinPreview", strings.Repeat("y", MaxStdinPreview+10), strings.Repeat("y", MaxStdinPreview), true},
		{"the cut never splits a character", strings.Repeat("y", MaxStdinPreview-1) + "é", strings.Repeat("y", MaxStdinPreview-1), true},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			info := stdinInfo([]byte(tc.stdin))
			require.NotNil(t, info)
			assert.Equal(t, len(tc.stdin), info.Bytes)
			assert.Equal(t, stdinSHA256([]byte(tc.stdin)), info.SHA256)
			assert.Equal(t, tc.preview, info.Preview)
			assert.Equal(t, tc.cut, info.PreviewCut)
		})
	}
	assert.Nil(t, stdinInfo(nil), "a call without stdin has no StdinInfo")
}
