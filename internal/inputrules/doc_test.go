package inputrules

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// codePointRe finds "U+XXXX" and "U+XXXX–U+YYYY" in documentation.
var codePointRe = regexp.MustCompile(`U\+([0-9A-F]{4,6})(?:–U\+([0-9A-F]{4,6}))?`)

// codePointsIn returns every code point text names, ranges expanded.
func codePointsIn(t *testing.T, text string) []rune {
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

// packageComment returns the text of doc.go's comment lines.
func packageComment(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	var b strings.Builder
	for _, line := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(line, "//"); ok {
			b.WriteString(strings.TrimPrefix(rest, " "))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// TestTypedGrammars_PackageCommentMatchesTable checks the package comment
// against the table: every code point a bullet of "Characters a token may
// not hold" names has the class the bullet ends with, every code point
// the comment says is allowed is allowed, and every Unicode property the
// table is built from is named.
//
// Invariant 12 of DESIGN.md.
func TestTypedGrammars_PackageCommentMatchesTable(t *testing.T) {
	doc := packageComment(t)
	_, section, ok := strings.Cut(doc, "# Characters a token may not hold\n")
	require.True(t, ok)
	list, allowed, ok := strings.Cut(section, "\nSpace characters")
	require.True(t, ok)
	allowed, _, _ = strings.Cut(allowed, "\n\n")

	classes := map[string]Class{"(NUL).": NUL, "(Control).": Control, "(Formatting).": Formatting, "(Invisible).": Invisible}
	bullets := strings.Split(list, "\n  - ")[1:]
	require.Len(t, bullets, 5)
	for _, bullet := range bullets {
		bullet = strings.TrimSpace(bullet)
		fields := strings.Fields(bullet)
		want, ok := classes[fields[len(fields)-1]]
		require.True(t, ok, "the bullet %q does not end with its class", bullet)
		for _, r := range codePointsIn(t, bullet) {
			assert.Equal(t, want, ClassOf(r), "U+%04X is listed as %v", r, want)
		}
	}
	for _, r := range codePointsIn(t, allowed) {
		assert.Equal(t, Allowed, ClassOf(r), "U+%04X is listed as allowed", r)
	}

	src, err := os.ReadFile("text.go")
	require.NoError(t, err)
	props := regexp.MustCompile(`unicode\.([A-Z][A-Za-z_]+)\b`).FindAllStringSubmatch(string(src), -1)
	seen := 0
	for _, m := range props {
		switch m[1] {
		case "RangeTable", "Is", "In", "Version", "MaxRune":
			continue
		}
		seen++
		assert.Contains(t, list, m[1], "the table is built from unicode.%s, which the comment does not name", m[1])
	}
	assert.Greater(t, seen, 5, "the table's properties were not found in text.go")
}
