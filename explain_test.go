package execgate_test

import (
	"encoding/json"
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
