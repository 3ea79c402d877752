package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/execgate/execgate"
)

// Problem says what is wrong with a line of a chain file.
type Problem string

// The problems [Verify] reports, in the order it checks each line.
const (
	// ProblemTruncated is a last line without a newline: it was cut
	// short, or a write was interrupted. [Verify] reports it; [OpenChain]
	// cuts such a line before it appends.
	ProblemTruncated Problem = "truncated"
	// ProblemTooLong is a line longer than [MaxLineBytes].
	ProblemTooLong Problem = "too_long"
	// ProblemBadJSON is a line that is not a JSON object with a numeric
	// seq and string prev and hash.
	ProblemBadJSON Problem = "bad_json"
	// ProblemHash is a line whose bytes do not match its own hash: the
	// line was edited.
	ProblemHash Problem = "hash_mismatch"
	// ProblemSequence is a line whose seq is not one more than the
	// previous line's (1 on the first line): lines were deleted,
	// reordered or repeated.
	ProblemSequence Problem = "sequence"
	// ProblemChain is a line whose prev is not the SHA-256 of the
	// previous line ([Genesis] on the first line): the previous line was
	// rewritten with a hash to match, or this line was forged.
	ProblemChain Problem = "chain_broken"
	// ProblemMissing is a file that ends before the line an anchor names
	// ([VerifyAnchored]): lines were cut from the end.
	ProblemMissing Problem = "missing"
	// ProblemAnchor is a line an anchor names that is not the line that
	// was written ([VerifyAnchored]).
	ProblemAnchor Problem = "anchor_mismatch"
)

// VerifyError reports the first line of a chain file that is broken or
// missing.
type VerifyError struct {
	// Line is the 1-based number of the first broken or missing line. It
	// is 0 when [OpenChain] checked only the last line of a file
	// ([ChainOptions.TailOnly]) and found it broken.
	Line int
	// Problem says what is wrong.
	Problem Problem
	// Detail explains the problem in words; it never quotes the line.
	Detail string
}

// Error implements error.
func (e *VerifyError) Error() string {
	where := fmt.Sprintf("line %d", e.Line)
	if e.Line == 0 {
		where = "last line"
	}
	return fmt.Sprintf("audit: %s: %s: %s", where, e.Problem, e.Detail)
}

// Head identifies the end of a chain: its last line. Keep a Head outside
// the file (see [Chain.Head]) to detect lines cut from its end, which the
// file alone cannot show.
type Head struct {
	// Seq is the last line's seq, or 0 for an empty chain.
	Seq uint64 `json:"seq"`
	// SHA256 is the lowercase hex SHA-256 of the last line without its
	// newline, the prev of the next line; [Genesis] for an empty chain.
	SHA256 string `json:"sha256"`
}

// Verify reads a chain file from r and reports its first broken line as a
// *[VerifyError], or an error from r. It checks, line by line: that the
// file ends with a newline, the line length, that each line is JSON with
// seq, prev and hash, the line's own hash, that seq counts up from 1 by
// one, and that prev is the SHA-256 of the line before ([Genesis] for the
// first).
//
// Any edit of a line is reported at that line; a deleted, repeated or
// reordered line at the first line out of sequence. A line rewritten with
// hashes that match, which anyone who can write the file can compute, is
// reported at the line after it. Two changes cannot be caught from the file
// alone: rewriting its last line with matching hashes, and cutting whole
// lines from its end. [VerifyAnchored] catches both, up to the line a
// [Head] kept elsewhere names. An empty file is a valid, empty chain.
//
// An intent entry that no outcome follows (see [Unfinished]) is not a
// broken chain: it is what a gate that stopped while a process ran leaves
// behind. Verify passes such a file; [VerifyReport] lists those calls.
func Verify(r io.Reader) error {
	_, err := VerifyHead(r)
	return err
}

// VerifyFile opens the named chain file and verifies it (see [Verify]).
func VerifyFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return Verify(f)
}

// VerifyHead verifies a chain like [Verify] and returns its [Head], to
// keep elsewhere or to compare with one kept elsewhere. On error, the [Head]
// is that of the last good line.
func VerifyHead(r io.Reader) (Head, error) {
	return walk(r, nil)
}

