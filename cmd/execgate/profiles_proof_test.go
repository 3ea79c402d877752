package main

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/profiles"
)

// The proof tests run each profile against the real program (invariants
// 12 and 13 of DESIGN.md): in a scratch root, with a canary file next to
// the root, every allow example of the profile runs and succeeds, and an
// attack corpus for the program is refused or inert: the canary's content
// never appears, no file inside or outside the root changes, and no
// marker file that a payload would create appears.

const proofCanary = "canary-3f1e9a-outside-the-root"

// proofScene is a scratch directory: root (the tools' working_dir) and,
// beside it, secret.txt holding the canary and the path a payload would
// create as its marker.
type proofScene struct {
	base, root, secret, marker string
	config                     string // a configuration naming the profile
}

func newProofScene(t *testing.T, profile string) *proofScene {
	t.Helper()
	return newProofSceneWith(t, profile, "")
}

// newProofSceneWith is newProofScene with more keys of the tools entry
// (site values such as "hosts: [localhost]"), each line indented as a key
// of the entry ("    hosts: [localhost]\n").
func newProofSceneWith(t *testing.T, profile, more string) *proofScene {
	t.Helper()
	requireProgram(t, profile)
	if k := probeKernel(); k.os != "" || k.landlockABI < k.minABI || !k.userns {
		skipUnlessCI(t, "the profiles' confinement needs Landlock and user namespaces, which this kernel does not give")
	}
	return newProofScratch(t, profile, more)
}

