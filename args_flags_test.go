package execgate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/internal/inputrules"
)

// flagsCommand is the executable every spec in this file names. The
// Recorder never starts it; NewAllowlist only checks that it exists.
const flagsCommand = "/bin/echo"

// gitLogSpec is git log as an operator would allow it.
func gitLogSpec() execgate.FlagSpec {
	return execgate.FlagSpec{
		Leading: []string{"log"},
		Flags: []execgate.Flag{
			{Name: "max-count", Short: "n", Value: execgate.ValueInt, Min: new(int64(1)), Max: new(int64(500))},
			{Name: "oneline"},
			{Name: "format", Value: execgate.ValueEnum, Enum: []string{"oneline", "short", "medium"}},
			{Name: "author", Value: execgate.ValuePattern, Pattern: `^[A-Za-z .@-]{1,64}$`},
		},
		Positionals:  execgate.Positionals{Max: 1, Pattern: `^[A-Za-z0-9._/-]{1,100}$`},
		EndOfOptions: true,
	}
}

// findSpec has single-dash long flags, as find does.
func findSpec() execgate.FlagSpec {
	return execgate.FlagSpec{
		Flags: []execgate.Flag{
			{Name: "name", SingleDash: true, Value: execgate.ValuePattern, Pattern: `^[A-Za-z0-9*?._-]{1,64}$`},
			{Name: "type", SingleDash: true, Value: execgate.ValueEnum, Enum: []string{"f", "d"}},
			{Name: "maxdepth", SingleDash: true, Value: execgate.ValueInt, Min: new(int64(0)), Max: new(int64(10))},
			{Name: "print", SingleDash: true},
		},
		Positionals: execgate.Positionals{Max: 2, Pattern: `^/[A-Za-z0-9._/-]*$`},
	}
}

// sshSpec has only one-character options, as ssh does: -o must never take
// a glued value, -p may.
func sshSpec() execgate.FlagSpec {
	return execgate.FlagSpec{
		Flags: []execgate.Flag{
			{Name: "o", Value: execgate.ValuePattern, Pattern: `^(BatchMode|ConnectTimeout)=[A-Za-z0-9]{1,16}$`, Repeat: 2},
			{Name: "p", Value: execgate.ValueInt, Min: new(int64(1)), Max: new(int64(65535)), Glued: true},
			{Name: "v", Repeat: 3},
			{Name: "batch", Short: "B"},
		},
		Positionals: execgate.Positionals{Max: 1, Pattern: `^[a-z0-9.-]{1,253}$`},
	}
}

// toolSpec covers string values, repeats, glued shorts, positionals
// without a pattern and stdin.
func toolSpec() execgate.FlagSpec {
	return execgate.FlagSpec{
		Leading: []string{"--no-pager", "run"},
		Flags: []execgate.Flag{
			{Name: "message", Short: "m", Value: execgate.ValueString},
			{Name: "tag", Short: "t", Value: execgate.ValueString, Repeat: 3},
			{Name: "level", Short: "l", Value: execgate.ValueInt, Glued: true, Repeat: 2},
			{Name: "quiet", Short: "q"},
			{Name: "verbose", Short: "v", Repeat: 2},
		},
		Positionals: execgate.Positionals{Max: 3},
		Stdin:       &execgate.StdinSpec{Max: 16},
	}
}

// jqSpec lets a pattern allow a shell metacharacter explicitly.
func jqSpec() execgate.FlagSpec {
	return execgate.FlagSpec{
		Flags:       []execgate.Flag{{Name: "compact-output", Short: "c"}},
		Positionals: execgate.Positionals{Max: 1, Pattern: `^[.a-z\[\]0-9 |]{1,200}$`},
		Stdin:       &execgate.StdinSpec{},
	}
}

// catSpec emits "--" before positionals that have no pattern.
func catSpec() execgate.FlagSpec {
	return execgate.FlagSpec{
		Positionals:  execgate.Positionals{Max: 2},
		EndOfOptions: true,
	}
}

// flagsSpecs are the specs the gate in this file serves, by command name.
func flagsSpecs() map[string]execgate.FlagSpec {
	return map[string]execgate.FlagSpec{
		"git.log":   gitLogSpec(),
		"find.run":  findSpec(),
		"ssh.run":   sshSpec(),
		"tool.run":  toolSpec(),
		"jq.run":    jqSpec(),
		"cat.run":   catSpec(),
		"none.run":  {Flags: []execgate.Flag{{Name: "quiet"}}},
		"many.run":  {Leading: []string{"x"}, Flags: []execgate.Flag{{Name: "v", Repeat: 1000}}},
		"empty.run": {},
	}
}

// newFlagsGate builds an Executor over flagsSpecs with a Recorder as its
// ExecFn.
func newFlagsGate(t *testing.T) (*execgate.Executor, *execgatetest.Recorder) {
	t.Helper()
	var specs []execgate.CommandSpec
	for name, fs := range flagsSpecs() {
		specs = append(specs, execgate.CommandSpec{Name: name, Command: flagsCommand, Args: execgate.Flags(fs)})
	}
	a, err := execgate.NewAllowlist(specs...)
	require.NoError(t, err)
	rec := execgatetest.NewRecorder()
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: a, ExecFn: rec.Exec})
	require.NoError(t, err)
	return x, rec
}

// runFlags runs one call through the gate and returns the argv and stdin
// the ExecFn was handed.
func runFlags(t *testing.T, x *execgate.Executor, rec *execgatetest.Recorder, name, input string) ([]string, []byte) {
	t.Helper()
	rec.Reset()
	_, err := x.Run(context.Background(), name, json.RawMessage(input))
	require.NoError(t, err, "input %s", input)
	calls := rec.Calls()
	require.Len(t, calls, 1)
	return calls[0].Args, calls[0].Stdin
}

// refuseFlags runs one call that must be refused with a *ValidationError
// before anything is spawned, and returns the error.
func refuseFlags(t *testing.T, x *execgate.Executor, rec *execgatetest.Recorder, name string, input []byte) *execgate.ValidationError {
	t.Helper()
	rec.Reset()
	_, err := x.Run(context.Background(), name, input)
	var ve *execgate.ValidationError
	require.ErrorAs(t, err, &ve, "input %q was not refused", input)
	assert.Equal(t, name, ve.Name)
	assert.NotEmpty(t, ve.Issues)
	assert.Zero(t, rec.Count(), "a refused call reached the ExecFn")
	assertPrintable(t, err.Error())
	return ve
}

// assertPrintable checks that an error message repeats no control or
// bidirectional formatting character raw: tokens are quoted with escapes.
func assertPrintable(t *testing.T, msg string) {
	t.Helper()
	for _, r := range msg {
		bad := r < 0x20 || 0x7f <= r && r <= 0x9f || r == 0x061c || r == 0x200e || r == 0x200f ||
			0x2028 <= r && r <= 0x202e || 0x2066 <= r && r <= 0x2069
		if !assert.False(t, bad, "message %q holds U+%04X raw", msg, r) {
			return
		}
	}
}

