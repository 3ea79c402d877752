package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"

	"github.com/execgate/execgate"
)

// ErrClosed is what a closed Chain reports from Ready and Audit.
var ErrClosed = errors.New("audit: chain is closed")

// ChainOptions configure a Chain. The zero value syncs every entry to disk
// and verifies the whole of an existing file before appending to it.
type ChainOptions struct {
	// NoSync skips the fsync after each entry, trading the guarantee that
	// a recorded entry survives a crash for speed. False syncs every entry
	// before Audit returns. For NewChain, the writer is synced only if it
	// has a Sync() error method, such as *os.File.
	NoSync bool
	// TailOnly makes OpenChain check only the last line of an existing
	// file (its newline, JSON and own hash) instead of verifying every
	// line, for files too large to read at every start; verify them
	// elsewhere with VerifyFile. False verifies the whole file.
	TailOnly bool
	// Perm is the mode of a file OpenChain creates. Zero means 0o600. An
	// existing file keeps its mode.
	Perm fs.FileMode
}

// Chain is an execgate.ReadyAuditor that appends one Entry per Event to a
// hash-chained JSON-lines file: every line carries its sequence number,
// the SHA-256 of the line before it, and a hash of its own bytes, so that
// Verify finds a line that was edited, deleted, inserted or moved by
// someone who did not rebuild the chain after it. The chain has no secret
// key: whoever can rewrite the file can rebuild every line from the first
// change on, and cut lines from its end. Keep Head's value somewhere the
// writer of the file cannot change, and check the file against it with
// VerifyAnchored, to detect that too.
//
// A Chain fails closed. When an entry cannot be encoded, written or
// synced, Audit returns the error and the Chain stays failed: Ready and
// every later Audit return that error, and nothing more is written, so
// that an Executor refuses further calls instead of running them without
// a record. (The call whose record failed has already run.) A failed Chain
// does not recover; Close it, inspect the file with VerifyFile, and open a
// new one.
//
// A Chain is safe for concurrent use; entries are written in the order
// Audit calls reach it. Only one Chain may append to a file at a time:
// OpenChain takes an advisory lock on the file, where the platform has
// one, and refuses a file another Chain holds.
type Chain struct {
	mu     sync.Mutex
	w      io.Writer
	sync   func() error
	closer io.Closer
	head   Head
	err    error
	closed bool
}

var _ execgate.ReadyAuditor = (*Chain)(nil)

