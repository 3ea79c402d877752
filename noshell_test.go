package execgate

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shellPatterns are the ways Go code starts a shell. None may appear in a
// non-test Go file of the module.
var shellPatterns = []*regexp.Regexp{
	// A shell named next to "-c", in any argv-building form.
	regexp.MustCompile(`"(?:/[\w.]+)*/?(?:ba|da|z|k|c|tc|a|fi|mk|pdk)?sh"\s*,\s*"-\w*c\w*"`),
	// exec.Command or CommandContext with a shell or command interpreter.
	regexp.MustCompile(`exec\.Command(?:Context)?\(\s*(?:\w+\s*,\s*)?"(?:/[\w.]+)*/?(?:(?:ba|da|z|k|c|tc|a|fi|mk|pdk)?sh|cmd(?:\.exe)?|powershell(?:\.exe)?|pwsh|busybox)"`),
	// An absolute path to a shell as a string literal.
	regexp.MustCompile(`"/(?:usr/)?(?:local/)?bin/(?:ba|da|z|k|c|tc|a|fi)?sh"`),
	// Replacing the process image: a way around os/exec, needed only by
	// the confinement helper (see processImageFiles).
	execImagePattern,
	// A shell reached through os.StartProcess with a literal path.
	regexp.MustCompile(`os\.StartProcess\(\s*"`),
}

// execImagePattern finds a Go call that replaces the process image.
var execImagePattern = regexp.MustCompile(`syscall\.Exec\(|unix\.Exec\(`)

// processImageFiles are the only non-test files allowed to replace the
// process image, by path from the module root. The confinement helper must:
// Go cannot run code in a child between fork and exec, so DefaultExecFn
// starts the program's own binary as a helper that confines itself
// (Landlock, no_new_privs, resource limits) and then executes the target
// with the argv and environment the gate validated. Every shell pattern
// still applies to these files; only the image-replacement one is waived.
var processImageFiles = map[string]bool{"internal/confine/exec_linux.go": true}

func findShellInvocations(src string) []string {
	var hits []string
	for _, p := range shellPatterns {
		hits = append(hits, p.FindAllString(src, -1)...)
	}
	return hits
}

// findShellInvocationsIn is findShellInvocations for the file at path,
// waiving the image-replacement pattern for processImageFiles.
func findShellInvocationsIn(path, src string) []string {
	var hits []string
	for _, p := range shellPatterns {
		if p == execImagePattern && processImageFiles[filepath.ToSlash(path)] {
			continue
		}
		hits = append(hits, p.FindAllString(src, -1)...)
	}
	return hits
}

// Invariant 2 of DESIGN.md.
func TestNoShell_ScannerCatchesShellInvocations(t *testing.T) {
	for _, src := range []string{
		`exec.Command("sh", "-c", cmd)`,
		`exec.Command("/bin/sh", "-c", cmd)`,
		`exec.CommandContext(ctx, "bash", "-lc", cmd)`,
		`exec.Command("/usr/bin/zsh")`,
		`args := []string{"/bin/dash", "-c", line}`,
		`cmd := &exec.Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", s}}`,
		`syscall.Exec(path, argv, env)`,
		`exec.Command("cmd.exe", "/C", s)`,
		`os.StartProcess("/bin/bash", argv, attr)`,
	} {
		assert.NotEmpty(t, findShellInvocations(src), "missed: %s", src)
	}
	for _, src := range []string{
		`exec.Command(path, args...)`,
		`denied := []string{"sh", "bash", "zsh"}`,
		`cmd := &exec.Cmd{Path: inv.Path, Args: argv}`,
		`// never "sh -c"`,
	} {
		assert.Empty(t, findShellInvocations(src), "false alarm: %s", src)
	}
}

// TestNoShell_InTheModule scans every non-test Go file of the
// module, nested modules included.
//
// Invariant 2 of DESIGN.md.
func TestNoShell_InTheModule(t *testing.T) {
	scanned := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		scanned++
		assert.Empty(t, findShellInvocationsIn(path, string(b)), "shell invocation in %s", path)
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, scanned, 10, "the scan found too few files to be meaningful")
	// The waiver is for one call in one file: if it moved, or grew, the
	// lists above must be revisited.
	for path := range processImageFiles {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Len(t, execImagePattern.FindAllString(string(b), -1), 1, "%s should replace the process image exactly once", path)
	}
}

// processStarters are the functions that start or replace a process, by
// import path and name.
var processStarters = map[string]map[string]bool{
	"os/exec":               {"Command": true, "CommandContext": true},
	"os":                    {"StartProcess": true},
	"syscall":               {"ForkExec": true, "StartProcess": true, "Exec": true, "RawSyscall": true, "Syscall": true, "Syscall6": true},
	"golang.org/x/sys/unix": {"Exec": true, "ForkExec": true, "Syscall": true, "Syscall6": true, "RawSyscall": true},
}

