package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// flux7File is flux7-mesh's documented example, on a bin every test
// machine has.
const flux7File = `cli_tools:
  - name: kubectl
    bin: /bin/echo
    strict: true
    commands:
      get:
        allowed_args: ["-n", "--namespace", "-o"]
  - name: gh
    bin: /bin/echo
    default_action: allow
policies:
  - name: agents
    agent: claude
    rules:
      - tools: ["kubectl.delete*"]
        action: human_approval
      - tools: ["kubectl.*", "gh.*"]
        action: allow
`

func TestImport(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string // FILE is replaced by the flux7 file's path
		stdin     string
		in        string // the flux7 file; flux7File if empty
		code      int
		stdout    []string // each must be in stdout
		stderr    []string // each must be in stderr
		noStdout  bool
		checkable bool // stdout is a configuration execgate check accepts
	}{
		{
			name:      "The conversion goes to stdout, what it could not carry over to stderr with its line, and check accepts it.",
			args:      []string{"import", "flux7", "FILE"},
			code:      exitOK,
			stdout:    []string{"principal: claude", "action: require_approval", "name: floor-1\n        tools: [kubectl.get]"},
			stderr:    []string{":7:24: cli_tools[0].commands.get.allowed_args[0]: flag \"-n\": its value kind is unknown", ":6:7: cli_tools[0].commands.get: positionals: flux7 accepted any here", "execgate import: wrote <stdout>: ", "held at human_approval until done: kubectl.get\n"},
			checkable: true,
		},
		{
			name:      "--kind declares flags, given before or after flux7.",
			args:      []string{"import", "--kind", "-n=string", "flux7", "--kind", "kubectl.get:--namespace=string", "FILE"},
			code:      exitOK,
			stdout:    []string{"- {name: n, value: string}", "- {name: namespace, value: string}"},
			stderr:    []string{`flag "-o": its value kind is unknown`},
			checkable: true,
		},
		{
			name:      "- reads the flux7 file from stdin.",
			args:      []string{"import", "flux7", "-"},
			stdin:     flux7File,
			code:      exitOK,
			stdout:    []string{"principal: claude"},
			stderr:    []string{"<stdin>:7:24: "},
			checkable: true,
		},
		{
			name:     "A file that is not a flux7 file is refused with every problem and its line, and nothing is written.",
			args:     []string{"import", "flux7", "FILE"},
			in:       "cli_tools:\n  - {name: k, bin: /bin/echo, colour: red}\n  - &a {name: j, bin: /bin/echo}\n",
			code:     exitUsage,
			stderr:   []string{`:2:31: cli_tools[0].colour: unknown key "colour"`, ":3:5: cli_tools[1]: anchors (&a) are not supported", "the flux7 file has 2 problems; nothing was written"},
			noStdout: true,
		},
		{
			name:   "An output that does not load here (a bin not on this PATH) is still written, and its problems are reported.",
			args:   []string{"import", "flux7", "FILE"},
			in:     "cli_tools:\n  - {name: tf, bin: no-such-program-here, default_action: deny}\n",
			code:   exitFailed,
			stdout: []string{"bin: no-such-program-here"},
			stderr: []string{`<stdout>:`, `tools[0].bin: "no-such-program-here" is not found on PATH`, "the output does not load on this machine"},
		},
		{
			name:     "Only flux7 files are imported.",
			args:     []string{"import", "mesh9", "FILE"},
			code:     exitUsage,
			stderr:   []string{"want: import flux7 FILE"},
			noStdout: true,
		},
		{
			name:     "import flux7 takes one FILE.",
			args:     []string{"import", "flux7", "FILE", "FILE"},
			code:     exitUsage,
			stderr:   []string{"want one FILE"},
			noStdout: true,
		},
		{
			name:     "A --kind that cannot be read is a usage error.",
			args:     []string{"import", "flux7", "--kind", "-o=enum", "FILE"},
			code:     exitUsage,
			stderr:   []string{"needs more than a name"},
			noStdout: true,
		},
		{
			name:     "A FILE that cannot be read is reported.",
			args:     []string{"import", "flux7", "/nonexistent/flux7.yaml"},
			code:     exitUsage,
			stderr:   []string{"/nonexistent/flux7.yaml"},
			noStdout: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if in == "" {
				in = flux7File
			}
			file := writeFile(t, "flux7.yaml", in)
			args := append([]string(nil), tc.args...)
			for i, a := range args {
				if a == "FILE" {
					args[i] = file
				}
			}
			code, stdout, stderr := runCLI(t, tc.stdin, args...)
			require.Equal(t, tc.code, code, "stderr:\n%s", stderr)
			for _, w := range tc.stdout {
				require.Contains(t, stdout, w)
			}
			for _, w := range tc.stderr {
				require.Contains(t, stderr, w)
			}
			if tc.noStdout {
				require.Empty(t, stdout)
			}
			if tc.checkable {
				out := writeFile(t, "execgate.yaml", stdout)
				code, summary, errOut := runCLI(t, "", "check", "--config", out)
				require.Equal(t, exitOK, code, errOut)
				require.Contains(t, summary, "ok: 2 tools")
			}
		})
	}
}

