package inputrules

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ResolveCommand resolves a CommandSpec.Command the way NewAllowlist does,
// and is the only place that does it: an absolute path is cleaned (not
// symlink-resolved), a bare name is looked up on this process's PATH, and
// the result must be an existing, executable regular file. A relative
// path, and a name found only through a relative PATH entry
// (exec.ErrDot), are refused. Loaders that report a bad command before
// building an Allowlist (package config) call it, so that there is one
// rule for what runs.
func ResolveCommand(cmd string) (string, error) {
	var path string
	switch {
	case cmd == "":
		return "", errors.New("must not be empty: the executable's absolute path, or a name found on PATH")
	case strings.IndexByte(cmd, 0) >= 0:
		return "", errors.New("must not contain NUL")
	case filepath.IsAbs(cmd):
		path = filepath.Clean(cmd)
	case strings.ContainsRune(cmd, os.PathSeparator) || strings.Contains(cmd, "/"):
		return "", fmt.Errorf("%q is a relative path; use an absolute path or a bare name found on PATH", cmd)
	default:
		p, err := exec.LookPath(cmd)
		switch {
		case errors.Is(err, exec.ErrDot):
			return "", fmt.Errorf("%q is found only through a relative PATH entry; use an absolute path", cmd)
		case err != nil:
			return "", fmt.Errorf("%q is not found on PATH", cmd)
		case !filepath.IsAbs(p):
			return "", fmt.Errorf("%q resolves to the relative path %q; use an absolute path", cmd, p)
		}
		path = filepath.Clean(p)
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("%q does not exist", path)
	case err != nil:
		return "", fmt.Errorf("%q cannot be read: %v", path, errors.Unwrap(err))
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("%q is not a regular file", path)
	case fi.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("%q is not executable", path)
	}
	return path, nil
}
