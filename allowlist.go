package execgate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/execgate/execgate/internal/inputrules"
)

// Allowlist is the fixed set of commands a gate may run. It is built once by
// [NewAllowlist], which checks every spec and resolves every executable, and is
// immutable afterwards: replace it as a whole with [Executor.SetAllowlist].
//
// A nil or zero Allowlist is valid and refuses every name. An Allowlist is
// safe for concurrent use.
type Allowlist struct {
	entries     map[string]*entry // ordinary specs, by name
	dispatchers map[string]*entry // dispatcher specs, by name (the prefix they serve)
	names       []string          // every spec name, sorted
}

// entry is a checked spec with what every call derives from it computed once.
type entry struct {
	spec        CommandSpec // normalized: defaults filled, Command absolute, Env and Confine copied
	env         []string    // sorted KEY=value
	fingerprint string      // hex SHA-256 of what decides how the command runs
	procFP      string      // fingerprint salted with this process's key, for proposal digests
}

// schemaChecker is implemented by schemas that can report a construction
// mistake (a bad struct tag, a nil build function) when the [Allowlist] is
// built rather than at the first call.
type schemaChecker interface {
	check() error
}

// NewAllowlist checks every spec, applies the defaults documented on
// [CommandSpec], resolves every Command to an absolute path, verifies SHA256
// pins, and returns the [Allowlist]. It refuses the whole set with a
// [*ConfigError] naming the first bad spec and field: a malformed or duplicate
// name, an empty, relative or missing Command, one found through a relative
// PATH entry, a nil Args, a malformed or mismatched SHA256, a relative Dir,
// a negative limit, a malformed Env entry, or a malformed Confine (a
// relative path, a negative limit, more paths and egress entries than an
// [Approval] can show).
//
// An empty list gives an Allowlist that refuses everything.
func NewAllowlist(specs ...CommandSpec) (*Allowlist, error) {
	var cwd string
	memo := newAllowMemo()
	a := &Allowlist{entries: make(map[string]*entry, len(specs)), dispatchers: make(map[string]*entry)}
	var prev *entry
	for _, s := range specs {
		if err := checkName(s.Name); err != nil {
			return nil, &ConfigError{Spec: s.Name, Field: "Name", Message: err.Error()}
		}
		if a.entries[s.Name] != nil || a.dispatchers[s.Name] != nil {
			return nil, &ConfigError{Spec: s.Name, Field: "Name", Message: "duplicate name"}
		}
		if s.Dir == "" && cwd == "" {
			wd, err := os.Getwd()
			if err != nil {
				return nil, &ConfigError{Spec: s.Name, Field: "Dir", Message: "empty, and the working directory is unknown: " + err.Error()}
			}
			cwd = wd
		}
		e, err := newEntry(s, cwd, memo)
		if err != nil {
			return nil, err
		}
		shareEnv(e, prev)
		prev = e
		if s.Dispatch {
			a.dispatchers[s.Name] = e
		} else {
			a.entries[s.Name] = e
		}
		a.names = append(a.names, s.Name)
	}
	sort.Strings(a.names)
	return a, nil
}

// shareEnv makes e use the environment of prev, the entry made before it,
// when the two are equal, as they are for the commands of one tool: the
// map and the list are never changed once made (publicSpec copies the
// map), so the entries of a configuration of many tools keep one copy
// of each environment rather than one per command.
func shareEnv(e, prev *entry) {
	if prev != nil && maps.Equal(e.spec.Env, prev.spec.Env) {
		e.spec.Env, e.env = prev.spec.Env, prev.env
	}
}

// newEntry checks one spec and fills its defaults, in the order of the
// steps below, so that the first problem found is the one reported: the
// schema, the floor, the executable and its pin, the limits, the working
// directory, the environment and the confinement. cwd is the working
// directory used for an empty Dir; memo holds what the file system told
// the specs of the same Allowlist before it.
func newEntry(s CommandSpec, cwd string, memo *allowMemo) (*entry, error) {
	if err := checkSchema(&s); err != nil {
		return nil, err
	}
	if err := fillFloor(&s); err != nil {
		return nil, err
	}
	if err := resolveExecutable(&s, memo); err != nil {
		return nil, err
	}
	if err := fillLimits(&s); err != nil {
		return nil, err
	}
	if err := fillDir(&s, cwd); err != nil {
		return nil, err
	}
	if err := bindArgs(&s, memo); err != nil {
		return nil, err
	}
	list, err := copyEnv(&s)
	if err != nil {
		return nil, err
	}
	if s.Confine != nil {
		c, err := normalizeConfinement(s.Name, s.Confine)
		if err != nil {
			return nil, err
		}
		if err := checkShownConfinement(s.Name, c); err != nil {
			return nil, err
		}
		s.Confine = c
	}
	s.Hints = s.Hints.clone()
	e := &entry{spec: s, env: list}
	e.fingerprint = specFingerprint(e)
	e.procFP = saltedFingerprint(processSalt(), e.fingerprint)
	return e, nil
}

