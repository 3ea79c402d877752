package execgate

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestBoundedBuffer_KeepsMaxAndCountsTheRest(t *testing.T) {
	b := newBoundedBuffer(10)
	for range 5 {
		n, err := b.Write([]byte("abcdef"))
		assert.NoError(t, err)
		assert.Equal(t, 6, n, "Write reports everything written, so the reader keeps draining")
	}
	kept, dropped := b.Bytes()
	assert.Equal(t, "abcdefabcd", string(kept))
	assert.EqualValues(t, 20, dropped)
	assert.LessOrEqual(t, cap(b.buf), 10+6, "the buffer never grows far past max")
}

// Invariant 6 of DESIGN.md.
func TestBoundedEverything_CutNeverSplitsUTF8(t *testing.T) {
	s := strings.Repeat("aé€😀", 50) // 1-, 2-, 3- and 4-byte characters
	for max := 1; max < 60; max++ {
		b := newBoundedBuffer(max)
		for i := 0; i < len(s); i += 7 { // odd-sized writes
			b.Write([]byte(s[i:min(i+7, len(s))]))
		}
		kept, dropped := b.Bytes()
		assert.True(t, utf8.Valid(kept), "max %d: kept %q", max, kept)
		assert.True(t, strings.HasPrefix(s, string(kept)), "max %d", max)
		assert.LessOrEqual(t, len(kept), max)
		assert.Greater(t, len(kept), max-utf8.UTFMax)
		assert.EqualValues(t, len(s), int64(len(kept))+dropped, "max %d: every byte is kept or counted", max)

		k2, d2 := bound([]byte(s), max)
		assert.Equal(t, kept, k2)
		assert.Equal(t, dropped, d2)
	}
}

func TestBound_LeavesShortAndNonUTF8Alone(t *testing.T) {
	k, d := bound([]byte("short"), 10)
	assert.Equal(t, "short", string(k))
	assert.Zero(t, d)

	// A stream that ends in an incomplete sequence without being cut is
	// reported as it is.
	b := newBoundedBuffer(10)
	b.Write([]byte{'a', 0xE2, 0x82})
	kept, dropped := b.Bytes()
	assert.Equal(t, []byte{'a', 0xE2, 0x82}, kept)
	assert.Zero(t, dropped)

	// Binary output loses at most three bytes to the cut.
	bin := bytes.Repeat([]byte{0xFF, 0x80, 0xC0}, 100)
	k, d = bound(bin, 50)
	assert.GreaterOrEqual(t, len(k), 47)
	assert.EqualValues(t, len(bin), int64(len(k))+d)
}
