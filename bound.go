package execgate

import "unicode/utf8"

// boundedBuffer keeps the first max bytes written to it and counts the rest.
// Write never fails and never grows the buffer past max, so a reader that
// drains a pipe into it keeps draining however much the child writes.
// It is not safe for concurrent use.
type boundedBuffer struct {
	buf     []byte
	max     int
	dropped int64
}

func newBoundedBuffer(max int) *boundedBuffer {
	return &boundedBuffer{max: max}
}

// Write keeps what fits and counts the rest as dropped.
func (b *boundedBuffer) Write(p []byte) (int, error) {
	room := b.max - len(b.buf)
	if room > len(p) {
		room = len(p)
	}
	if room > 0 {
		b.buf = append(b.buf, p[:room]...)
	}
	b.dropped += int64(len(p) - room)
	return len(p), nil
}

// Bytes returns the kept bytes and the dropped count. When anything was
// dropped, an incomplete UTF-8 sequence at the end of the kept bytes is
// moved to the dropped count, so a cut never splits a character.
func (b *boundedBuffer) Bytes() ([]byte, int64) {
	if b.dropped == 0 {
		return b.buf, 0
	}
	kept := cutUTF8(b.buf)
	return kept, b.dropped + int64(len(b.buf)-len(kept))
}

// bound cuts p to at most max bytes at a UTF-8 boundary and returns the kept
// bytes and how many were cut.
func bound(p []byte, max int) ([]byte, int64) {
	if len(p) <= max {
		return p, 0
	}
	kept := cutUTF8(p[:max])
	return kept, int64(len(p) - len(kept))
}

// cutUTF8 removes a trailing incomplete UTF-8 sequence from p, if p ends in
// one. Bytes that are not UTF-8 at all are left alone: at most
// utf8.UTFMax-1 bytes are ever removed.
func cutUTF8(p []byte) []byte {
	// Find the start of the last character: at most UTFMax-1 continuation
	// bytes back.
	for i := 1; i < utf8.UTFMax && i <= len(p); i++ {
		c := p[len(p)-i]
		if c&0xC0 == 0x80 { // continuation byte
			continue
		}
		if c < utf8.RuneSelf { // ASCII: complete
			return p
		}
		// A leading byte: does the sequence it starts fit?
		if !utf8.FullRune(p[len(p)-i:]) {
			return p[:len(p)-i]
		}
		return p
	}
	return p
}