// Report is what [VerifyReport] learned of a chain file besides whether
// it is intact.
type Report struct {
	// Head is the end of the chain, as [VerifyHead] returns it; [Head.Seq]
	// is the number of entries.
	Head Head `json:"head"`
	// Intents is the number of intent entries (phase
	// [execgate.PhaseIntent]): calls whose process was about to be
	// started.
	Intents uint64 `json:"intents"`
	// Outcomes is the number of every other entry: outcomes (phase
	// [execgate.PhaseOutcome]), and entries with no phase, which a [Chain]
	// wrote before Events had one and which are outcomes too.
	Outcomes uint64 `json:"outcomes"`
	// Unfinished lists, in file order, the intents that no later entry
	// with the same trace ID closes.
	Unfinished []Unfinished `json:"unfinished,omitempty"`
}

// Unfinished is an intent entry that no outcome entry with its trace ID
// follows: the gate recorded that it was handing a call's process to its
// ExecFn and recorded nothing about that call after it. Most often the
// gate stopped (a crash, a kill, a power cut) while the process ran, or
// the outcome could not be written (a full disk); while the gate is still
// running, it may also be a call that has not ended yet. The process may
// have run to its end; rarely, when the gate died between recording the
// intent and starting the process, it did not start at all. Either way
// the trail does not say how the call ended.
type Unfinished struct {
	// Seq is the intent entry's seq, which is its line number.
	Seq uint64 `json:"seq"`
	// TraceID is the call's trace ID: the Result's ID.
	TraceID string `json:"traceId"`
	// Op is the call's operation: [execgate.OpRun] or
	// [execgate.OpExecute].
	Op string `json:"op"`
	// Name is the command name of the call.
	Name string `json:"name,omitempty"`
	// Principal is whose call it was.
	Principal string `json:"principal,omitempty"`
	// Time is when the call started, from the entry; zero if the entry's
	// time is not an RFC 3339 time.
	Time time.Time `json:"time"`
}

// String describes u on one line, such as
//
//	seq 7: run git.log by alice at 2026-11-30T12:00:07Z, trace 0197a0b0-0000-7000-8000-000000000007: started, no outcome recorded
//
// The op, name, principal and trace ID are written as they are when they
// hold only letters, digits, '.', '_', '-', '@' and ':', and quoted as Go
// strings otherwise, so that a hostile value can neither forge a line nor
// reach a terminal's control sequences.
func (u Unfinished) String() string {
	b := make([]byte, 0, 160)
	b = append(b, "seq "...)
	b = strconv.AppendUint(b, u.Seq, 10)
	b = append(b, ": "...)
	b = appendWord(b, u.Op)
	if u.Name != "" {
		b = append(b, ' ')
		b = appendWord(b, u.Name)
	}
	if u.Principal != "" {
		b = append(b, " by "...)
		b = appendWord(b, u.Principal)
	}
	if !u.Time.IsZero() {
		b = append(b, " at "...)
		b = u.Time.AppendFormat(b, time.RFC3339Nano)
	}
	b = append(b, ", trace "...)
	b = appendWord(b, u.TraceID)
	b = append(b, ": started, no outcome recorded"...)
	return string(b)
}

