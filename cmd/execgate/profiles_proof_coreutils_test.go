package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The proof tests of the coreutils readers (head, tail, cat, wc, ls, sort)
// run each profile against the real program. Each program reads the files
// its operands name, so most attacks are operands that lead out of the
// root; the rest are the options each profile leaves out. An attack the
// grammar must stop is checked to be refused when it is validated, since
// runAttacks alone would also pass were it merely inert.

// newCoreutilsScene is newProofScene with what the readers' calls and
// attacks need inside and beside the root: a file of three lines, a file
// named like tail's obsolete +N option, a link that stays inside, links
// that lead out (a relative one from a subdirectory, one to the parent,
// one to a directory outside), a named pipe, and outside the root a
// directory holding a file whose name is the canary, so that a listing of
// it shows.
func newCoreutilsScene(t *testing.T, profile string) *proofScene {
	t.Helper()
	s := newProofScene(t, profile)
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(s.root, name), []byte(text), 0o644))
	}
	write("lines.txt", "one\ntwo\nthree\n")
	write("+1", "plus\n")
	require.NoError(t, os.MkdirAll(filepath.Join(s.root, "sub"), 0o755))
	outside := filepath.Join(s.base, "outside")
	require.NoError(t, os.MkdirAll(outside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, proofCanary), nil, 0o644))
	for link, target := range map[string]string{
		"link-in":     "README",
		"sub/link-up": "../../secret.txt",
		"up":          "..",
		"dir-out":     outside,
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(s.root, link)))
	}
	require.NoError(t, syscall.Mkfifo(filepath.Join(s.root, "fifo"), 0o644))
	return s
}

// coreutilsCall is a call beside the profile's allow examples that must
// run, exit 0 and print want on stdout.
type coreutilsCall struct {
	why   string
	input map[string]any
	want  string
}

// runCoreutilsCalls runs each call of the command name for real.
func (s *proofScene) runCoreutilsCalls(t *testing.T, name string, calls []coreutilsCall) {
	t.Helper()
	for _, c := range calls {
		t.Run(c.why, func(t *testing.T) {
			assert.Equal(t, c.want, s.runOK(t, name, c.input).Stdout)
		})
	}
}

// coreutilsAttack is one call of an attack corpus. refused says the
// grammar refuses it before anything runs; otherwise it runs and must be
// inert.
type coreutilsAttack struct {
	why     string
	input   map[string]any
	refused bool
}

// runCoreutilsAttacks checks that each attack the grammar must stop is
// refused when it is validated, then runs the whole corpus through
// runAttacks: the canary never shows, no marker appears, no file changes.
func (s *proofScene) runCoreutilsAttacks(t *testing.T, name string, attacks []coreutilsAttack) {
	t.Helper()
	all := make([]attack, 0, len(attacks))
	for _, a := range attacks {
		all = append(all, attack{a.why, name, a.input})
		if !a.refused {
			continue
		}
		t.Run("refused: "+a.why, func(t *testing.T) {
			code, out := s.run(t, name, a.input)
			assert.Equal(t, exitFailed, code, out)
			assert.Contains(t, out, `"kind": "validation"`, "refused by the grammar, not by the program")
		})
	}
	s.runAttacks(t, all)
}

// coreutilsOperandAttacks are the attacks on a program that reads the
// regular files its operands name: each operand leads out of the root,
// or names something in it that is not a file to read, or would be read
// as something other than a path.
func coreutilsOperandAttacks(s *proofScene) []coreutilsAttack {
	return []coreutilsAttack{
		{"a path climbing out", args("../secret.txt"), true},
		{"a path that climbs out from a subdirectory", args("src/../../secret.txt"), true},
		{"the canary by absolute path", args(s.secret), true},
		{"an absolute path that enters the root and climbs out", args(s.root + "/../secret.txt"), true},
		{"the canary through /proc/self/root", args("/proc/self/root" + s.secret), true},
		{"the link-out symlink to the canary", args("link-out"), true},
		{"a relative symlink in a subdirectory that climbs out", args("sub/link-up"), true},
		{"a file under a directory symlink to the parent", args("up/secret.txt"), true},
		{"a file under a directory symlink outside", args("dir-out/x"), true},
		{"the canary after a file inside", args("README", "../secret.txt"), true},
		{"the caller's own -- before a path climbing out", args("--", "../secret.txt"), true},
		{"'-' as an operand, which reads stdin", args("-"), true},
		{"a path that starts with '-' once cleaned", args("./-n"), true},
		{"a path spelled as an option once cleaned", args("./--files0-from=../secret.txt"), true},
		{"a glob over the parent", args("../*"), true},
		{"a directory", args("."), true},
		{"a named pipe, which would block the program", args("fifo"), true},
		{"the root's own files through a link that stays inside", args("link-in"), false},
	}
}