func TestFlags_AcceptedInputsGiveExactArgv(t *testing.T) {
	x, rec := newFlagsGate(t)
	for _, tc := range []struct {
		name, cmd, input string
		want             []string
		stdin            string
	}{
		{"absent input", "git.log", ``, []string{"log", "--"}, ""},
		{"null input", "git.log", `null`, []string{"log", "--"}, ""},
		{"empty object", "git.log", ` { } `, []string{"log", "--"}, ""},
		{"empty members", "git.log", `{"args":[],"flags":{}}`, []string{"log", "--"}, ""},
		{"flags object", "git.log", `{"flags":{"max-count":5,"oneline":true}}`, []string{"log", "--max-count=5", "--oneline", "--"}, ""},
		{"false omits", "git.log", `{"flags":{"oneline":false}}`, []string{"log", "--"}, ""},
		{"declaration order", "git.log", `{"flags":{"author":"Ann Lee","format":"short","oneline":true,"max-count":500}}`,
			[]string{"log", "--max-count=500", "--oneline", "--format=short", "--author=Ann Lee", "--"}, ""},
		{"long with separate value", "git.log", `{"args":["--max-count","5","main"]}`, []string{"log", "--max-count=5", "--", "main"}, ""},
		{"long with equals", "git.log", `{"args":["--max-count=5"]}`, []string{"log", "--max-count=5", "--"}, ""},
		{"short with separate value", "git.log", `{"args":["-n","5"]}`, []string{"log", "--max-count=5", "--"}, ""},
		{"int normalized", "git.log", `{"args":["-n","007"]}`, []string{"log", "--max-count=7", "--"}, ""},
		{"pattern value may start with dash via equals", "git.log", `{"args":["--author=-Ann"]}`, []string{"log", "--author=-Ann", "--"}, ""},
		{"pattern allows @", "git.log", `{"flags":{"author":"ann@example.org"}}`, []string{"log", "--author=ann@example.org", "--"}, ""},
		{"flags then args then positionals", "git.log", `{"args":["main","--oneline"],"flags":{"format":"medium"}}`,
			[]string{"log", "--format=medium", "--oneline", "--", "main"}, ""},
		{"single-dash long", "find.run", `{"args":["/srv","-name","*.go","-type=f","-maxdepth","0","-print"]}`,
			[]string{"-name", "*.go", "-type", "f", "-maxdepth", "0", "-print", "/srv"}, ""},
		{"single-dash in flags object", "find.run", `{"flags":{"print":true,"name":"*.md"},"args":["/a","/b"]}`,
			[]string{"-name", "*.md", "-print", "/a", "/b"}, ""},
		{"one-character names", "ssh.run", `{"args":["-o","BatchMode=yes","-p22","-v","-v","-B","host.example"]}`,
			[]string{"-o", "BatchMode=yes", "-p", "22", "-v", "-v", "--batch", "host.example"}, ""},
		{"repeat as array", "ssh.run", `{"flags":{"o":["BatchMode=yes","ConnectTimeout=5"],"p":2222}}`,
			[]string{"-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-p", "2222"}, ""},
		{"strings and leading", "tool.run", `{"flags":{"message":"hello world","tag":["a","b"]},"args":["-t","c","-l","-5","-l7","x","y z"]}`,
			[]string{"--no-pager", "run", "--message=hello world", "--tag=a", "--tag=b", "--tag=c", "--level=-5", "--level=7", "x", "y z"}, ""},
		{"negative glued int", "tool.run", `{"args":["-l-3"]}`, []string{"--no-pager", "run", "--level=-3"}, ""},
		{"bool repeat over flags and args", "tool.run", `{"flags":{"verbose":true},"args":["-v"]}`, []string{"--no-pager", "run", "--verbose", "--verbose"}, ""},
		{"stdin", "tool.run", `{"stdin":"line1\nline2\t"}`, []string{"--no-pager", "run"}, "line1\nline2\t"},
		{"stdin at cap", "tool.run", `{"stdin":"0123456789abcdef"}`, []string{"--no-pager", "run"}, "0123456789abcdef"},
		{"pattern allows a metacharacter", "jq.run", `{"args":["-c",".items[] | .name"],"stdin":"{}"}`, []string{"--compact-output", ".items[] | .name"}, "{}"},
		{"lone dash after end of options", "cat.run", `{"args":["-","file.txt"]}`, []string{"--", "-", "file.txt"}, ""},
		{"unicode text", "tool.run", `{"args":["--message","日本語 é"]}`, []string{"--no-pager", "run", "--message=日本語 é"}, ""},
		{"empty spec", "empty.run", `{}`, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, stdin := runFlags(t, x, rec, tc.cmd, tc.input)
			if tc.want == nil {
				assert.Empty(t, args)
			} else {
				assert.Equal(t, tc.want, args)
			}
			assert.Equal(t, tc.stdin, string(stdin))
		})
	}
}

// flagsRefusal is one input a spec must refuse, with the Field of an
// Issue that must name it and text that Issue's Message must hold.
type flagsRefusal struct {
	name, cmd, input string
	field, contains  string
}

// assertRefusal runs tc through the gate and checks the refusal names the
// offending token.
func assertRefusal(t *testing.T, x *execgate.Executor, rec *execgatetest.Recorder, tc flagsRefusal) {
	t.Helper()
	ve := refuseFlags(t, x, rec, tc.cmd, []byte(tc.input))
	for _, is := range ve.Issues {
		if is.Field == tc.field && strings.Contains(is.Message, tc.contains) {
			return
		}
	}
	t.Errorf("no issue with field %q and message containing %q in %+v", tc.field, tc.contains, ve.Issues)
}

// Invariant 4 of DESIGN.md.
func TestStrictInput_FlagsRefuseUndeclaredAndMisspelledFlags(t *testing.T) {
	x, rec := newFlagsGate(t)
	for _, tc := range []flagsRefusal{
		{"undeclared long", "git.log", `{"args":["--force"]}`, "args[0]", `"--force": undeclared flag`},
		{"undeclared long with value", "git.log", `{"args":["main","--output=out.txt"]}`, "args[1]", `"--output=out.txt": undeclared flag`},
		{"undeclared short", "git.log", `{"args":["-x"]}`, "args[0]", `"-x": undeclared flag`},
		{"abbreviation", "git.log", `{"args":["--max","5"]}`, "args[0]", `"--max": abbreviation of --max-count is not accepted`},
		{"abbreviation with equals", "git.log", `{"args":["--max-c=5"]}`, "args[0]", `abbreviation of --max-count is not accepted`},
		{"abbreviation of boolean", "git.log", `{"args":["--one"]}`, "args[0]", `abbreviation of --oneline is not accepted`},
		{"one-letter abbreviation", "tool.run", `{"args":["--l"]}`, "args[0]", `"--l": undeclared flag; it is spelled -l`},
		{"single-dash abbreviation", "find.run", `{"args":["-nam","x"]}`, "args[0]", `abbreviation of -name is not accepted`},
		{"double dash for single-dash flag", "find.run", `{"args":["--name","x"]}`, "args[0]", `"--name": undeclared flag; it is spelled -name`},
		{"single dash for double-dash flag", "git.log", `{"args":["-max-count","5"]}`, "args[0]", `it is spelled --max-count`},
		{"double dash for short", "git.log", `{"args":["--n","5"]}`, "args[0]", `it is spelled -n`},
		{"bundled shorts", "tool.run", `{"args":["-qv"]}`, "args[0]", `"-qv": bundled short flags are not accepted`},
		{"bundled one-character names", "ssh.run", `{"args":["-vv"]}`, "args[0]", `bundled short flags are not accepted`},
		{"glued short value", "git.log", `{"args":["-n5"]}`, "args[0]", `"-n5": a value glued to -n is not accepted`},
		{"glued ssh option", "ssh.run", `{"args":["-oProxyCommand=x"]}`, "args[0]", `"-oProxyCommand=x": a value glued to -o is not accepted`},
		{"glued allowed option", "ssh.run", `{"args":["-oBatchMode=yes"]}`, "args[0]", `a value glued to -o is not accepted`},
		{"short with equals", "tool.run", `{"args":["-l=5"]}`, "args[0]", `give the value of -l as the next token`},
		{"boolean with long value", "git.log", `{"args":["--oneline=true"]}`, "args[0]", `"--oneline=true": --oneline takes no value`},
		{"boolean with empty value", "git.log", `{"args":["--oneline="]}`, "args[0]", `--oneline takes no value`},
		{"boolean single-dash with value", "find.run", `{"args":["-print=1"]}`, "args[0]", `-print takes no value`},
		{"boolean short with value", "tool.run", `{"args":["-q=1"]}`, "args[0]", `-q takes no value`},
		{"value missing at end", "git.log", `{"args":["--max-count"]}`, "args[0]", `"--max-count": needs a value`},
		{"value missing before flag", "git.log", `{"args":["--author","--oneline"]}`, "args[0]", `"--author": needs a value`},
		{"value missing before dash dash", "tool.run", `{"args":["-m","--"]}`, "args[0]", `"-m": needs a value`},
		{"caller dash dash", "git.log", `{"args":["--","main"]}`, "args[0]", `"--": not accepted from the caller`},
		{"caller dash dash without end of options", "tool.run", `{"args":["x","--"]}`, "args[1]", `"--": not accepted`},
		{"undeclared key in flags", "git.log", `{"flags":{"force":true}}`, "flags.force", `"force": undeclared flag`},
		{"case-folded key in flags", "git.log", `{"flags":{"OneLine":true}}`, "flags.OneLine", `names are case-sensitive: use "oneline"`},
		{"dashed key in flags", "git.log", `{"flags":{"--oneline":true}}`, `flags[--oneline]`, `use the name without dashes: "oneline"`},
		{"short as key in flags", "git.log", `{"flags":{"-n":5}}`, `flags[-n]`, `use the name "max-count"`},
		{"too often in args", "git.log", `{"args":["--oneline","--oneline"]}`, "args[1]", `--oneline may be given only once`},
		{"too often across flags and args", "git.log", `{"flags":{"max-count":5},"args":["-n","6"]}`, "args[0]", `--max-count may be given only once`},
		{"repeat exceeded across", "tool.run", `{"flags":{"tag":["a","b"]},"args":["-t","c","--tag=d"]}`, "args[2]", `--tag may be given at most 3 times`},
		{"repeat array too long", "tool.run", `{"flags":{"tag":["a","b","c","d"]}}`, "flags.tag", `must hold at most 3 values`},
		{"boolean repeat exceeded", "ssh.run", `{"args":["-v","-v","-v","-v"]}`, "args[3]", `-v may be given at most 3 times`},
	} {
		t.Run(tc.name, func(t *testing.T) { assertRefusal(t, x, rec, tc) })
	}
}

