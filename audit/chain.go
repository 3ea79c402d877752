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

// ErrClosed is what a closed [Chain] reports from Ready and Audit.
var ErrClosed = errors.New("audit: chain is closed")

// ChainOptions configure a [Chain]. The zero value syncs every entry to
// disk and verifies the whole of an existing file before appending to it.
type ChainOptions struct {
	// NoSync skips the fsync after each entry, trading the guarantee that
	// a recorded entry survives a crash for speed. False syncs every entry
	// before Audit returns. For NewChain, the writer is synced only if it
	// has a Sync() error method, such as *os.File.
	NoSync bool
	// TailOnly makes OpenChain check only the last whole line of an
	// existing file (its newline, JSON and own hash) instead of verifying
	// every line, for files too large to read at every start; verify them
	// elsewhere with VerifyFile. False verifies the whole file.
	TailOnly bool
	// Perm is the mode of a file OpenChain creates. Zero means 0o600. An
	// existing file keeps its mode.
	Perm fs.FileMode
}

// Chain is an [execgate.ReadyAuditor] that appends one [Entry] per
// [execgate.Event] to a hash-chained JSON-lines file: every line carries
// its sequence number, the SHA-256 of the line before it, and a hash of
// its own bytes, so that Verify finds a line that was edited, deleted,
// inserted or moved by someone who did not rebuild the chain after it.
// The chain has no secret key: whoever can rewrite the file can rebuild
// every line from the first change on, and cut lines from its end. Keep
// Head's value somewhere the writer of the file cannot change, and check
// the file against it with [VerifyAnchored], to detect that too.
//
// An entry is recorded when Audit returns nil: it was written whole with
// one write and, unless [ChainOptions].NoSync is set, synced. The Executor
// hands a call's intent to Audit before it starts the call's process, and
// starts nothing when Audit fails, so the file holds an intent entry for
// every process that started, and no other.
//
// # Write failures
//
// A Chain fails closed and recovers by itself. When an entry cannot be
// encoded, written or synced, Audit returns the error and records
// nothing: a Chain made by OpenChain cuts the file back to the end of its
// last whole entry (a full disk leaves a short write; a failed sync leaves
// an entry that may not be on the disk), so the file never ends in a
// partial or unacknowledged entry, and Head stays at the last entry that
// was recorded. If the cut itself fails, the Chain remembers it and cuts
// before it writes anything else.
//
// From the failure on, Ready returns the error, so an Executor refuses
// the calls that need a record (a process to start, an approval to store
// or take) with an *[execgate.AuditError] instead of running them without
// one. Ready does not write: recovery comes from the next Audit, which
// tries again. The Executor records every call it refuses, those refused
// because of Ready included, so each refused call is a new attempt to
// write; the first that succeeds (once the disk has space again) clears
// the error, and the calls after it run. No restart is needed.
//
// A Chain made by NewChain cannot cut its writer back: a write that failed
// after part of an entry reached the writer, or a failed sync, leaves
// bytes the trail cannot vouch for, and the Chain then stays failed for
// good (Close it, check the output with Verify, and start a new one). A
// write that failed before any byte of the entry was taken is retried by
// the next Audit, as for OpenChain.
//
// A Chain is safe for concurrent use; entries are written in the order
// Audit calls reach it. Only one Chain may append to a file at a time:
// OpenChain takes an advisory lock on the file, where the platform has
// one, and refuses a file another Chain holds.
type Chain struct {
	mu     sync.Mutex
	w      io.Writer
	file   chainFile // OpenChain's file, which a failed write is cut from; nil for NewChain
	sync   func() error
	closer io.Closer
	head   Head
	off    int64 // the file's size up to the end of its last recorded entry (file only)
	cut    bool  // the file holds bytes past off that must be cut before the next write
	err    error // the last failure; nil again once an entry is recorded
	broken error // a failure that cannot be undone: Audit refuses for good
	closed bool
}

var _ execgate.ReadyAuditor = (*Chain)(nil)

// chainFile is what a Chain needs of the file it appends to: *os.File,
// opened for appending.
type chainFile interface {
	io.Writer
	io.ReaderAt
	Truncate(size int64) error
	Sync() error
	Stat() (fs.FileInfo, error)
	Close() error
}

// OpenChain opens the chain file at path for appending, creating it if it
// does not exist. An existing file is verified first, as [Verify] does
// (only its last line with opts.TailOnly), and the Chain continues it from
// its last line. A file that fails verification is refused with a
// *[VerifyError] and left as it is: a Chain never extends a broken chain
// or repairs one, since either would hide what happened to it. Move the
// file aside to start a new chain.
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
	c, err := openChain(f, opts)
	if err != nil {
		f.Close()
		var ve *VerifyError
		if errors.As(err, &ve) {
			return nil, err
		}
		return nil, fmt.Errorf("audit: open chain %s: %w", path, err)
	}
	return c, nil
}

// openChain continues the chain in f, which is open for appending: it
// verifies f and returns the Chain.
func openChain(f chainFile, opts ChainOptions) (*Chain, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	var head Head
	if opts.TailOnly {
		head, err = tailHead(f, size)
	} else {
		head, err = VerifyHead(io.NewSectionReader(f, 0, size))
	}
	if err != nil {
		return nil, err
	}
	c := &Chain{w: f, file: f, closer: f, head: head, off: size}
	if !opts.NoSync {
		c.sync = f.Sync
	}
	return c, nil
}