// specProblem is the *ConfigError for field of the spec named name.
func specProblem(name, field, format string, args ...any) error {
	return &ConfigError{Spec: name, Field: field, Message: fmt.Sprintf(format, args...)}
}

// checkSchema checks s.Args: present, well built, and a Subcommands schema
// exactly when s is a dispatcher.
func checkSchema(s *CommandSpec) error {
	if s.Args == nil {
		return specProblem(s.Name, "Args", "a schema is required (use Fixed() for a command without arguments)")
	}
	if c, ok := s.Args.(schemaChecker); ok {
		if err := c.check(); err != nil {
			return specProblem(s.Name, "Args", "%v", err)
		}
	}
	if _, ok := s.Args.(subcommandParser); ok != s.Dispatch {
		if s.Dispatch {
			return specProblem(s.Name, "Args", "a dispatcher (Dispatch true) needs a Subcommands schema")
		}
		return specProblem(s.Name, "Args", "a Subcommands schema needs Dispatch set")
	}
	return nil
}

// fillFloor checks s.Floor and fills its default: allow for a command,
// deny for a dispatcher.
func fillFloor(s *CommandSpec) error {
	switch s.Floor {
	case "":
		s.Floor = ActionAllow
		if s.Dispatch {
			s.Floor = ActionDeny
		}
	case ActionAllow, ActionRequireApproval, ActionDeny:
	default:
		return specProblem(s.Name, "Floor", "must be %q, %q or %q", ActionAllow, ActionRequireApproval, ActionDeny)
	}
	return nil
}

// resolveExecutable resolves s.Command to an absolute path and checks the
// file against s.SHA256 when it is pinned.
func resolveExecutable(s *CommandSpec, memo *allowMemo) error {
	path, err := memo.resolveCommand(s.Command)
	if err != nil {
		return specProblem(s.Name, "Command", "%v", err)
	}
	if len(path) > maxCommandBytes || !utf8.ValidString(path) {
		return specProblem(s.Name, "Command", "the resolved path must be valid UTF-8 of at most %d bytes, so that approvals can carry it", maxCommandBytes)
	}
	s.Command = path
	if s.SHA256 != "" {
		pin := strings.ToLower(s.SHA256)
		if len(pin) != sha256.Size*2 || !isHex(pin) {
			return specProblem(s.Name, "SHA256", "must be 64 hex digits")
		}
		got, ok := memo.hashes[path]
		if !ok {
			var err error
			if got, err = fileSHA256(path); err != nil {
				return specProblem(s.Name, "SHA256", "cannot hash %s: %v", path, err)
			}
			memo.hashes[path] = got // several specs often pin one executable
		}
		if got != pin {
			return specProblem(s.Name, "SHA256", "%s does not match the pinned digest", path)
		}
		s.SHA256 = pin
	}
	return nil
}

// fillLimits checks the timeouts, MaxOutput and PolicyVersion of s and
// fills their defaults.
func fillLimits(s *CommandSpec) error {
	switch {
	case s.Timeout < 0:
		return specProblem(s.Name, "Timeout", "must not be negative")
	case s.NoOutputTimeout < 0:
		return specProblem(s.Name, "NoOutputTimeout", "must not be negative")
	case s.MaxOutput < 0:
		return specProblem(s.Name, "MaxOutput", "must not be negative")
	}
	if s.Timeout == 0 {
		s.Timeout = DefaultTimeout
	}
	if s.MaxOutput == 0 {
		s.MaxOutput = DefaultMaxOutput
	}
	if s.PolicyVersion == "" {
		s.PolicyVersion = DefaultPolicyVersion
	}
	if len(s.PolicyVersion) > maxPolicyVersionBytes || !utf8.ValidString(s.PolicyVersion) || strings.IndexByte(s.PolicyVersion, 0) >= 0 {
		return specProblem(s.Name, "PolicyVersion", "must be valid UTF-8 without NUL, at most %d bytes, so that approvals can carry it", maxPolicyVersionBytes)
	}
	return nil
}

// fillDir checks s.Dir and makes it absolute and clean: cwd when empty.
func fillDir(s *CommandSpec, cwd string) error {
	switch {
	case s.Dir == "":
		s.Dir = cwd
	case !filepath.IsAbs(s.Dir):
		return specProblem(s.Name, "Dir", "must be an absolute path")
	default:
		s.Dir = filepath.Clean(s.Dir)
	}
	return nil
}

// bindArgs binds a schema that checks arguments against the working
// directory (path arguments) to s.Dir, which fillDir has made absolute.
func bindArgs(s *CommandSpec, memo *allowMemo) error {
	b, ok := s.Args.(dirBinder)
	if !ok {
		return nil
	}
	bound, err := b.bindDir(s.Dir, memo)
	if err != nil {
		return specProblem(s.Name, "Args", "%v", err)
	}
	s.Args = bound
	return nil
}