// Invariant 4 of DESIGN.md.
func TestStrictInput_FlagsRefuseBadValuesAndPositionals(t *testing.T) {
	x, rec := newFlagsGate(t)
	long := strings.Repeat("a", execgate.MaxApprovalArgBytes+1)
	cases := []flagsRefusal{
		{"int syntax", "git.log", `{"args":["--max-count","five"]}`, "args[1]", `"five": the value of --max-count must be an integer from 1 to 500`},
		{"int above max", "git.log", `{"args":["-n","501"]}`, "args[1]", `"501": the value of --max-count must be an integer from 1 to 500`},
		{"int below min", "git.log", `{"args":["--max-count=0"]}`, "args[0]", `"0": the value of --max-count`},
		{"int hex", "git.log", `{"args":["-n","0x10"]}`, "args[1]", `"0x10": the value of --max-count must be an integer`},
		{"int overflow", "tool.run", `{"args":["-l","99999999999999999999"]}`, "args[1]", `must be an integer`},
		{"int in flags above max", "git.log", `{"flags":{"max-count":501}}`, "flags.max-count", `"501": the value of --max-count`},
		{"int in flags fraction", "git.log", `{"flags":{"max-count":5.5}}`, "flags.max-count", `"5.5": the value of --max-count must be an integer`},
		{"int in flags exponent", "git.log", `{"flags":{"max-count":5e0}}`, "flags.max-count", `"5e0"`},
		{"int in flags as string", "git.log", `{"flags":{"max-count":"5"}}`, "flags.max-count", `must be an integer`},
		{"int glued bad", "ssh.run", `{"args":["-p22x"]}`, "args[0]", `"22x": the value of -p must be an integer from 1 to 65535`},
		{"enum", "git.log", `{"args":["--format","full"]}`, "args[1]", `"full": the value of --format must be one of "oneline", "short", "medium"`},
		{"enum in flags", "git.log", `{"flags":{"format":"Short"}}`, "flags.format", `"Short": the value of --format must be one of`},
		{"enum single dash", "find.run", `{"args":["-type","l"]}`, "args[1]", `"l": the value of -type must be one of`},
		{"pattern", "git.log", `{"args":["--author=bob;id"]}`, "args[0]", `"bob;id": the value of --author does not match its pattern`},
		{"pattern partial match", "ssh.run", `{"args":["-o","BatchMode=yes x"]}`, "args[1]", `"BatchMode=yes x": the value of -o does not match its pattern`},
		{"pattern ssh proxy", "ssh.run", `{"flags":{"o":["ProxyCommand=sh"]}}`, "flags.o[0]", `"ProxyCommand=sh": the value of -o does not match`},
		{"pattern empty", "git.log", `{"flags":{"author":""}}`, "flags.author", `"": the value of --author does not match its pattern`},
		{"string starting with dash", "tool.run", `{"args":["--message=-rf"]}`, "args[0]", `"-rf": the value of --message must not start with '-'`},
		{"string starting with dash in flags", "tool.run", `{"flags":{"message":"-rf"}}`, "flags.message", `must not start with '-'`},
		{"string starting with at", "tool.run", `{"flags":{"message":"@/etc/passwd"}}`, "flags.message", `"@/etc/passwd": the value of --message must not start with '@'`},
		{"string empty", "tool.run", `{"args":["-m",""]}`, "args[1]", `"": the value of --message must not be empty`},
		{"string in array", "tool.run", `{"flags":{"tag":["ok","a|b"]}}`, "flags.tag[1]", `"a|b": the value of --tag must not contain the shell metacharacter '|'`},
		{"string value after short", "tool.run", `{"args":["-m","$(id)"]}`, "args[1]", `"$(id)": the value of --message must not contain the shell metacharacter '$'`},
		{"positional starting with dash", "tool.run", `{"args":["-"]}`, "args[0]", `"-": a positional argument must not start with '-'`},
		{"positional starting with at", "tool.run", `{"args":["@file"]}`, "args[0]", `"@file": a positional argument must not start with '@'`},
		{"positional at even after end of options", "cat.run", `{"args":["@file"]}`, "args[0]", `must not start with '@'`},
		{"positional at with pattern", "git.log", `{"args":["@{u}"]}`, "args[0]", `"@{u}": a positional argument must not start with '@'`},
		{"positional empty", "tool.run", `{"args":[""]}`, "args[0]", `"": a positional argument must not be empty`},
		{"too many positionals", "git.log", `{"args":["main","dev"]}`, "args[1]", `"dev": too many positional arguments; at most 1 are accepted`},
		{"no positionals allowed", "none.run", `{"args":["x"]}`, "args[0]", `"x": undeclared argument; this command takes no positional arguments`},
		{"positional pattern", "git.log", `{"args":["main;id"]}`, "args[0]", `"main;id": does not match the pattern for positional arguments`},
		{"positional pattern space", "git.log", `{"args":["a b"]}`, "args[0]", `does not match the pattern`},
		{"positional meta without pattern", "tool.run", `{"args":["a>b"]}`, "args[0]", `"a>b": a positional argument must not contain the shell metacharacter '>'`},
		{"stdin refused", "git.log", `{"stdin":"SECRET-STDIN"}`, "stdin", `not accepted: this command does not read standard input`},
		{"stdin over cap", "tool.run", `{"stdin":"SECRET-STDIN-0123456789"}`, "stdin", `must be at most 16 bytes`},
		{"stdin NUL", "tool.run", `{"stdin":"SECRET\u0000"}`, "stdin", `must not contain NUL`},
		{"overlong token", "tool.run", `{"args":["` + long + `"]}`, "args[0]", fmt.Sprintf("longer than %d bytes", execgate.MaxApprovalArgBytes)},
		{"overlong value in flags", "tool.run", `{"flags":{"message":"` + long + `"}}`, "flags.message", "longer than"},
		{"too many tokens", "tool.run", `{"args":[` + strings.TrimSuffix(strings.Repeat(`"-v",`, execgate.MaxApprovalArgs+1), ",") + `]}`, "args", "must hold at most 256 tokens"},
		{"argv too long", "many.run", `{"args":[` + strings.TrimSuffix(strings.Repeat(`"-v",`, execgate.MaxApprovalArgs), ",") + `]}`, "", "the call would have 257 arguments, more than 256"},
	}
	// Every shell metacharacter, in a string value and in a positional
	// without a pattern.
	for _, c := range ";&|$`<>(){}" {
		cases = append(cases,
			flagsRefusal{"meta value " + string(c), "tool.run", fmt.Sprintf(`{"flags":{"message":"a%cb"}}`, c), "flags.message", fmt.Sprintf("shell metacharacter %q", c)},
			flagsRefusal{"meta positional " + string(c), "tool.run", fmt.Sprintf(`{"args":["a%cb"]}`, c), "args[0]", fmt.Sprintf("shell metacharacter %q", c)},
		)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertRefusal(t, x, rec, tc)
			_, err := x.Run(context.Background(), tc.cmd, json.RawMessage(tc.input))
			assert.NotContains(t, err.Error(), "SECRET", "stdin repeated in a message")
			assert.Less(t, len(err.Error()), 4096, "message repeats too much of the input")
		})
	}
}