// NewChain returns a [Chain] that writes a new chain, starting at seq 1
// from Genesis, to w. Each entry is a single Write of one line. Close does
// not close w. Since a Chain cannot cut w back, a write or sync that fails
// after part of an entry reached w leaves the Chain failed for good (see
// [Chain]); use OpenChain for a file that should recover by itself.
func NewChain(w io.Writer, opts ChainOptions) *Chain {
	c := &Chain{w: w, head: Head{SHA256: Genesis}}
	if s, ok := w.(interface{ Sync() error }); ok && !opts.NoSync {
		c.sync = s.Sync
	}
	return c
}

// Audit appends ev as the next line of the chain and, unless NoSync was
// set, syncs it; it returns nil only then. An Event is written as it is:
// its Phase, empty included, is the entry's phase.
//
// When the entry cannot be recorded, Audit returns the error and leaves
// the file ending at its last recorded entry (see [Chain] for how). It
// returns ErrClosed if the Chain was closed, and the error that broke it
// for good, without writing, if a NewChain writer holds part of an entry.
func (c *Chain) Audit(_ context.Context, ev execgate.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if c.broken != nil {
		return c.broken
	}
	e := Entry{Seq: c.head.Seq + 1, Prev: c.head.SHA256, Event: ev}
	if c.cut {
		if err := c.cutBack(); err != nil {
			c.err = fmt.Errorf("audit: chain entry %d not recorded: the file still ends in a failed write, which cannot be cut: %w", e.Seq, err)
			return c.err
		}
	}
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
	n, err := c.w.Write(line)
	if err == nil && n < len(line) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return c.failed(e.Seq, n > 0, "not recorded", err)
	}
	if c.sync != nil {
		if err := c.sync(); err != nil {
			return c.failed(e.Seq, true, "not synced", err)
		}
	}
	c.off += int64(len(line))
	c.head = Head{Seq: e.Seq, SHA256: hash}
	c.err = nil
	return nil
}

// failed records the failure of entry seq. If some of it may have reached
// the file (wrote), the file is cut back to its last recorded entry, or,
// for a NewChain writer, which cannot be cut, the Chain breaks for good.
func (c *Chain) failed(seq uint64, wrote bool, what string, err error) error {
	c.err = fmt.Errorf("audit: chain entry %d %s: %w", seq, what, err)
	if !wrote {
		return c.err
	}
	if c.file == nil {
		c.broken = fmt.Errorf("%w (part of it may have reached the writer, which cannot be cut back: the chain stays failed)", c.err)
		c.err = c.broken
		return c.err
	}
	c.cut = true
	if cerr := c.cutBack(); cerr != nil {
		c.err = fmt.Errorf("%w; cutting it from the file failed too, and is tried again before the next entry: %v", c.err, cerr)
	}
	return c.err
}

// cutBack cuts the file to the end of its last recorded entry and, when
// the Chain syncs, syncs the cut, so that the entry cannot come back.
func (c *Chain) cutBack() error {
	if err := c.file.Truncate(c.off); err != nil {
		return err
	}
	if c.sync != nil {
		if err := c.sync(); err != nil {
			return err
		}
	}
	c.cut = false
	return nil
}

// Ready reports whether the Chain can record: nil; the error of the last
// entry that could not be recorded, until an entry is recorded again; the
// error that broke a NewChain Chain for good; or ErrClosed. It writes
// nothing, so it never stands in the way of the Audit that recovers (see
// [Chain]).
func (c *Chain) Ready(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	return c.err
}

// Head returns the end of the chain as recorded so far: its last recorded
// entry. Keep it somewhere the file's writers cannot change (another
// system's log, a ticket, a signed note) and check the file against it
// later with [VerifyAnchored], to detect lines cut from its end.
func (c *Chain) Head() Head {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.head
}

// Close stops the Chain and, for OpenChain, closes its file and releases
// its lock. A failed write that could not be cut from the file yet is cut
// first. Later calls to Audit and Ready return ErrClosed. Closing a closed
// Chain does nothing.
func (c *Chain) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	if c.cut {
		if err := c.cutBack(); err != nil {
			errs = append(errs, fmt.Errorf("audit: cutting a failed write from the chain file: %w", err))
		}
	}
	if c.closer != nil {
		errs = append(errs, c.closer.Close())
	}
	return errors.Join(errs...)
}

// lineStart returns the offset of the first byte of the line that ends at
// end (exclusive): just after the newline before it, or 0. ok is false if
// that line is longer than MaxLineBytes, which no entry is.
func lineStart(r io.ReaderAt, end int64) (start int64, ok bool, err error) {
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	for pos := end; pos > 0; {
		if end-pos > MaxLineBytes {
			return 0, false, nil
		}
		n := min(int64(chunk), pos)
		b := buf[:n]
		if _, err := r.ReadAt(b, pos-n); err != nil {
			return 0, false, err
		}
		pos -= n
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			start = pos + int64(i) + 1
			return start, end-start <= MaxLineBytes, nil
		}
	}
	return 0, end <= MaxLineBytes, nil
}

// tailHead checks the last line of the first size bytes of a chain file
// and returns its Head. Errors found in the line are *VerifyError with
// Line 0.
func tailHead(r io.ReaderAt, size int64) (Head, error) {
	if size == 0 {
		return Head{SHA256: Genesis}, nil
	}
	last := make([]byte, 1)
	if _, err := r.ReadAt(last, size-1); err != nil {
		return Head{}, err
	}
	if last[0] != '\n' {
		return Head{}, &VerifyError{Problem: ProblemTruncated, Detail: "the file does not end with a newline"}
	}
	start, ok, err := lineStart(r, size-1)
	if err != nil {
		return Head{}, err
	}
	if !ok {
		return Head{}, &VerifyError{Problem: ProblemTooLong, Detail: fmt.Sprintf("longer than %d bytes", MaxLineBytes)}
	}
	line := make([]byte, size-1-start)
	if _, err := r.ReadAt(line, start); err != nil {
		return Head{}, err
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
