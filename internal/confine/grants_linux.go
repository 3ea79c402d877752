//go:build linux

package confine

import (
	"bytes"
	"debug/elf"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// libraryDirs are where the dynamic loader finds shared libraries on
// common Linux distributions. A dynamically linked target may read files
// beneath them (not list them, not execute from them: mapping a library
// needs only read access).
var libraryDirs = []string{
	"/lib", "/lib32", "/lib64", "/libx32",
	"/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libx32",
	"/usr/local/lib",
}

// loaderFiles are the dynamic loader's configuration files.
var loaderFiles = []string{"/etc/ld.so.cache", "/etc/ld.so.preload"}

// maxShebang bounds the "#!" line that ExecutableRules reads.
const maxShebang = 256

// ExecutableRules returns the rules a target needs to start at all: read
// and execute the executable itself, and, for a dynamically linked ELF
// executable, execute its program interpreter (the dynamic loader) and
// read the loader's configuration and the libraries beneath the usual
// library directories and the executable's RPATH and RUNPATH. For a "#!"
// script, the interpreter named on its first line is granted the same way.
//
// path is the executable's path; f, if not nil, is the opened executable
// to inspect instead (a pinned one), and the helper reaches it as
// self, "/proc/self/fd/N". Anything that cannot be read or parsed grants
// nothing more than the executable itself.
func ExecutableRules(path string, f *os.File, self string) []Rule {
	return executableRules(path, f, self, 0)
}

// maxInterpreterDepth is how many "#!" interpreters deep executableRules
// follows; the kernel itself stops at a few.
const maxInterpreterDepth = 4

func executableRules(path string, f *os.File, self string, depth int) []Rule {
	if self == "" {
		self = path
	}
	rules := []Rule{{Path: self, Access: AccessReadFile | AccessExecute}}
	var r io.ReaderAt = f
	if f == nil {
		opened, err := os.Open(path)
		if err != nil {
			return rules
		}
		defer opened.Close()
		r = opened
	}
	head := make([]byte, maxShebang)
	n, _ := r.ReadAt(head, 0)
	head = head[:n]
	if bytes.HasPrefix(head, []byte("#!")) {
		interp := shebangInterpreter(head[2:])
		if interp == "" || depth >= maxInterpreterDepth {
			return rules
		}
		return append(rules, executableRules(interp, nil, "", depth+1)...)
	}
	return append(rules, loaderRules(path, r)...)
}

// shebangInterpreter returns the absolute interpreter path of a "#!" line,
// or "".
func shebangInterpreter(line []byte) string {
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	fields := strings.Fields(string(line))
	if len(fields) == 0 || !filepath.IsAbs(fields[0]) {
		return ""
	}
	return filepath.Clean(fields[0])
}

// loaderRules returns the rules for an ELF executable's dynamic loader and
// libraries, or nothing for a static executable or a file that is not ELF.
func loaderRules(path string, r io.ReaderAt) []Rule {
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil
	}
	defer ef.Close()
	var interp string
	for _, p := range ef.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(p.Open(), 4096))
		if err != nil {
			return nil
		}
		interp = string(bytes.TrimRight(b, "\x00"))
	}
	if interp == "" || !filepath.IsAbs(interp) {
		return nil // statically linked
	}
	rules := []Rule{{Path: filepath.Clean(interp), Access: AccessReadFile | AccessExecute}}
	for _, f := range loaderFiles {
		rules = append(rules, Rule{Path: f, Access: AccessReadFile})
	}
	dirs := append([]string(nil), libraryDirs...)
	for _, tag := range []elf.DynTag{elf.DT_RPATH, elf.DT_RUNPATH} {
		vals, _ := ef.DynString(tag)
		for _, v := range vals {
			for _, d := range strings.Split(v, ":") {
				d = strings.ReplaceAll(d, "${ORIGIN}", "$ORIGIN")
				d = strings.ReplaceAll(d, "$ORIGIN", filepath.Dir(path))
				if filepath.IsAbs(d) {
					dirs = append(dirs, filepath.Clean(d))
				}
			}
		}
	}
	for _, d := range dirs {
		rules = append(rules, Rule{Path: d, Access: AccessReadFile})
	}
	return rules
}