// Invariant 4 of DESIGN.md.
func TestStrictInput_FlagsRefuseControlAndBidiCharacters(t *testing.T) {
	x, rec := newFlagsGate(t)
	chars := map[string]string{ // label -> JSON escape
		"NUL": `\u0000`, "tab": `\t`, "newline": `\n`, "CR": `\r`, "ESC": `\u001b`, "DEL": `\u007f`,
		"C1 NEL": `\u0085`, "C1 CSI": `\u009b`, "LRE": `\u202a`, "RLO": `\u202e`, "LRI": `\u2066`,
		"PDI": `\u2069`, "LRM": `\u200e`, "RLM": `\u200f`, "ALM": `\u061c`, "LS": `\u2028`,
	}
	for label, c := range chars {
		// The message names the character; NUL is refused while decoding.
		var r rune
		_, err := fmt.Sscanf(strings.NewReplacer(`\t`, `\u0009`, `\n`, `\u000a`, `\r`, `\u000d`).Replace(c), `\u%04x`, &r)
		require.NoError(t, err)
		names := fmt.Sprintf("U+%04X", r)
		if r == 0 {
			names = "NUL"
		}
		for _, tc := range []flagsRefusal{
			{"positional", "tool.run", `{"args":["a` + c + `b"]}`, "args[0]", names},
			{"positional with pattern", "jq.run", `{"args":[".a` + c + `"]}`, "args[0]", names},
			{"flag token", "git.log", `{"args":["--one` + c + `line"]}`, "args[0]", names},
			{"value token", "git.log", `{"args":["--author","Ann` + c + `"]}`, "args[1]", names},
			{"glued value", "git.log", `{"args":["--author=Ann` + c + `"]}`, "args[0]", names},
			{"string value in flags", "tool.run", `{"flags":{"message":"a` + c + `"}}`, "flags.message", names},
			{"pattern value in flags", "git.log", `{"flags":{"author":"Ann` + c + `"}}`, "flags.author", names},
			{"enum value in flags", "git.log", `{"flags":{"format":"short` + c + `"}}`, "flags.format", ""},
			{"stdin is data", "tool.run", `{"stdin":"` + c + `"}`, "", ""},
			{"key in flags", "git.log", `{"flags":{"one` + c + `line":true}}`, "", ""},
			{"top-level key", "git.log", `{"ar` + c + `gs":[]}`, "", ""},
		} {
			t.Run(label+"/"+tc.name, func(t *testing.T) {
				switch tc.name {
				case "stdin is data":
					// Control characters are data on stdin; NUL is not.
					if r == 0 {
						assertRefusal(t, x, rec, flagsRefusal{cmd: tc.cmd, input: tc.input, field: "stdin", contains: "NUL"})
					} else {
						_, stdin := runFlags(t, x, rec, tc.cmd, tc.input)
						assert.Equal(t, string(r), string(stdin))
					}
				case "key in flags", "top-level key":
					// A malformed key is refused without being repeated raw.
					ve := refuseFlags(t, x, rec, tc.cmd, []byte(tc.input))
					require.Len(t, ve.Issues, 1)
				default:
					assertRefusal(t, x, rec, tc)
				}
			})
		}
	}
}

