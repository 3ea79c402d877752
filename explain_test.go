package execgate_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

func TestProposer_ExplainSaysWhyEachArgument(t *testing.T) {
	a := mustAllowlist(t,
		execgate.CommandSpec{Name: "git.log", Command: "/bin/echo", Args: execgate.Flags(gitLogSpec())},
		execgate.CommandSpec{Name: "find.run", Command: "/bin/echo", Args: execgate.Flags(findSpec())},
		execgate.CommandSpec{Name: "date.utc", Command: "/bin/echo", Args: execgate.Fixed("-u")},
		gitDispatcher(execgate.ActionAllow),
	)
	p := execgate.NewProposer(a)
	why := func(name, input string) []execgate.ArgNote {
		t.Helper()
		notes, err := p.Explain(name, json.RawMessage(input))
		require.NoError(t, err)
		return notes
	}

	assert.Equal(t, []execgate.ArgNote{
		{Arg: "log", Why: "fixed leading argument of the spec"},
		{Arg: "--max-count=5", Why: `declared flag --max-count with its value "5", an integer from 1 to 500`},
		{Arg: "--oneline", Why: "declared flag --oneline"},
		{Arg: "--author=Ann", Why: `declared flag --author with its value "Ann", matching ^[A-Za-z .@-]{1,64}$`},
		{Arg: "--", Why: "end of options, placed by the spec"},
		{Arg: "main", Why: "positional argument, matching ^[A-Za-z0-9._/-]{1,100}$"},
	}, why("git.log", `{"flags":{"max-count":5,"oneline":true},"args":["main","--author","Ann"]}`))

	assert.Equal(t, []execgate.ArgNote{
		{Arg: "-name", Why: "declared flag -name"},
		{Arg: "*.go", Why: "value of -name, matching ^[A-Za-z0-9*?._-]{1,64}$"},
		{Arg: "-type", Why: "declared flag -type"},
		{Arg: "f", Why: `value of -type, one of "f", "d"`},
		{Arg: "/srv", Why: "positional argument, matching ^/[A-Za-z0-9._/-]*$"},
	}, why("find.run", `{"args":["/srv","-name","*.go","-type","f"]}`))

	assert.Equal(t, []execgate.ArgNote{{Arg: "-u", Why: "fixed argument of the spec"}}, why("date.utc", ``))

	notes := why("git.stash", `{"args":["pop"]}`)
	require.Len(t, notes, 5)
	assert.Equal(t, "fixed leading argument of the dispatcher", notes[0].Why)
	assert.Equal(t, execgate.ArgNote{Arg: "stash", Why: "the subcommand, from the requested name"}, notes[3])
	assert.Contains(t, notes[4].Why, "no flag allowlist")

	// A refused call says why in its ValidationError, like Check.
	_, err := p.Explain("git.log", json.RawMessage(`{"args":["--output=/tmp/x"]}`))
	var ve *execgate.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "args[0]", ve.Issues[0].Field)
	_, err = p.Explain("nope", nil)
	var nf *execgate.NotFoundError
	assert.ErrorAs(t, err, &nf)
}

// TestProposer_ExplainNamesPathRulesAndEachValue: a path positional or
// value is explained by its path rule (roots, what must be there, globs,
// links), not as plain text, and each value of a flag of several values
// by its own rule, not as a positional.
func TestProposer_ExplainNamesPathRulesAndEachValue(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d.json"), []byte("{}\n"), 0o644))
	spec := execgate.FlagSpec{
		Flags: []execgate.Flag{
			{Name: "rawfile", Values: []execgate.FlagValue{
				{Name: "name", Value: execgate.ValuePattern, Pattern: `^[a-z]+$`},
				{Name: "file", Value: execgate.ValuePath, Path: &execgate.PathRule{Must: execgate.PathFile}},
			}},
			{Name: "glob", Separate: true, Value: execgate.ValuePath, Path: &execgate.PathRule{Glob: true, Lexical: true}},
		},
		Positionals:  execgate.Positionals{Max: 2, Path: &execgate.PathRule{Must: execgate.PathExists}},
		EndOfOptions: true,
	}
	a := mustAllowlist(t, execgate.CommandSpec{Name: "jq.run", Command: "/bin/echo", Dir: dir, Args: execgate.Flags(spec)})
	notes, err := execgate.NewProposer(a).Explain("jq.run", json.RawMessage(`{"args":["--rawfile","x","d.json","--glob","src/*.go","./d.json"]}`))
	require.NoError(t, err)
	inside := "a path inside the working directory " + dir + ", passed cleaned"
	for i, want := range []execgate.ArgNote{
		{Arg: "--rawfile", Why: "declared flag --rawfile, taking 2 values"},
		{Arg: "x", Why: "the name value of --rawfile, matching ^[a-z]+$"},
		{Arg: "d.json", Why: "the file value of --rawfile, " + inside + "; it must be a regular file; no glob characters; symbolic links resolved: none may lead outside"},
		{Arg: "--glob", Why: "declared flag --glob"},
		{Arg: "src/*.go", Why: "value of --glob, " + inside + "; glob characters * ? [ allowed after the part checked as a path, for the program to expand; checked as text: symbolic links are not resolved"},
		{Arg: "--", Why: "end of options, placed by the spec"},
		{Arg: "d.json", Why: "positional argument, " + inside + "; it must exist; no glob characters; symbolic links resolved: none may lead outside"},
	} {
		require.Greater(t, len(notes), i)
		assert.Equal(t, want, notes[i], "argument %d", i)
	}
	assert.Len(t, notes, 7)
}
