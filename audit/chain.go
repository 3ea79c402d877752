package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
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
	// before Audit returns. For [NewChain], the writer is synced only if it
	// has a Sync() error method, such as *os.File.
	NoSync bool
	// TailOnly makes [OpenChain] check only the last whole line of an
	// existing file (its newline, JSON and own hash) instead of verifying
	// every line, for files too large to read at every start; verify them
	// elsewhere with [VerifyFile]. False verifies the whole file.
	TailOnly bool
	// Perm is the mode of a file [OpenChain] creates. Zero means 0o600. An
	// existing file keeps its mode.
	Perm fs.FileMode
}

// Chain is an [execgate.ReadyAuditor] that appends one [Entry] per
// [execgate.Event] to a hash-chained JSON-lines file: every line carries
// its sequence number, the SHA-256 of the line before it, and a hash of
// its own bytes, so that [Verify] finds a line that was edited, deleted,
// inserted or moved by someone who did not rebuild the chain after it.
// The chain has no secret key: whoever can rewrite the file can rebuild
// every line from the first change on, and cut lines from its end. Keep
// [Head]'s value somewhere the writer of the file cannot change, and check
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
// nothing: a Chain made by [OpenChain] cuts the file back to the end of its
// last whole entry (a full disk leaves a short write; a failed sync leaves
// an entry that may not be on the disk), so the file never ends in a
// partial or unacknowledged entry, and Head stays at the last entry that
// was recorded. If the cut itself fails, the Chain remembers it and cuts
// before it writes anything else; if the process dies first, OpenChain
// cuts the torn line when it opens the file again.
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
// A Chain made by [NewChain] cannot cut its writer back: a write that failed
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

	recovery Recovery
}

var _ execgate.ReadyAuditor = (*Chain)(nil)

// chainFile is what a [Chain] needs of the file it appends to: *os.File,
// opened for appending.
type chainFile interface {
	io.Writer
	io.ReaderAt
	Truncate(size int64) error
	Sync() error
	Stat() (fs.FileInfo, error)
	Close() error
}

// Recovery is what [OpenChain] found at the end of an existing chain file
// and did about it (see [Chain.Recovery]).
type Recovery struct {
	// TornBytes is the number of bytes [OpenChain] cut from the end of the
	// file: a last line that a crash or a full disk left unfinished. It is
	// 0 when the file ended with a whole entry. Without
	// [ChainOptions].NoSync, no Audit had returned nil for those bytes:
	// the call whose entry they began was refused, or the gate died while
	// writing it. With NoSync they may also be an entry whose Audit had
	// returned before a crash lost part of it.
	TornBytes int64 `json:"tornBytes"`
	// Torn holds the bytes that were cut, for whoever wants to keep them.
	Torn []byte `json:"torn,omitempty"`
	// Unfinished lists the intents in the file that no outcome follows
	// (see [Unfinished]): calls that a previous gate started and whose end
	// it did not record. It is nil with [ChainOptions].TailOnly, which
	// does not read the whole file; use [VerifyReport] then.
	Unfinished []Unfinished `json:"unfinished,omitempty"`
}

// OpenChain opens the chain file at path for appending, creating it if it
// does not exist. An existing file is verified first, as [Verify] does
// (only its last whole line with opts.TailOnly), and the [Chain] continues
// it from its last entry.
//
// A torn last line, the trace of a crash or a full disk in the middle of
// a write, is cut off, so that a restarted server can go on appending
// without a person's help: a last line without a newline, or whose
// newline ends a line that is not JSON at all. It is cut only if it is no
// longer than one entry can be, and only if a whole entry precedes it or
// it looks like the start of one (it begins, after any NUL bytes a crash
// can leave, with what an entry begins with), so that a file that is not
// a chain is never cut. [Chain.Recovery] reports how many bytes were cut,
// and which calls the file holds an intent and no outcome for.
//
// Any other damage is refused with a *[VerifyError] and the file is left
// as it is: a broken line before the last, a last line that is JSON but
// not a valid entry, a sequence or chain break. A Chain never extends a
// broken chain or repairs one, since either would hide what happened to
// it. Move the file aside to start a new chain.
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
// verifies f, cuts a torn last line, and returns the Chain.
func openChain(f chainFile, opts ChainOptions) (*Chain, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	keep, err := wholeEnd(f, size)
	if err != nil {
		return nil, err
	}
	var (
		head Head
		rec  Recovery
	)
	if opts.TailOnly {
		head, err = tailHead(f, keep)
	} else {
		var rep Report
		rep, err = VerifyReport(io.NewSectionReader(f, 0, keep))
		head, rec.Unfinished = rep.Head, rep.Unfinished
	}
	if err != nil {
		return nil, err
	}
	if keep < size {
		// Everything before the torn line verified: cut it.
		torn := make([]byte, size-keep)
		if _, err := f.ReadAt(torn, keep); err != nil {
			return nil, fmt.Errorf("reading the torn last line: %w", err)
		}
		if err := f.Truncate(keep); err != nil {
			return nil, fmt.Errorf("cutting the torn last line: %w", err)
		}
		if !opts.NoSync {
			if err := f.Sync(); err != nil {
				return nil, fmt.Errorf("cutting the torn last line: %w", err)
			}
		}
		rec.TornBytes, rec.Torn = size-keep, torn
	}
	c := &Chain{w: f, file: f, closer: f, head: head, off: keep, recovery: rec}
	if !opts.NoSync {
		c.sync = f.Sync
	}
	return c, nil
}