// Invariant 4 of DESIGN.md.
func TestStrictInput_FlagsDecodeStrictly(t *testing.T) {
	x, rec := newFlagsGate(t)
	for _, tc := range []flagsRefusal{
		{"unknown member", "git.log", `{"arg":[]}`, "arg", "unknown field; allowed: args, flags, stdin"},
		{"case-folded member", "git.log", `{"Args":["main"]}`, "args", "must be spelled exactly args (field names are case-sensitive)"},
		{"case-folded flags", "git.log", `{"FLAGS":{}}`, "flags", "must be spelled exactly flags"},
		{"duplicate member", "git.log", `{"args":[],"args":["main"]}`, "args", "appears more than once"},
		{"duplicate flag key", "git.log", `{"flags":{"oneline":true,"oneline":false}}`, "flags.oneline", "appears more than once"},
		{"duplicate key in a stray object", "git.log", `{"flags":{"author":{"a":1,"a":2}}}`, "flags.author[a]", "appears more than once"},
		{"trailing object", "git.log", `{}{}`, "", "data after the JSON object"},
		{"trailing garbage", "git.log", `{"args":[]} x`, "", "data after the JSON object"},
		{"truncated", "git.log", `{"args":["main"`, "args", "invalid JSON"},
		{"not JSON", "git.log", `args=main`, "", "invalid JSON"},
		{"top-level array", "git.log", `["main"]`, "", "input must be a JSON object"},
		{"top-level string", "git.log", `"main"`, "", "input must be a JSON object"},
		{"args not array", "git.log", `{"args":"main"}`, "args", "must be an array"},
		{"args item not string", "git.log", `{"args":["main",5]}`, "args[1]", "must be a string"},
		{"flags not object", "git.log", `{"flags":["oneline"]}`, "flags", "must be an object"},
		{"stdin not a string", "jq.run", `{"stdin":1}`, "stdin", "must be a string"},
		{"boolean as string", "git.log", `{"flags":{"oneline":"true"}}`, "flags.oneline", "must be true or false"},
		{"boolean as number", "git.log", `{"flags":{"oneline":1}}`, "flags.oneline", "must be true or false"},
		{"boolean as null", "git.log", `{"flags":{"oneline":null}}`, "flags.oneline", "must be true or false"},
		{"value as array without repeat", "git.log", `{"flags":{"format":["short"]}}`, "flags.format", "must be a string"},
		{"value as object", "git.log", `{"flags":{"format":{}}}`, "flags.format", "must be a string"},
		{"repeat value not array", "ssh.run", `{"flags":{"o":"BatchMode=yes"}}`, "flags.o", "must be an array of at most 2 strings"},
		{"repeat element not string", "ssh.run", `{"flags":{"o":[["BatchMode=yes"]]}}`, "flags.o[0]", "must be a string"},
		{"value null", "git.log", `{"flags":{"author":null}}`, "flags.author", "must be a string"},
		{"nested too deeply", "git.log", `{"flags":{"author":[[[1]]]}}`, "flags.author[0][0]", "nesting is deeper than"},
		{"invalid UTF-8", "git.log", "{\"args\":[\"ma\xffin\"]}", "args[0]", "must be valid UTF-8"},
		{"invalid UTF-8 in flags", "git.log", "{\"flags\":{\"author\":\"\xc3\"}}", "flags.author", "must be valid UTF-8"},
		{"lone high surrogate", "git.log", `{"args":["a\ud800b"]}`, "args[0]", "unpaired UTF-16 surrogate"},
		{"lone low surrogate", "git.log", `{"flags":{"author":"\udc00"}}`, "flags.author", "unpaired UTF-16 surrogate"},
		{"high surrogate then other escape", "git.log", `{"args":["\ud800\u0041"]}`, "args[0]", "unpaired UTF-16 surrogate"},
		{"over the input cap", "git.log", `{"args":["` + strings.Repeat("a", execgate.MaxInputSize) + `"]}`, "", "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) { assertRefusal(t, x, rec, tc) })
	}

	// A null member counts as absent.
	args, _ := runFlags(t, x, rec, "git.log", `{"args":null,"flags":null,"stdin":null}`)
	assert.Equal(t, []string{"log", "--"}, args)

	// A surrogate pair is a character, not a lone surrogate; an escaped
	// backslash before "u" is not an escape.
	args, _ = runFlags(t, x, rec, "tool.run", `{"args":["\ud83d\ude00","a\\ud800"]}`)
	assert.Equal(t, []string{"--no-pager", "run", "😀", `a\ud800`}, args)
}

// Invariant 4 of DESIGN.md.
func TestStrictInput_FlagsCollectIssuesInStableOrder(t *testing.T) {
	x, rec := newFlagsGate(t)
	input := []byte(`{"stdin":"x","args":["--force","-n5","main","dev"],"flags":{"format":"full","zz":1,"bogus":true}}`)
	ve := refuseFlags(t, x, rec, "git.log", input)
	var fields []string
	for _, is := range ve.Issues {
		fields = append(fields, is.Field)
	}
	assert.Equal(t, []string{"flags.bogus", "flags.zz", "flags.format", "args[0]", "args[1]", "args[3]", "stdin"}, fields)

	// The same input with its members in another order lists the same
	// issues in the same order.
	again := refuseFlags(t, x, rec, "git.log", []byte(`{"flags":{"bogus":true,"format":"full","zz":1},"args":["--force","-n5","main","dev"],"stdin":"x"}`))
	assert.Equal(t, ve.Issues, again.Issues)

	// Structural problems are reported alone, in input order.
	ve = refuseFlags(t, x, rec, "git.log", []byte(`{"extra":1,"args":["--force"],"Flags":{}}`))
	assert.Equal(t, []execgate.Issue{
		{Field: "extra", Message: "unknown field; allowed: args, flags, stdin"},
		{Field: "flags", Message: "must be spelled exactly flags (field names are case-sensitive)"},
	}, ve.Issues)

	// Issues are bounded.
	many := `{"args":[` + strings.TrimSuffix(strings.Repeat(`"--force",`, 200), ",") + `]}`
	ve = refuseFlags(t, x, rec, "git.log", []byte(many))
	assert.LessOrEqual(t, len(ve.Issues), 33)
	assert.Contains(t, ve.Issues[len(ve.Issues)-1].Message, "more issues")
}

// misuseValue is a value no kind, pattern or positional in these specs
// accepts.
const misuseValue = "$(id)"

// validSample returns a value f accepts.
func validSample(f execgate.Flag) string {
	switch f.Value {
	case execgate.ValueInt:
		if f.Min != nil {
			return strconv.FormatInt(*f.Min, 10)
		}
		return "1"
	case execgate.ValueEnum:
		return f.Enum[0]
	case execgate.ValuePattern:
		return patternSamples[f.Pattern][0]
	default:
		return "ok"
	}
}

// patternSamples are values each test pattern accepts.
var patternSamples = map[string][]string{
	`^[A-Za-z .@-]{1,64}$`:                             {"Ann Lee", "bob@example.org", "x"},
	`^[A-Za-z0-9*?._-]{1,64}$`:                         {"*.go", "README.md", "a?c"},
	`^(BatchMode|ConnectTimeout)=[A-Za-z0-9]{1,16}$`:   {"BatchMode=yes", "ConnectTimeout=10"},
	`^[A-Za-z0-9._/-]{1,100}$`:                         {"main", "v1.2.3", "origin/main"},
	`^/[A-Za-z0-9._/-]*$`:                              {"/", "/srv/www"},
	`^[a-z0-9.-]{1,253}$`:                              {"host.example", "10.0.0.1"},
	`^[.a-z\[\]0-9 |]{1,200}$`:                         {".", ".a | .b"},
	`^(?:BatchMode|ConnectTimeout)=[A-Za-z0-9]{1,16}$`: {"BatchMode=no"},
}

// singleSpellings are the one-dash spellings (without the dash) a spec
// declares: Shorts, one-character names and single-dash names.
func singleSpellings(spec execgate.FlagSpec) map[string]bool {
	m := map[string]bool{}
	for _, f := range spec.Flags {
		if f.Short != "" {
			m[f.Short] = true
		}
		if f.SingleDash || len(f.Name) == 1 {
			m[f.Name] = true
		}
	}
	return m
}

func canonical(f execgate.Flag) string {
	if f.SingleDash || len(f.Name) == 1 {
		return "-" + f.Name
	}
	return "--" + f.Name
}

// emitted is how a value flag and its value appear in the argv:
// "--name=value" for a two-dash spelling, else the flag and then the value.
func emitted(f execgate.Flag, value string) []string {
	c := canonical(f)
	if strings.HasPrefix(c, "--") {
		return []string{c + "=" + value}
	}
	return []string{c, value}
}

// Invariant 4 of DESIGN.md.
func TestStrictInput_FlagsSpellingGeneratorRefusesEveryMisspelling(t *testing.T) {
	x, rec := newFlagsGate(t)
	undeclared := []string{"force", "exec", "output", "upload-pack", "config", "x", "e", "C", "P", "1"}
	total := 0
	for _, cmd := range []string{"git.log", "find.run", "ssh.run", "tool.run", "jq.run"} {
		spec := flagsSpecs()[cmd]
		single := singleSpellings(spec)
		declared := map[string]bool{}
		for _, f := range spec.Flags {
			declared[f.Name] = true
			declared[f.Short] = true
		}
		var attempts [][]string
		four := func(long, short, v string) {
			if long != "" {
				attempts = append(attempts, []string{long + "=" + v}, []string{long, v})
			}
			if short != "" {
				attempts = append(attempts, []string{short + v}, []string{short, v})
			}
		}
		// Every undeclared flag, in every spelling, with any value.
		for _, f := range undeclared {
			if declared[f] {
				continue
			}
			for _, v := range []string{"v", "1", misuseValue} {
				four("--"+f, "-"+f, v)
			}
		}
		for _, f := range spec.Flags {
			short := ""
			if f.Short != "" {
				short = "-" + f.Short
			} else if len(f.Name) == 1 {
				short = "-" + f.Name
			}
			long := canonical(f)
			if len(f.Name) == 1 {
				long = ""
			}
			// Every declared flag misused with a value nothing accepts.
			four(long, short, misuseValue)
			// A value glued where it is not declared, even a valid one.
			if f.Value != execgate.ValueNone && !f.Glued && short != "" {
				attempts = append(attempts, []string{short + validSample(f)})
			}
			// A boolean given any value in the "=" form.
			if f.Value == execgate.ValueNone {
				if long != "" {
					attempts = append(attempts, []string{long + "=true"}, []string{long + "="})
				}
			}
			// The wrong number of dashes, even with a valid value.
			if len(f.Name) > 1 {
				wrong := "--" + f.Name
				if !f.SingleDash {
					wrong = "-" + f.Name
				}
				if f.Value == execgate.ValueNone {
					attempts = append(attempts, []string{wrong})
				} else {
					attempts = append(attempts, []string{wrong, validSample(f)}, []string{wrong + "=" + validSample(f)})
				}
			}
			// Every abbreviation of every declared long flag.
			for k := 1; k < len(f.Name); k++ {
				pre := f.Name[:k]
				dash := "--"
				if f.SingleDash {
					dash = "-"
					if single[pre[:1]] {
						continue // -n… would be that short flag
					}
				} else if declared[pre] && !single[pre] {
					continue
				}
				ab := dash + pre
				if f.Value == execgate.ValueNone {
					attempts = append(attempts, []string{ab})
				} else {
					attempts = append(attempts, []string{ab, validSample(f)}, []string{ab + "=" + validSample(f)})
				}
			}
		}
		for _, a := range attempts {
			in, err := json.Marshal(map[string]any{"args": a})
			require.NoError(t, err)
			ve := refuseFlags(t, x, rec, cmd, in)
			named := false
			for _, is := range ve.Issues {
				if strings.HasPrefix(is.Field, "args[") {
					named = true
				}
			}
			assert.True(t, named, "%s %q: no issue names an args token: %+v", cmd, a, ve.Issues)
		}
		total += len(attempts)
	}
	assert.Greater(t, total, 300, "the generator produced too few attempts")
}

func TestFlags_Deterministic(t *testing.T) {
	x, rec := newFlagsGate(t)
	inputs := []string{
		`{"flags":{"oneline":true,"max-count":5,"format":"short","author":"Ann"},"args":["main"]}`,
		`{"flags":{"author":"Ann","format":"short","max-count":5,"oneline":true},"args":["main"]}`,
		`{"args":["main"],"flags":{"format":"short","oneline":true,"author":"Ann","max-count":5}}`,
	}
	first, _ := runFlags(t, x, rec, "git.log", inputs[0])
	assert.Equal(t, []string{"log", "--max-count=5", "--oneline", "--format=short", "--author=Ann", "--", "main"}, first)
	for _, in := range inputs {
		for range 2 {
			got, _ := runFlags(t, x, rec, "git.log", in)
			assert.Equal(t, first, got, "input %s", in)
		}
	}
	// The proposal digest, which binds the argv, is the same too.
	p := x.Proposer()
	a, err := p.Check("git.log", json.RawMessage(inputs[0]))
	require.NoError(t, err)
	b, err := p.Check("git.log", json.RawMessage(inputs[2]))
	require.NoError(t, err)
	assert.Equal(t, a.Digest, b.Digest)
}

// flagModel is the test's own model of one spec: what each spelling means
// and how each flag is emitted.
type flagModel struct {
	spec  execgate.FlagSpec
	canon map[string]execgate.Flag // canonical spelling -> flag
}

func newFlagModel(spec execgate.FlagSpec) flagModel {
	m := flagModel{spec: spec, canon: map[string]execgate.Flag{}}
	for _, f := range spec.Flags {
		m.canon[canonical(f)] = f
	}
	return m
}

// randomValue returns a valid value of f: the JSON form for "flags", the
// token form for "args", and the canonical form the argv must carry.
func randomValue(rng *rand.Rand, f execgate.Flag) (jsonValue any, token, canon string) {
	switch f.Value {
	case execgate.ValueInt:
		lo, hi := int64(-1000), int64(1000)
		if f.Min != nil {
			lo = *f.Min
		}
		if f.Max != nil {
			hi = *f.Max
		}
		n := lo + rng.Int64N(hi-lo+1)
		token = strconv.FormatInt(n, 10)
		if n >= 0 && rng.IntN(4) == 0 {
			token = fmt.Sprintf("%04d", n) // leading zeros are normalized
		}
		return n, token, strconv.FormatInt(n, 10)
	case execgate.ValueEnum:
		v := f.Enum[rng.IntN(len(f.Enum))]
		return v, v, v
	case execgate.ValuePattern:
		s := patternSamples[f.Pattern]
		v := s[rng.IntN(len(s))]
		return v, v, v
	default:
		s := []string{"hello", "a b", "x=y", "日本", "dot.ted", "100%"}
		v := s[rng.IntN(len(s))]
		return v, v, v
	}
}

// randomSpelling returns tokens for one occurrence of f in "args".
func randomSpelling(rng *rand.Rand, f execgate.Flag, token string) []string {
	var forms [][]string
	c := canonical(f)
	one := ""
	if f.Short != "" {
		one = "-" + f.Short
	} else if len(f.Name) == 1 {
		one = c
	}
	if f.Value == execgate.ValueNone {
		forms = append(forms, []string{c})
		if f.Short != "" {
			forms = append(forms, []string{one})
		}
	} else {
		forms = append(forms, []string{c, token})
		if len(f.Name) > 1 {
			forms = append(forms, []string{c + "=" + token})
		}
		if f.Short != "" {
			forms = append(forms, []string{one, token})
		}
		if f.Glued && one != "" {
			forms = append(forms, []string{one + token})
		}
	}
	return forms[rng.IntN(len(forms))]
}

// Invariant 4 of DESIGN.md.
func TestStrictInput_FlagsArgvHoldsOnlyDeclaredFlags(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2026))
	for _, cmd := range []string{"git.log", "find.run", "ssh.run", "tool.run", "jq.run"} {
		spec := flagsSpecs()[cmd]
		schema := execgate.Flags(spec)
		model := newFlagModel(spec)
		alone := map[string]execgate.ArgsSchema{} // each flag on its own
		for _, f := range spec.Flags {
			alone[f.Name] = execgate.Flags(execgate.FlagSpec{Flags: []execgate.Flag{f}})
		}
		for range 400 {
			counts := map[string]int{}
			var want []string
			want = append(want, spec.Leading...)
			flagsObj := map[string]any{}
			for _, f := range spec.Flags {
				if rng.IntN(3) != 0 {
					continue
				}
				switch {
				case f.Value == execgate.ValueNone:
					on := rng.IntN(2) == 0
					flagsObj[f.Name] = on
					if on {
						counts[f.Name]++
						want = append(want, canonical(f))
					}
				case max(f.Repeat, 1) == 1:
					j, _, c := randomValue(rng, f)
					flagsObj[f.Name] = j
					counts[f.Name]++
					want = append(want, emitted(f, c)...)
				default:
					arr := []any{}
					for range rng.IntN(f.Repeat + 1) {
						j, _, c := randomValue(rng, f)
						arr = append(arr, j)
						counts[f.Name]++
						want = append(want, emitted(f, c)...)
					}
					flagsObj[f.Name] = arr
				}
			}
			// Occurrences in args, each one or two tokens, with
			// positionals placed between them at random.
			var groups [][]string
			for range rng.IntN(5) {
				f := spec.Flags[rng.IntN(len(spec.Flags))]
				if counts[f.Name] >= max(f.Repeat, 1) {
					continue
				}
				_, tok, c := randomValue(rng, f)
				groups = append(groups, randomSpelling(rng, f, tok))
				counts[f.Name]++
				if f.Value == execgate.ValueNone {
					want = append(want, canonical(f))
				} else {
					want = append(want, emitted(f, c)...)
				}
			}
			if spec.EndOfOptions {
				want = append(want, "--")
			}
			if pp := spec.Positionals.Pattern; pp != "" {
				positional := map[int]bool{} // index in groups
				for range rng.IntN(spec.Positionals.Max + 1) {
					p := patternSamples[pp][rng.IntN(len(patternSamples[pp]))]
					at := rng.IntN(len(groups) + 1)
					groups = slices.Insert(groups, at, []string{p})
					moved := map[int]bool{at: true}
					for k := range positional {
						if k >= at {
							k++
						}
						moved[k] = true
					}
					positional = moved
				}
				for k, g := range groups {
					if positional[k] {
						want = append(want, g[0])
					}
				}
			}
			in := map[string]any{}
			if len(flagsObj) > 0 || rng.IntN(2) == 0 {
				in["flags"] = flagsObj
			}
			if len(groups) > 0 || rng.IntN(2) == 0 {
				in["args"] = append([]string{}, slices.Concat(groups...)...)
			}
			raw, err := json.Marshal(in)
			require.NoError(t, err)

			argv, err := schema.Parse(raw)
			require.NoError(t, err, "%s %s", cmd, raw)
			assert.Equal(t, want, argv.Args, "%s %s", cmd, raw)

			// Independently of the model: after the leading arguments,
			// every token that looks like a flag is the canonical
			// spelling of a declared flag, every value follows its flag
			// and is one that flag accepts, and nothing after the flags
			// looks like a flag.
			require.True(t, slices.Equal(spec.Leading, argv.Args[:len(spec.Leading)]), "%q", argv.Args)
			rest := argv.Args[len(spec.Leading):]
			i := 0
			for i < len(rest) && len(rest[i]) > 1 && rest[i][0] == '-' && rest[i] != "--" {
				tok, value, glued := rest[i], "", false
				if strings.HasPrefix(tok, "--") {
					tok, value, glued = strings.Cut(tok, "=")
				}
				f, ok := model.canon[tok]
				require.True(t, ok, "%s: undeclared token %q in %q", cmd, rest[i], argv.Args)
				i++
				if f.Value != execgate.ValueNone {
					if !glued {
						require.Less(t, i, len(rest), "%s: %s has no value in %q", cmd, canonical(f), argv.Args)
						value = rest[i]
						i++
					}
					one, err := json.Marshal(map[string]any{"args": []string{canonical(f) + "=" + value}})
					if !strings.HasPrefix(canonical(f), "--") {
						one, err = json.Marshal(map[string]any{"args": []string{canonical(f), value}})
					}
					require.NoError(t, err)
					_, err = alone[f.Name].Parse(one)
					assert.NoError(t, err, "%s: %q after %s is not a value it accepts", cmd, value, canonical(f))
				} else {
					require.False(t, glued, "%s: a boolean flag with a value in %q", cmd, argv.Args)
				}
			}
			if i < len(rest) && rest[i] == "--" {
				assert.True(t, spec.EndOfOptions)
				i++
			}
			for _, p := range rest[i:] {
				assert.False(t, len(p) > 1 && p[0] == '-', "%s: flag-like positional %q in %q", cmd, p, argv.Args)
			}
		}
	}
}

