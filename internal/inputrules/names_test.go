package inputrules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTypedGrammars_OnePrincipalRule pins the one rule for principals,
// which the root package, mcpserver and config all apply.
//
// Invariant 12 of DESIGN.md.
func TestTypedGrammars_OnePrincipalRule(t *testing.T) {
	for _, tc := range []struct {
		in     string
		reason string // "" when accepted; else part of the message
		why    string
	}{
		{"", "", "the empty principal is the unknown one"},
		{"ci-bot", "", "an identifier passes"},
		{"alice@example.com", "", "an address passes"},
		{"spiffe://example.org/ns/prod/sa/gate", "", "a URI passes"},
		{"José", "", "letters outside ASCII pass"},
		{strings.Repeat("p", MaxPrincipalBytes), "", "exactly the bound passes"},
		{strings.Repeat("p", MaxPrincipalBytes+1), "has 257 bytes", "one byte more does not"},
		{"\xff", "not valid UTF-8", "invalid UTF-8 could not be shown the same everywhere"},
		{"ci bot", "white space character U+0020", "a space makes two principals read alike in logs"},
		{"ci\u00a0bot", "white space character U+00A0", "so does a no-break space"},
		{"ci\u3000bot", "white space character U+3000", "and the ideographic space"},
		{"ci\tbot", "control character U+0009", "a tab is a control character before it is white space"},
		{"a\nb", "control character U+000A", "a newline could forge an audit line"},
		{"a\x00b", "contains NUL", "NUL is refused as everywhere"},
		{"admin\u202e", "formatting character U+202E", "a bidirectional override could make one principal read as another"},
		{"ad\u200bmin", "invisible character U+200B", "an invisible character would make two principals look the same"},
		{"admin\U000e0041", "invisible character U+E0041", "so would a tag character"},
	} {
		t.Run(tc.why, func(t *testing.T) {
			got := PrincipalProblem(tc.in)
			if tc.reason == "" {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, got, tc.reason)
			assert.True(t, strings.HasPrefix(got, principalRule), "every refusal states the rule: %q", got)
		})
	}
}

// TestNameRules pins the rules for names, one sentence a case.
func TestNameRules(t *testing.T) {
	for _, tc := range []struct {
		rule, in, want, why string
	}{
		{"name", "git.log", "", "a dotted command name passes"},
		{"name", "", "required", "a spec needs a name"},
		{"name", strings.Repeat("a", MaxNameBytes+1), "longer than 128 bytes", "names are bounded"},
		{"name", "-x", "must start with a letter or digit", "a name cannot look like a flag"},
		{"name", "git..log", "has an empty segment between dots", "segments are never empty"},
		{"name", "git.", "has an empty segment between dots", "nor is the last one"},
		{"name", "git log", "may hold only ASCII letters, digits, '_', '-' and '.'; found ' '", "names are ASCII words"},
		{"tool", "git", "", "a tool name is a word"},
		{"tool", "", "must not be empty", "a tool needs a name"},
		{"tool", "git.x", "no dots", "a tool name is one segment: subcommands are added after a dot"},
		{"tool", strings.Repeat("a", MaxToolNameBytes+1), "1 to 63 ASCII letters", "a tool name leaves room for a subcommand within a command name"},
		{"flag", "max-count", "", "a flag name is a word"},
		{"flag", "", "is required", "a flag needs a name"},
		{"flag", "--max", "must match [A-Za-z0-9][A-Za-z0-9_-]*", "dashes are the spelling's, not the name's"},
		{"flag", strings.Repeat("a", MaxFlagNameBytes+1), "is longer than 64 bytes", "flag names are bounded"},
		{"short", "n", "", "a short alias is one letter"},
		{"short", "ab", "must be one ASCII letter or digit", "two letters are not a short alias"},
		{"short", "é", "must be one ASCII letter or digit", "nor is a letter outside ASCII"},
		{"subcommand", "log", "", "a lowercase word is a subcommand"},
		{"subcommand", "cherry-pick", "", "with dashes inside"},
		{"subcommand", "Log", "must be 1 to 64 bytes matching ^[a-z][a-z0-9-]*$", "no capitals"},
		{"subcommand", "a.b", "must be 1 to 64 bytes matching ^[a-z][a-z0-9-]*$", "a dot would make the gate look up another spec"},
		{"subcommand", strings.Repeat("a", MaxSubcommandBytes+1), "must be 1 to 64 bytes matching ^[a-z][a-z0-9-]*$", "subcommands are bounded"},
		{"env key", "PATH", "", "a variable name passes"},
		{"env key", "", "must be non-empty and contain neither '=' nor NUL", "an empty name cannot be set"},
		{"env key", "A=B", "must be non-empty and contain neither '=' nor NUL", "'=' would end the name early"},
		{"env value", "a\x00b", "contains NUL", "NUL would end the value early"},
		{"env value", "a=b c", "", "any other value passes"},
	} {
		t.Run(tc.rule+": "+tc.why, func(t *testing.T) {
			var got string
			switch tc.rule {
			case "name":
				if err := NameProblem(tc.in); err != nil {
					got = err.Error()
				}
			case "tool":
				got = ToolNameProblem(tc.in)
			case "flag":
				got = FlagNameProblem(tc.in)
			case "short":
				got = ShortProblem(tc.in)
			case "subcommand":
				got = SubcommandProblem(tc.in)
				assert.Equal(t, got == "", ValidSubcommand(tc.in))
			case "env key":
				got = EnvKeyProblem(tc.in)
			case "env value":
				got = EnvValueProblem(tc.in)
			}
			if tc.want == "" {
				assert.Empty(t, got)
			} else {
				assert.Contains(t, got, tc.want)
			}
		})
	}
}

func TestInputSizeProblem(t *testing.T) {
	assert.Empty(t, InputSizeProblem(MaxInputBytes), "exactly the bound passes")
	assert.Equal(t, "input is larger than 1 MiB", InputSizeProblem(MaxInputBytes+1), "one byte more is refused")
}

// TestResolveCommand pins the one rule for what runs, which NewAllowlist
// and config apply.
func TestResolveCommand(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "tool")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
	plain := filepath.Join(dir, "data")
	require.NoError(t, os.WriteFile(plain, nil, 0o644))
	for _, tc := range []struct {
		in, want, err, why string
	}{
		{exe, exe, "", "an absolute path to an executable is kept"},
		{dir + "/./tool", exe, "", "and cleaned"},
		{"", "", "must not be empty", "a command is required"},
		{"a\x00b", "", "must not contain NUL", "NUL cannot reach exec"},
		{"bin/tool", "", "is a relative path", "a relative path would depend on the working directory"},
		{filepath.Join(dir, "missing"), "", "does not exist", "a missing file is refused when the list is built"},
		{dir, "", "is not a regular file", "a directory does not run"},
		{plain, "", "is not executable", "nor does a file without an execute bit"},
		{"execgate-no-such-command", "", "is not found on PATH", "a bare name must be on PATH"},
	} {
		t.Run(tc.why, func(t *testing.T) {
			got, err := ResolveCommand(tc.in)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
