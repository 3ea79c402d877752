package execgate

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
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
	// Replacing the process image: never needed, and a way around os/exec.
	regexp.MustCompile(`syscall\.Exec\(|unix\.Exec\(`),
	// A shell reached through os.StartProcess with a literal path.
	regexp.MustCompile(`os\.StartProcess\(\s*"`),
}

func findShellInvocations(src string) []string {
	var hits []string
	for _, p := range shellPatterns {
		hits = append(hits, p.FindAllString(src, -1)...)
	}
	return hits
}

func TestInvariant2_ScannerCatchesShellInvocations(t *testing.T) {
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

// TestInvariant2_NoShellInTheModule scans every non-test Go file of the
// module, nested modules included.
func TestInvariant2_NoShellInTheModule(t *testing.T) {
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
		assert.Empty(t, findShellInvocations(string(b)), "shell invocation in %s", path)
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, scanned, 10, "the scan found too few files to be meaningful")
}