func TestFlags_JSONSchemaGolden(t *testing.T) {
	got := execgate.Flags(gitLogSpec()).JSONSchema()
	require.True(t, json.Valid(got), "%s", got)
	assert.Equal(t, string(got), string(execgate.Flags(gitLogSpec()).JSONSchema()), "bytes differ between two builds")

	golden := filepath.Join("testdata", "schema", "flags_gitlog.json")
	// The -update flag is defined by the package's internal tests, which
	// share this test binary.
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
		var pretty bytes.Buffer
		require.NoError(t, json.Indent(&pretty, got, "", "  "))
		pretty.WriteByte('\n')
		require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
		require.NoError(t, os.WriteFile(golden, pretty.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test -run TestFlags_JSONSchemaGolden -update")
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, want))
	assert.Equal(t, compact.String(), string(got))

	// The shape the issue asks for.
	var s struct {
		Type       string `json:"type"`
		Additional bool   `json:"additionalProperties"`
		Properties struct {
			Args struct {
				Type     string `json:"type"`
				MaxItems int    `json:"maxItems"`
			} `json:"args"`
			Flags struct {
				Additional bool                       `json:"additionalProperties"`
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"flags"`
			Stdin json.RawMessage `json:"stdin"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(got, &s))
	assert.Equal(t, "object", s.Type)
	assert.False(t, s.Additional)
	assert.Equal(t, execgate.MaxApprovalArgs, s.Properties.Args.MaxItems)
	assert.False(t, s.Properties.Flags.Additional)
	assert.Nil(t, s.Properties.Stdin, "stdin is described only when the command reads it")
	assert.JSONEq(t, `{"type":"integer","description":"Emitted as --max-count N.","minimum":1,"maximum":500}`, string(s.Properties.Flags.Properties["max-count"]))
	assert.JSONEq(t, `{"type":"boolean","description":"true adds --oneline; false leaves it out."}`, string(s.Properties.Flags.Properties["oneline"]))
	assert.JSONEq(t, `{"type":"string","description":"Emitted as --format VALUE.","enum":["oneline","short","medium"]}`, string(s.Properties.Flags.Properties["format"]))
	tokenPattern, err := json.Marshal("^[^" + inputrules.SchemaClass() + "]*$")
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"string","description":"Emitted as --author VALUE.","pattern":"^[A-Za-z .@-]{1,64}$","allOf":[{"pattern":`+string(tokenPattern)+`}]}`, string(s.Properties.Flags.Properties["author"]))
}

func TestFlags_JSONSchemaDescribesStdinRepeatAndStrings(t *testing.T) {
	var s struct {
		Properties struct {
			Flags struct {
				Properties map[string]map[string]any `json:"properties"`
			} `json:"flags"`
			Args  map[string]any `json:"args"`
			Stdin map[string]any `json:"stdin"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(execgate.Flags(toolSpec()).JSONSchema(), &s))
	assert.Equal(t, map[string]any{"type": "string", "description": "Standard input for the command, at most 16 bytes of UTF-8, without NUL.", "maxLength": 16.0}, s.Properties.Stdin)
	tag := s.Properties.Flags.Properties["tag"]
	assert.Equal(t, "array", tag["type"])
	assert.Equal(t, 3.0, tag["maxItems"])
	assert.Contains(t, s.Properties.Args["description"], "--level N | --level=N | -l N | -lN")
	assert.Contains(t, s.Properties.Args["description"], "--quiet | -q")
	assert.NotContains(t, s.Properties.Args["description"], "-mVALUE", "-m does not take glued values")

	// The pattern a string value is described with agrees with Parse.
	// JSON Schema patterns are ECMA-262; rewrite \uXXXX for Go's RE2.
	pat := s.Properties.Flags.Properties["message"]["pattern"].(string)
	re := regexp.MustCompile(regexp.MustCompile(`\\u([0-9a-f]{4})`).ReplaceAllString(pat, `\x{$1}`))
	schema := execgate.Flags(toolSpec())
	for _, v := range []string{"ok", "a b", "-x", "@x", "x@", "a;b", "a$", "`", "()", "{}", "<", ">", "&", "|", "", "a\tb", "a\u202eb", "a\u0085", "日本", "x-y", "a=b"} {
		in, _ := json.Marshal(map[string]any{"flags": map[string]any{"message": v}})
		_, err := schema.Parse(in)
		assert.Equal(t, err == nil, re.MatchString(v), "value %q: Parse and the schema pattern disagree", v)
	}
}

