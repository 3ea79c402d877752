package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/execgate/execgate"
)

// Genesis is the prev of the first line of every chain: 64 zeros.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// MaxLineBytes bounds one line of a chain file, newline excluded. A
// [Chain] writes an entry that would be longer without its argv (see
// [Entry].ArgsOmitted), and [Verify] refuses a longer line.
const MaxLineBytes = 16 << 20

// Entry is one line of a chain file: an [execgate.Event] with its place in
// the chain. Its JSON field names are stable and camelCase, in this order:
//
//	seq, prev,
//	op, phase, traceId, time, principal, approver, name, route, command,
//	args, argsWithheld, argsSha256, stdinBytes, envKeys, decision, rule,
//	grant, approvalId, rejected, termination, exitCode, signal, pid,
//	duration, stdoutDropped, stderrDropped, outputIncomplete, unconfined,
//	connections, connectionsDropped,
//	error, reason, argsOmitted, hash
//
// The fields from op to reason are the Event's. seq, prev, op, phase,
// traceId, time, exitCode and hash are always present; the others are left
// out when empty. hash is always last. time is RFC 3339 with nanoseconds;
// duration is integer nanoseconds.
//
// phase is [execgate.PhaseIntent] for the entry a call that starts a
// process leaves just before its start, and [execgate.PhaseOutcome] for
// the entry of how a call ended (refused, proposed, rejected, or run);
// both have the call's traceId, which is how [VerifyReport] pairs them. An
// intent has no termination, exitCode 0 and no duration. A line without
// phase, as a [Chain] wrote before Events had one, or with an empty phase,
// is an outcome. route is set for [execgate.OpRequest] entries, the
// refusals a server made before the gate.
//
// An Entry never holds stdin or environment values, because an Event does
// not: only stdinBytes and envKeys.
//
// Decode a line with encoding/json to read it. The hashes are defined on
// the bytes of the line, not on the decoded value: re-encoding a decoded
// Entry need not reproduce them.
type Entry struct {
	// Seq is the line's sequence number: 1 for the first line of a file,
	// and one more than the line before it after that.
	Seq uint64 `json:"seq"`
	// Prev is the lowercase hex SHA-256 of the previous line's bytes,
	// without its newline, or [Genesis] on the first line.
	Prev string `json:"prev"`

	execgate.Event

	// ArgsOmitted reports that the argv was left out because the entry
	// would otherwise have been longer than [MaxLineBytes]; ArgsSHA256
	// still identifies it.
	ArgsOmitted bool `json:"argsOmitted,omitempty"`
	// Hash is the lowercase hex SHA-256 of the line's bytes up to, and not
	// including, the comma before "hash". It ties every byte of the line,
	// the last line's included, to the line itself.
	Hash string `json:"hash,omitempty"`
}

// hashSuffixLen is the length of `,"hash":"<64 hex>"}`, the end of every
// line.
const hashSuffixLen = len(`,"hash":"`) + sha256.Size*2 + len(`"}`)

// encodeLine returns the line for e (e.Hash is ignored), without newline.
func encodeLine(e Entry) ([]byte, error) {
	e.Hash = ""
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // arguments stay readable: "a>b", not "a\u003eb"
	if err := enc.Encode(e); err != nil {
		return nil, err
	}
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	// body is {...}: drop the closing brace and seal what comes before it.
	prefix := body[:len(body)-1]
	sum := sha256.Sum256(prefix)
	line := make([]byte, 0, len(prefix)+hashSuffixLen)
	line = append(line, prefix...)
	line = append(line, `,"hash":"`...)
	line = hex.AppendEncode(line, sum[:])
	line = append(line, `"}`...)
	return line, nil
}

// lineSHA256 returns the lowercase hex SHA-256 of a line: the prev of the
// line after it.
func lineSHA256(line []byte) string {
	sum := sha256.Sum256(line)
	return hex.EncodeToString(sum[:])
}