func TestProfileProof_Head(t *testing.T) {
	s := newCoreutilsScene(t, "head")
	s.runAllowExamples(t, "head", "")
	s.runCoreutilsCalls(t, "head.run", []coreutilsCall{
		{"a file inside the root", args("README"), "hello\n"},
		{"the first lines", args("-n", "2", "lines.txt"), "one\ntwo\n"},
		{"all but the last line, with a negative count", args("-n", "-1", "lines.txt"), "one\ntwo\n"},
		{"the first bytes", args("-c", "3", "README"), "hel"},
		{"the count from the flags object", map[string]any{"flags": map[string]any{"lines": 1}, "args": []string{"lines.txt"}}, "one\n"},
		{"several files, each under its header", args("README", "lines.txt"), "==> README <==\nhello\n\n==> lines.txt <==\none\ntwo\nthree\n"},
		{"a path that climbs and comes back", args("src/../README"), "hello\n"},
		{"a link that stays inside the root", args("link-in"), "hello\n"},
	})
	s.runCoreutilsAttacks(t, "head.run", append(coreutilsOperandAttacks(s),
		coreutilsAttack{"a count that is a path", args("-n", "../secret.txt"), true},
		coreutilsAttack{"a count with a suffix", args("-n", "1K", "README"), true},
		coreutilsAttack{"a count beyond the bound", args("-c", "1000000000", "README"), true},
		coreutilsAttack{"a count glued to -n", args("-n1", "README"), true},
		coreutilsAttack{"the obsolete -NUM form", args("-1", "README"), true},
		coreutilsAttack{"bundled short options", args("-qv", "README"), true},
		coreutilsAttack{"the undocumented ---presume-input-pipe", args("---presume-input-pipe", "README"), true},
		coreutilsAttack{"a count from the flags object and an operand through a link out", map[string]any{"flags": map[string]any{"lines": 1}, "args": []string{"link-out"}}, true},
		coreutilsAttack{"stdin that names the canary is only text", map[string]any{"stdin": s.secret + "\n"}, false},
	))
}

func TestProfileProof_Tail(t *testing.T) {
	s := newCoreutilsScene(t, "tail")
	s.runAllowExamples(t, "tail", "")
	s.runCoreutilsCalls(t, "tail.run", []coreutilsCall{
		{"a file inside the root", args("lines.txt"), "one\ntwo\nthree\n"},
		{"the last line", args("-n", "1", "lines.txt"), "three\n"},
		{"the last bytes", args("-c", "3", "README"), "lo\n"},
		{"a file named like the obsolete +N form is read as a file, after --", args("+1"), "plus\n"},
		{"a link that stays inside the root", args("link-in"), "hello\n"},
	})
	s.runCoreutilsAttacks(t, "tail.run", append(coreutilsOperandAttacks(s),
		coreutilsAttack{"-f follows a file forever", args("-f", "README"), true},
		coreutilsAttack{"--follow", args("--follow", "README"), true},
		coreutilsAttack{"--follow=name", args("--follow=name", "README"), true},
		coreutilsAttack{"-F follows a name and retries", args("-F", "README"), true},
		coreutilsAttack{"--retry waits for a file to appear", args("--retry", "README"), true},
		coreutilsAttack{"--pid ties the call to a process", args("--pid=1", "README"), true},
		coreutilsAttack{"-s sets the follow interval", args("-s", "1", "README"), true},
		coreutilsAttack{"--max-unchanged-stats", args("--max-unchanged-stats=1", "README"), true},
		coreutilsAttack{"the undocumented ---presume-input-pipe", args("---presume-input-pipe", "README"), true},
		coreutilsAttack{"the obsolete -NUM form", args("-1", "README"), true},
		coreutilsAttack{"the obsolete -NUMf form, which follows", args("-1f", "README"), true},
		coreutilsAttack{"a negative count", args("-n", "-1", "README"), true},
		// tail reads -n +1 as "from line 1": an integer with a sign is
		// refused rather than emitted as the number.
		coreutilsAttack{"the +N form, from line N on", args("-n", "+1", "README"), true},
		coreutilsAttack{"a count that is a path", args("-c", "../secret.txt"), true},
		coreutilsAttack{"a count with a suffix", args("-n", "1K", "README"), true},
	))
}