func TestFlags_JSONSchemaAnchorsUnanchoredPatterns(t *testing.T) {
	spec := execgate.FlagSpec{Flags: []execgate.Flag{
		{Name: "a", Value: execgate.ValuePattern, Pattern: `[a-z]+`},
		{Name: "b", Value: execgate.ValuePattern, Pattern: `^x$|^y$`},
	}}
	var s struct {
		Properties struct {
			Flags struct {
				Properties map[string]struct {
					Pattern string `json:"pattern"`
				} `json:"properties"`
			} `json:"flags"`
		} `json:"properties"`
	}
	schema := execgate.Flags(spec)
	require.NoError(t, json.Unmarshal(schema.JSONSchema(), &s))
	assert.Equal(t, `^(?:[a-z]+)$`, s.Properties.Flags.Properties["a"].Pattern)
	assert.Equal(t, `^(?:^x$|^y$)$`, s.Properties.Flags.Properties["b"].Pattern)

	// Parse matches whole values whatever the pattern's anchors.
	for v, ok := range map[string]bool{"abc": true, "abc1": false, "1abc": false} {
		_, err := schema.Parse(json.RawMessage(`{"flags":{"a":"` + v + `"}}`))
		assert.Equal(t, ok, err == nil, v)
	}
}

func TestFlags_MisconfiguredSpecsAreRefusedByNewAllowlist(t *testing.T) {
	str, in, en, pat := execgate.ValueString, execgate.ValueInt, execgate.ValueEnum, execgate.ValuePattern
	for _, tc := range []struct {
		name     string
		spec     execgate.FlagSpec
		contains string
	}{
		{"empty name", execgate.FlagSpec{Flags: []execgate.Flag{{}}}, "Flags[0]: Name is required"},
		{"duplicate name", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "a"}, {Name: "a"}}}, `flag "a" is declared twice`},
		{"name with space", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "max count"}}}, "must match [A-Za-z0-9][A-Za-z0-9_-]*"},
		{"name with dashes", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "--max"}}}, "must match"},
		{"name with equals", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "a=b"}}}, "must match"},
		{"name too long", execgate.FlagSpec{Flags: []execgate.Flag{{Name: strings.Repeat("a", 65)}}}, "longer than 64 bytes"},
		{"short too long", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "all", Short: "ab"}}}, `Short "ab" must be one ASCII letter or digit`},
		{"short punctuation", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "all", Short: "-"}}}, "must be one ASCII letter or digit"},
		{"short non-ASCII", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "all", Short: "é"}}}, "must be one ASCII letter or digit"},
		{"duplicate short", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "all", Short: "a"}, {Name: "any", Short: "a"}}}, "spelling -a is already used by flag \"all\""},
		{"short equals one-character name", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "n"}, {Name: "number", Short: "n"}}}, "spelling -n is already used"},
		{"short repeats own name", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "n", Short: "n"}}}, "Short repeats the one-character Name"},
		{"unknown kind", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "a", Value: 99}}}, "unknown Value kind 99"},
		{"negative kind", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "a", Value: -1}}}, "unknown Value kind -1"},
		{"negative repeat", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "a", Repeat: -1}}}, "Repeat must not be negative"},
		{"bounds on string", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "a", Value: str, Min: new(int64(1))}}}, "Min and Max apply only to int values, not string"},
		{"bounds on boolean", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "a", Max: new(int64(1))}}}, "not none"},
		{"min over max", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "a", Value: in, Min: new(int64(5)), Max: new(int64(1))}}}, "Min 5 is greater than Max 1"},
		{"enum missing", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "a", Value: en}}}, "Enum is required"},
		{"enum on int", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "a", Value: in, Enum: []string{"1"}}}}, "Enum applies only to enum values"},
		{"enum duplicate", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "a", Value: en, Enum: []string{"x", "x"}}}}, `Enum value "x" is listed twice`},
		{"enum control", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "a", Value: en, Enum: []string{"x\n"}}}}, "contains the control character U+000A"},
		{"pattern missing", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "a", Value: pat}}}, "Pattern is required"},
		{"pattern on string", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "a", Value: str, Pattern: "x"}}}, "Pattern applies only to pattern values"},
		{"pattern does not compile", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "a", Value: pat, Pattern: "(x"}}}, "Pattern: error parsing regexp"},
		{"pattern with backreference", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "a", Value: pat, Pattern: `(a)\1`}}}, "Pattern: error parsing regexp"},
		{"glued boolean", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "a", Glued: true}}}, "Glued needs a flag that takes a value"},
		{"glued without one-character spelling", execgate.FlagSpec{Flags: []execgate.Flag{{Name: "level", Value: in, Glued: true}}}, "Glued needs a one-character spelling"},
		{"positionals negative", execgate.FlagSpec{Positionals: execgate.Positionals{Max: -1}}, "Positionals.Max must not be negative"},
		{"positionals pattern without max", execgate.FlagSpec{Positionals: execgate.Positionals{Pattern: "x"}}, "Positionals.Max is 0"},
		{"positionals pattern does not compile", execgate.FlagSpec{Positionals: execgate.Positionals{Max: 1, Pattern: "[x"}}, "Positionals.Pattern: error parsing regexp"},
		{"stdin negative", execgate.FlagSpec{Stdin: &execgate.StdinSpec{Max: -1}}, "Stdin.Max must not be negative"},
		{"leading NUL", execgate.FlagSpec{Leading: []string{"log", "a\x00"}}, `Leading[1] "a\x00": contains NUL`},
		{"leading control", execgate.FlagSpec{Leading: []string{"a\nb"}}, "Leading[0]"},
		{"leading bidi", execgate.FlagSpec{Leading: []string{"a\u202eb"}}, "formatting character U+202E"},
		{"leading too long", execgate.FlagSpec{Leading: make([]string, execgate.MaxApprovalArgs)}, "Leading holds 256 arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := execgate.NewAllowlist(execgate.CommandSpec{Name: "bad", Command: flagsCommand, Args: execgate.Flags(tc.spec)})
			var ce *execgate.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "bad", ce.Spec)
			assert.Equal(t, "Args", ce.Field)
			assert.Contains(t, ce.Message, tc.contains)

			// Used without an Allowlist, the schema refuses every input.
			s := execgate.Flags(tc.spec)
			_, err = s.Parse(nil)
			var ve *execgate.ValidationError
			assert.ErrorAs(t, err, &ve)
			assert.True(t, json.Valid(s.JSONSchema()))
		})
	}

	// Leading arguments may be flags; one-character names may glue.
	_, err := execgate.NewAllowlist(execgate.CommandSpec{Name: "ok", Command: flagsCommand, Args: execgate.Flags(execgate.FlagSpec{
		Leading: []string{"--no-pager", "-c", "core.hooksPath=/dev/null"},
		Flags:   []execgate.Flag{{Name: "p", Value: in, Glued: true}, {Name: "name", SingleDash: true, Short: "N", Value: str}},
	})})
	assert.NoError(t, err)
}

