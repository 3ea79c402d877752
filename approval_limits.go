package execgate

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/execgate/execgate/internal/inputrules"
)

// Limits on an approval envelope. Propose refuses a call whose approval
// would exceed them, and Execute refuses an envelope that exceeds them
// before it touches the store.
const (
	// MaxApprovalArgs is the most arguments an approval may carry.
	MaxApprovalArgs = 256
	// MaxApprovalArgBytes is the longest single argument, in bytes.
	MaxApprovalArgBytes = inputrules.MaxTokenBytes
	// MaxReasonBytes is the longest Reason, in bytes.
	MaxReasonBytes = 4 << 10
)

// Further bounds on envelope fields that the gate itself produces.
const (
	maxCommandBytes       = 4096
	maxPolicyVersionBytes = 256
)

// approvalSubject is the Name used in a [ValidationError] about an approval
// envelope or an approval ID.
const approvalSubject = "approval"

// checkID reports whether id is a UUID in its canonical lowercase form.
func checkID(id string) *Issue {
	u, err := uuid.Parse(id)
	if err != nil || len(id) != 36 || u.String() != id {
		return &Issue{Field: "id", Message: "must be a UUID in canonical lowercase form"}
	}
	return nil
}

// checkEnvelope checks the shape of an approval envelope handed to
// Execute, so that a malformed one is refused before the store is touched
// and burns nothing.
func checkEnvelope(ap *Approval) error {
	var issues []Issue
	if is := checkID(ap.ID); is != nil {
		issues = append(issues, *is)
	}
	if len(ap.Digest) != 64 || !isHex(ap.Digest) {
		issues = append(issues, Issue{Field: "digest", Message: "must be 64 lowercase hex digits"})
	}
	if checkName(ap.Name) != nil {
		issues = append(issues, Issue{Field: "name", Message: "must be a well-formed command name"})
	}
	if len(ap.Command) == 0 || len(ap.Command) > maxCommandBytes {
		issues = append(issues, Issue{Field: "command", Message: fmt.Sprintf("must be 1 to %d bytes", maxCommandBytes)})
	}
	if len(ap.PolicyVersion) == 0 || len(ap.PolicyVersion) > maxPolicyVersionBytes {
		issues = append(issues, Issue{Field: "policyVersion", Message: fmt.Sprintf("must be 1 to %d bytes", maxPolicyVersionBytes)})
	}
	for _, tf := range []struct {
		field string
		t     time.Time
	}{{"createdAt", ap.CreatedAt}, {"expiresAt", ap.ExpiresAt}} {
		// Propose writes UTC; an envelope re-zoned on its way back is
		// refused as changed, although it names the same instant.
		if _, off := tf.t.Zone(); tf.t.IsZero() || off != 0 {
			issues = append(issues, Issue{Field: tf.field, Message: "must be a UTC time, as proposed"})
		}
	}
	if msg := inputrules.PrincipalProblem(ap.Principal); msg != "" {
		issues = append(issues, Issue{Field: "principal", Message: msg})
	}
	issues = append(issues, checkArgsAndReason(ap.Args, ap.Reason)...)
	if len(issues) > 0 {
		return &ValidationError{Name: approvalSubject, Issues: issues}
	}
	return nil
}

// checkArgsAndReason applies the envelope limits on argv and reason. It is
// shared by Propose (so it never issues an approval Execute would refuse)
// and Execute.
func checkArgsAndReason(args []string, reason string) []Issue {
	var issues []Issue
	if len(args) > MaxApprovalArgs {
		issues = append(issues, Issue{Field: "args", Message: fmt.Sprintf("must hold at most %d arguments", MaxApprovalArgs)})
	}
	for i, a := range args {
		if len(a) > MaxApprovalArgBytes {
			issues = append(issues, Issue{Field: fmt.Sprintf("args[%d]", i), Message: fmt.Sprintf("must be at most %d bytes", MaxApprovalArgBytes)})
			break
		}
		// An approval travels as JSON, which cannot carry other bytes:
		// they would come back changed and the approval could never run.
		if !utf8.ValidString(a) {
			issues = append(issues, Issue{Field: fmt.Sprintf("args[%d]", i), Message: "must be valid UTF-8 to be carried by an approval"})
			break
		}
	}
	if len(reason) > MaxReasonBytes {
		issues = append(issues, Issue{Field: "reason", Message: fmt.Sprintf("must be at most %d bytes", MaxReasonBytes)})
	} else if !utf8.ValidString(reason) {
		issues = append(issues, Issue{Field: "reason", Message: "must be valid UTF-8"})
	}
	return issues
}