// newProofScratch is newProofSceneWith without its demand on the kernel:
// the scene for calls a test makes outside the confinement.
func newProofScratch(t *testing.T, profile, more string) *proofScene {
	t.Helper()
	bin := requireProgram(t, profile)
	base := t.TempDir()
	s := &proofScene{
		base:   base,
		root:   filepath.Join(base, "root"),
		secret: filepath.Join(base, "secret.txt"),
		marker: filepath.Join(base, "pwned"),
	}
	require.NoError(t, os.MkdirAll(filepath.Join(s.root, "src"), 0o755))
	require.NoError(t, os.WriteFile(s.secret, []byte(proofCanary+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(base, "secret.json"), []byte(`{"c":"`+proofCanary+`"}`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(s.root, "README"), []byte("hello\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(s.root, "src", "main.go"), []byte("package main // hello\n"), 0o644))
	require.NoError(t, os.Symlink(s.secret, filepath.Join(s.root, "link-out")))
	s.config = writeFile(t, "tools.yaml", "version: 1\ntools:\n  - profile: "+profile+"\n    bin: "+bin+"\n    working_dir: "+s.root+"\n"+more)
	return s
}

// underCI reports whether the tests run under CI: the variable CI is set
// to anything but "", "0" or "false" (.ci/run sets CI=true, as CI
// services do).
func underCI() bool {
	v := os.Getenv("CI")
	return v != "" && v != "0" && v != "false"
}

// skipUnlessCI skips the test for why, a reason of this machine (a kernel
// without what the proofs need), except under CI, where it fails: a
// proof that does not run there proves nothing.
func skipUnlessCI(t testing.TB, why string) {
	t.Helper()
	if underCI() {
		t.Fatalf("%s, and CI is set: CI must run the profiles' proofs, on a machine that gives them what they need", why)
		return
	}
	t.Skip(why)
}

// requireProgram returns the path of the real program a profile is for,
// found under its own name or an alias, and fails the test when it is not
// installed (CI installs it).
func requireProgram(t *testing.T, name string) string {
	t.Helper()
	names := profiles.Programs(name)
	if names == nil {
		names = []string{name}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	t.Fatalf("this test runs the real %s (CI installs it), which is not on PATH", name)
	return ""
}

// git runs git in the root, outside the gate, to set the scene up.
func (s *proofScene) git(t *testing.T, args ...string) {
	t.Helper()
	s.gitOut(t, args...)
}

// gitOut is git, returning what git printed on stdout, trimmed.
func (s *proofScene) gitOut(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Dir = s.root
	cmd.Env = []string{"HOME=" + s.base, "GIT_CONFIG_NOSYSTEM=1"}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "git %v: %s%s", args, out, stderr.String())
	return strings.TrimSpace(string(out))
}

// snapshot records every file under base: type, mode, size, time and
// content digest.
func (s *proofScene) snapshot(t *testing.T) map[string]string {
	t.Helper()
	m := map[string]string{}
	require.NoError(t, filepath.WalkDir(s.base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		e := fi.Mode().String() + " " + fi.ModTime().String()
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e += fmt.Sprintf(" %d %x", len(data), sha256.Sum256(data))
		}
		m[p] = e
		return nil
	}))
	return m
}

// run makes one call through execgate run and returns its exit code and
// everything it printed.
func (s *proofScene) run(t *testing.T, name string, input any) (int, string) {
	t.Helper()
	in, err := json.Marshal(input)
	require.NoError(t, err)
	code, out, errOut := runBinary(t, "run", "--config", s.config, name, string(in))
	return code, out + errOut
}

// runBinary runs the execgate binary, built as users build it, with args,
// and returns its exit code, stdout and stderr. The proof tests use it
// rather than the test binary: a confined call's helper is the running
// program, and a race-enabled one maps so much address space that the
// profiles' memory limits leave it none for a thread.
func runBinary(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("execgate %v: %v", args, err)
	}
	return code, out.String(), errOut.String()
}

// allowExamples returns the profile's allow examples by command name.
func allowExamples(t *testing.T, profile string) map[string][]map[string]any {
	t.Helper()
	data, ok := profiles.Lookup(profile)
	require.True(t, ok)
	type entry struct {
		Examples struct {
			Allow []map[string]any `yaml:"allow"`
		} `yaml:"examples"`
	}
	var p struct {
		Commands map[string]entry `yaml:"commands"`
		Bare     *entry           `yaml:"bare"`
	}
	require.NoError(t, yaml.Unmarshal(data, &p))
	out := map[string][]map[string]any{}
	for c, e := range p.Commands {
		out[profile+"."+c] = e.Examples.Allow
	}
	if p.Bare != nil {
		out[profile+".run"] = p.Bare.Examples.Allow
	}
	return out
}

// runAllowExamples runs every allow example of the profile for real: each
// must exit 0 and none may print the canary.
func (s *proofScene) runAllowExamples(t *testing.T, profile string, stdin string) {
	t.Helper()
	ex := allowExamples(t, profile)
	names := make([]string, 0, len(ex))
	for n := range ex {
		names = append(names, n)
	}
	sort.Strings(names)
	require.NotEmpty(t, names)
	for _, name := range names {
		require.NotEmpty(t, ex[name], "%s has allow examples", name)
		for _, in := range ex[name] {
			if stdin != "" {
				in["stdin"] = stdin
			}
			code, out := s.run(t, name, in)
			require.Equal(t, exitOK, code, "%s %v: %s", name, in, out)
			var r execgate.Result
			require.NoError(t, json.Unmarshal([]byte(strings.SplitN(out, "\n}\n", 2)[0]+"\n}"), &r), out)
			assert.Equal(t, 0, r.ExitCode, "%s %v: %s", name, in, r.Stderr)
			assert.NotContains(t, out, proofCanary)
		}
	}
}

// attack is one call of an attack corpus.
type attack struct {
	why, name string
	input     map[string]any
}

// runAttacks runs each attack and checks that it is refused or inert.
func (s *proofScene) runAttacks(t *testing.T, attacks []attack) {
	t.Helper()
	before := s.snapshot(t)
	for _, a := range attacks {
		t.Run(a.why, func(t *testing.T) {
			_, out := s.run(t, a.name, a.input)
			assert.NotContains(t, out, proofCanary, "the canary outside the root is never read")
			assert.NoFileExists(t, s.marker, "no payload ran")
		})
	}
	after := s.snapshot(t)
	assert.Equal(t, before, after, "no file inside or outside the root changed")
}

func args(a ...string) map[string]any { return map[string]any{"args": a} }

// TestProfileProof_Git runs the git profile's allow examples and its
// attack corpus in a repository whose history holds a symbolic link to
// the canary (committed, so git reads it from the index and the objects,
// not only from the work tree), beside a stray TCP listener that every
// attack naming a URL or a remote aims at and that no call may reach.
func TestProfileProof_Git(t *testing.T) {
	s := newProofScene(t, "git")
	stray := newNetProofStray(t, netProofHost{name: "127.0.0.1", addr: netip.MustParseAddr("127.0.0.1")})
	strayURL := "http://" + netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(stray.port)).String() + "/r.git"
	// The ext transport runs its URL as a command (git-remote-ext(1)).
	extURL := "ext::sh -c touch% " + s.marker
	require.NoError(t, os.Symlink(s.secret, filepath.Join(s.root, "committed-out")))
	s.git(t, "init", "-q")
	s.git(t, "add", "README", "src/main.go", "committed-out")
	s.git(t, "commit", "-q", "-m", "one")
	require.NoError(t, os.WriteFile(filepath.Join(s.root, "README"), []byte("hello\nsecond line\n"), 0o644))
	s.git(t, "commit", "-q", "-a", "-m", "two")
	require.NoError(t, os.WriteFile(filepath.Join(s.root, "README"), []byte("hello\nchanged\n"), 0o644))
	s.runAllowExamples(t, "git", "")

	outside := "../secret.txt"
	s.runAttacks(t, []attack{
		{"diff of a path climbing out", "git.diff", args(outside)},
		{"diff of an absolute path outside", "git.diff", args(s.secret, "README")},
		{"diff through a symlink that points outside", "git.diff", args("link-out", "README")},
		{"diff --no-index", "git.diff", args("--no-index", outside, "README")},
		{"diff --output", "git.diff", args("--output=" + s.marker)},
		{"diff --ext-diff", "git.diff", args("--ext-diff")},
		{"diff --textconv", "git.diff", args("--textconv")},
		{"a -c override as an argument", "git.diff", args("-c", "core.pager=touch "+s.marker)},
		{"-c core.sshCommand as an argument", "git.diff", args("-c", "core.sshCommand=touch "+s.marker)},
		{"-c diff.external as an argument", "git.diff", args("-c", "diff.external=touch "+s.marker)},
		{"-c diff.external as an argument to log -p", "git.log", args("-c", "diff.external=touch "+s.marker, "-p")},
		{"-c diff.external to grep, whose -c is --count", "git.grep", args("-c", "diff.external=touch "+s.marker, "-e", "hello")},
		{"--config-env naming a variable", "git.diff", args("--config-env=diff.external=PATH")},
		{"show of a path out of the tree", "git.show", args("HEAD:" + outside)},
		{"show --output", "git.show", args("--output=" + s.marker)},
		{"log --output", "git.log", args("--output=" + s.marker)},
		{"log of a path climbing out", "git.log", args("-p", outside)},
		{"blame of a symlink that points outside", "git.blame", args("link-out")},
		{"blame --contents", "git.blame", args("--contents", s.secret, "README")},
		{"grep -O runs a pager", "git.grep", args("-O", "-e", "hello")},
		{"grep --open-files-in-pager", "git.grep", args("--open-files-in-pager=touch "+s.marker, "-e", "hello")},
		{"grep --no-index", "git.grep", args("--no-index", "-e", "canary")},
		{"grep of a path outside", "git.grep", args("-e", "canary", outside)},
		{"grep -f of a file outside", "git.grep", args("-f", s.secret)},
		{"ls-files --exclude-from", "git.ls-files", args("--exclude-from=" + s.secret)},
		{"--exec-path", "git.log", args("--exec-path=" + s.base)},
		{"--upload-pack", "git.ls-files", args("--upload-pack=touch " + s.marker)},
		{"an ext:: URL as a revision", "git.show", args(extURL)},
		{"an ext:: URL as a path", "git.log", args(extURL)},
		{"an ext:: URL as a remote's -c override", "git.log", args("-c", "remote.origin.url="+extURL)},
		{"-c protocol.ext.allow as an argument", "git.log", args("-c", "protocol.ext.allow=always")},
		{"--upload-pack with an ext:: URL", "git.ls-files", args("--upload-pack", extURL)},
		{"a URL on the stray listener as a revision", "git.show", args(strayURL)},
		{"a URL on the stray listener as a path", "git.diff", args(strayURL)},
		{"a remote on the stray listener as a -c override", "git.log", args("-c", "remote.origin.url="+strayURL)},
		{"--with-tree of a remote on the stray listener", "git.ls-files", args("--with-tree=" + strayURL)},
		{"show of a committed symlink that points outside", "git.show", args("HEAD:committed-out")},
		{"diff of a committed symlink that points outside", "git.diff", args("committed-out")},
		{"log -p of a committed symlink that points outside", "git.log", args("-p", "committed-out")},
		{"blame of a committed symlink that points outside", "git.blame", args("committed-out")},
		{"grep through a committed symlink that points outside", "git.grep", args("-e", "canary", "committed-out")},
		{"grep of the tree holding a committed symlink", "git.grep", args("-e", "canary")},
		{"ls-files of a committed symlink that points outside", "git.ls-files", args("committed-out")},
	})
	// The attacks above need only be refused or inert; these the grammar
	// itself refuses, before git starts.
	s.requireRefusedByGrammar(t, []attack{
		{"-c core.sshCommand", "git.diff", args("-c", "core.sshCommand=touch "+s.marker)},
		{"-c diff.external", "git.diff", args("-c", "diff.external=touch "+s.marker)},
		{"-c diff.external to log", "git.log", args("-c", "diff.external=touch "+s.marker, "-p")},
		{"an ext:: URL as a revision", "git.show", args(extURL)},
		{"an ext:: URL as a remote's -c override", "git.log", args("-c", "remote.origin.url="+extURL)},
		{"--upload-pack with an ext:: URL", "git.ls-files", args("--upload-pack", extURL)},
		{"a URL as a revision", "git.show", args(strayURL)},
		{"a remote on the stray listener", "git.log", args("-c", "remote.origin.url="+strayURL)},
		{"a committed symlink that points outside, as a path", "git.diff", args("committed-out")},
	})
	assert.Zero(t, stray.accepted.Load(), "no call reached the stray listener")
}

// TestProfileProof_GitHostileRepository serves a repository whose own
// config and .gitattributes name programs (a pager, an external diff, a
// textconv and a clean filter, an fsmonitor) that would read the canary
// and create the marker, and that is a partial clone whose promisor
// remotes (see hostileGitRepository) git asks for any object it lacks,
// with the repository's own protocol.*.allow letting every transport
// through: the profile's overrides and its confinement (nothing but git
// executes, no network) leave each inert, and the stray listener accepts
// no connection. TestTypedGrammars_GitProfileReachesNoTransportEvenUnconfined
// runs the promisor attacks without the confinement.
func TestProfileProof_GitHostileRepository(t *testing.T) {
	s := newProofScene(t, "git")
	stray := newNetProofStray(t, netProofHost{name: "127.0.0.1", addr: netip.MustParseAddr("127.0.0.1")})
	outside := s.hostileGitRepository(t, stray)
	var calls []attack
	for _, c := range []struct {
		name string
		in   map[string]any
	}{
		{"git.log", args("-p")},
		{"git.log", args("-n", "1")},
		{"git.show", args()},
		{"git.diff", args()},
		{"git.diff", args("README")},
		{"git.status", args()},
		{"git.blame", args("README")},
		{"git.grep", args("-e", "hello")},
		{"git.ls-files", args("--others")},
		// An object the repository lacks: a partial clone fetches it
		// from its promisor remotes.
		{"git.show", args(missingGitObject)},
		{"git.log", args("-n", "1", missingGitObject)},
		// The canary, which a promisor outside the root holds.
		{"git.show", args(outside)},
	} {
		calls = append(calls, attack{"repository config under " + c.name + " " + strings.Join(anyStrings(c.in["args"]), " "), c.name, c.in})
	}
	s.runAttacks(t, calls)
	assert.Zero(t, stray.accepted.Load(), "no call reached the stray listener")
}

// missingGitObject is an object name no repository of the proofs holds.
const missingGitObject = "0123456789abcdef0123456789abcdef01234567"

// hostileGitRepository makes the scene's root a repository whose own
// config names programs for git to run (each reads the canary and creates
// the marker) and makes it a partial clone: git asks its promisor remotes
// for any object it lacks, one after the other, and the config lets each
// one's transport through with its protocol.<name>.allow, which outranks
// the profile's protocol.allow=never. The promisors are an http URL on
// the stray listener; an ext:: URL, whose command creates the marker; a
// URL with the empty transport name ("::x"), whose helper git runs as the
// command "remote-", which the config defines as an alias that creates the
// marker; and a file:// repository beside the root, serving any object it
// holds, which holds the canary. It returns the name of the canary's
// object there, which the root lacks.
//
// git asks the promisors in the config's order, the partialClone one
// last, and dies of SIGPIPE when one's fetch exits before reading the
// list of objects git writes to it, as a fetch whose transport is not
// allowed does at once: then the later ones are asked only some of the
// time. "::x" comes first, so the scene's live check of it
// holds on every run, and the payload creates the marker before it
// writes a byte git could reject.
func (s *proofScene) hostileGitRepository(t *testing.T, stray *netProofStray) (outside string) {
	t.Helper()
	strayURL := "http://" + netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(stray.port)).String() + "/r.git"
	elsewhere := filepath.Join(s.base, "elsewhere.git")
	s.git(t, "init", "-q", "--bare", elsewhere)
	s.git(t, "--git-dir="+elsewhere, "config", "uploadpack.allowAnySHA1InWant", "true")
	s.git(t, "--git-dir="+elsewhere, "config", "uploadpack.allowFilter", "true")
	hash := exec.Command("git", "--git-dir="+elsewhere, "hash-object", "-w", s.secret)
	hash.Env = []string{"HOME=" + s.base, "GIT_CONFIG_NOSYSTEM=1"}
	out, err := hash.Output()
	require.NoError(t, err)
	outside = strings.TrimSpace(string(out))

	s.git(t, "init", "-q")
	s.git(t, "add", "README", "src/main.go")
	s.git(t, "commit", "-q", "-m", "one")
	payload := "sh -c 'touch " + s.marker + "; cat " + s.secret + "'"
	for _, kv := range [][2]string{
		{"core.repositoryformatversion", "1"},
		{"extensions.partialClone", "origin"},
		{"remote.origin.url", strayURL},
		{"remote.origin.promisor", "true"},
		{"remote.unnamed.url", "::x"},
		{"remote.unnamed.promisor", "true"},
		{"remote.ext.url", "ext::sh -c touch% " + s.marker},
		{"remote.ext.promisor", "true"},
		{"alias.remote-", "!" + payload},
		{"remote.elsewhere.url", "file://" + elsewhere},
		{"remote.elsewhere.promisor", "true"},
		{"protocol.http.allow", "always"},
		{"protocol.ext.allow", "always"},
		{"protocol..allow", "always"},
		{"protocol.file.allow", "always"},
		{"core.pager", payload},
		{"pager.log", payload},
		{"diff.external", payload},
		{"core.fsmonitor", payload},
		{"diff.evil.textconv", payload},
		{"diff.evil.command", payload},
		{"filter.evil.clean", payload},
		{"filter.evil.smudge", payload},
		{"core.hooksPath", s.base},
		{"log.showSignature", "true"},
		{"gpg.program", payload},
	} {
		s.git(t, "config", kv[0], kv[1])
	}
	require.NoError(t, os.WriteFile(filepath.Join(s.root, ".gitattributes"), []byte("* diff=evil filter=evil\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(s.root, "README"), []byte("hello\nchanged\n"), 0o644))
	return outside
}

func anyStrings(v any) []string {
	s, _ := v.([]string)
	return s
}

func TestProfileProof_Rg(t *testing.T) {
	s := newProofScene(t, "rg")
	s.runAllowExamples(t, "rg", "")
	s.runAttacks(t, []attack{
		{"a path climbing out", "rg.run", args("-e", "canary", "../secret.txt")},
		{"an absolute path outside", "rg.run", args("-e", "canary", s.secret)},
		{"the parent directory", "rg.run", args("-e", "canary", "..")},
		{"a symlink that points outside", "rg.run", args("-e", "canary", "link-out")},
		{"a search of the root does not follow the symlink", "rg.run", args("-e", "canary")},
		{"hidden files of the root", "rg.run", args("--hidden", "-e", "canary")},
		{"--follow", "rg.run", args("-L", "-e", "canary")},
		{"--pre runs a program", "rg.run", args("--pre", "touch", "-e", "x")},
		{"--pre= runs a program", "rg.run", args("--pre="+s.marker, "-e", "x")},
		{"--search-zip runs decompressors", "rg.run", args("-z", "-e", "x")},
		{"--file reads patterns from a file outside", "rg.run", args("-f", s.secret)},
		{"--ignore-file", "rg.run", args("--ignore-file", s.secret, "-e", "x")},
		{"a glob that climbs out", "rg.run", args("-g", "../*", "-e", "canary")},
	})
}

func TestProfileProof_Jq(t *testing.T) {
	s := newProofScene(t, "jq")
	s.runAllowExamples(t, "jq", `{"items":[{"ok":true,"name":"a"}],"name":"n"}`)
	withStdin := func(a ...string) map[string]any {
		m := args(a...)
		m["stdin"] = "{}"
		return m
	}
	s.runAttacks(t, []attack{
		{"--rawfile of a file outside", "jq.run", withStdin("--rawfile", "x", s.secret, "$x")},
		{"--slurpfile of a file outside", "jq.run", withStdin("--slurpfile", "x", s.secret, "$x")},
		{"a file operand outside", "jq.run", withStdin(".", s.secret)},
		{"a relative file operand climbing out", "jq.run", withStdin(".", "../secret.txt")},
		{"--from-file", "jq.run", withStdin("-f", s.secret)},
		{"-L and a module outside", "jq.run", withStdin("-L", s.base, `import "secret" as $s; $s`)},
		{"an import of a data file outside", "jq.run", withStdin(`import "../secret" as $s; $s`)},
		{"an import by absolute path", "jq.run", withStdin(`import "` + strings.TrimSuffix(filepath.Join(s.base, "secret.json"), ".json") + `" as $s; $s`)},
		{"--args turns operands into data", "jq.run", withStdin("--args", ".", s.secret)},
	})
}

// decodeProofResult reads the Result that execgate run printed first.
func decodeProofResult(t *testing.T, out string) execgate.Result {
	t.Helper()
	var r execgate.Result
	require.NoError(t, json.NewDecoder(strings.NewReader(out)).Decode(&r), out)
	return r
}

// requireRefusedByGrammar checks that each call is refused when it is
// validated, before anything runs: the attacks the grammar itself must
// stop, which runAttacks alone would also pass were they merely inert.
func (s *proofScene) requireRefusedByGrammar(t *testing.T, attacks []attack) {
	t.Helper()
	for _, a := range attacks {
		t.Run("refused: "+a.why, func(t *testing.T) {
			code, out := s.run(t, a.name, a.input)
			assert.Equal(t, exitFailed, code, out)
			assert.Contains(t, out, `"kind": "validation"`, "refused by the grammar, not by the program")
		})
	}
}

// runOK makes one call that must run and exit 0 without printing the
// canary, and returns its Result: the first step of every proof test's
// own calls, which then check the output their way.
func (s *proofScene) runOK(t *testing.T, name string, input map[string]any) execgate.Result {
	t.Helper()
	code, out := s.run(t, name, input)
	require.Equal(t, exitOK, code, out)
	r := decodeProofResult(t, out)
	assert.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.NotContains(t, out, proofCanary)
	return r
}
