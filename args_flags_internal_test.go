package execgate

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCheckArgTextFastPath checks that the printable-ASCII shortcut of
// checkArgText agrees with the character-by-character check on every
// byte, alone and among other text, and on characters outside ASCII.
func TestCheckArgTextFastPath(t *testing.T) {
	var inputs []string
	for c := range 256 {
		b := string([]byte{byte(c)})
		inputs = append(inputs, b, "ab"+b, b+"cd", "a b"+b+"~")
	}
	inputs = append(inputs,
		"", " ", "~", "plain text/with-ascii_punctuation.!#%*+,:=?@[]^", "é", "a\u0085b", "a\u061cb",
		"a\u200eb", "a\u2028b", "a\u202eb", "a\u2066b", "a\u00adb", "a\u200bb", "a\u2060b", "a\ufeffb",
		"日本語", "a\U0001f600b", "\xc3\x28", "a\x00b",
	)
	for _, s := range inputs {
		assert.Equal(t, argTextProblem(s), checkArgText(s), "input %q", s)
		if isPrintableASCII(s) {
			assert.Empty(t, argTextProblem(s), "input %q is printable ASCII", s)
		}
	}
}

// TestFlagFieldNames checks the field names flagField builds for issues,
// which an accepted call never formats.
func TestFlagFieldNames(t *testing.T) {
	for _, tt := range []struct {
		f    flagField
		want string
	}{
		{argField(0), "args[0]"},
		{argField(12), "args[12]"},
		{flagField{name: "max-count", index: -1}, "flags.max-count"},
		{flagField{name: "o", index: 0}, "flags.o[0]"},
		{flagField{name: "tag", index: 2}, "flags.tag[2]"},
	} {
		assert.Equal(t, tt.want, tt.f.String(), fmt.Sprintf("%+v", tt.f))
	}
}
