package audit

import (
	"fmt"

	"github.com/execgate/execgate"
)

// NextLine returns the line a [Chain] whose end is head appends for ev,
// without its newline, and the [Head] of the chain after it: the [Entry]
// with seq head.Seq+1, prev head.SHA256 and ev's fields, encoded and hashed
// exactly as a Chain writes it, its argv left out ([Entry].ArgsOmitted)
// when the line would otherwise be longer than [MaxLineBytes]. Start a new
// chain from Head{SHA256: Genesis}.
//
// It is for trails kept elsewhere than in a file, such as a database
// table, so that they hold the very lines a chain file holds: written one
// after the other, each followed by a newline, they are a chain file that
// [Verify] checks. NextLine keeps no state; the caller must make sure that
// no two lines are made from the same head.
func NextLine(head Head, ev execgate.Event) (line []byte, next Head, err error) {
	e := Entry{Seq: head.Seq + 1, Prev: head.SHA256, Event: ev}
	line, err = encodeEntry(e)
	if err != nil {
		return nil, head, err
	}
	return line, Head{Seq: e.Seq, SHA256: lineSHA256(line)}, nil
}

// encodeEntry returns the line for e as a Chain writes it, without its
// newline: without its argv if it would be longer than MaxLineBytes.
func encodeEntry(e Entry) ([]byte, error) {
	line, err := encodeLine(e)
	if err == nil && len(line) > MaxLineBytes {
		e.Args, e.ArgsOmitted = nil, true
		line, err = encodeLine(e)
		if err == nil && len(line) > MaxLineBytes {
			err = fmt.Errorf("entry is longer than %d bytes", MaxLineBytes)
		}
	}
	return line, err
}
