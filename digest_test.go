package execgate

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/internal/inventory"
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

// goldenConfinement is a fixed, normalized Confinement whose fingerprint
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

// TestDigestBinding_DigestGolden pins the digests of fixed inputs, so that the
// encoding cannot drift silently: a change that alters them breaks every
// pending approval and must be deliberate (bump the domain's version, then
// run the test with -update).
//
// Invariant 9 of DESIGN.md.
func TestDigestBinding_DigestGolden(t *testing.T) {
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

// Invariant 9 of DESIGN.md.
func TestDigestBinding_DigestEncodingMatchesItsDocumentation(t *testing.T) {
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

	// An Egress adds its lists, and only then.
	eg := spell{b: append([]byte(nil), cf.b...)}
	eg.list("confine.egress.allow", []string{"*.example.com:443", "10.0.0.0/8:5432"})
	eg.list("confine.egress.deny", []string{"evil.example.com:*"})
	withEgress := goldenEntry()
	withEgress.spec.Confine = goldenConfinement()
	withEgress.spec.Confine.Egress = &Egress{Allow: []string{"*.example.com:443", "10.0.0.0/8:5432"}, Deny: []string{"evil.example.com:*"}}
	require.Equal(t, eg.sum(), specFingerprint(withEgress))

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

	// An approval of a spec with an Egress shows its lists, and its
	// digest binds them between the argv and the fingerprint.
	ae := spell{b: append([]byte(nil), ad.b[:len(ad.b)-len(adTail(sf.sum(), stdin))]...)}
	ae.list("egress.allow", []string{"api.github.com:443"})
	ae.list("egress.deny", nil)
	ae.field("fingerprint", sf.sum())
	ae.field("stdin_sha256", hex.EncodeToString(sum[:]))
	apEgress := ap
	apEgress.Egress = &Egress{Allow: []string{"api.github.com:443"}}
	assert.Equal(t, ae.sum(), approvalDigest(&apEgress, sf.sum(), stdinSHA256(stdin)))
}

// adTail is the spelling of the last two fields of the golden approval
// digest, which an Egress's lists come before.
func adTail(fingerprint string, stdin []byte) []byte {
	var t spell
	t.field("fingerprint", fingerprint)
	sum := sha256.Sum256(stdin)
	t.field("stdin_sha256", hex.EncodeToString(sum[:]))
	return t.b
}

// digested marks a field that the digest covers, in a classification table.
const digested = ""

// specDigestFields classifies every field of CommandSpec, and through
// Confine every field of Confinement and Limits: bound into the spec
// fingerprint, or left out, with why. A field added to any of them fails
// TestDigestBinding_EveryFieldIsBoundOrDeliberatelyNot until it is here.
var specDigestFields = map[string]string{
	"Name":                        digested,
	"Command":                     digested,
	"SHA256":                      digested,
	"Args":                        "the schema is not hashed; the argv and stdin it builds are, in each call's digest, and Execute parses the input again with the current schema",
	"Description":                 "text for tool listings; it does not change what runs",
	"Env":                         digested,
	"Dir":                         digested,
	"Timeout":                     digested,
	"NoOutputTimeout":             digested,
	"MaxOutput":                   digested,
	"PolicyVersion":               digested,
	"Dispatch":                    "decides which names the spec serves; Execute looks the name up again in the current allowlist",
	"Floor":                       "a decision, not what runs; Execute asks the policy and the floor again",
	"SensitiveArgs":               "decides what the audit trail shows, not what runs",
	"Confine.Read":                digested,
	"Confine.Write":               digested,
	"Confine.Exec":                digested,
	"Confine.Network":             digested,
	"Confine.UnixSockets":         digested,
	"Confine.Egress.Allow":        digested,
	"Confine.Egress.Deny":         digested,
	"Confine.Limits.CPU":          digested,
	"Confine.Limits.AddressSpace": digested,
	"Confine.Limits.Files":        digested,
	"Confine.Limits.FileSize":     digested,
	"Confine.Limits.Processes":    digested,
	"Confine.BestEffort":          digested,
	"Hints.ReadOnly":              "advice for tool listings, documented as part of no digest",
	"Hints.Destructive":           "advice for tool listings, documented as part of no digest",
	"Hints.Idempotent":            "advice for tool listings, documented as part of no digest",
	"Hints.OpenWorld":             "advice for tool listings, documented as part of no digest",
}

// approvalDigestFields classifies every field of Approval for the
// approval digest.
var approvalDigestFields = map[string]string{
	"ID":            digested,
	"Principal":     digested,
	"Name":          digested,
	"Command":       digested,
	"Args":          digested,
	"Digest":        "the digest itself: it is compared with the stored one, not hashed",
	"Reason":        digested,
	"PolicyVersion": digested,
	// What the approval shows of the spec's confinement is bound here;
	// the spec's Confinement itself is bound by the spec fingerprint
	// (above), so a spec whose confinement changed refuses as
	// policy_changed.
	"Confine.Read":                digested,
	"Confine.Write":               digested,
	"Confine.Exec":                digested,
	"Confine.Network":             digested,
	"Confine.UnixSockets":         digested,
	"Confine.Limits.CPUSeconds":   digested,
	"Confine.Limits.AddressSpace": digested,
	"Confine.Limits.Files":        digested,
	"Confine.Limits.FileSize":     digested,
	"Confine.Limits.Processes":    digested,
	"Confine.BestEffort":          digested,
	"Egress.Allow":                digested,
	"Egress.Deny":                 digested,
	"Stdin.Bytes":                 digested,
	"Stdin.SHA256":                digested,
	"Stdin.Preview":               digested,
	"Stdin.PreviewCut":            digested,
	"CreatedAt":                   digested,
	"ExpiresAt":                   digested,
}

// digestFiller fills specs, whose Args is an interface.
var digestFiller = inventory.Filler{Custom: map[reflect.Type]func(int) any{
	reflect.TypeFor[ArgsSchema](): func(seed int) any { return Fixed(fmt.Sprint(seed)) },
}}

// fingerprintOf is the spec fingerprint of s, with its Env in the sorted
// form NewAllowlist gives an entry.
func fingerprintOf(s CommandSpec) string {
	env := make([]string, 0, len(s.Env))
	for k, v := range s.Env {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return specFingerprint(&entry{spec: s, env: env})
}

// classified fails unless table names exactly the leaves of typ, and
// returns the leaves it names.
func classified(t *testing.T, typ reflect.Type, table map[string]string) []string {
	t.Helper()
	var out []string
	leaves := inventory.Leaves(typ)
	for _, l := range leaves {
		if _, ok := table[l]; ok {
			out = append(out, l)
		} else {
			t.Errorf("%v.%s is not classified: say whether the digest binds it, and if not, why", typ, l)
		}
	}
	for l := range table {
		if !slices.Contains(leaves, l) {
			t.Errorf("the table classifies %s, which %v does not have", l, typ)
		}
	}
	return out
}

// TestDigestBinding_EveryFieldIsBoundOrDeliberatelyNot walks every field of
// CommandSpec (with Confinement and Limits) and Approval, changes one at a
// time, and checks that the digest changes exactly for the fields the
// tables say it binds.
//
// Invariant 9 of DESIGN.md.
func TestDigestBinding_EveryFieldIsBoundOrDeliberatelyNot(t *testing.T) {
	t.Run("spec fingerprint", func(t *testing.T) {
		var base CommandSpec
		digestFiller.Fill(&base, 1)
		want := fingerprintOf(base)
		for _, leaf := range classified(t, reflect.TypeFor[CommandSpec](), specDigestFields) {
			var s CommandSpec
			digestFiller.Fill(&s, 1)
			digestFiller.SetLeaf(&s, leaf, 2)
			changed := fingerprintOf(s) != want
			if why := specDigestFields[leaf]; why == digested && !changed {
				t.Errorf("changing %s leaves the spec fingerprint as it was, but the table says it is bound", leaf)
			} else if why != digested && changed {
				t.Errorf("changing %s changes the spec fingerprint, but the table says it is not bound: %s", leaf, why)
			}
		}
	})
	t.Run("approval digest", func(t *testing.T) {
		stdin := stdinSHA256([]byte("stdin"))
		var base Approval
		inventory.Fill(&base, 1)
		want := approvalDigest(&base, "fingerprint", stdin)
		for _, leaf := range classified(t, reflect.TypeFor[Approval](), approvalDigestFields) {
			var ap Approval
			inventory.Fill(&ap, 1)
			digestFiller.SetLeaf(&ap, leaf, 2)
			changed := approvalDigest(&ap, "fingerprint", stdin) != want
			if why := approvalDigestFields[leaf]; why == digested && !changed {
				t.Errorf("changing %s leaves the approval digest as it was, but the table says it is bound", leaf)
			} else if why != digested && changed {
				t.Errorf("changing %s changes the approval digest, but the table says it is not bound: %s", leaf, why)
			}
		}
	})
}

// TestDigestBinding_DigestEncodingIsUnambiguous changes inputs in ways a
// careless encoding would not see: values moved across the boundary
// between two entries, an empty entry dropped, the salt, the stdin, the
// fingerprint.
//
// Invariant 9 of DESIGN.md.
func TestDigestBinding_DigestEncodingIsUnambiguous(t *testing.T) {
	base := computeGolden()
	stdin := []byte("stdin bytes\n")

	split := goldenEntry()
	split.env = []string{"HOME=/home/agentPATH=/usr/bin:/bin"}
	assert.NotEqual(t, base.Fingerprint, specFingerprint(split), "env entries joined")

	for name, change := range map[string]func(*Approval){
		"expires seconds": func(a *Approval) { a.ExpiresAt = a.ExpiresAt.Add(time.Second) },
		"args joined":     func(a *Approval) { a.Args = []string{"log", "--max-count5", ""} },
		"empty arg gone":  func(a *Approval) { a.Args = a.Args[:3] },
	} {
		ap := goldenApproval()
		change(&ap)
		assert.NotEqual(t, base.Approval, approvalDigest(&ap, base.Salted, stdinSHA256(stdin)), name)
	}
	assert.NotEqual(t, base.Salted, saltedFingerprint([]byte("another salt"), base.Fingerprint), "salt")
	ap := goldenApproval()
	assert.NotEqual(t, base.Approval, approvalDigest(&ap, base.Salted, stdinSHA256([]byte("other"))), "stdin")
	assert.NotEqual(t, base.Approval, approvalDigest(&ap, specFingerprint(&entry{}), stdinSHA256(stdin)), "fingerprint")

	// The time zone an approval travels in does not matter; the instant does.
	ap = goldenApproval()
	ap.CreatedAt = ap.CreatedAt.In(time.FixedZone("X", 3600))
	assert.Equal(t, base.Approval, approvalDigest(&ap, base.Salted, stdinSHA256(stdin)))
}
