package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The proof tests of the profiles that find, search and list: find, fd,
// grep, sed and tar. Besides the shared allow examples and attack corpus,
// each makes calls whose output it checks (searchCall), checks that the
// attacks the grammar must stop are refused before anything runs
// (requireRefusedByGrammar: runAttacks alone would pass them were they
// merely inert, or stopped by the confinement), and, for sed, that the
// real program refuses the script commands its sandbox mode shuts out.

// searchCall is a call that must run and exit 0, and whose stdout, split
// at newlines and NUL bytes, is exactly the entries of want, in any order.
type searchCall struct {
	why, name string
	input     map[string]any
	want      []string
}

// searchRunCalls runs each call for real and checks what it printed.
func (s *proofScene) searchRunCalls(t *testing.T, calls []searchCall) {
	t.Helper()
	for _, c := range calls {
		t.Run(c.why, func(t *testing.T) {
			r := s.runOK(t, c.name, c.input)
			got := strings.FieldsFunc(r.Stdout, func(c rune) bool { return c == '\n' || c == 0 })
			assert.ElementsMatch(t, c.want, got, "stdout %q", r.Stdout)
		})
	}
}

// searchRefusedByProgram checks that each call passes the grammar, runs,
// and is refused by the program itself with a message holding why.
func (s *proofScene) searchRefusedByProgram(t *testing.T, attacks []attack, why string) {
	t.Helper()
	for _, a := range attacks {
		t.Run("refused by the program: "+a.why, func(t *testing.T) {
			code, out := s.run(t, a.name, a.input)
			require.Equal(t, exitFailed, code, out)
			r := decodeProofResult(t, out)
			assert.NotEqual(t, 0, r.ExitCode)
			assert.Contains(t, r.Stderr, why)
			assert.Empty(t, r.Stdout, "refused before any input is read")
		})
	}
}

// searchFlags is a call's input with a "flags" object and args.
func searchFlags(flags map[string]any, a ...string) map[string]any {
	return map[string]any{"flags": flags, "args": a}
}

// searchStdin is a call's input with args and stdin.
func searchStdin(text string, a ...string) map[string]any {
	in := args(a...)
	in["stdin"] = text
	return in
}