// copyEnv checks every entry of s.Env, replaces s.Env with a private copy
// and returns the environment as sorted KEY=value strings.
func copyEnv(s *CommandSpec) ([]string, error) {
	env := make(map[string]string, len(s.Env))
	list := make([]string, 0, len(s.Env))
	for k, v := range s.Env {
		if msg := inputrules.EnvKeyProblem(k); msg != "" {
			return nil, specProblem(s.Name, "Env", "key %q %s", k, msg)
		}
		if msg := inputrules.EnvValueProblem(v); msg != "" {
			return nil, specProblem(s.Name, "Env", "value of %q %s", k, msg)
		}
		env[k] = v
		list = append(list, k+"="+v)
	}
	sort.Strings(list)
	s.Env = env
	return list, nil
}

// checkName reports whether name is a well-formed logical command name.
func checkName(name string) error { return inputrules.NameProblem(name) }

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// lookup returns the entry that serves the requested name, or nil, and the
// subcommand when the entry is a dispatcher. An ordinary spec registered
// under name wins; otherwise a dispatcher registered under the part of name
// before its last dot serves it, whatever the subcommand after the dot
// looks like (the dispatcher's schema checks it). It is safe on a nil
// Allowlist.
func (a *Allowlist) lookup(name string) (e *entry, sub string) {
	if a == nil {
		return nil, ""
	}
	if e := a.entries[name]; e != nil {
		return e, ""
	}
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		if e := a.dispatchers[name[:i]]; e != nil {
			return e, name[i+1:]
		}
	}
	return nil, ""
}

// Lookup returns the checked spec that serves the requested name, with its
// defaults filled in and its Command resolved to an absolute path, and
// whether there is one. For a name served by a dispatcher ("git.stash"
// served by "git"), it returns the dispatcher's spec. The returned spec's
// Env and Confine are copies.
func (a *Allowlist) Lookup(name string) (CommandSpec, bool) {
	e, _ := a.lookup(name)
	if e == nil {
		return CommandSpec{}, false
	}
	return e.publicSpec(), true
}

// Fingerprint returns the fingerprint of the spec that serves the
// requested name, as Lookup finds it, and whether there is one. Two
// fingerprints are equal exactly when the specs agree on everything an
// approval binds of them (the executable and its SHA-256, the
// environment, the directory, the timeouts and output bound, the
// PolicyVersion and the confinement), so a caller can tell whether a
// reload changed what a name runs. It is salted with a key of this
// process: compare it within the process, never store or show it.
func (a *Allowlist) Fingerprint(name string) (string, bool) {
	e, _ := a.lookup(name)
	if e == nil {
		return "", false
	}
	return e.procFP, true
}

// Specs returns every checked spec, dispatchers included, sorted by name,
// as Lookup reports them.
func (a *Allowlist) Specs() []CommandSpec {
	if a == nil {
		return nil
	}
	out := make([]CommandSpec, 0, len(a.names))
	for _, n := range a.names {
		e := a.entries[n]
		if e == nil {
			e = a.dispatchers[n]
		}
		out = append(out, e.publicSpec())
	}
	return out
}

func (e *entry) publicSpec() CommandSpec {
	s := e.spec
	s.Env = make(map[string]string, len(e.spec.Env))
	for k, v := range e.spec.Env {
		s.Env[k] = v
	}
	s.Confine = e.spec.Confine.clone()
	s.Hints = e.spec.Hints.clone()
	return s
}

// allowMemo holds what NewAllowlist learnt of the file system while it
// checked the specs before the one it checks: the digests of pinned
// executables, where each Command resolved to, and where each path rule's
// root leads. A configuration of thousands of tools names a few programs
// and directories thousands of times. What a spec is checked against is
// then what the file system held while the Allowlist was made, as it is
// for one spec alone; nothing is kept once NewAllowlist returns.
type allowMemo struct {
	hashes   map[string]string // executable path -> SHA-256 in hex
	commands map[string]resolvedCommand
	roots    map[string]string // path rule root -> its symbolic links resolved
}

// resolvedCommand is what inputrules.ResolveCommand returned for a
// Command.
type resolvedCommand struct {
	path string
	err  error
}

func newAllowMemo() *allowMemo {
	return &allowMemo{hashes: make(map[string]string), commands: make(map[string]resolvedCommand), roots: make(map[string]string)}
}

// resolveCommand is inputrules.ResolveCommand, once per Command for m.
func (m *allowMemo) resolveCommand(cmd string) (string, error) {
	if m == nil {
		return inputrules.ResolveCommand(cmd)
	}
	if r, ok := m.commands[cmd]; ok {
		return r.path, r.err
	}
	path, err := inputrules.ResolveCommand(cmd)
	m.commands[cmd] = resolvedCommand{path, err}
	return path, err
}

// resolveRoot returns the root r (cleaned and absolute) with its symbolic
// links resolved, or r itself when they cannot be, once per root for m.
func (m *allowMemo) resolveRoot(r string) string {
	if m != nil {
		if real, ok := m.roots[r]; ok {
			return real
		}
	}
	real, err := filepath.EvalSymlinks(r)
	if err != nil {
		real = r
	}
	if m != nil {
		m.roots[r] = real
	}
	return real
}