// OpenChain opens the chain file at path for appending, creating it if it
// does not exist. An existing file is verified first, as Verify does (only
// its last line with opts.TailOnly), and the Chain continues it from its
// last line. A file that fails verification is refused with a
// *VerifyError and left as it is: a Chain never extends a broken chain or
// repairs one, since either would hide what happened to it. Move the file
// aside to start a new chain.
func OpenChain(path string, opts ChainOptions) (*Chain, error) {
	perm := opts.Perm
	if perm == 0 {
		perm = 0o600
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, perm)
	if err != nil {
		return nil, fmt.Errorf("audit: open chain: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("audit: open chain %s: another Chain holds the file: %w", path, err)
	}
	var head Head
	if opts.TailOnly {
		head, err = tailHead(f)
	} else {
		head, err = VerifyHead(f)
	}
	if err != nil {
		f.Close()
		var ve *VerifyError
		if errors.As(err, &ve) {
			return nil, err
		}
		return nil, fmt.Errorf("audit: open chain %s: %w", path, err)
	}
	c := &Chain{w: f, closer: f, head: head}
	if !opts.NoSync {
		c.sync = f.Sync
	}
	return c, nil
}

// NewChain returns a Chain that writes a new chain, starting at seq 1 from
// Genesis, to w. Each entry is a single Write of one line. Close does not
// close w.
func NewChain(w io.Writer, opts ChainOptions) *Chain {
	c := &Chain{w: w, head: Head{SHA256: Genesis}}
	if s, ok := w.(interface{ Sync() error }); ok && !opts.NoSync {
		c.sync = s.Sync
	}
	return c
}

// Audit appends ev as the next line of the chain and, unless NoSync was
// set, syncs it. It returns the Chain's sticky error, or ErrClosed, without
// writing anything if the Chain has failed or was closed.
func (c *Chain) Audit(_ context.Context, ev execgate.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if c.err != nil {
		return c.err
	}
	e := Entry{Seq: c.head.Seq + 1, Prev: c.head.SHA256, Event: ev}
	line, err := encodeLine(e)
	if err == nil && len(line) > MaxLineBytes {
		e.Args, e.ArgsOmitted = nil, true
		line, err = encodeLine(e)
		if err == nil && len(line) > MaxLineBytes {
			err = fmt.Errorf("entry is longer than %d bytes", MaxLineBytes)
		}
	}
	if err != nil {
		c.err = fmt.Errorf("audit: chain entry %d not recorded: %w", e.Seq, err)
		return c.err
	}
	hash := lineSHA256(line)
	line = append(line, '\n')
	if _, err := c.w.Write(line); err != nil {
		c.err = fmt.Errorf("audit: chain entry %d not recorded: %w", e.Seq, err)
		return c.err
	}
	if c.sync != nil {
		if err := c.sync(); err != nil {
			c.err = fmt.Errorf("audit: chain entry %d not synced: %w", e.Seq, err)
			return c.err
		}
	}
	c.head = Head{Seq: e.Seq, SHA256: hash}
	return nil
}

// Ready reports whether the Chain can record: nil, the error that made it
// fail, or ErrClosed.
func (c *Chain) Ready(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	return c.err
}

// Head returns the end of the chain as written so far. Keep it somewhere
// the file's writers cannot change (another system's log, a ticket, a
// signed note) and check the file against it later with VerifyAnchored, to
// detect lines cut from its end.
func (c *Chain) Head() Head {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.head
}

// Close stops the Chain and, for OpenChain, closes its file and releases
// its lock. Later calls to Audit and Ready return ErrClosed. Closing a
// closed Chain does nothing.
func (c *Chain) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.closer != nil {
		return c.closer.Close()
	}
	return nil
}

// tailHead checks the last line of an open chain file and returns its
// Head. Errors found in the line are *VerifyError with Line 0.
func tailHead(f *os.File) (Head, error) {
	st, err := f.Stat()
	if err != nil {
		return Head{}, err
	}
	size := st.Size()
	if size == 0 {
		return Head{SHA256: Genesis}, nil
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, size-1); err != nil {
		return Head{}, err
	}
	if last[0] != '\n' {
		return Head{}, &VerifyError{Problem: ProblemTruncated, Detail: "the file does not end with a newline"}
	}
	// Read backwards from the final newline to the one before it.
	end := size - 1
	var line []byte
	const chunk = 64 << 10
	for pos := end; ; {
		if int64(len(line)) > MaxLineBytes {
			return Head{}, &VerifyError{Problem: ProblemTooLong, Detail: fmt.Sprintf("longer than %d bytes", MaxLineBytes)}
		}
		if pos == 0 {
			break
		}
		n := min(int64(chunk), pos)
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, pos-n); err != nil {
			return Head{}, err
		}
		pos -= n
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			line = append(buf[i+1:], line...)
			break
		}
		line = append(buf, line...)
	}
	if len(line) > MaxLineBytes {
		return Head{}, &VerifyError{Problem: ProblemTooLong, Detail: fmt.Sprintf("longer than %d bytes", MaxLineBytes)}
	}
	fields, err := checkLine(line)
	if err != nil {
		return Head{}, err
	}
	if fields.seq == 0 {
		return Head{}, &VerifyError{Problem: ProblemSequence, Detail: "seq 0: a chain counts from 1"}
	}
	if fields.seq == 1 && !hexEqual(fields.prev, Genesis) {
		return Head{}, &VerifyError{Problem: ProblemChain, Detail: "prev of the first line is not Genesis"}
	}
	return Head{Seq: fields.seq, SHA256: lineSHA256(line)}, nil
}
