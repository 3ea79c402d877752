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
	e := &Hasher{buf: make([]byte, 0, 256)}
	e.str(domain)
	return e
}

func (e *Hasher) u64(v uint64) {
	e.buf = binary.BigEndian.AppendUint64(e.buf, v)
}

func (e *Hasher) str(s string) {
	e.u64(uint64(len(s)))
	e.buf = append(e.buf, s...)
}

// String writes a labelled string.
func (e *Hasher) String(label, s string) {
	e.str(label)
	e.str(s)
}

// Bytes writes a labelled byte slice.
func (e *Hasher) Bytes(label string, b []byte) {
	e.str(label)
	e.u64(uint64(len(b)))
	e.buf = append(e.buf, b...)
}

// Int writes a labelled integer.
func (e *Hasher) Int(label string, v int64) {
	e.str(label)
	e.u64(uint64(v))
}

// Strings writes a labelled list of strings.
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
	return hex.EncodeToString(sum[:])
}
