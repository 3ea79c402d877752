package execgate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// PathMust says what a path argument must name when a call is checked.
type PathMust string

// What a [PathRule] can require of the thing a path names.
const (
	// PathAny, the zero PathMust, accepts a path whether or not anything
	// is there.
	PathAny PathMust = ""
	// PathExists requires something to be there.
	PathExists PathMust = "exists"
	// PathFile requires a regular file (after resolving symbolic links,
	// unless the rule is [PathRule.Lexical]).
	PathFile PathMust = "file"
	// PathDir requires a directory (likewise).
	PathDir PathMust = "dir"
)

// PathRule declares what a path argument may name: something inside one
// of its roots. It is the grammar of a path, checked as a path, so that no
// operator has to approximate it with a regular expression.
//
// A path token is checked against the call's working directory (the
// spec's [CommandSpec.Dir]): a relative token names Dir joined with it.
// The token is refused when it is empty, starts with '-' or '@' (before
// or after cleaning), holds a control, bidirectional or invisible
// character or a shell metacharacter (as every [Flags] value without a
// pattern does, in defense in depth: no shell ever sees it), or, once
// cleaned ([filepath.Clean]: "." and ".." resolved as text), names
// anything outside every root: "src/../../etc/passwd" and "/etc/passwd"
// alike, when the roots do not hold them. Unless the rule is Lexical, the
// part of the path that exists is then resolved, symbolic links and all,
// and the path is refused if it leads outside every root (a link inside a
// root that points out of it).
//
// The argv carries the cleaned token, never the token as given: relative
// stays relative, absolute stays absolute, and no ".." that the cleaning
// could resolve is left for the program to interpret. "src/./a//b" is
// passed as "src/a/b".
//
// The check is made when the call is validated; the program opens the
// path later. Someone who can change the files under a root in between
// (replace a directory by a link that points out) can still make the
// program reach outside: that window is what a [Confinement]'s Read and
// Write paths close, since the kernel then refuses every path outside
// them at the moment it is opened.
type PathRule struct {
	// Roots are the directories a path may name something in: absolute
	// paths, each itself included. Empty means the spec's working
	// directory (its Dir).
	Roots []string
	// Must says what must be at the path: [PathAny] (the zero value),
	// [PathExists], [PathFile] or [PathDir].
	Must PathMust
	// Glob lets the path hold the glob characters '*', '?' and '[', for a
	// program that expands patterns itself (rg -g, git pathspecs). The
	// part before the first segment that holds one is checked as a path;
	// the pattern itself is the program's to expand. False refuses them.
	Glob bool
	// Lexical checks the path as text only: symbolic links are not
	// resolved, so a link inside a root that points out of it is not
	// refused. False, the default, resolves them.
	Lexical bool
}

// PathError reports why a path token was refused. It is the Message of the
// [Issue] a schema reports; Token is the token as given.
type PathError struct {
	Token  string
	Reason string
}

// Error implements error.
func (e *PathError) Error() string { return "path " + quoteArg(e.Token) + " " + e.Reason }

// boundPathRule is a PathRule whose roots have been made absolute and,
// unless Lexical, resolved, for one working directory.
type boundPathRule struct {
	rule     PathRule
	dir      string
	roots    []string // cleaned, absolute
	resolved []string // roots with symbolic links resolved; nil when Lexical
}

// bindPath returns rule checked against the working directory dir
// (absolute). A root that is not absolute is an error; a root that does
// not exist is kept as given (nothing inside it exists either).
func bindPath(rule PathRule, dir string, memo *allowMemo) (*boundPathRule, error) {
	b := &boundPathRule{rule: rule, dir: filepath.Clean(dir)}
	roots := rule.Roots
	if len(roots) == 0 {
		roots = []string{b.dir}
	}
	for _, r := range roots {
		if !filepath.IsAbs(r) {
			return nil, errors.New("path root " + quoteArg(r) + " is not absolute")
		}
		b.roots = append(b.roots, filepath.Clean(r))
	}
	switch rule.Must {
	case PathAny, PathExists, PathFile, PathDir:
	default:
		return nil, errors.New("path rule: unknown Must " + quoteArg(string(rule.Must)) + " (want exists, file or dir)")
	}
	if !rule.Lexical {
		for _, r := range b.roots {
			b.resolved = append(b.resolved, memo.resolveRoot(r))
		}
	}
	return b, nil
}

