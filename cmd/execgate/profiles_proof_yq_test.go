package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestProfileProof_Yq runs the yq profile against the real yq (the Python
// wrapper around jq): its allow examples and more calls succeed under the
// confinement (Python's library readable, jq executable), and the attack
// corpus, from GTFOBins' file read to yq's own --in-place, is refused by
// the grammar or left inert.
func TestProfileProof_Yq(t *testing.T) {
	s := newProofScene(t, "yq")
	s.runAllowExamples(t, "yq", "name: n\nitems:\n  - {ok: true, name: a}\n  - {ok: false, name: b}\n")
	withStdin := func(stdin string, a ...string) map[string]any {
		m := args(a...)
		m["stdin"] = stdin
		return m
	}
	doc := "a: 1\nb: [x, y]\n"
	yq := func(a ...string) map[string]any { return withStdin(doc, a...) }

	s.runValuesProofCalls(t, []valuesProofCall{
		{"JSON out of YAML in", "yq.run", yq("-c", "."), `{"a":1,"b":["x","y"]}` + "\n"},
		{"YAML out with -y", "yq.run", yq("-y", ".b"), "- x\n- y\n"},
		{"-Y keeps a custom tag and a quoting style", "yq.run", withStdin("a: !vault x\nb: \"q\"\n", "-Y", "."), "a: !vault 'x'\nb: \"q\"\n"},
		{"-y drops them", "yq.run", withStdin("a: !vault x\nb: \"q\"\n", "-y", "."), "a: x\nb: q\n"},
		{"aliases in the input expand", "yq.run", withStdin("x: &v {k: 1}\ny: *v\n", "-c", ".y"), `{"k":1}` + "\n"},
		{"every document of a stream", "yq.run", withStdin("a: 1\n---\na: 2\n", "-c", ".a"), "1\n2\n"},
		{"--arg and --argjson reach jq", "yq.run", yq("-c", "--arg", "s", "x", "--argjson", "n", "[2]", "[$s, $n[0] + .a]"), `["x",3]` + "\n"},
		{"-e with a true result", "yq.run", yq("-e", ".a == 1"), "true\n"},
		{"-S sorts the keys", "yq.run", withStdin("z: 1\na: 2\n", "-S", "-c", "."), `{"a":2,"z":1}` + "\n"},
	})

	outside := "../secret.txt"
	payload := "touch " + s.marker + "; cat " + s.secret
	grammar := []attack{
		{"-i writes the result back to a file inside the root", "yq.run", yq("-i", "-y", "del(.)", "README")},
		{"--in-place spelled long", "yq.run", yq("--in-place", "-y", `{"x": 1}`, "src/main.go")},
		{"a bundled short flag with i, which yq reads as --in-place", "yq.run", yq("-yi", "del(.)", "README")},
		{"-c and i bundled, handed to jq as -c and to yq as -i", "yq.run", yq("-ci", ".", "README")},
		{"a file operand climbing out", "yq.run", yq(".", outside)},
		{"a file operand by absolute path (GTFOBins file read)", "yq.run", yq(".", s.secret)},
		{"a file operand through the link-out symlink", "yq.run", yq(".", "link-out")},
		{"a second file operand after one inside the root", "yq.run", yq(".", "README", outside)},
		{"--rawfile of the canary", "yq.run", yq("--rawfile", "x", s.secret, "$x")},
		{"--slurpfile of the JSON file outside", "yq.run", yq("--slurpfile", "x", "../secret.json", "$x")},
		{"--argfile of the JSON file outside", "yq.run", yq("--argfile", "x", filepath.Join(s.base, "secret.json"), "$x")},
		{"-f reads the filter from a file and makes the positional an input", "yq.run", yq("-f", s.secret)},
		{"--from-file with an input file outside", "yq.run", yq("--from-file", "README", outside)},
		{"-L and a module outside", "yq.run", yq("-L", s.base, `import "secret" as $s; $s`)},
		{"--args turns operands into data", "yq.run", yq("--args", ".", s.secret)},
		{"--jsonargs", "yq.run", yq("--jsonargs", ".", "1")},
		{"an --arg NAME that is -i", "yq.run", yq("--arg", "-i", "x", "-y", ".")},
		{"an --arg VALUE that is a flag", "yq.run", yq("--arg", "x", "--in-place", "README")},
		{"a larger expansion factor for an alias bomb", "yq.run", yq("--max-expansion-factor=1000000000", ".")},
		{"a filter that starts with '-', read by argparse as an option", "yq.run", yq("-i")},
		{"an @file argument", "yq.run", yq("@" + s.secret)},
	}
	s.requireRefusedByGrammar(t, grammar)
	s.runAttacks(t, append(grammar,
		attack{"an import of a data file outside", "yq.run", yq(`import "../secret" as $s; $s`)},
		attack{"an import by absolute path", "yq.run", yq(`import "` + strings.TrimSuffix(filepath.Join(s.base, "secret.json"), ".json") + `" as $s; $s`)},
		attack{"Go yq's load operator, which jq has not", "yq.run", yq(`load("` + outside + `")`)},
		attack{"a python/object/apply tag runs nothing", "yq.run", withStdin("a: !!python/object/apply:os.system ['"+payload+"']\n", "-y", ".")},
		attack{"a python/object/apply tag under -Y", "yq.run", withStdin("a: !!python/object/apply:subprocess.check_output [['cat', '"+s.secret+"']]\n", "-Y", ".")},
		attack{"a python/name tag", "yq.run", withStdin("a: !!python/name:os.system\n", ".")},
		attack{"an alias bomb stops at yq's expansion factor", "yq.run", withStdin(aliasBomb(), "-y", ".")},
		attack{"a filter that reads the environment", "yq.run", yq("-c", "[env, $ENV]")},
	))
}

// aliasBomb returns a YAML document of nine levels of aliases, each
// repeating the last nine times: under 1KiB that would expand to 9^9
// strings.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString(`a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]` + "\n")
	prev := "a"
	for _, c := range "bcdefghi" {
		b.WriteString(string(c) + ": &" + string(c) + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+",", 9), ",") + "]\n")
		prev = string(c)
	}
	return b.String()
}