func TestImport_OutputFile(t *testing.T) {
	file := writeFile(t, "flux7.yaml", flux7File)
	dir := t.TempDir()
	out := filepath.Join(dir, "execgate.yaml")

	// -o writes a new file, and nothing goes to stdout.
	code, stdout, stderr := runCLI(t, "", "import", "flux7", "-o", out, file)
	require.Equal(t, exitOK, code, stderr)
	require.Empty(t, stdout)
	require.Contains(t, stderr, "wrote "+out+": ")
	first, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Contains(t, string(first), "principal: claude")
	code, _, errOut := runCLI(t, "", "check", "--config", out)
	require.Equal(t, exitOK, code, errOut)

	// An existing file is refused and left as it was.
	require.NoError(t, os.WriteFile(out, []byte("mine\n"), 0o600))
	code, _, stderr = runCLI(t, "", "import", "flux7", "-o", out, file)
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, out+" exists; use --force to replace it")
	kept, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "mine\n", string(kept))

	// --force replaces it whole.
	code, _, stderr = runCLI(t, "", "import", "flux7", "-o", out, "--force", file)
	require.Equal(t, exitOK, code, stderr)
	replaced, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, string(first), string(replaced))

	// A symlink at -o is refused without --force, and replaced, not
	// followed, with it.
	target := filepath.Join(dir, "target")
	require.NoError(t, os.WriteFile(target, []byte("target\n"), 0o600))
	link := filepath.Join(dir, "link.yaml")
	require.NoError(t, os.Symlink(target, link))
	code, _, _ = runCLI(t, "", "import", "flux7", "-o", link, file)
	require.Equal(t, exitUsage, code)
	code, _, stderr = runCLI(t, "", "import", "flux7", "--force", "-o", link, file)
	require.Equal(t, exitOK, code, stderr)
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular(), "the link is replaced by a file")
	untouched, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, "target\n", string(untouched))

	// A file that does not convert creates no output file.
	bad := writeFile(t, "bad.yaml", "cli_tools: [\n")
	none := filepath.Join(dir, "none.yaml")
	code, _, _ = runCLI(t, "", "import", "flux7", "-o", none, bad)
	require.Equal(t, exitUsage, code)
	_, err = os.Stat(none)
	require.True(t, os.IsNotExist(err))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.False(t, strings.HasPrefix(e.Name(), ".execgate-import-"), "a temporary file is left: %s", e.Name())
	}
}

// TestImport_UsageNamesEveryFloor checks that import's usage names each
// way the conversion holds a tool with a TODO, and that the conversion
// emits each one: the command's own human_approval: true (which no grant
// lifts) and the floor-N policy rule.
func TestImport_UsageNamesEveryFloor(t *testing.T) {
	code, help, errOut := runCLI(t, "", "help", "import")
	require.Equal(t, exitOK, code, errOut)
	usage := strings.Join(strings.Fields(help), " ")
	require.Contains(t, usage, "human_approval: true on each of its commands")
	require.Contains(t, usage, "a floor-N policy rule before each allow rule")

	code, stdout, stderr := runCLI(t, "", "import", "flux7", writeFile(t, "flux7.yaml", flux7File))
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stderr, "held at human_approval until done: kubectl.get\n")
	require.Contains(t, stdout, "human_approval: true")
	require.Contains(t, stdout, "name: floor-1")
}