func TestProfileProof_Find(t *testing.T) {
	s := newProofScene(t, "find")
	require.NoError(t, os.Symlink("..", filepath.Join(s.root, "up")))
	require.NoError(t, os.MkdirAll(filepath.Join(s.root, "src", "deep"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(s.root, "src", "deep", "empty.txt"), nil, 0o644))
	s.runAllowExamples(t, "find", "")

	s.searchRunCalls(t, []searchCall{
		{"-name matches file names", "find.run", args("-name", "*.go"), []string{"./src/main.go"}},
		{"-maxdepth bounds the depth", "find.run", args("-maxdepth", "1", "-type", "f"), []string{"./README"}},
		{"-maxdepth after a test still bounds it", "find.run", args("-type", "f", "-maxdepth", "1"), []string{"./README"}},
		{"the flags object puts -maxdepth first", "find.run", searchFlags(map[string]any{"type": "f", "maxdepth": 2}), []string{"./README", "./src/main.go"}},
		{"-type l lists the links and follows none", "find.run", args("-type", "l"), []string{"./link-out", "./up"}},
		{"a link to the parent is not entered", "find.run", args("-name", "secret.txt"), nil},
		{"a negative size is given after '='", "find.run", args("-type", "f", "-size=-1k", "-name", "*.txt"), []string{"./src/deep/empty.txt"}},
		{"-empty and -path", "find.run", args("-path", "./src/*", "-empty", "-type", "f"), []string{"./src/deep/empty.txt"}},
		{"-printf prints metadata", "find.run", args("-name", "README", "-printf", `%p %s\n`), []string{"./README 6"}},
		{"-printf %l prints where a link points, not what it holds", "find.run", args("-name", "link-out", "-printf", `%l\n`), []string{s.secret}},
		{"-print0 separates by NUL", "find.run", args("-name", "main.go", "-print0"), []string{"./src/main.go"}},
		{"a value that looks like an action is only a name", "find.run", args("-name=-delete"), nil},
	})

	grammar := []attack{
		{"-exec runs a program (GTFOBins shell)", "find.run", args("-exec", "/bin/sh", "-c", "cat "+s.secret+"; touch "+s.marker, ";")},
		{"-exec in the flags object", "find.run", searchFlags(map[string]any{"exec": "touch"})},
		{"-execdir", "find.run", searchFlags(map[string]any{"execdir": "touch"})},
		{"-ok asks and runs", "find.run", searchFlags(map[string]any{"ok": "touch"})},
		{"-okdir", "find.run", searchFlags(map[string]any{"okdir": "touch"})},
		{"-delete removes what it finds", "find.run", args("-name", "README", "-delete")},
		{"-fprint writes the list to a file", "find.run", args("-fprint", s.marker)},
		{"-fprint0", "find.run", args("-fprint0", s.marker)},
		{"-fprintf", "find.run", args("-fprintf", s.marker, "%p")},
		{"-fls", "find.run", args("-fls", s.marker)},
		{"-L follows symbolic links", "find.run", args("-L", "-name", "secret.txt")},
		{"-H", "find.run", args("-H")},
		{"-follow", "find.run", args("-follow", "-name", "secret.txt")},
		{"-files0-from reads starting points from a file", "find.run", args("-files0-from", s.secret)},
		{"a starting point climbing out", "find.run", args("..")},
		{"an absolute starting point outside", "find.run", args(s.base)},
		{"the link-out symlink as a starting point", "find.run", args("link-out")},
		{"-newer of a file outside", "find.run", args("-newer", "../secret.txt")},
		{"-newer of an absolute path outside", "find.run", args("-newer", s.secret)},
		{"-newer through the link-out symlink", "find.run", args("-newer", "link-out")},
		{"-newer through a directory link to the parent", "find.run", args("-newer", "up/secret.txt")},
		{"a name glob that climbs", "find.run", args("-name", "../secret.txt")},
		{"-D debug options", "find.run", args("-D", "exec")},
		{"a two-dash spelling", "find.run", args("--name", "x")},
	}
	s.requireRefusedByGrammar(t, grammar)
	s.runAttacks(t, slices.Concat(grammar, []attack{
		{"-name=-delete deletes nothing", "find.run", args("-name=-delete")},
		{"-name with an action as its value in the flags object", "find.run", searchFlags(map[string]any{"name": "-fprint"})},
		{"-path that climbs matches nothing outside", "find.run", args("-path", "../*")},
		{"-printf of every link's target", "find.run", args("-type", "l", "-printf", `%p %l\n`)},
		{"-ls of the whole tree", "find.run", args("-ls")},
	}))
}

func TestProfileProof_Fd(t *testing.T) {
	s := newProofScene(t, "fd")
	require.NoError(t, os.Symlink("..", filepath.Join(s.root, "up")))
	require.NoError(t, os.WriteFile(filepath.Join(s.root, ".fdignore"), []byte("ignored.txt\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(s.root, "ignored.txt"), []byte("x\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(s.root, "src", "ignored.txt"), []byte("x\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(s.root, ".hidden"), []byte("x\n"), 0o644))
	// An ignore file above the working directory, which fd looks for in
	// the directories above each search path: the confinement does not
	// let it read one.
	require.NoError(t, os.WriteFile(filepath.Join(s.base, ".fdignore"), []byte("README\n"), 0o644))
	s.runAllowExamples(t, "fd", "")

	s.searchRunCalls(t, []searchCall{
		{"everything not hidden: no ignore file is read", "fd.run", args(), []string{"README", "ignored.txt", "link-out", "src/", "src/ignored.txt", "src/main.go", "up"}},
		{"an ignore file above the working directory hides nothing", "fd.run", args("READ"), []string{"README"}},
		{"-e filters by extension", "fd.run", args("-e", "go"), []string{"src/main.go"}},
		{"-t l lists the links and follows none", "fd.run", args("-t", "l"), []string{"link-out", "up"}},
		{"a link to the parent is not entered", "fd.run", args("-H", "secret"), nil},
		{"-H adds hidden files", "fd.run", args("-H", "-t", "f", "hidden"), []string{".hidden"}},
		{"the working directory's own ignore file hides nothing", "fd.run", args("ignored"), []string{"ignored.txt", "src/ignored.txt"}},
		{"--search-path searches a directory inside", "fd.run", args("--search-path", "src"), []string{"src/ignored.txt", "src/main.go"}},
		{"a negative size is given after '='", "fd.run", args("-t", "f", "--size=-10b"), []string{"README", "ignored.txt", "src/ignored.txt"}},
		{"-g takes a glob", "fd.run", args("-g", "*.go"), []string{"src/main.go"}},
		{"-0 separates by NUL", "fd.run", args("-0", "-e", "go"), []string{"./src/main.go"}},
	})

	grammar := []attack{
		{"-x runs a program on each file (GTFOBins)", "fd.run", args("-x", "/bin/sh", "-c", "touch "+s.marker)},
		{"--exec", "fd.run", args("--exec=touch")},
		{"-X runs a program on all of them", "fd.run", args("-X", "cat")},
		{"--exec-batch", "fd.run", args("--exec-batch", "cat")},
		{"-x in the flags object", "fd.run", searchFlags(map[string]any{"exec": "touch"})},
		{"-l runs ls", "fd.run", args("-l")},
		{"-L follows links", "fd.run", args("-L", "secret")},
		{"--follow", "fd.run", args("--follow", "secret")},
		{"--ignore-file reads a file outside", "fd.run", args("--ignore-file", s.secret)},
		{"--base-directory moves out", "fd.run", args("--base-directory", s.base)},
		{"--base-directory inside, against which search paths resolve", "fd.run", args("--base-directory", "src", "--search-path", "up")},
		{"--search-path climbing out", "fd.run", args("--search-path", "..")},
		{"--search-path absolute outside", "fd.run", args("--search-path", s.base)},
		{"--search-path through the link to the parent", "fd.run", args("--search-path", "up")},
		{"--search-path of the link-out symlink", "fd.run", args("--search-path", "link-out")},
		{"a path operand after the pattern", "fd.run", args("secret", "..")},
		{"an absolute path operand", "fd.run", args("secret", s.base)},
	}
	s.requireRefusedByGrammar(t, grammar)
	s.runAttacks(t, slices.Concat(grammar, []attack{
		{"the pattern of the canary's file name, everything included", "fd.run", args("-H", "-p", "secret")},
		{"an exclude glob that climbs", "fd.run", args("-E", "../*", "-H")},
		{"an --and pattern that looks like an option", "fd.run", searchFlags(map[string]any{"and": "-x"}, "main")},
	}))
}

func TestProfileProof_Grep(t *testing.T) {
	s := newProofScene(t, "grep")
	require.NoError(t, os.Symlink("..", filepath.Join(s.root, "up")))
	require.NoError(t, os.Symlink("../README", filepath.Join(s.root, "src", "link-in")))
	s.runAllowExamples(t, "grep", "")

	s.searchRunCalls(t, []searchCall{
		{"-r walks the working directory and follows no link it meets", "grep.run", args("-r", "-e", "hello"), []string{"README:hello", "src/main.go:package main // hello"}},
		{"-r follows a link named as an operand inside", "grep.run", args("-r", "-e", "hello", "src/link-in"), []string{"hello"}},
		{"several patterns, any matching", "grep.run", args("-h", "-e", "^hello$", "-e", "^package", "README", "src/main.go"), []string{"hello", "package main // hello"}},
		{"a pattern with characters a shell would read", "grep.run", args("-E", "-o", "-e", "(hel|x)l+o$", "README"), []string{"hello"}},
		{"a pattern that starts with '-' is a pattern", "grep.run", searchStdin("a\n-v b\n", "--regexp=-v"), []string{"-v b"}},
		{"stdin when no operand", "grep.run", searchStdin("one\ntwo\n", "-n", "-e", "two"), []string{"2:two"}},
		{"--include filters names", "grep.run", args("-r", "-l", "--include", "*.go", "-e", "hello"), []string{"src/main.go"}},
	})

	grammar := []attack{
		{"a path climbing out", "grep.run", args("-e", "canary", "../secret.txt")},
		{"an absolute path outside", "grep.run", args("-e", "canary", s.secret)},
		{"the link-out symlink", "grep.run", args("-e", "canary", "link-out")},
		{"through a directory link to the parent", "grep.run", args("-e", "canary", "up/secret.txt")},
		{"-r of the link to the parent", "grep.run", args("-r", "-e", "canary", "up")},
		{"-r of the parent directory", "grep.run", args("-r", "-e", "canary", "..")},
		{"-R follows every link", "grep.run", args("-R", "-e", "canary")},
		{"--dereference-recursive", "grep.run", args("--dereference-recursive", "-e", "canary")},
		{"-d recurse", "grep.run", args("-d", "recurse", "-e", "canary")},
		{"-D read", "grep.run", args("-D", "read", "-r", "-e", "canary")},
		{"-f reads patterns from a file outside (GTFOBins file read)", "grep.run", args("-f", s.secret, "README")},
		{"--file", "grep.run", args("--file="+s.secret, "README")},
		{"--exclude-from", "grep.run", args("--exclude-from="+s.secret, "-r", "-e", "x")},
		{"'-' as an operand", "grep.run", args("-e", "x", "-")},
		{"an --include glob that climbs", "grep.run", args("--include", "../*", "-r", "-e", "canary")},
	}
	s.requireRefusedByGrammar(t, grammar)
	s.runAttacks(t, slices.Concat(grammar, []attack{
		{"-r of the whole working directory for the canary", "grep.run", args("-r", "-a", "-e", "canary")},
		{"a pattern that names the -f option", "grep.run", searchFlags(map[string]any{"regexp": []string{"-f" + s.secret}}, "-r")},
		{"no -e: the first operand is the pattern, never opened", "grep.run", args("README", "src/main.go")},
		{"a path that climbs and comes back", "grep.run", args("-e", "canary", "src/../README")},
	}))
}

func TestProfileProof_Sed(t *testing.T) {
	s := newProofScene(t, "sed")
	s.runAllowExamples(t, "sed", "")

	s.searchRunCalls(t, []searchCall{
		{"s replaces", "sed.run", args("-e", "s/hello/bye/", "README"), []string{"bye"}},
		{"-n and p print selected lines", "sed.run", args("-n", "-e", "/main/p", "README", "src/main.go"), []string{"package main // hello"}},
		{"several -e and ';'", "sed.run", args("-e", "s/h/H/", "-e", "$=; s/o$/0/", "README"), []string{"1", "Hell0"}},
		{"an operand alone is a file, not the script", "sed.run", args("README"), []string{"hello"}},
		{"stdin when no operand", "sed.run", searchStdin("one\ntwo\n", "-e", "1d"), []string{"two"}},
		{"F prints the file name, -s each file apart", "sed.run", args("-s", "-n", "-e", "1F", "README", "src/main.go"), []string{"README", "src/main.go"}},
	})

	// Each command that reads, writes or runs, in the script: the real sed
	// refuses it in sandbox mode before it reads a line (the confinement
	// would stop most of them too, so the message is what proves the rule).
	payload := "cat " + s.secret + "; touch " + s.marker
	script := []attack{
		{"e runs a command (GTFOBins)", "sed.run", args("-e", "1e "+payload, "README")},
		{"e alone runs the pattern space", "sed.run", searchStdin(payload+"\n", "-e", "e")},
		{"s///e runs the replacement", "sed.run", args("-e", "s/.*/"+strings.ReplaceAll(payload, "/", `\/`)+"/e", "README")},
		{"w writes a file (GTFOBins file write)", "sed.run", args("-e", "w "+s.marker, "README")},
		{"W writes the first line", "sed.run", args("-e", "W "+s.marker, "README")},
		{"s///w writes a file", "sed.run", args("-e", "s/hello/x/w "+s.marker, "README")},
		{"r reads a file (GTFOBins file read)", "sed.run", args("-e", "r "+s.secret, "README")},
		{"R reads a file line by line", "sed.run", args("-e", "R "+s.secret, "README")},
		{"r with an address", "sed.run", args("-e", "0~1r ../secret.txt", "README")},
		{"w to /dev/stdout", "sed.run", args("-n", "-e", "w /dev/stdout", "README")},
		{"e in a later -e", "sed.run", args("-e", "p", "-e", "1e touch "+s.marker, "README")},
	}
	s.searchRefusedByProgram(t, script, "disabled in sandbox mode")

	grammar := []attack{
		{"-i edits in place", "sed.run", args("-i", "-e", "s/hello/x/", "README")},
		{"--in-place with a backup", "sed.run", args("--in-place=.bak", "-e", "s/hello/x/", "README")},
		{"-i in the flags object", "sed.run", searchFlags(map[string]any{"in-place": true}, "README")},
		{"-f reads the script from a file", "sed.run", args("-f", s.secret, "README")},
		{"--file", "sed.run", args("--file="+s.secret, "README")},
		{"a file climbing out", "sed.run", args("-e", "p", "../secret.txt")},
		{"an absolute file outside", "sed.run", args("-e", "p", s.secret)},
		{"the link-out symlink", "sed.run", args("-e", "p", "link-out")},
		{"--follow-symlinks", "sed.run", args("--follow-symlinks", "-e", "p", "README")},
		{"'-' as an operand", "sed.run", args("-e", "p", "-")},
	}
	s.requireRefusedByGrammar(t, grammar)
	s.runAttacks(t, slices.Concat(script, grammar, []attack{
		{"a script that starts with '-' is a script", "sed.run", searchFlags(map[string]any{"expression": []string{"-n"}}, "README")},
		{"a q exit code", "sed.run", args("-e", "q5", "README")},
	}))
}

// searchTarMember is one member of an archive a proof test writes.
type searchTarMember struct {
	name, body, link string
	dir              bool
}

// writeSearchTar writes an archive of members at path, gzip-compressed when
// the name ends in .gz.
func writeSearchTar(t *testing.T, path string, members []searchTarMember) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, m := range members {
		h := &tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.body)), ModTime: mtime, Typeflag: tar.TypeReg, Uname: "u", Gname: "g"}
		switch {
		case m.dir:
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		case m.link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, m.link
		}
		require.NoError(t, tw.WriteHeader(h))
		_, err := tw.Write([]byte(m.body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	data := buf.Bytes()
	if strings.HasSuffix(path, ".gz") {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		_, err := zw.Write(data)
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		data = z.Bytes()
	}
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

func TestProfileProof_Tar(t *testing.T) {
	s := newProofScene(t, "tar")
	// The archive holds a copy of the canary, a link out and a member
	// that climbs: listing prints names only, and nothing is extracted.
	members := []searchTarMember{
		{name: "README", body: "hello\n"},
		{name: "src/", dir: true},
		{name: "src/main.go", body: "package main // hello\n"},
		{name: "held.txt", body: proofCanary + "\n"},
		{name: "link", link: s.secret},
		{name: "../escape.txt", body: "x\n"},
	}
	names := []string{"README", "src/", "src/main.go", "held.txt", "link", "../escape.txt"}
	for _, n := range []string{"archive.tar", "archive.tar.gz", "localhost:archive.tar"} {
		writeSearchTar(t, filepath.Join(s.root, n), members)
	}
	require.NoError(t, os.Symlink(filepath.Join(s.base, "outside.tar"), filepath.Join(s.root, "link-tar")))
	writeSearchTar(t, filepath.Join(s.base, "outside.tar"), []searchTarMember{{name: "outside-member", body: proofCanary}})
	s.runAllowExamples(t, "tar", "")

	s.searchRunCalls(t, []searchCall{
		{"-f lists the members", "tar.run", args("-f", "archive.tar"), names},
		{"a gzip archive lists through gzip, which tar may run", "tar.run", args("-f", "archive.tar.gz"), names},
		{"a colon in the name is a local file, not host:file", "tar.run", args("-f", "localhost:archive.tar"), names},
		{"member names limit the list", "tar.run", args("-f", "archive.tar", "src/main.go", "README"), []string{"README", "src/main.go"}},
		{"--wildcards", "tar.run", args("--wildcards", "-f", "archive.tar", "src/*"), []string{"src/main.go"}},
		{"-v lists owner, size and time", "tar.run", args("-v", "--utc", "-f", "archive.tar", "README"), []string{"-rw-r--r-- u/g               6 2024-01-02 03:04 README"}},
		{"--exclude skips members", "tar.run", searchFlags(map[string]any{"file": "archive.tar", "exclude": []string{"*.txt", "link", "src*"}}), []string{"README"}},
	})

	grammar := []attack{
		{"-x extracts", "tar.run", args("-x", "-f", "archive.tar")},
		{"--extract in the flags object", "tar.run", searchFlags(map[string]any{"extract": true, "file": "archive.tar"})},
		{"-O prints a member's content", "tar.run", args("-O", "-f", "archive.tar", "held.txt")},
		{"--to-stdout", "tar.run", args("--to-stdout", "-f", "archive.tar")},
		{"-c creates an archive of a file outside", "tar.run", args("-c", "-f", "out.tar", s.secret)},
		{"-r appends", "tar.run", args("-r", "-f", "archive.tar", "README")},
		{"-u updates", "tar.run", args("-u", "-f", "archive.tar", "README")},
		{"-A concatenates", "tar.run", args("-A", "-f", "archive.tar", "archive.tar")},
		{"-d compares with the files the members name", "tar.run", args("-d", "-f", "archive.tar")},
		{"--delete", "tar.run", args("--delete", "-f", "archive.tar", "README")},
		{"--to-command runs a program per member", "tar.run", args("--to-command=cat", "-f", "archive.tar")},
		{"--checkpoint-action=exec (GTFOBins shell)", "tar.run", args("--checkpoint=1", "--checkpoint-action=exec=touch "+s.marker, "-f", "archive.tar")},
		{"-I names the decompressor (GTFOBins)", "tar.run", args("-I", "/bin/sh -c 'touch "+s.marker+"'", "-f", "archive.tar")},
		{"--use-compress-program", "tar.run", args("--use-compress-program=touch "+s.marker, "-f", "archive.tar")},
		{"-z forces gzip", "tar.run", args("-z", "-f", "archive.tar")},
		{"--rsh-command with a remote archive", "tar.run", args("--rsh-command=/bin/touch", "-f", "localhost:"+s.marker)},
		{"-F runs a script at the end of a volume", "tar.run", args("-M", "-F", "touch "+s.marker, "-f", "archive.tar")},
		{"--new-volume-script", "tar.run", args("--new-volume-script=touch", "-f", "archive.tar")},
		{"-T reads names from a file outside", "tar.run", args("-T", s.secret, "-f", "archive.tar")},
		{"-X reads globs from a file outside", "tar.run", args("-X", s.secret, "-f", "archive.tar")},
		{"--index-file writes the listing", "tar.run", args("--index-file="+s.marker, "-f", "archive.tar")},
		{"--volno-file writes", "tar.run", args("--volno-file="+s.marker, "-f", "archive.tar")},
		{"-g reads and writes a snapshot file", "tar.run", args("-g", s.marker, "-f", "archive.tar")},
		{"-C changes directory", "tar.run", args("-C", s.base, "-f", "outside.tar")},
		{"an archive climbing out", "tar.run", args("-f", "../outside.tar")},
		{"an absolute archive outside", "tar.run", args("-f", filepath.Join(s.base, "outside.tar"))},
		{"an archive through a link out", "tar.run", args("-f", "link-tar")},
		{"the link-out symlink", "tar.run", args("-f", "link-out")},
		{"stdin as the archive", "tar.run", args("-f", "-")},
		{"a directory as the archive", "tar.run", args("-f", "src")},
	}
	s.requireRefusedByGrammar(t, grammar)
	s.runAttacks(t, slices.Concat(grammar, []attack{
		{"no -f reads the (empty) stdin", "tar.run", args()},
		{"a member name of the secret file", "tar.run", args("-f", "archive.tar", "../secret.txt")},
		{"-v of every member, the link out among them", "tar.run", args("-v", "-v", "-f", "archive.tar.gz")},
	}))
}
