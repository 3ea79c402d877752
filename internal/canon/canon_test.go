package canon_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/execgate/execgate/internal/canon"
)

// write writes the same values to h whatever its buffer.
func write(h *canon.Hasher, long string) {
	h.String("name", "git.log")
	h.Int("timeout", -30)
	h.Bytes("stdin", []byte{0, 1, 2})
	h.Bytes("empty", nil)
	h.Strings("args", []string{"log", "", long})
}

// want is the encoding write produces after the domain "d", built by hand
// from the package's definition.
func want(long string) string {
	var b []byte
	str := func(s string) {
		b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	str("d")
	str("name")
	str("git.log")
	str("timeout")
	b = binary.BigEndian.AppendUint64(b, uint64(0xffffffffffffffe2)) // -30
	str("stdin")
	str("\x00\x01\x02")
	str("empty")
	str("")
	str("args")
	b = binary.BigEndian.AppendUint64(b, 3)
	str("log")
	str("")
	str(long)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestNewBufferMatchesNew checks that a caller's buffer, too small, empty
// or large enough, changes nothing in the digest, and that both match the
// documented encoding.
func TestNewBufferMatchesNew(t *testing.T) {
	for _, long := range []string{"x", strings.Repeat("y", 5000)} {
		expected := want(long)
		h := canon.New("d")
		write(h, long)
		assert.Equal(t, expected, h.Sum(), "New")
		for _, size := range []int{0, 1, 9, 64, 1024, 1 << 14} {
			buf := make([]byte, size)
			for i := range buf {
				buf[i] = 0xaa // what was in the buffer before must not matter
			}
			h := canon.NewBuffer(buf, "d")
			write(h, long)
			assert.Equal(t, expected, h.Sum(), "NewBuffer with %d bytes", size)
		}
	}
}
