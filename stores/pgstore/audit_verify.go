package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execgate/execgate/audit"
)

// AuditVerifyError reports the first entry of an audit table that is
// broken or missing, as VerifyAudit finds it. Match it with errors.As; it
// also matches an *audit.VerifyError (whose Line is Seq), so that code
// that reports a broken chain file reports a broken table the same way.
// It never quotes the entry.
type AuditVerifyError struct {
	// Table is the audit table, quoted.
	Table string
	// Seq is the place in the chain of the first broken or missing entry:
	// the seq that entry has, or should have (for a missing entry, the
	// row found in its place has a higher one).
	Seq uint64
	// Problem says what is wrong, in the audit package's terms:
	// audit.ProblemHash for an entry edited in place, audit.ProblemSequence
	// for one deleted (or a seq repeated or out of order),
	// audit.ProblemChain for an entry rewritten with hashes to match (it is
	// reported at the entry after it), audit.ProblemBadJSON for a line
	// that is not an entry at all.
	Problem audit.Problem
	// Detail explains the problem in words.
	Detail string
}

// Error returns a message such as `pgstore: audit table "execgate_audit":
// entry 7: hash_mismatch: the line's content does not match its hash`.
func (e *AuditVerifyError) Error() string {
	return fmt.Sprintf("pgstore: audit table %s: entry %d: %s: %s", e.Table, e.Seq, e.Problem, e.Detail)
}

// Unwrap returns the problem as an *audit.VerifyError, with Line the
// entry's seq.
func (e *AuditVerifyError) Unwrap() error {
	return &audit.VerifyError{Line: int(min(e.Seq, uint64(int(^uint(0)>>1)))), Problem: e.Problem, Detail: e.Detail}
}

// VerifyAudit checks the audit table named table ("" meaning
// DefaultAuditTable), as audit.VerifyReport checks a chain file, and
// returns the same Report: the chain's Head, the number of intents and
// outcomes, and the calls whose intent no outcome follows. It reads the
// table in seq order in one snapshot, so that entries appended meanwhile
// are not seen, and reports the first broken or missing entry as an
// *AuditVerifyError; any other error is the database's. Each row is
// checked against its line and the row before it: its seq must be one
// more than the previous row's (1 for the first), prev_sha256 the SHA-256
// of the previous row's line (audit.Genesis for the first) and
// line_sha256 that of its own line; and the lines, one after the other,
// must be a chain file that audit.VerifyReport passes.
//
// As for a file, no table can show on its own that entries were cut from
// its end, or that its last entry was rewritten by someone who recomputed
// its hashes: keep Auditor.Head elsewhere now and then, and check the table
// against it with ExportAudit and audit.VerifyAnchored.
func VerifyAudit(ctx context.Context, pool *pgxpool.Pool, table string) (audit.Report, error) {
	t, err := parseAuditTable(table)
	if err != nil {
		return audit.Report{}, err
	}
	pr, pw := io.Pipe()
	type verified struct {
		rep audit.Report
		err error
	}
	done := make(chan verified, 1)
	go func() {
		rep, err := audit.VerifyReport(pr)
		_ = pr.CloseWithError(errVerified) // a feed still writing stops
		done <- verified{rep, err}
	}()
	feedErr := feedAudit(ctx, pool, t, pw, true)
	if feedErr != nil {
		_ = pw.CloseWithError(errFeedStopped)
	} else {
		_ = pw.Close()
	}
	v := <-done
	var ve *audit.VerifyError
	switch {
	case errors.As(v.err, &ve):
		// A line before the feed stopped, if it did, is broken.
		return v.rep, &AuditVerifyError{Table: t.quoted, Seq: uint64(ve.Line), Problem: ve.Problem, Detail: ve.Detail}
	case v.err != nil && !errors.Is(v.err, errFeedStopped):
		return v.rep, v.err
	case feedErr != nil:
		// A row's columns are wrong, or the database failed.
		return v.rep, feedErr
	}
	return v.rep, nil
}

// errVerified is what a feed's writes return once the verifier has
// stopped reading, and errFeedStopped what the verifier reads once the
// feed has stopped early.
var (
	errVerified    = errors.New("pgstore: the verifier stopped reading")
	errFeedStopped = errors.New("pgstore: the rows stopped early")
)

// ExportAudit writes the audit table named table ("" meaning
// DefaultAuditTable) to w as the chain file it amounts to: each row's
// line, in seq order, followed by a newline, read in one snapshot. The
// output is what an audit.Chain would have written for the same entries,
// so the audit package's tools work on it: audit.VerifyAnchored checks it
// against a Head kept elsewhere, and `execgate audit verify` checks it as
// a file. ExportAudit checks nothing itself; use VerifyAudit for that.
func ExportAudit(ctx context.Context, pool *pgxpool.Pool, table string, w io.Writer) error {
	t, err := parseAuditTable(table)
	if err != nil {
		return err
	}
	return feedAudit(ctx, pool, t, w, false)
}

// feedAudit reads the table in seq order and writes each line and a
// newline to w. With check, it also checks each row's columns, and stops
// before a row whose columns are wrong, returning an *AuditVerifyError for
// it.
func feedAudit(ctx context.Context, pool *pgxpool.Pool, t auditTable, w io.Writer, check bool) error {
	rows, err := pool.Query(ctx, `SELECT seq, prev_sha256, line_sha256, line FROM `+t.quoted+` ORDER BY seq`)
	if err != nil {
		return fmt.Errorf("pgstore: reading audit table %s: %w", t.quoted, err)
	}
	defer rows.Close()
	var (
		want = uint64(1)
		prev = audit.Genesis
		row  struct {
			seq              int64
			prevSHA, lineSHA string
			line             []byte
		}
	)
	for rows.Next() {
		if err := rows.Scan(&row.seq, &row.prevSHA, &row.lineSHA, &row.line); err != nil {
			return fmt.Errorf("pgstore: reading audit table %s: %w", t.quoted, err)
		}
		sum := sha256.Sum256(row.line)
		own := hex.EncodeToString(sum[:])
		if check {
			if err := checkRow(t, want, prev, own, row.seq, row.prevSHA, row.lineSHA); err != nil {
				return err
			}
		}
		if _, err := w.Write(append(row.line, '\n')); err != nil {
			return err
		}
		want, prev = want+1, own
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("pgstore: reading audit table %s: %w", t.quoted, err)
	}
	return nil
}

// checkRow checks the columns of the row at place want of the chain,
// after a row whose line hashes to prev, given the SHA-256 of its own
// line.
func checkRow(t auditTable, want uint64, prev, own string, seq int64, prevSHA, lineSHA string) error {
	broken := func(p audit.Problem, detail string) error {
		return &AuditVerifyError{Table: t.quoted, Seq: want, Problem: p, Detail: detail}
	}
	switch {
	case seq < 1 || uint64(seq) != want:
		what := "an entry is missing or out of order"
		if seq < 1 || uint64(seq) < want {
			what = "an entry is repeated or out of order"
		}
		return broken(audit.ProblemSequence, fmt.Sprintf("the row in this place has seq %d, want %d: %s", seq, want, what))
	case prevSHA != prev:
		detail := "the row's prev_sha256 is not the SHA-256 of the previous row's line"
		if want == 1 {
			detail = "the first row's prev_sha256 is not Genesis"
		}
		return broken(audit.ProblemChain, detail)
	case lineSHA != own:
		return broken(audit.ProblemHash, "the row's line_sha256 is not the SHA-256 of its line")
	}
	return nil
}
