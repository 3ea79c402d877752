package execgate

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"time"

	"github.com/execgate/execgate/internal/canon"
)

// Digests are lowercase hex SHA-256 over the canonical encoding of package
// internal/canon: a domain string, then labelled values in a fixed order,
// each with its length. Three digests are defined.
//
// The spec fingerprint ("execgate.spec.v1") covers what decides how a
// command runs, apart from its argv and stdin: name, path, SHA256 pin, the
// sorted environment, dir, timeout, no-output timeout, max output and
// policy version.
//
// The proposal digest ("execgate.call.v1") covers the fingerprint, the argv
// and the stdin of one call.
//
// The approval digest ("execgate.approval.v1") covers the approval (ID,
// creation and expiry time as Unix seconds and nanoseconds, reason), the
// name, command path, policy version and argv it shows, the spec
// fingerprint, and the SHA-256 of the stdin.

func specFingerprint(e *entry) string {
	s := &e.spec
	h := canon.New("execgate.spec.v1")
	h.String("name", s.Name)
	h.String("path", s.Command)
	h.String("sha256", s.SHA256)
	h.Strings("env", e.env)
	h.String("dir", s.Dir)
	h.Int("timeout", int64(s.Timeout))
	h.Int("no_output_timeout", int64(s.NoOutputTimeout))
	h.Int("max_output", int64(s.MaxOutput))
	h.String("policy_version", s.PolicyVersion)
	return h.Sum()
}

func proposalDigest(fingerprint string, argv Argv) string {
	h := canon.New("execgate.call.v1")
	h.String("fingerprint", fingerprint)
	h.Strings("args", argv.Args)
	h.Bytes("stdin", argv.Stdin)
	return h.Sum()
}

func stdinSHA256(stdin []byte) string {
	sum := sha256.Sum256(stdin)
	return hex.EncodeToString(sum[:])
}

func approvalDigest(ap *Approval, fingerprint, stdinHash string) string {
	h := canon.New("execgate.approval.v1")
	h.String("id", ap.ID)
	putTime(h, "created_at", ap.CreatedAt)
	putTime(h, "expires_at", ap.ExpiresAt)
	h.String("reason", ap.Reason)
	h.String("name", ap.Name)
	h.String("command", ap.Command)
	h.String("policy_version", ap.PolicyVersion)
	h.Strings("args", ap.Args)
	h.String("fingerprint", fingerprint)
	h.String("stdin_sha256", stdinHash)
	return h.Sum()
}

func putTime(h *canon.Hasher, label string, t time.Time) {
	h.Int(label+".unix", t.Unix())
	h.Int(label+".nanos", int64(t.Nanosecond()))
}

// digestEqual compares two hex digests in constant time.
func digestEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// argsSHA256 hashes an argv for the audit trail, in the same encoding as
// the "args" list of the proposal digest.
func argsSHA256(args []string) string {
	h := canon.New("execgate.args.v1")
	h.Strings("args", args)
	return h.Sum()
}