func TestProfileProof_Cat(t *testing.T) {
	s := newCoreutilsScene(t, "cat")
	s.runAllowExamples(t, "cat", "")
	s.runCoreutilsCalls(t, "cat.run", []coreutilsCall{
		{"a file inside the root", args("README"), "hello\n"},
		{"files one after another", args("README", "lines.txt"), "hello\none\ntwo\nthree\n"},
		{"numbered lines", args("-n", "README"), "     1\thello\n"},
		{"line ends shown", args("-E", "README"), "hello$\n"},
		{"-e, which is -vE", args("-e", "README"), "hello$\n"},
		{"a link that stays inside the root", args("link-in"), "hello\n"},
		{"stdin when no file is given", map[string]any{"args": []string{"-n"}, "stdin": "a\n"}, "     1\ta\n"},
	})
	s.runCoreutilsAttacks(t, "cat.run", append(coreutilsOperandAttacks(s),
		coreutilsAttack{"-v on the link-out symlink", args("-v", "link-out"), true},
		coreutilsAttack{"-A on a path climbing out", args("-A", "../secret.txt"), true},
		coreutilsAttack{"bundled short options", args("-nA", "README"), true},
		coreutilsAttack{"a value given to a boolean option", args("--number=../secret.txt"), true},
		coreutilsAttack{"/dev/stdin, outside the root", args("/dev/stdin"), true},
		coreutilsAttack{"stdin that names the canary is only text", map[string]any{"stdin": "../secret.txt\n"}, false},
	))
}

func TestProfileProof_Wc(t *testing.T) {
	s := newCoreutilsScene(t, "wc")
	s.runAllowExamples(t, "wc", "")
	s.runCoreutilsCalls(t, "wc.run", []coreutilsCall{
		{"lines, words and bytes of a file", args("README"), "1 1 6 README\n"},
		{"the lines of a file", args("-l", "lines.txt"), "3 lines.txt\n"},
		{"several files and a total", args("README", "lines.txt"), " 1  1  6 README\n 3  3 14 lines.txt\n 4  4 20 total\n"},
		{"the widest line", args("-L", "lines.txt"), "5 lines.txt\n"},
		{"a link that stays inside the root", args("-c", "link-in"), "6 link-in\n"},
	})
	s.runCoreutilsAttacks(t, "wc.run", append(coreutilsOperandAttacks(s),
		// wc would name the canary as a file it cannot open.
		coreutilsAttack{"--files0-from reads file names from a file outside", args("--files0-from=../secret.txt"), true},
		coreutilsAttack{"--files0-from as two arguments", args("--files0-from", s.secret), true},
		coreutilsAttack{"--files0-from=- reads file names from stdin", map[string]any{"args": []string{"--files0-from=-"}, "stdin": s.secret + "\x00"}, true},
		coreutilsAttack{"--files0-from of a file inside that names the canary", args("--files0-from=README"), true},
		coreutilsAttack{"bundled short options", args("-lw", "README"), true},
		coreutilsAttack{"-c on the link-out symlink", args("-c", "link-out"), true},
	))
}