// NewChain returns a [Chain] that writes a new chain, starting at seq 1
// from [Genesis], to w. Each entry is a single Write of one line. Close does
// not close w. Since a [Chain] cannot cut w back, a write or sync that fails
// after part of an entry reached w leaves the Chain failed for good (see
// [Chain]); use [OpenChain] for a file that should recover by itself.
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
// returns [ErrClosed] if the [Chain] was closed, and the error that broke it
// for good, without writing, if a [NewChain] writer holds part of an entry.
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
	line, err := encodeEntry(e)
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

// Ready reports whether the [Chain] can record: nil; the error of the last
// entry that could not be recorded, until an entry is recorded again; the
// error that broke a [NewChain] Chain for good; or [ErrClosed]. It writes
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

// Recovery returns what [OpenChain] found and did when it opened the file:
// the bytes of a torn last line it cut, and the intents without an
// outcome that the file held. A server should log it when TornBytes is
// not 0 or [Unfinished] is not empty. It is the zero [Recovery] for [NewChain].
func (c *Chain) Recovery() Recovery {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.recovery
	r.Torn = slices.Clone(r.Torn)
	r.Unfinished = slices.Clone(r.Unfinished)
	return r
}

// Close stops the [Chain] and, for [OpenChain], closes its file and releases
// its lock. A failed write that could not be cut from the file yet is cut
// first. Later calls to Audit and Ready return [ErrClosed]. Closing a closed
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

// wholeEnd returns the size of the file of the given size without a torn
// last line: the offset just after the newline of the line before it. It
// returns size when there is nothing to cut, or nothing that may be cut;
// verifying what it keeps then reports the problem.
func wholeEnd(r io.ReaderAt, size int64) (int64, error) {
	if size == 0 {
		return 0, nil
	}
	last := make([]byte, 1)
	if _, err := r.ReadAt(last, size-1); err != nil {
		return 0, err
	}
	end := size // the torn line, if any, is [start, size)
	if last[0] == '\n' {
		end = size - 1
	}
	start, ok, err := lineStart(r, end)
	if err != nil || !ok {
		return size, err // longer than one entry: not one torn write
	}
	tail := make([]byte, size-start)
	if _, err := r.ReadAt(tail, start); err != nil {
		return 0, err
	}
	if last[0] == '\n' && json.Valid(tail[:len(tail)-1]) {
		return size, nil // a whole line; verifying it says if it is an entry
	}
	if start == 0 && !entryStart(tail) {
		return size, nil // no whole entry before it, and not the start of one
	}
	return start, nil
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

// entryStart reports whether a torn line could be the start of the first
// entry of a chain: after any NUL bytes (what a crash can leave where data
// was not written yet), it is empty, a prefix of what every entry begins
// with, or begins with that.
func entryStart(tail []byte) bool {
	rest := bytes.TrimSuffix(bytes.TrimLeft(tail, "\x00"), []byte("\n"))
	return bytes.HasPrefix(rest, entryPrefix) || bytes.HasPrefix(entryPrefix, rest)
}

// entryPrefix is how every line a [Chain] writes begins.
var entryPrefix = []byte(`{"seq":`)

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
