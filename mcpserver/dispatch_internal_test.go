package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/internal/inputrules"
)

func TestSplitSubcommand_KeepsTheRestByteForByte(t *testing.T) {
	for _, tc := range []struct{ in, sub, rest string }{
		{`{"subcommand":"status"}`, "status", `{}`},
		{` { "subcommand" : "status" } `, "status", `{}`},
		{`{"args":["-s"],"subcommand":"status"}`, "status", `{"args":["-s"]}`},
		{`{"subcommand":"status", "args" : [ "-s" ] ,"stdin":"x"}`, "status", `{"args" : [ "-s" ],"stdin":"x"}`},
		{"{\n\t\"args\": [],\n\t\"subcommand\": \"a-1\",\n\t\"stdin\": \"\\u0041\"\n}", "a-1", `{"args": [],"stdin": "\u0041"}`},
		// Whatever the gate must refuse is forwarded as sent.
		{`{"args":["a"],"subcommand":"x","args":["b"]}`, "x", `{"args":["a"],"args":["b"]}`},
		{`{"Args":[],"SUBCOMMAND":"y","subcommand":"x"}`, "x", `{"Args":[],"SUBCOMMAND":"y"}`},
		{`{"subcommand":"x","a":{"k":1,"k":2}}`, "x", `{"a":{"k":1,"k":2}}`},
		{"{\"subcommand\":\"x\",\"a\":\"\xff\"}", "x", "{\"a\":\"\xff\"}"},
		// An escaped spelling of the key is the key.
		{`{"sub\u0063ommand":"x"}`, "x", `{}`},
	} {
		sub, rest, err := splitSubcommand("git", json.RawMessage(tc.in))
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.sub, sub, tc.in)
		assert.Equal(t, tc.rest, string(rest), tc.in)
	}
}

func TestSplitSubcommand_Refuses(t *testing.T) {
	for _, in := range []string{
		``, `null`, `[]`, `"x"`, `1`, `{`, `{"subcommand":"x",}`, `{"subcommand":"x"} {}`,
		`{"subcommand":"x"}]`, `{"subcommand" "x"}`, `{}`, `{"args":[]}`,
		`{"subcommand":"x","subcommand":"x"}`, `{"subcommand":"x","sub\u0063ommand":"y"}`,
		`{"subcommand":1}`, `{"subcommand":null}`, `{"subcommand":{}}`, `{"subcommand":true}`,
		`{"subcommand":""}`, `{"subcommand":"a.b"}`, `{"subcommand":"A"}`, `{"subcommand":"1a"}`,
		`{"subcommand":"a b"}`, `{"subcommand":"a\u0000"}`, `{"subcommand":"a\u002eb"}`,
		`{"subcommand":"` + strings.Repeat("a", 65) + `"}`,
		"{\"subcommand\":\"a\xff\"}",
	} {
		_, _, err := splitSubcommand("git", json.RawMessage(in))
		var ve *execgate.ValidationError
		require.ErrorAs(t, err, &ve, "%q", in)
		assert.Equal(t, "git", ve.Name)
		require.Len(t, ve.Issues, 1)
	}
	_, _, err := splitSubcommand("git", json.RawMessage(`{"subcommand":"x","pad":"`+strings.Repeat("a", execgate.MaxInputSize)+`"}`))
	assert.ErrorContains(t, err, "larger than 1 MiB")
	sub, _, err := splitSubcommand("git", json.RawMessage(`{"subcommand":"`+strings.Repeat("a", 64)+`"}`))
	require.NoError(t, err)
	assert.Len(t, sub, 64)
}

func FuzzSplitSubcommand(f *testing.F) {
	f.Add(`{"subcommand":"status","args":["-s"]}`)
	f.Add(`{"args":[],"subcommand":"a","args":[]}`)
	f.Fuzz(func(t *testing.T, in string) {
		sub, rest, err := splitSubcommand("git", json.RawMessage(in))
		if err != nil {
			return
		}
		if !inputrules.ValidSubcommand(sub) || strings.Contains(sub, ".") {
			t.Fatalf("accepted subcommand %q", sub)
		}
		if !json.Valid(rest) && json.Valid([]byte(in)) {
			t.Fatalf("valid input %q gave invalid rest %q", in, rest)
		}
	})
}
