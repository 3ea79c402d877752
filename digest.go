package execgate

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"sync"
	"time"

	"github.com/execgate/execgate/internal/canon"
)

// Digests are lowercase hex SHA-256 over the canonical encoding of package
// internal/canon: a domain string, then labeled values in a fixed order,
// each with its length. Four are defined.
//
// The spec fingerprint ("execgate.spec.v1") covers what decides how a
// command runs, apart from its argv and stdin: name, path, SHA256 pin, the
// sorted environment, dir, timeout, no-output timeout, max output and
// policy version, and then, only for a spec with a Confinement, the
// confinement: "confine.read", "confine.write" and "confine.exec" (the
// normalized path lists), "confine.network", "confine.cpu" (nanoseconds),
// "confine.address_space", "confine.files", "confine.file_size",
// "confine.processes" and "confine.best_effort" (booleans as 0 or 1), then
// "confine.unix_sockets" only when it is set, and "confine.egress.allow"
// and "confine.egress.deny" (the normalized lists) only when there is an
// [Egress].
// Because these fields are only written when there is a confinement, a
// spec without one has the fingerprint it had before confinement existed,
// and pending approvals survive the upgrade; the encoding stays
// unambiguous because every value is labeled and length-prefixed. It
// never leaves the process as it is: it hashes environment values, which
// may be guessable secrets.
//
// The salted fingerprint ("execgate.salted-spec.v1") covers a secret salt
// and the spec fingerprint. Each approval record has its own random salt,
// kept in the record and never in the envelope, so that nobody who sees an
// approval's digest can test guesses of the environment or the stdin
// against it.
//
// The proposal digest ("execgate.call.v1") covers the fingerprint salted
// with a random key of this process, the argv and the stdin of one call. It
// is stable within a process only.
//
// The approval digest ("execgate.approval.v1") covers the approval (ID,
// creation and expiry time as Unix seconds and nanoseconds, reason, the
// proposing principal), the
// name, command path, policy version and argv it shows, the confinement
// it shows ("confine.read", "confine.write", "confine.exec",
// "confine.network", "confine.unix_sockets", "confine.cpu_seconds",
// "confine.address_space", "confine.files", "confine.file_size",
// "confine.processes", "confine.best_effort", only when it has
// [Approval.Confine]), its egress lists
// ("egress.allow" and "egress.deny", only when it has an [Egress]), what it
// shows of stdin ("stdin.bytes", "stdin.sha256", "stdin.preview",
// "stdin.preview_cut", only when it has [Approval.Stdin]), the
// record's salted
// fingerprint, and the SHA-256 of the stdin.