// appendWord appends s as it is if it is a non-empty run of safe
// characters, and quoted otherwise.
func appendWord(b []byte, s string) []byte {
	if s == "" {
		return strconv.AppendQuote(b, s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && !strings.ContainsRune("._-@:", rune(c)) {
			return strconv.AppendQuote(b, s)
		}
	}
	return append(b, s...)
}

// VerifyReport verifies a chain like [Verify] and also pairs each intent
// entry with the outcome entry of the same trace ID, to list the calls
// that started and have no outcome ([Report].Unfinished). An entry whose
// phase is [execgate.PhaseIntent] opens a call; any other entry with the
// same trace ID after it closes the oldest open one. [Unfinished] intents
// do not make the chain fail: the error is that of [Verify]. On error, the
// [Report] holds what was learned up to the last good line.
//
// The pairing holds the open intents in memory, a few hundred bytes each:
// a file that holds only intents needs memory in proportion to its size.
func VerifyReport(r io.Reader) (Report, error) {
	p := pairing{open: make(map[string][]Unfinished)}
	head, err := walk(r, p.add)
	return p.report(head), err
}

// pairing matches intents with their outcomes, for [VerifyReport].
type pairing struct {
	open              map[string][]Unfinished // by trace ID, oldest first
	intents, outcomes uint64
}

func (p *pairing) add(h Head, f *lineFields) error {
	if f.phase == execgate.PhaseIntent {
		p.intents++
		p.open[f.traceID] = append(p.open[f.traceID], Unfinished{
			Seq: h.Seq, TraceID: f.traceID, Op: f.op, Name: f.name, Principal: f.principal, Time: f.time,
		})
		return nil
	}
	p.outcomes++
	switch q := p.open[f.traceID]; len(q) {
	case 0:
	case 1:
		delete(p.open, f.traceID)
	default:
		p.open[f.traceID] = q[1:]
	}
	return nil
}

func (p *pairing) report(head Head) Report {
	rep := Report{Head: head, Intents: p.intents, Outcomes: p.outcomes}
	for _, q := range p.open {
		rep.Unfinished = append(rep.Unfinished, q...)
	}
	slices.SortFunc(rep.Unfinished, func(a, b Unfinished) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	return rep
}

// VerifyAnchored verifies a chain like [Verify] and also checks that it
// still holds the line anchor names, unchanged: the line whose seq is
// anchor.Seq must exist ([ProblemMissing] otherwise) and hash to
// anchor.SHA256 ([ProblemAnchor] otherwise). Since seq counts lines, that is
// line anchor.Seq. An anchor with Seq 0 checks nothing more than Verify.
func VerifyAnchored(r io.Reader, anchor Head) error {
	found := anchor.Seq == 0
	head, err := walk(r, func(h Head, _ *lineFields) error {
		if h.Seq != anchor.Seq {
			return nil
		}
		if !hexEqual(h.SHA256, anchor.SHA256) {
			return &VerifyError{Problem: ProblemAnchor, Detail: "the line is not the one the anchor names"}
		}
		found = true
		return nil
	})
	if err != nil {
		return err
	}
	if !found {
		return &VerifyError{
			Line:    int(min(anchor.Seq, uint64(maxInt))),
			Problem: ProblemMissing,
			Detail:  fmt.Sprintf("the file ends after seq %d; the anchor names seq %d", head.Seq, anchor.Seq),
		}
	}
	return nil
}

// walk verifies a chain line by line and calls each, if not nil, with the
// Head after every good line and the line's fields. An error from each is
// placed on that line.
func walk(r io.Reader, each func(Head, *lineFields) error) (Head, error) {
	head := Head{SHA256: Genesis}
	lr := lineReader{r: bufio.NewReaderSize(r, 64<<10)}
	for n := 1; ; n++ {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			return head, nil
		}
		if err != nil {
			return head, lineError(n, err)
		}
		f, err := checkLine(line)
		if err != nil {
			return head, lineError(n, err)
		}
		if f.seq != head.Seq+1 {
			return head, lineError(n, sequenceError(f.seq, head.Seq+1))
		}
		if !hexEqual(f.prev, head.SHA256) {
			detail := "prev is not the SHA-256 of the previous line"
			if n == 1 {
				detail = "prev of the first line is not Genesis"
			}
			return head, lineError(n, &VerifyError{Problem: ProblemChain, Detail: detail})
		}
		head = Head{Seq: f.seq, SHA256: lineSHA256(line)}
		if each != nil {
			if err := each(head, &f); err != nil {
				return head, lineError(n, err)
			}
		}
	}
}

const maxInt = int(^uint(0) >> 1)

// lineFields are the fields of a line that passed checkLine: its chain
// fields, and those [VerifyReport] pairs intents and outcomes by. The latter
// are read leniently: a value of the wrong type is "" (or a zero time),
// since the chain's integrity does not depend on them.
type lineFields struct {
	seq  uint64
	prev string

	op, phase, traceID, name, principal string
	time                                time.Time
}

// checkLine checks what can be checked of one line on its own: its JSON,
// its chain fields and its own hash.
func checkLine(line []byte) (lineFields, error) {
	var f struct {
		Seq  *uint64 `json:"seq"`
		Prev *string `json:"prev"`
		Hash *string `json:"hash"`

		Op        json.RawMessage `json:"op"`
		Phase     json.RawMessage `json:"phase"`
		TraceID   json.RawMessage `json:"traceId"`
		Name      json.RawMessage `json:"name"`
		Principal json.RawMessage `json:"principal"`
		Time      json.RawMessage `json:"time"`
	}
	if err := json.Unmarshal(line, &f); err != nil {
		return lineFields{}, &VerifyError{Problem: ProblemBadJSON, Detail: "not a JSON object with numeric seq and string prev and hash"}
	}
	switch {
	case f.Seq == nil:
		return lineFields{}, &VerifyError{Problem: ProblemBadJSON, Detail: "no seq"}
	case f.Prev == nil:
		return lineFields{}, &VerifyError{Problem: ProblemBadJSON, Detail: "no prev"}
	case f.Hash == nil:
		return lineFields{}, &VerifyError{Problem: ProblemBadJSON, Detail: "no hash"}
	}
	if !isHex64(*f.Prev) {
		return lineFields{}, &VerifyError{Problem: ProblemBadJSON, Detail: "prev is not 64 lowercase hex digits"}
	}
	if err := checkOwnHash(line); err != nil {
		return lineFields{}, err
	}
	lf := lineFields{
		seq: *f.Seq, prev: *f.Prev,
		op: rawString(f.Op), phase: rawString(f.Phase), traceID: rawString(f.TraceID),
		name: rawString(f.Name), principal: rawString(f.Principal),
	}
	if t, err := time.Parse(time.RFC3339Nano, rawString(f.Time)); err == nil {
		lf.time = t
	}
	return lf, nil
}

// rawString decodes a JSON string, or returns "" for anything else.
func rawString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// checkOwnHash checks that the line ends with `,"hash":"<hex>"}` and that
// hex is the SHA-256 of everything before that comma.
func checkOwnHash(line []byte) error {
	n := len(line) - hashSuffixLen
	if n < 1 || !bytes.HasPrefix(line[n:], []byte(`,"hash":"`)) || !bytes.HasSuffix(line, []byte(`"}`)) {
		return &VerifyError{Problem: ProblemHash, Detail: `the line does not end with its hash`}
	}
	got := line[n+len(`,"hash":"`) : len(line)-len(`"}`)]
	if !isHex64(string(got)) {
		return &VerifyError{Problem: ProblemHash, Detail: "hash is not 64 lowercase hex digits"}
	}
	sum := sha256.Sum256(line[:n])
	want := hex.AppendEncode(nil, sum[:])
	if subtle.ConstantTimeCompare(got, want) != 1 {
		return &VerifyError{Problem: ProblemHash, Detail: "the line's content does not match its hash"}
	}
	return nil
}

func sequenceError(got, want uint64) *VerifyError {
	what := "a line is missing or out of order"
	if got < want {
		what = "a line is repeated or out of order"
	}
	return &VerifyError{Problem: ProblemSequence, Detail: fmt.Sprintf("seq %d, want %d: %s", got, want, what)}
}

// lineError places a problem found on line n; other errors pass as they
// are.
func lineError(n int, err error) error {
	var ve *VerifyError
	if errors.As(err, &ve) {
		out := *ve
		out.Line = n
		return &out
	}
	return err
}

func hexEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// lineReader splits a chain file into lines, refusing a last line without
// a newline and lines over [MaxLineBytes].
type lineReader struct {
	r   *bufio.Reader
	buf []byte
}

// next returns the next line without its newline, valid until the next
// call; io.EOF at the end of a well-formed file; or a *VerifyError.
func (lr *lineReader) next() ([]byte, error) {
	lr.buf = lr.buf[:0]
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if len(lr.buf)+len(chunk) > MaxLineBytes+1 {
			return nil, &VerifyError{Problem: ProblemTooLong, Detail: fmt.Sprintf("longer than %d bytes", MaxLineBytes)}
		}
		switch {
		case err == nil:
			if len(lr.buf) == 0 {
				return chunk[:len(chunk)-1], nil
			}
			lr.buf = append(lr.buf, chunk...)
			return lr.buf[:len(lr.buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			lr.buf = append(lr.buf, chunk...)
		case errors.Is(err, io.EOF):
			if len(lr.buf)+len(chunk) == 0 {
				return nil, io.EOF
			}
			return nil, &VerifyError{Problem: ProblemTruncated, Detail: "the file does not end with a newline"}
		default:
			return nil, err
		}
	}
}