// processStartFiles are the only non-test files allowed to start a
// process: the Unix ExecFn, which builds an exec.Cmd from the resolved
// absolute path and an argv slice, and the confinement helper's
// syscall.Exec, which replaces the helper with that same path and argv
// once it has confined itself (see processImageFiles for why it exists).
var processStartFiles = map[string]bool{
	"exec_fn_unix.go":                 true,
	"confine_pool_linux.go":           true,
	"internal/confine/exec_linux.go":  true,
	"internal/proc/watchdog_linux.go": true,
}

// findProcessStarts parses one Go file and reports every call of a
// process-starting function and every exec.Cmd literal, whatever the
// import is named.
func findProcessStarts(t *testing.T, filename string, src []byte) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
	require.NoError(t, err)
	names := map[string]string{} // local name -> import path
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		require.NoError(t, err)
		local := path.Base(p)
		if imp.Name != nil {
			local = imp.Name.Name
		}
		names[local] = p
	}
	var hits []string
	ast.Inspect(f, func(n ast.Node) bool {
		var sel *ast.SelectorExpr
		switch n := n.(type) {
		case *ast.CallExpr:
			sel, _ = n.Fun.(*ast.SelectorExpr)
		case *ast.CompositeLit:
			if s, ok := n.Type.(*ast.SelectorExpr); ok {
				if id, ok := s.X.(*ast.Ident); ok && names[id.Name] == "os/exec" && s.Sel.Name == "Cmd" {
					hits = append(hits, fset.Position(n.Pos()).String()+": exec.Cmd literal")
				}
			}
			return true
		default:
			return true
		}
		if sel == nil {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && processStarters[names[id.Name]][sel.Sel.Name] {
			hits = append(hits, fset.Position(n.Pos()).String()+": "+names[id.Name]+"."+sel.Sel.Name)
		}
		return true
	})
	return hits
}

// Invariant 2 of DESIGN.md.
func TestNoShell_ProcessStartCheckerCatchesEveryForm(t *testing.T) {
	for _, src := range []string{
		"package p\nimport \"os/exec\"\nfunc f(s string) { exec.Command(\"sh\", \"-e\", \"-c\", s) }",
		"package p\nimport x \"os/exec\"\nconst shell = `/bin/sh`\nfunc f(s string) { x.Command(shell, \"-c\", s) }",
		"package p\nimport \"os/exec\"\nfunc f() { _ = &exec.Cmd{Path: \"/bin/sh\"} }",
		"package p\nimport \"syscall\"\nfunc f() { syscall.ForkExec(\"/bin/sh\", nil, nil) }",
		"package p\nimport \"syscall\"\nfunc f() { syscall.Exec(\"/bin/sh\", nil, nil) }",
		"package p\nimport \"os\"\nfunc f() { os.StartProcess(\"/bin/sh\", nil, nil) }",
		"package p\nimport u \"golang.org/x/sys/unix\"\nfunc f() { u.Exec(\"/bin/sh\", nil, nil) }",
	} {
		assert.NotEmpty(t, findProcessStarts(t, "x.go", []byte(src)), "missed:\n%s", src)
	}
	assert.Empty(t, findProcessStarts(t, "x.go", []byte("package p\nimport \"os/exec\"\nfunc f() { _, _ = exec.LookPath(\"git\") }")))
}

// TestNoShell_OnlyTheExecFnStartsProcesses checks, on the syntax tree of
// every non-test Go file of the module, that nothing but the Unix ExecFn
// can start a process.
//
// Invariant 2 of DESIGN.md.
func TestNoShell_OnlyTheExecFnStartsProcesses(t *testing.T) {
	scanned := 0
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		scanned++
		hits := findProcessStarts(t, p, src)
		if len(hits) > 0 && !processStartFiles[filepath.ToSlash(p)] {
			t.Errorf("%s starts processes outside the ExecFn:\n%s", p, strings.Join(hits, "\n"))
		}
		if filepath.ToSlash(p) == "internal/proc/watchdog_linux.go" {
			// The watchdog is this program itself, started once, with an
			// argv and an environment of constants.
			require.Len(t, hits, 1, "%s", p)
			assert.Contains(t, hits[0], ": exec.Cmd literal", "%s", p)
			assert.Contains(t, string(src), `Path:        "/proc/self/exe",`, "%s", p)
		}
		if filepath.ToSlash(p) == "confine_pool_linux.go" {
			// A warm confinement helper is this program itself, with an
			// empty environment; what it runs comes later, from the
			// ExecFn, in its handoff.
			require.Len(t, hits, 1, "%s", p)
			assert.Contains(t, hits[0], ": exec.Cmd literal", "%s", p)
			assert.Contains(t, string(src), `Path:        confine.HelperPath,`, "%s", p)
			assert.Contains(t, string(src), `Env:         []string{},`, "%s", p)
		}
		if processImageFiles[filepath.ToSlash(p)] {
			// The helper replaces its image once, with syscall.Exec, and
			// starts nothing else.
			require.Len(t, hits, 1, "%s", p)
			assert.Contains(t, hits[0], ": syscall.Exec", "%s", p)
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, scanned, 10)
	// The allowed file does start processes; if it stopped, this test
	// would be checking nothing.
	src, err := os.ReadFile("exec_fn_unix.go")
	require.NoError(t, err)
	assert.NotEmpty(t, findProcessStarts(t, "exec_fn_unix.go", src))
}