func specFingerprint(e *entry) string {
	s := &e.spec
	var buf [2048]byte // an environment and a confinement's paths fit
	h := canon.NewBuffer(buf[:], "execgate.spec.v1")
	h.String("name", s.Name)
	h.String("path", s.Command)
	h.String("sha256", s.SHA256)
	h.Strings("env", e.env)
	h.String("dir", s.Dir)
	h.Int("timeout", int64(s.Timeout))
	h.Int("no_output_timeout", int64(s.NoOutputTimeout))
	h.Int("max_output", int64(s.MaxOutput))
	h.String("policy_version", s.PolicyVersion)
	if c := s.Confine; c != nil {
		h.Strings("confine.read", c.Read)
		h.Strings("confine.write", c.Write)
		h.Strings("confine.exec", c.Exec)
		h.Int("confine.network", boolInt(c.Network))
		h.Int("confine.cpu", int64(c.Limits.CPU))
		h.Int("confine.address_space", c.Limits.AddressSpace)
		h.Int("confine.files", c.Limits.Files)
		h.Int("confine.file_size", c.Limits.FileSize)
		h.Int("confine.processes", c.Limits.Processes)
		h.Int("confine.best_effort", boolInt(c.BestEffort))
		if c.UnixSockets {
			// Only when set, so that the fingerprints of the specs
			// written before it existed stay what they were.
			h.Int("confine.unix_sockets", 1)
		}
		if c.Egress != nil {
			// The same: only when set.
			h.Strings("confine.egress.allow", c.Egress.Allow)
			h.Strings("confine.egress.deny", c.Egress.Deny)
		}
	}
	return h.Sum()
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// saltedFingerprint binds a spec fingerprint to a secret salt.
func saltedFingerprint(salt []byte, fingerprint string) string {
	var buf [digestBufSize]byte
	h := canon.NewBuffer(buf[:], "execgate.salted-spec.v1")
	h.Bytes("salt", salt)
	h.String("fingerprint", fingerprint)
	return h.Sum()
}

// newSalt returns 32 random bytes.
func newSalt() []byte {
	salt := make([]byte, 32)
	rand.Read(salt) // never fails on supported platforms (crypto/rand panics otherwise)
	return salt
}

// digestBufSize is the stack buffer a proposal digest is encoded in; a
// larger call grows it on the heap.
const digestBufSize = 1024

// processSalt salts the proposal digests of this process.
var processSalt = sync.OnceValue(newSalt)

func proposalDigest(salt []byte, fingerprint string, argv Argv) string {
	return proposalDigestSalted(saltedFingerprint(salt, fingerprint), argv)
}

// proposalDigestSalted is proposalDigest with the salted fingerprint
// already computed (an Allowlist keeps it per spec).
func proposalDigestSalted(salted string, argv Argv) string {
	var buf [digestBufSize]byte
	h := canon.NewBuffer(buf[:], "execgate.call.v1")
	h.String("fingerprint", salted)
	h.Strings("args", argv.Args)
	h.Bytes("stdin", argv.Stdin)
	return h.Sum()
}

func stdinSHA256(stdin []byte) string {
	sum := sha256.Sum256(stdin)
	return hex.EncodeToString(sum[:])
}

func approvalDigest(ap *Approval, fingerprint, stdinHash string) string {
	var buf [digestBufSize]byte
	h := canon.NewBuffer(buf[:], "execgate.approval.v1")
	h.String("id", ap.ID)
	putTime(h, "created_at", ap.CreatedAt)
	putTime(h, "expires_at", ap.ExpiresAt)
	h.String("reason", ap.Reason)
	h.String("principal", ap.Principal)
	h.String("name", ap.Name)
	h.String("command", ap.Command)
	h.String("policy_version", ap.PolicyVersion)
	h.Strings("args", ap.Args)
	if c := ap.Confine; c != nil {
		// Only when there is one, so that the digests of approvals of
		// specs without it stay what they were. The spec fingerprint
		// binds the spec's confinement; this binds what the approver is
		// shown of it.
		h.Strings("confine.read", c.Read)
		h.Strings("confine.write", c.Write)
		h.Strings("confine.exec", c.Exec)
		h.Int("confine.network", boolInt(c.Network))
		h.Int("confine.unix_sockets", boolInt(c.UnixSockets))
		h.Int("confine.cpu_seconds", c.Limits.CPUSeconds)
		h.Int("confine.address_space", c.Limits.AddressSpace)
		h.Int("confine.files", c.Limits.Files)
		h.Int("confine.file_size", c.Limits.FileSize)
		h.Int("confine.processes", c.Limits.Processes)
		h.Int("confine.best_effort", boolInt(c.BestEffort))
	}
	if ap.Egress != nil {
		// The same: only when there is one.
		h.Strings("egress.allow", ap.Egress.Allow)
		h.Strings("egress.deny", ap.Egress.Deny)
	}
	if s := ap.Stdin; s != nil {
		// The same: only for a call with stdin. Its SHA-256 is bound
		// below, from the record; what the approver is shown is bound
		// here.
		h.Int("stdin.bytes", int64(s.Bytes))
		h.String("stdin.sha256", s.SHA256)
		h.String("stdin.preview", s.Preview)
		h.Int("stdin.preview_cut", boolInt(s.PreviewCut))
	}
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
	var buf [digestBufSize]byte
	h := canon.NewBuffer(buf[:], "execgate.args.v1")
	h.Strings("args", args)
	return h.Sum()
}

// argsKeyedHash keys the argv hash with a secret, for argvs that hold secrets.
func argsKeyedHash(key []byte, args []string) string {
	var buf [digestBufSize]byte
	h := canon.NewBuffer(buf[:], "execgate.args-keyed.v1")
	h.Bytes("key", key)
	h.Strings("args", args)
	return h.Sum()
}
