package pgstore

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// sentNothing is an error that says, as pgx's do, whether it came before
// anything was sent.
type sentNothing struct {
	safe bool
	err  error
}

func (e sentNothing) Error() string     { return "pgx-like: " + e.err.Error() }
func (e sentNothing) Unwrap() error     { return e.err }
func (e sentNothing) SafeToRetry() bool { return e.safe }

// TestClassify pins which errors leave the state known. NotApplied must
// only be said when it is certain: a wrong NotApplied would tell a caller
// that a stored record is not there.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want State
	}{
		// The server refused the statement or the COMMIT: rolled back.
		{"ERROR from the server", &pgconn.PgError{Severity: "ERROR", Code: "23514"}, NotApplied},
		{"wrapped ERROR", fmt.Errorf("x: %w", &pgconn.PgError{Severity: "ERROR", Code: "40001"}), NotApplied},
		// A session ended by the server may have committed first.
		{"FATAL from the server", &pgconn.PgError{Severity: "FATAL", Code: "57P01"}, MaybeApplied},
		{"PANIC from the server", &pgconn.PgError{Severity: "PANIC", Code: "XX000"}, MaybeApplied},
		// A COMMIT of a failed transaction rolls it back.
		{"COMMIT answered ROLLBACK", pgx.ErrTxCommitRollback, NotApplied},
		// pgx's word that nothing was sent, such as a context done first.
		{"safe to retry", sentNothing{true, context.Canceled}, NotApplied},
		// pgx says "conn closed" is safe to retry also when the
		// connection broke while it read the reply: not trusted.
		{"conn closed, said to be safe", sentNothing{true, pgconn.ErrConnClosed}, MaybeApplied},
		{"not safe to retry", sentNothing{false, io.ErrUnexpectedEOF}, MaybeApplied},
		// A lost connection or a context ended while waiting.
		{"unexpected EOF", io.ErrUnexpectedEOF, MaybeApplied},
		{"context canceled while waiting", context.Canceled, MaybeApplied},
		{"deadline while waiting", fmt.Errorf("timeout: %w", context.DeadlineExceeded), MaybeApplied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(tc.err); got != tc.want {
				t.Errorf("classify(%v) = %s; want %s", tc.err, got, tc.want)
			}
		})
	}
}