func TestFlags_CopiesItsSpec(t *testing.T) {
	spec := gitLogSpec()
	schema := execgate.Flags(spec)
	before := string(schema.JSONSchema())
	spec.Leading[0] = "push"
	spec.Flags[2].Enum[0] = "evil"
	*spec.Flags[0].Max = 1 << 40
	spec.Flags = append(spec.Flags, execgate.Flag{Name: "force"})

	argv, err := schema.Parse(json.RawMessage(`{"flags":{"format":"oneline","max-count":500}}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"log", "--max-count=500", "--format=oneline", "--"}, argv.Args)
	_, err = schema.Parse(json.RawMessage(`{"flags":{"format":"evil"}}`))
	assert.Error(t, err)
	assert.Equal(t, before, string(schema.JSONSchema()))
}

func TestFlags_ParseDoesNotRetainOrModifyInput(t *testing.T) {
	schema := execgate.Flags(toolSpec())
	in := []byte(`{"args":["-m","hello"],"stdin":"abc"}`)
	orig := slices.Clone(in)
	argv, err := schema.Parse(in)
	require.NoError(t, err)
	assert.Equal(t, orig, in)
	for i := range in {
		in[i] = ' '
	}
	assert.Equal(t, []string{"--no-pager", "run", "--message=hello"}, argv.Args)
	assert.Equal(t, "abc", string(argv.Stdin))
}

func TestFlags_ConcurrentParse(t *testing.T) {
	schema := execgate.Flags(gitLogSpec())
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 50 {
				in := fmt.Sprintf(`{"flags":{"max-count":%d},"args":["main"]}`, 1+(i*50+j)%500)
				argv, err := schema.Parse(json.RawMessage(in))
				if assert.NoError(t, err) {
					assert.True(t, strings.HasPrefix(argv.Args[1], "--max-count="), "%q", argv.Args)
				}
				_ = schema.JSONSchema()
			}
		})
	}
	wg.Wait()
}

func TestValueKind_StringAndParse(t *testing.T) {
	for _, k := range []execgate.ValueKind{execgate.ValueNone, execgate.ValueString, execgate.ValueInt, execgate.ValueEnum, execgate.ValuePattern} {
		got, err := execgate.ParseValueKind(k.String())
		require.NoError(t, err)
		assert.Equal(t, k, got)
	}
	assert.Equal(t, []string{"none", "string", "int", "enum", "pattern"}, []string{
		execgate.ValueNone.String(), execgate.ValueString.String(), execgate.ValueInt.String(),
		execgate.ValueEnum.String(), execgate.ValuePattern.String(),
	})
	assert.Equal(t, "ValueKind(7)", execgate.ValueKind(7).String())
	for _, s := range []string{"", "None", "bool", "integer"} {
		_, err := execgate.ParseValueKind(s)
		assert.Error(t, err, s)
	}
}

func TestFlags_ValidationErrorMatchesWithErrorsAs(t *testing.T) {
	_, err := execgate.Flags(gitLogSpec()).Parse(json.RawMessage(`{"args":["--force"]}`))
	var ve *execgate.ValidationError
	require.True(t, errors.As(err, &ve))
	assert.Equal(t, []execgate.Issue{{Field: "args[0]", Message: `"--force": undeclared flag`}}, ve.Issues)
}

func TestFlags_LongTokensAreShortenedInMessages(t *testing.T) {
	tok := "--" + strings.Repeat("é", 100)
	_, err := execgate.Flags(gitLogSpec()).Parse(json.RawMessage(`{"args":["` + tok + `"]}`))
	var ve *execgate.ValidationError
	require.ErrorAs(t, err, &ve)
	msg := ve.Issues[0].Message
	assert.Less(t, len(msg), 100)
	unq, qerr := strconv.QuotedPrefix(msg)
	require.NoError(t, qerr)
	s, _ := strconv.Unquote(unq)
	assert.True(t, strings.HasPrefix(tok, s), "the quoted part is a prefix of the token")
	assert.True(t, len(s) <= 64 && len(s) >= 60, "cut at a character boundary near 64 bytes: %d", len(s))
	assert.Contains(t, msg, `"...: undeclared flag`)
}

func TestFlags_SeparateValues(t *testing.T) {
	a, err := execgate.NewAllowlist(execgate.CommandSpec{
		Name: "curl.get", Command: "/bin/echo", Dir: "/",
		Args: execgate.Flags(execgate.FlagSpec{Flags: []execgate.Flag{
			{Name: "max-time", Value: execgate.ValueInt, Separate: true},
			{Name: "header", Value: execgate.ValuePattern, Pattern: `^[-A-Za-z: ]{1,64}$`, Separate: true},
			{Name: "format", Value: execgate.ValueString},
		}}),
	})
	require.NoError(t, err)
	p := execgate.NewProposer(a)
	for _, c := range []struct {
		name, input string
		argv        []string // nil: refused
	}{
		{"a separate value is emitted as the next argument, the form curl and jq read",
			`{"flags":{"max-time":5}}`, []string{"--max-time", "5"}},
		{"a flag without Separate keeps the one-element form",
			`{"flags":{"format":"json"}}`, []string{"--format=json"}},
		{"given as --opt=value in args, a separate flag is still emitted separately",
			`{"args":["--max-time=7"]}`, []string{"--max-time", "7"}},
		{"a separate value that starts with '-' is refused, though its pattern allows it: it would be read as a flag",
			`{"flags":{"header":"--output x"}}`, nil},
		{"a negative separate int is refused for the same reason",
			`{"flags":{"max-time":-1}}`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			prop, err := p.Check("curl.get", json.RawMessage(c.input))
			if c.argv == nil {
				var ve *execgate.ValidationError
				require.ErrorAs(t, err, &ve)
				assert.Contains(t, err.Error(), "must not start with '-'")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.argv, prop.Args)
		})
	}
	_, err = execgate.NewAllowlist(execgate.CommandSpec{Name: "x", Command: "/bin/echo", Dir: "/",
		Args: execgate.Flags(execgate.FlagSpec{Flags: []execgate.Flag{{Name: "v", Separate: true}}})})
	assert.ErrorContains(t, err, "Separate needs a flag that takes a value")
}
