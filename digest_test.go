package execgate

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// goldenEntry and goldenApproval are fixed inputs whose digests are pinned
// in testdata/digest/golden.json.
func goldenEntry() *entry {
	return &entry{
		spec: CommandSpec{
			Name: "git.log", Command: "/usr/bin/git", SHA256: "",
			Dir: "/srv/repo", Timeout: 30 * time.Second, NoOutputTimeout: 5 * time.Second,
			MaxOutput: 65536, PolicyVersion: "3",
		},
		env: []string{"HOME=/home/agent", "PATH=/usr/bin:/bin"},
	}
}

func goldenApproval() Approval {
	return Approval{
		ID:            "019ad4f2-6c1e-7a3b-9c4d-2e5f6a7b8c9d",
		Name:          "git.log",
		Command:       "/usr/bin/git",
		Args:          []string{"log", "--max-count", "5", ""},
		Reason:        "inspect recent history",
		Principal:     "agent-7",
		PolicyVersion: "3",
		CreatedAt:     time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC),
		ExpiresAt:     time.Date(2026, 11, 30, 12, 15, 0, 123456789, time.UTC),
	}
}

type goldenDigests struct {
	Fingerprint string `json:"fingerprint"`
	Salted      string `json:"salted"`
	Proposal    string `json:"proposal"`
	Approval    string `json:"approval"`
	// Confined is the fingerprint of goldenEntry with goldenConfinement.
	Confined string `json:"confined"`
}

// goldenConfinement is a fixed, normalised Confinement whose fingerprint
// is pinned in testdata/digest/golden.json.
func goldenConfinement() *Confinement {
	return &Confinement{
		Read:  []string{"/etc/ssl", "/usr"},
		Write: []string{"/srv/scratch"},
		Exec:  []string{"/usr/bin"},
		Limits: Limits{CPU: 10 * time.Second, AddressSpace: 512 << 20, Files: 256,
			FileSize: 64 << 20, Processes: 64},
	}
}

// goldenSalt is 0x00, 0x01, ..., 0x1f.
func goldenSalt() []byte {
	salt := make([]byte, 32)
	for i := range salt {
		salt[i] = byte(i)
	}
	return salt
}

func computeGolden() goldenDigests {
	e := goldenEntry()
	fp := specFingerprint(e)
	salted := saltedFingerprint(goldenSalt(), fp)
	ap := goldenApproval()
	stdin := []byte("stdin bytes\n")
	confined := goldenEntry()
	confined.spec.Confine = goldenConfinement()
	return goldenDigests{
		Fingerprint: fp,
		Salted:      salted,
		Proposal:    proposalDigest(goldenSalt(), fp, Argv{Args: ap.Args, Stdin: stdin}),
		Approval:    approvalDigest(&ap, salted, stdinSHA256(stdin)),
		Confined:    specFingerprint(confined),
	}
}

