package execgate

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCloneArgs checks the copy prepare makes of every argv: equal
// strings in new memory that no argument of the input shares, and a
// refusal of NUL anywhere.
func TestCloneArgs(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{},
		{""},
		{"", "", ""},
		{"log", "--max-count=20", "", "--", "src", "docs/README.md"},
		{"é", "日本語", "\U0001f600"},
	} {
		got, ok := cloneArgs(args)
		require.True(t, ok, "%q", args)
		require.NotNil(t, got, "%q: the copy is never nil", args)
		assert.Equal(t, len(args), len(got))
		for i := range args {
			assert.Equal(t, args[i], got[i])
			if args[i] == "" {
				continue
			}
			out := uintptr(unsafe.Pointer(unsafe.StringData(got[i])))
			for _, a := range args {
				in := uintptr(unsafe.Pointer(unsafe.StringData(a)))
				overlaps := a != "" && out < in+uintptr(len(a)) && in < out+uintptr(len(got[i]))
				assert.False(t, overlaps, "%q: argument %d shares memory with the input", args, i)
			}
		}
	}
	for _, args := range [][]string{{"a\x00"}, {"ok", "\x00"}, {"ok", "", "x\x00y"}} {
		_, ok := cloneArgs(args)
		assert.False(t, ok, "%q holds NUL", args)
	}
}