// check returns the argv form of token, or a *PathError.
func (b *boundPathRule) check(token string) (string, error) {
	refuse := func(why string) (string, error) { return "", &PathError{Token: token, Reason: why} }
	if token == "" {
		return refuse("is empty")
	}
	if p := checkArgText(token); p != "" {
		return refuse(p)
	}
	if token[0] == '-' || token[0] == '@' {
		return refuse("starts with " + quoteArg(token[:1]) + ", which the program could read as an option or a file of arguments")
	}
	if c := shellMetaIn(token); c >= 0 {
		return refuse(fmt.Sprintf("holds the shell metacharacter %q", rune(c)))
	}
	fixed := token
	if i := strings.IndexAny(token, "*?["); i >= 0 {
		if !b.rule.Glob {
			return refuse("holds the glob character " + quoteArg(token[i:i+1]) + "; this argument takes a path, not a pattern")
		}
		// The segments before the first one with a glob character are
		// the path the pattern is expanded in.
		fixed = token[:strings.LastIndexByte(token[:i], '/')+1]
		if fixed == "" {
			fixed = "."
		}
	}
	cleaned := filepath.Clean(token)
	if cleaned[0] == '-' || cleaned[0] == '@' {
		return refuse("starts with " + quoteArg(cleaned[:1]) + " once cleaned")
	}
	abs := filepath.Join(b.dir, filepath.Clean(fixed))
	if filepath.IsAbs(fixed) {
		abs = filepath.Clean(fixed)
	}
	if !within(abs, b.roots) {
		return refuse("is outside " + b.rootsText() + "; give a path inside")
	}
	if fixed != token && strings.Contains("/"+cleaned+"/", "/../") {
		return refuse("holds \"..\" in its pattern")
	}
	if !b.rule.Lexical {
		real, err := resolveExisting(abs)
		if err != nil {
			return refuse("cannot be resolved: " + pathErrorCause(err).Error())
		}
		if !within(real, b.resolved) {
			return refuse("leads outside " + b.rootsText() + " through a symbolic link")
		}
	}
	if b.rule.Must != PathAny && fixed == token {
		stat := os.Stat
		if b.rule.Lexical {
			stat = os.Lstat
		}
		fi, err := stat(abs)
		switch {
		case err != nil && errors.Is(err, fs.ErrNotExist):
			return refuse("does not exist")
		case err != nil:
			return refuse("cannot be checked: " + pathErrorCause(err).Error())
		case b.rule.Must == PathFile && !fi.Mode().IsRegular():
			return refuse("is not a regular file")
		case b.rule.Must == PathDir && !fi.IsDir():
			return refuse("is not a directory")
		}
	}
	return cleaned, nil
}

// pathErrorCause strips the operation and path from a *fs.PathError, so
// that messages name the path the caller knows (not /proc/self/fd/N) once.
func pathErrorCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// rootsText names the roots for a message.
func (b *boundPathRule) rootsText() string {
	if len(b.rule.Roots) == 0 {
		return "the working directory " + b.dir
	}
	return "the roots " + strings.Join(b.roots, ", ")
}

// within reports whether the cleaned absolute path p is one of roots or
// inside one.
func within(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || r == "/" || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// errDanglingLink reports a symbolic link whose target does not exist.
var errDanglingLink = errors.New("a symbolic link on the way leads to nothing")

// resolveExisting resolves the symbolic links of the longest part of the
// absolute path p that exists, and appends the rest as it is.
func resolveExisting(p string) (string, error) {
	rest := ""
	for cur := p; ; {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if _, lerr := os.Lstat(cur); lerr == nil {
			// A symbolic link whose target does not exist: where a
			// program that creates the file would write is not known
			// here.
			return "", errDanglingLink
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// clone returns a copy of r that shares nothing with it; nil stays nil.
func (r *PathRule) clone() *PathRule {
	if r == nil {
		return nil
	}
	c := *r
	c.Roots = append([]string(nil), r.Roots...)
	return &c
}

// validate reports a mistake in r that no working directory can mend: a
// root that is not absolute, an unknown Must. A nil r is PathRule{}.
func (r *PathRule) validate() error {
	if r == nil {
		return nil
	}
	_, err := bindPath(PathRule{Roots: r.Roots, Must: r.Must, Lexical: true}, "/", nil)
	return err
}

// errUnboundPath is the refusal of a path argument checked by a schema that
// was never bound to a working directory: one used outside an [Allowlist].
const errUnboundPath = "a path argument is checked against the command's working directory, and this schema was not built into an Allowlist"

// pathDescription says, for a JSON Schema, what a path argument under rule
// may be; b is rule bound to the working directory, or nil.
func pathDescription(rule *PathRule, b *boundPathRule) string {
	var d strings.Builder
	d.WriteString("A path")
	switch {
	case b != nil && len(b.rule.Roots) == 0:
		d.WriteString(" inside the working directory " + b.dir)
	case b != nil:
		d.WriteString(" inside " + strings.Join(b.roots, " or "))
	case rule != nil && len(rule.Roots) > 0:
		d.WriteString(" inside " + strings.Join(rule.Roots, " or "))
	default:
		d.WriteString(" inside the working directory")
	}
	d.WriteString(", relative to the working directory or absolute; no \"..\" out of it, ")
	if pathLexical(rule, b) {
		// A lexical rule checks the text only: saying that links out are
		// refused would promise what the gate does not check.
		d.WriteString("checked as written (a symbolic link in it is not resolved)")
	} else {
		d.WriteString("no symbolic link out of it")
	}
	d.WriteString(", not starting with '-' or '@'")
	if rule != nil {
		switch rule.Must {
		case PathExists:
			d.WriteString("; it must exist")
		case PathFile:
			d.WriteString("; it must be a regular file")
		case PathDir:
			d.WriteString("; it must be a directory")
		}
		if rule.Glob {
			d.WriteString("; it may hold the glob characters * ? [ for the program to expand")
		}
	}
	d.WriteString(". It is passed cleaned (\"a/./b\" as \"a/b\").")
	return d.String()
}

// pathLexical reports whether the path rule described by rule and b (either
// may be nil) checks paths as text only.
func pathLexical(rule *PathRule, b *boundPathRule) bool {
	if b != nil {
		return b.rule.Lexical
	}
	return rule != nil && rule.Lexical
}