// TestInvariant9_DigestGolden pins the digests of fixed inputs, so that the
// encoding cannot drift silently: a change that alters them breaks every
// pending approval and must be deliberate (bump the domain's version, then
// run the test with -update).
func TestInvariant9_DigestGolden(t *testing.T) {
	path := filepath.Join("testdata", "digest", "golden.json")
	got := computeGolden()
	if *update {
		b, err := json.MarshalIndent(got, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var want goldenDigests
	require.NoError(t, json.Unmarshal(b, &want))
	assert.Equal(t, want, got)
}

// spell is an independent implementation of the encoding documented in
// package internal/canon, written from the documentation.
type spell struct{ b []byte }

func (s *spell) u64(v uint64) { s.b = binary.BigEndian.AppendUint64(s.b, v) }
func (s *spell) str(v string) { s.u64(uint64(len(v))); s.b = append(s.b, v...) }
func (s *spell) field(label, v string) {
	s.str(label)
	s.str(v)
}
func (s *spell) num(label string, v int64) { s.str(label); s.u64(uint64(v)) }
func (s *spell) list(label string, vs []string) {
	s.str(label)
	s.u64(uint64(len(vs)))
	for _, v := range vs {
		s.str(v)
	}
}
func (s *spell) sum() string { h := sha256.Sum256(s.b); return hex.EncodeToString(h[:]) }

func TestInvariant9_DigestEncodingMatchesItsDocumentation(t *testing.T) {
	e := goldenEntry()
	ap := goldenApproval()
	stdin := []byte("stdin bytes\n")

	var fp spell
	fp.str("execgate.spec.v1")
	fp.field("name", "git.log")
	fp.field("path", "/usr/bin/git")
	fp.field("sha256", "")
	fp.list("env", e.env)
	fp.field("dir", "/srv/repo")
	fp.num("timeout", int64(30*time.Second))
	fp.num("no_output_timeout", int64(5*time.Second))
	fp.num("max_output", 65536)
	fp.field("policy_version", "3")
	require.Equal(t, fp.sum(), specFingerprint(e))

	// With a Confinement, its fields follow; without one, nothing does.
	cf := spell{b: append([]byte(nil), fp.b...)}
	cf.list("confine.read", []string{"/etc/ssl", "/usr"})
	cf.list("confine.write", []string{"/srv/scratch"})
	cf.list("confine.exec", []string{"/usr/bin"})
	cf.num("confine.network", 0)
	cf.num("confine.cpu", int64(10*time.Second))
	cf.num("confine.address_space", 512<<20)
	cf.num("confine.files", 256)
	cf.num("confine.file_size", 64<<20)
	cf.num("confine.processes", 64)
	cf.num("confine.best_effort", 0)
	confined := goldenEntry()
	confined.spec.Confine = goldenConfinement()
	require.Equal(t, cf.sum(), specFingerprint(confined))

	var sf spell
	sf.str("execgate.salted-spec.v1")
	sf.field("salt", string(goldenSalt()))
	sf.field("fingerprint", fp.sum())
	require.Equal(t, sf.sum(), saltedFingerprint(goldenSalt(), fp.sum()))

	var pd spell
	pd.str("execgate.call.v1")
	pd.field("fingerprint", sf.sum())
	pd.list("args", ap.Args)
	pd.field("stdin", string(stdin))
	assert.Equal(t, pd.sum(), proposalDigest(goldenSalt(), fp.sum(), Argv{Args: ap.Args, Stdin: stdin}))

	var ad spell
	ad.str("execgate.approval.v1")
	ad.field("id", ap.ID)
	ad.num("created_at.unix", ap.CreatedAt.Unix())
	ad.num("created_at.nanos", int64(ap.CreatedAt.Nanosecond()))
	ad.num("expires_at.unix", ap.ExpiresAt.Unix())
	ad.num("expires_at.nanos", int64(ap.ExpiresAt.Nanosecond()))
	ad.field("reason", ap.Reason)
	ad.field("principal", ap.Principal)
	ad.field("name", ap.Name)
	ad.field("command", ap.Command)
	ad.field("policy_version", ap.PolicyVersion)
	ad.list("args", ap.Args)
	ad.field("fingerprint", sf.sum())
	sum := sha256.Sum256(stdin)
	ad.field("stdin_sha256", hex.EncodeToString(sum[:]))
	assert.Equal(t, ad.sum(), approvalDigest(&ap, sf.sum(), stdinSHA256(stdin)))
}

// TestInvariant9_EveryBoundFieldChangesTheDigest changes one input at a
// time and checks that the digest changes.
func TestInvariant9_EveryBoundFieldChangesTheDigest(t *testing.T) {
	base := computeGolden()
	stdin := []byte("stdin bytes\n")

	specChanges := map[string]func(*entry){
		"name":              func(e *entry) { e.spec.Name = "git.show" },
		"path":              func(e *entry) { e.spec.Command = "/usr/local/bin/git" },
		"sha256":            func(e *entry) { e.spec.SHA256 = "00" },
		"env value":         func(e *entry) { e.env[0] = "HOME=/root" },
		"env entry split":   func(e *entry) { e.env = []string{"HOME=/home/agentPATH=/usr/bin:/bin"} },
		"dir":               func(e *entry) { e.spec.Dir = "/srv" },
		"timeout":           func(e *entry) { e.spec.Timeout++ },
		"no output timeout": func(e *entry) { e.spec.NoOutputTimeout++ },
		"max output":        func(e *entry) { e.spec.MaxOutput++ },
		"policy version":    func(e *entry) { e.spec.PolicyVersion = "4" },
	}
	for name, change := range specChanges {
		e := goldenEntry()
		change(e)
		assert.NotEqual(t, base.Fingerprint, specFingerprint(e), "spec field %s", name)
	}

	apChanges := map[string]func(*Approval){
		"id":              func(a *Approval) { a.ID = "019ad4f2-6c1e-7a3b-9c4d-2e5f6a7b8c9e" },
		"created":         func(a *Approval) { a.CreatedAt = a.CreatedAt.Add(time.Nanosecond) },
		"expires":         func(a *Approval) { a.ExpiresAt = a.ExpiresAt.Add(time.Nanosecond) },
		"expires seconds": func(a *Approval) { a.ExpiresAt = a.ExpiresAt.Add(time.Second) },
		"reason":          func(a *Approval) { a.Reason += "." },
		"principal":       func(a *Approval) { a.Principal = "agent-8" },
		"name":            func(a *Approval) { a.Name = "git.show" },
		"command":         func(a *Approval) { a.Command = "/bin/git" },
		"policy version":  func(a *Approval) { a.PolicyVersion = "4" },
		"arg":             func(a *Approval) { a.Args[2] = "6" },
		"args joined":     func(a *Approval) { a.Args = []string{"log", "--max-count5", ""} },
		"empty arg gone":  func(a *Approval) { a.Args = a.Args[:3] },
	}
	fp := base.Salted
	assert.NotEqual(t, base.Salted, saltedFingerprint([]byte("another salt"), base.Fingerprint), "salt")
	for name, change := range apChanges {
		ap := goldenApproval()
		change(&ap)
		assert.NotEqual(t, base.Approval, approvalDigest(&ap, fp, stdinSHA256(stdin)), "approval field %s", name)
	}
	ap := goldenApproval()
	assert.NotEqual(t, base.Approval, approvalDigest(&ap, fp, stdinSHA256([]byte("other"))), "stdin")
	assert.NotEqual(t, base.Approval, approvalDigest(&ap, specFingerprint(&entry{}), stdinSHA256(stdin)), "fingerprint")

	// The time zone an approval travels in does not matter; the instant does.
	ap = goldenApproval()
	ap.CreatedAt = ap.CreatedAt.In(time.FixedZone("X", 3600))
	assert.Equal(t, base.Approval, approvalDigest(&ap, fp, stdinSHA256(stdin)))
}
