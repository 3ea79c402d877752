package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// valuesProofCall is a call a proof test makes beside the profile's own
// allow examples: it must run, exit 0 and print want on stdout.
type valuesProofCall struct {
	why, name string
	input     map[string]any
	want      string
}

// runValuesProofCalls runs each call for real and checks its stdout.
func (s *proofScene) runValuesProofCalls(t *testing.T, calls []valuesProofCall) {
	t.Helper()
	for _, c := range calls {
		t.Run(c.why, func(t *testing.T) {
			assert.Equal(t, c.want, s.runOK(t, c.name, c.input).Stdout)
		})
	}
}

// TestProfileProof_JqValues runs jq's flags of two values against the real
// jq: --arg and --argjson bind their values, --rawfile and --slurpfile read
// files inside the root, and attacks on each (a NAME or value read as an
// option, a FILE outside the root, through a link or by absolute path) are
// refused by the grammar or left inert by the confinement.
func TestProfileProof_JqValues(t *testing.T) {
	s := newProofScene(t, "jq")
	require.NoError(t, os.WriteFile(filepath.Join(s.root, "data.json"), []byte(`{"k":1} {"k":2}`+"\n"), 0o644))
	require.NoError(t, os.Symlink("README", filepath.Join(s.root, "link-in")))
	require.NoError(t, os.Symlink("..", filepath.Join(s.root, "up")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(s.root, "fifo"), 0o644))
	stdin := func(in map[string]any) map[string]any {
		in["stdin"] = "{}"
		return in
	}
	withStdin := func(a ...string) map[string]any { return stdin(args(a...)) }

	s.runValuesProofCalls(t, []valuesProofCall{
		{"--arg binds a string", "jq.run", withStdin("-r", "--arg", "who", "ann", `"hello " + $who`), "hello ann\n"},
		{"--arg takes text with characters a shell would read", "jq.run", withStdin("-r", "--arg", "v", "a; b | $(c) `d` > e", "$v"), "a; b | $(c) `d` > e\n"},
		{"--argjson binds a JSON value", "jq.run", withStdin("-c", "--argjson", "n", `{"a":[1,2]}`, "$n.a"), "[1,2]\n"},
		{"--argjson takes a negative number after a space", "jq.run", withStdin("--argjson", "n", " -1", "$n"), "-1\n"},
		{"flags of several values, repeated, from the flags object", "jq.run",
			stdin(map[string]any{"flags": map[string]any{"arg": [][]string{{"a", "x"}, {"b", "y"}}}, "args": []string{"-r", "$a + $b"}}), "xy\n"},
		{"--rawfile reads a file inside the root", "jq.run", withStdin("--rawfile", "f", "README", "$f"), `"hello\n"` + "\n"},
		{"--rawfile takes a path that climbs and comes back", "jq.run", withStdin("--rawfile", "f", "src/../README", "$f"), `"hello\n"` + "\n"},
		{"--rawfile follows a link that stays inside the root", "jq.run", withStdin("--rawfile", "f", "link-in", "$f"), `"hello\n"` + "\n"},
		{"--slurpfile reads the JSON values of a file inside the root", "jq.run", withStdin("-c", "--slurpfile", "d", "data.json", "$d"), `[{"k":1},{"k":2}]` + "\n"},
		{"every flag of two values in one call", "jq.run",
			withStdin("-c", "--arg", "a", "x", "--argjson", "b", "2", "--rawfile", "c", "README", "--slurpfile", "d", "data.json", "[$a, $b, $c, $d[1].k]"),
			`["x",2,"hello\n",2]` + "\n"},
	})

	outside := "../secret.txt"
	grammar := []attack{
		{"a NAME that is an option (--arg -f FILE)", "jq.run", withStdin("--arg", "-f", s.secret, ".")},
		{"a NAME that is --rawfile, to read the VALUE as a file", "jq.run", withStdin("--arg", "--rawfile", "x", s.secret, "$x")},
		{"a NAME that is not an identifier", "jq.run", withStdin("--arg", "a b", "x", ".")},
		{"a NAME in the flags object that is an option", "jq.run", stdin(map[string]any{"flags": map[string]any{"argjson": [][]string{{"-L", s.base}}}, "args": []string{"."}})},
		{"a VALUE that starts with '-' (-f FILE after it)", "jq.run", withStdin("--arg", "x", "-f", s.secret)},
		{"an --argjson JSON that starts with '-'", "jq.run", withStdin("--argjson", "x", "-L"+s.base, ".")},
		{"too few values, so the filter would be the VALUE", "jq.run", withStdin("--arg", "x")},
		{"--arg=NAME glued, not jq's form", "jq.run", withStdin("--arg=x", "y", ".")},
		{"--rawfile of a path climbing out", "jq.run", withStdin("--rawfile", "x", outside, "$x")},
		{"--rawfile of a path that climbs out from inside", "jq.run", withStdin("--rawfile", "x", "src/../../secret.txt", "$x")},
		{"--rawfile of the canary by absolute path", "jq.run", withStdin("--rawfile", "x", s.secret, "$x")},
		{"--rawfile through the link-out symlink", "jq.run", withStdin("--rawfile", "x", "link-out", "$x")},
		{"--rawfile through a directory link to the parent", "jq.run", withStdin("--rawfile", "x", "up/secret.txt", "$x")},
		{"--rawfile of a directory", "jq.run", withStdin("--rawfile", "x", "src", "$x")},
		{"--rawfile of a named pipe, which would block jq", "jq.run", withStdin("--rawfile", "x", "fifo", "$x")},
		{"--rawfile of /proc/self/environ", "jq.run", withStdin("--rawfile", "x", "/proc/self/environ", "$x")},
		{"--slurpfile of a JSON file outside", "jq.run", withStdin("--slurpfile", "x", "../secret.json", "$x")},
		{"--slurpfile of the JSON file by absolute path", "jq.run", withStdin("--slurpfile", "x", filepath.Join(s.base, "secret.json"), "$x")},
		{"--slurpfile through the link-out symlink", "jq.run", withStdin("--slurpfile", "x", "link-out", "$x")},
		{"--argfile, which reads a file and is not offered", "jq.run", withStdin("--argfile", "x", filepath.Join(s.base, "secret.json"), "$x")},
		{"a file operand after the filter", "jq.run", withStdin(".", "README")},
	}
	s.requireRefusedByGrammar(t, grammar)
	s.runAttacks(t, append(grammar,
		attack{"a filter that imports the JSON file outside beside a --rawfile", "jq.run", withStdin("--rawfile", "r", "README", `import "../secret" as $s; $s`)},
		attack{"a filter that reads the environment", "jq.run", withStdin("-c", "--arg", "HOME", s.base, "[$ENV, env, $__loc__]")},
		attack{"--arg named ENV does not change what jq reads", "jq.run", withStdin("--arg", "ENV", s.secret, "$ENV")},
	))
}
