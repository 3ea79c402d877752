// Package canon is the canonical binary encoding that execgate hashes for
// spec fingerprints, proposal digests and approval digests.
//
// An encoding starts with a domain string that names what is encoded and its
// version. Every value after it is written as a label and the value itself.
// Strings and byte slices are an 8-byte big-endian length followed by the
// bytes; integers are 8-byte big-endian two's complement; a list of strings
// is its 8-byte count followed by each string. Labels are strings. Because
// every variable-length value carries its length, no two different sequences
// of values encode to the same bytes.
package canon

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// Hasher collects the canonical encoding of a sequence of values and hashes
// it with SHA-256. The encoding is built in one buffer and hashed once, so
// writing a value copies it once and allocates nothing per value.
type Hasher struct {
	buf []byte
}

// New starts an encoding for the given domain, such as
// "execgate.approval.v1".
func New(domain string) *Hasher {
	return NewBuffer(make([]byte, 0, 256), domain)
}

// NewBuffer is New with the encoding built in buf, from its start; it
// grows buf when it is too small. A caller that hashes often passes a
// buffer on its stack, so that hashing allocates nothing but the result.
// buf must not be used for anything else until Sum has returned.
func NewBuffer(buf []byte, domain string) *Hasher {
	e := &Hasher{buf: buf[:0]}
	e.str(domain)
	return e
}

// room extends the encoding by n bytes and returns them to be written. It
// grows the buffer by copying rather than by append, so that a buffer on
// the caller's stack stays there.
func (e *Hasher) room(n int) []byte {
	l := len(e.buf)
	if n > cap(e.buf)-l {
		nb := make([]byte, l, 2*cap(e.buf)+n)
		copy(nb, e.buf)
		e.buf = nb
	}
	e.buf = e.buf[:l+n]
	return e.buf[l:]
}

func (e *Hasher) u64(v uint64) {
	binary.BigEndian.PutUint64(e.room(8), v)
}

func (e *Hasher) str(s string) {
	e.u64(uint64(len(s)))
	copy(e.room(len(s)), s)
}

// String writes a labeled string.
func (e *Hasher) String(label, s string) {
	e.str(label)
	e.str(s)
}

// Bytes writes a labeled byte slice.
func (e *Hasher) Bytes(label string, b []byte) {
	e.str(label)
	e.u64(uint64(len(b)))
	copy(e.room(len(b)), b)
}

// Int writes a labeled integer.
func (e *Hasher) Int(label string, v int64) {
	e.str(label)
	e.u64(uint64(v))
}

// Strings writes a labeled list of strings.
func (e *Hasher) Strings(label string, ss []string) {
	e.str(label)
	e.u64(uint64(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

// Sum returns the lowercase hex SHA-256 of everything written.
func (e *Hasher) Sum() string {
	sum := sha256.Sum256(e.buf)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}
