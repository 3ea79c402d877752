package pgstore

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// State is what a failed Save, Take or Delete is known to have done to
// the table: whether the record it names was stored, taken or deleted.
type State uint8

// The states a StateError reports.
const (
	// NotApplied means the call changed nothing: a Save did not store the
	// record, and a Take or Delete left a pending record pending. It is
	// reported when the call failed before its request reached the
	// database (no connection, a context done before sending), when the
	// database refused the request, and when a Save failed before its
	// COMMIT was sent, so that its transaction cannot commit.
	NotApplied State = iota + 1
	// MaybeApplied means the call may or may not have changed the table:
	// its request was sent, or may have been, and the answer was lost (a
	// connection cut or a timeout while waiting for the reply, a COMMIT
	// whose answer never came). Nothing in the client can tell which; the
	// database can, and the messages say how to ask it.
	MaybeApplied
	// Applied means the call did change the table and then failed: a Take
	// consumed the record but could not hand it back (its stored envelope
	// was unreadable), or a Delete removed it but could not read its
	// expiry. The record can no longer execute.
	Applied
)

// String returns "not applied", "may have been applied" or "applied".
func (s State) String() string {
	switch s {
	case NotApplied:
		return "not applied"
	case MaybeApplied:
		return "may have been applied"
	case Applied:
		return "applied"
	}
	return "unknown state"
}

// Op names the Store method a StateError comes from.
type Op string

// The methods whose errors are StateErrors.
const (
	OpSave   Op = "Save"
	OpTake   Op = "Take"
	OpDelete Op = "Delete"
)

// StateError is the error of a Save, Take or Delete that failed for a
// reason other than the ones execgate.ApprovalStore names
// (execgate.ErrDuplicateID, execgate.ErrStoreFull, execgate.ErrNoRecord,
// which are returned as they are). It says what failed, what is known of
// the record's state and what to do next; match it with errors.As:
//
//	var se *pgstore.StateError
//	if errors.As(err, &se) && se.State == pgstore.MaybeApplied && se.Op == pgstore.OpSave {
//		err = store.Save(ctx, rec) // idempotent by ID: safe to retry
//	}
//
// Its message names the approval's ID and never holds the record's input,
// salt or any other part of it.
type StateError struct {
	// Op is the method that failed.
	Op Op
	// ID is the approval's ID.
	ID string
	// State is what the failed call is known to have done.
	State State
	// Err is the underlying error, from pgx, the context or decoding;
	// Unwrap returns it, so errors.Is(err, context.DeadlineExceeded) and
	// errors.As(err, new(*pgconn.PgError)) look through a StateError. It
	// is nil when the failure is the store's own finding (a stored
	// envelope that names another ID).
	Err error
	// step says which part of the call failed, for the message.
	step string
}

// Error returns a message that says what failed, what is known and what
// to do, such as "pgstore: Save of approval …: may have been stored:
// committing: timeout: context deadline exceeded; retry Save with the
// same record to find out: …".
func (e *StateError) Error() string {
	var b strings.Builder
	b.WriteString("pgstore: ")
	b.WriteString(string(e.Op))
	b.WriteString(" of approval ")
	b.WriteString(e.ID)
	b.WriteString(": ")
	b.WriteString(e.outcome())
	if e.step != "" || e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.step)
		if e.step != "" && e.Err != nil {
			b.WriteString(": ")
		}
		if e.Err != nil {
			b.WriteString(e.Err.Error())
		}
	}
	if advice := e.advice(); advice != "" {
		b.WriteString("; ")
		b.WriteString(advice)
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *StateError) Unwrap() error { return e.Err }

// outcome is the state in the words of the operation.
func (e *StateError) outcome() string {
	verb := map[Op]string{OpSave: "stored", OpTake: "taken", OpDelete: "deleted"}[e.Op]
	if verb == "" {
		return e.State.String()
	}
	switch e.State {
	case NotApplied:
		return "not " + verb
	case MaybeApplied:
		return "may have been " + verb
	case Applied:
		return verb
	}
	return e.State.String()
}

// advice says what the caller can do next.
func (e *StateError) advice() string {
	type key struct {
		op    Op
		state State
	}
	switch (key{e.Op, e.State}) {
	case key{OpSave, NotApplied}:
		return "nothing was stored; Save may be called again with the same record"
	case key{OpSave, MaybeApplied}:
		return "retry Save with the same record to find out: it is idempotent by ID, succeeds if this record is stored, " +
			"refuses with execgate.ErrDuplicateID if another record holds the ID, and never re-creates a record that was taken or deleted"
	case key{OpTake, NotApplied}:
		return "the approval, if it was pending, still is; Execute may be called again"
	case key{OpTake, MaybeApplied}:
		return "the approval may have been consumed without running; call Execute again: " +
			"it runs the approval if this call did not consume it, or refuses it as unknown if it did, and then it must be proposed again"
	case key{OpTake, Applied}:
		return "the approval is consumed and can never run; propose the call again"
	case key{OpDelete, NotApplied}:
		return "the approval, if it was pending, still is; retry Reject"
	case key{OpDelete, MaybeApplied}:
		return "retry Reject: once it returns without an error the approval can no longer run"
	case key{OpDelete, Applied}:
		return "the approval can no longer run"
	}
	return ""
}

// failure builds the StateError of a call that failed after it began
// talking to the database, with a state from classify.
func failure(op Op, id, step string, err error) *StateError {
	return &StateError{Op: op, ID: id, State: classify(err), Err: err, step: step}
}

// classify decides what a failed request left behind, given the error of
// a single statement run outside a transaction, or of a COMMIT. It is
// NotApplied only when that is certain, and MaybeApplied otherwise:
//
//   - An ERROR from the server (not FATAL or PANIC): the statement, or the
//     COMMIT, failed and its transaction rolled back. A FATAL error ends
//     the session and may come after the work committed (a backend
//     terminated while waiting for synchronous replication reports so).
//   - pgx.ErrTxCommitRollback: the COMMIT found the transaction failed and
//     rolled it back.
//   - pgconn.SafeToRetry, which pgx reports for errors it met before
//     sending anything (a context already done, most often), except a
//     "conn closed" error: pgx reports that one too when the connection
//     broke while it was reading the reply, after the request was sent.
//
// Everything else, a connection lost after sending, a timeout or a
// cancellation while waiting for the reply, an error decoding the reply,
// may have come after the work committed. So may some failures that in
// fact came before the request left (a connection that died while idle
// in the pool is found dead only by trying it): the client cannot tell
// them apart, and reports what it cannot rule out.
func classify(err error) State {
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe):
		switch strings.ToUpper(pe.Severity) {
		case "FATAL", "PANIC":
			return MaybeApplied
		}
		return NotApplied
	case errors.Is(err, pgx.ErrTxCommitRollback):
		return NotApplied
	case pgconn.SafeToRetry(err) && !errors.Is(err, pgconn.ErrConnClosed):
		return NotApplied
	}
	return MaybeApplied
}

// acquireFailed is the StateError of a call that could not get a
// connection from the pool: nothing was sent.
func acquireFailed(op Op, id string, err error) *StateError {
	return &StateError{Op: op, ID: id, State: NotApplied, Err: err, step: "getting a connection"}
}