func TestProfileProof_Sort(t *testing.T) {
	s := newCoreutilsScene(t, "sort")
	require.NoError(t, os.WriteFile(filepath.Join(s.root, "numbers.txt"), []byte("10\n9\n100\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(s.root, "sorted.txt"), []byte("a\nb\n"), 0o644))
	s.runAllowExamples(t, "sort", "")
	s.runCoreutilsCalls(t, "sort.run", []coreutilsCall{
		{"the lines of a file", args("lines.txt"), "one\nthree\ntwo\n"},
		{"the lines of two files together, reversed", args("-r", "README", "lines.txt"), "two\nthree\none\nhello\n"},
		{"numbers by value", args("-n", "numbers.txt"), "9\n10\n100\n"},
		{"a key and a separator", args("-t", "o", "-k", "2", "lines.txt"), "three\ntwo\none\n"},
		{"a check of a sorted file", args("-c", "sorted.txt"), ""},
		{"a merge of sorted files", args("-m", "README", "sorted.txt"), "a\nb\nhello\n"},
		{"a link that stays inside the root", args("link-in"), "hello\n"},
	})

	// An input that does not fit sort's buffer (its address space is
	// limited to 512MiB) spills to temporary files: TMPDIR does not exist
	// and the confinement writes nothing, so the call fails and leaves
	// nothing behind. 16M lines take over 512MiB of line records.
	require.NoError(t, os.WriteFile(filepath.Join(s.root, "many.txt"), []byte(strings.Repeat("x\n", 16<<20)), 0o644))
	t.Run("an input too large for memory fails instead of writing temporary files", func(t *testing.T) {
		before := s.snapshot(t)
		_, out := s.run(t, "sort.run", args("many.txt"))
		r := decodeProofResult(t, out)
		assert.Equal(t, 2, r.ExitCode, r.Stderr)
		assert.Contains(t, r.Stderr, "cannot create temporary file")
		assert.Equal(t, before, s.snapshot(t), "no temporary file was left anywhere in the scene")
	})

	s.runCoreutilsAttacks(t, "sort.run", append(coreutilsOperandAttacks(s),
		coreutilsAttack{"-o writes the marker", args("-o", s.marker, "README"), true},
		coreutilsAttack{"--output= writes the marker", args("--output="+s.marker, "README"), true},
		coreutilsAttack{"-o overwrites a file inside the root", args("-o", "README", "lines.txt"), true},
		coreutilsAttack{"-o glued", args("-oREADME", "lines.txt"), true},
		coreutilsAttack{"--compress-program runs a program on the temporary files", args("--compress-program=touch", "many.txt"), true},
		coreutilsAttack{"-T writes temporary files beside the root", args("-T", s.base, "many.txt"), true},
		coreutilsAttack{"--temporary-directory into the root", args("--temporary-directory=.", "many.txt"), true},
		coreutilsAttack{"-S shrinks the buffer so that temporary files are written", args("-S", "1K", "lines.txt"), true},
		coreutilsAttack{"--batch-size", args("--batch-size=2", "README", "lines.txt"), true},
		coreutilsAttack{"--parallel", args("--parallel=64", "lines.txt"), true},
		// sort would name the canary as a file it cannot open.
		coreutilsAttack{"--files0-from reads file names from a file outside", args("--files0-from=../secret.txt"), true},
		coreutilsAttack{"--files0-from=- reads file names from stdin", map[string]any{"args": []string{"--files0-from=-"}, "stdin": s.secret + "\x00"}, true},
		coreutilsAttack{"--random-source reads a file outside", args("-R", "--random-source="+s.secret, "README"), true},
		coreutilsAttack{"--sort=random", args("--sort=random", "README"), true},
		coreutilsAttack{"a key with the random ordering", args("-k", "1R", "README"), true},
		coreutilsAttack{"a key that is a path", args("-k", "../secret.txt", "README"), true},
		coreutilsAttack{"a separator of two characters", args("-t", "ab", "README"), true},
		coreutilsAttack{"a merge with a file outside", args("-m", "README", "../secret.txt"), true},
		coreutilsAttack{"--debug", args("--debug", "README"), true},
		coreutilsAttack{"a file too large for memory, once more", args("-u", "many.txt"), false},
	))
}

func TestProfileProof_Ls(t *testing.T) {
	s := newCoreutilsScene(t, "ls")
	s.runAllowExamples(t, "ls", "")
	s.runCoreutilsCalls(t, "ls.run", []coreutilsCall{
		{"a directory inside the root", args("src"), "main.go\n"},
		{"a directory itself", args("-d", "src"), "src\n"},
		{"a file", args("README"), "README\n"},
		{"a link that stays inside the root, listed as itself", args("link-in"), "link-in\n"},
		{"a directory that climbs and comes back", args("src/../src"), "main.go\n"},
		{"the names matching none of the ignore patterns", args("-I", "*i*", "-I", "+*", "-I", "s*"), "README\nup\n"},
	})

	// A listing of the whole root, recursive and long, shows the links
	// that lead out as links (names and targets' names) and does not
	// descend into them: the canary, the name of a file outside, never
	// shows.
	for _, a := range [][]string{{"-R"}, {"-l", "-a", "-R"}, {"-R", "-F", "."}, {"-l", "-F", "--full-time"}} {
		t.Run("a listing of the root: "+strings.Join(a, " "), func(t *testing.T) {
			code, out := s.run(t, "ls.run", args(a...))
			require.Equal(t, exitOK, code, out)
			r := decodeProofResult(t, out)
			assert.Contains(t, r.Stdout, "link-out")
			assert.Contains(t, r.Stdout, "dir-out")
			assert.NotContains(t, r.Stdout, "dir-out:", "no recursion into a link out")
			assert.NotContains(t, r.Stdout, "up:", "no recursion into a link to the parent")
			assert.NotContains(t, out, proofCanary)
		})
	}

	s.runCoreutilsAttacks(t, "ls.run", []coreutilsAttack{
		{"the parent directory", args(".."), true},
		{"the directory outside by absolute path", args(filepath.Join(s.base, "outside")), true},
		{"the parent by a path that climbs out", args("src/../.."), true},
		{"an absolute path that enters the root and climbs out", args(s.root + "/../outside"), true},
		{"the parent through /proc/self/cwd", args("/proc/self/cwd/.."), true},
		{"the link-out symlink", args("link-out"), true},
		{"-l on the link-out symlink", args("-l", "link-out"), true},
		{"a directory link outside, which ls follows as an operand", args("dir-out"), true},
		{"a directory link outside, with a trailing slash", args("dir-out/"), true},
		{"a directory link to the parent", args("up"), true},
		{"-R through a directory link to the parent", args("-R", "up/outside"), true},
		{"-L follows every link", args("-L", "-R"), true},
		{"--dereference", args("--dereference", "-l"), true},
		{"-H follows links given as operands", args("-H", "-R", "."), true},
		{"--dereference-command-line", args("--dereference-command-line", "."), true},
		{"--dereference-command-line-symlink-to-dir", args("--dereference-command-line-symlink-to-dir", "-R"), true},
		{"--color=always (the fixed --color=never stands)", args("--color=always"), true},
		{"--hyperlink", args("--hyperlink=always"), true},
		{"--time-style with a format of the caller's", args("-l", "--time-style=+%s"), true},
		{"--width", args("--width=1"), true},
		{"an ignore pattern with a slash", args("-I", "../*"), true},
		{"bundled short options", args("-la"), true},
		{"the caller's own -- before the parent", args("--", ".."), true},
		{"'-' as an operand", args("-"), true},
		{"a path that starts with '-' once cleaned", args("./-L"), true},
		{"a glob over the parent", args("../*"), true},
		{"-R of the root does not follow the links out", args("-R", "-a"), false},
		{"-l of the root shows the links' targets' names only", args("-l", "-a"), false},
		{"-d of the root", args("-d", "-l", "."), false},
	})
}
