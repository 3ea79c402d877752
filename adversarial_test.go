package execgate_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
)

// The adversarial corpus, testdata/adversarial/cases.jsonl, holds known
// argument-injection and escape techniques against the tools operators
// commonly allowlist. Each case names the spec below it is tried against;
// the specs are written the way an operator would allowlist the tool.
// testdata/adversarial/README.md describes the format.

// adversarialCorpus is the corpus file, relative to the package directory.
const adversarialCorpus = "testdata/adversarial/cases.jsonl"

// adversarialMinCases is the least number of cases the corpus must hold.
const adversarialMinCases = 60

// relPathPattern is a workspace-relative path: segments of letters,
// digits, '.', '_' and '-', none starting with '.' or '-', so no "..",
// no hidden files, no absolute paths, no "-" for stdin and no ':' for
// remote or magic syntaxes.
const relPathPattern = `^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$`

// printablePattern is any printable text, for values that are data to the
// program (a search pattern), never options.
const printablePattern = `^[^\x00-\x1f\x7f]{1,200}$`

func int64p(v int64) *int64 { return &v }

// adversarialFlagSpecs are the Flags specs of the corpus, by spec id.
func adversarialFlagSpecs() map[string]execgate.FlagSpec {
	return map[string]execgate.FlagSpec{
		// git log: a revision and the usual display flags.
		"git.log": {
			Leading: []string{"--no-pager", "log"},
			Flags: []execgate.Flag{
				{Name: "max-count", Short: "n", Value: execgate.ValueInt, Min: int64p(1), Max: int64p(1000), Glued: true},
				{Name: "oneline"},
				{Name: "format", Value: execgate.ValueEnum, Enum: []string{"oneline", "short", "medium", "full"}},
				{Name: "author", Value: execgate.ValuePattern, Pattern: `^[A-Za-z0-9][A-Za-z0-9 ._@-]{0,63}$`},
				{Name: "grep", Value: execgate.ValueString},
				{Name: "since", Value: execgate.ValuePattern, Pattern: `^[0-9]{4}-[0-9]{2}-[0-9]{2}$`},
			},
			Positionals: execgate.Positionals{Max: 1, Pattern: `^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$`},
		},
		// git ls-remote: one https remote.
		"git.ls-remote": {
			Leading:     []string{"ls-remote"},
			Flags:       []execgate.Flag{{Name: "heads"}, {Name: "tags"}},
			Positionals: execgate.Positionals{Max: 1, Pattern: `^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?/[A-Za-z0-9._~/-]+$`},
		},
		// git grep: a search pattern and pathspecs.
		"git.grep": {
			Leading: []string{"--no-pager", "grep", "--no-color"},
			Flags: []execgate.Flag{
				{Name: "e", Value: execgate.ValuePattern, Pattern: printablePattern},
				{Name: "ignore-case", Short: "i"},
				{Name: "line-number", Short: "n"},
				{Name: "fixed-strings", Short: "F"},
				{Name: "max-depth", Value: execgate.ValueInt, Min: int64p(0), Max: int64p(20)},
			},
			Positionals:  execgate.Positionals{Max: 4, Pattern: relPathPattern},
			EndOfOptions: true,
		},
		// find . -name PATTERN: tests only, no actions.
		"find.name": {
			Leading: []string{"."},
			Flags: []execgate.Flag{
				{Name: "name", SingleDash: true, Value: execgate.ValuePattern, Pattern: `^[A-Za-z0-9*?._-]{1,64}$`},
				{Name: "iname", SingleDash: true, Value: execgate.ValuePattern, Pattern: `^[A-Za-z0-9*?._-]{1,64}$`},
				{Name: "type", SingleDash: true, Value: execgate.ValueEnum, Enum: []string{"f", "d", "l"}},
				{Name: "maxdepth", SingleDash: true, Value: execgate.ValueInt, Min: int64p(0), Max: int64p(20)},
				{Name: "print", SingleDash: true},
			},
		},
		// rg: a pattern given with --regexp, and paths.
		"rg.search": {
			Leading: []string{"--no-config"},
			Flags: []execgate.Flag{
				{Name: "regexp", Short: "e", Value: execgate.ValuePattern, Pattern: printablePattern},
				{Name: "fixed-strings", Short: "F"},
				{Name: "ignore-case", Short: "i"},
				{Name: "max-count", Short: "m", Value: execgate.ValueInt, Min: int64p(1), Max: int64p(1000)},
				{Name: "glob", Short: "g", Value: execgate.ValuePattern, Pattern: `^!?[A-Za-z0-9*?._/-]{1,100}$`},
			},
			Positionals:  execgate.Positionals{Max: 2, Pattern: relPathPattern},
			EndOfOptions: true,
		},
		// sed -n 'N,Mp' FILE: print a range of lines, nothing else.
		"sed.print": {
			Leading: []string{"-n"},
			Flags: []execgate.Flag{
				{Name: "expression", Short: "e", Value: execgate.ValuePattern, Pattern: `^[0-9]{1,9}(,[0-9]{1,9})?p$`},
			},
			Positionals:  execgate.Positionals{Max: 1, Pattern: relPathPattern},
			EndOfOptions: true,
		},
		// tar --list of a local archive.
		"tar.list": {
			Leading: []string{"--list", "--verbose"},
			Flags: []execgate.Flag{
				{Name: "file", Short: "f", Value: execgate.ValuePattern, Pattern: `^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*\.(tar|tar\.gz|tgz)$`},
				{Name: "gzip", Short: "z"},
			},
		},
		// ssh to a named host, batch mode, a few safe options.
		"ssh.host": {
			Leading: []string{"-T", "-o", "BatchMode=yes"},
			Flags: []execgate.Flag{
				{Name: "o", Value: execgate.ValuePattern, Pattern: `^(ConnectTimeout|StrictHostKeyChecking)=[A-Za-z0-9]{1,16}$`, Repeat: 2},
				{Name: "p", Value: execgate.ValueInt, Min: int64p(1), Max: int64p(65535), Glued: true},
				{Name: "l", Value: execgate.ValuePattern, Pattern: `^[a-z_][a-z0-9_-]{0,31}$`},
				{Name: "v", Repeat: 3},
			},
			Positionals: execgate.Positionals{Max: 1, Pattern: `^[a-z0-9][a-z0-9.-]{0,252}$`},
		},
		// rsync between local directories.
		"rsync.local": {
			Leading: []string{"--archive"},
			Flags: []execgate.Flag{
				{Name: "dry-run", Short: "n"},
				{Name: "verbose", Short: "v", Repeat: 2},
			},
			Positionals:  execgate.Positionals{Max: 2, Pattern: relPathPattern},
			EndOfOptions: true,
		},
		// curl GET of an https URL, output to stdout only.
		"curl.get": {
			Leading: []string{"--silent", "--show-error", "--proto", "=https", "--max-redirs", "3"},
			Flags: []execgate.Flag{
				{Name: "header", Short: "H", Value: execgate.ValuePattern, Pattern: `^(Accept|User-Agent): [A-Za-z0-9/.;=*+, -]{1,100}$`, Repeat: 4},
				{Name: "max-time", Value: execgate.ValueInt, Min: int64p(1), Max: int64p(60)},
			},
			Positionals:  execgate.Positionals{Max: 1, Pattern: `^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~/?=&%-]*)?$`},
			EndOfOptions: true,
		},
		// xargs running basename on names read from stdin.
		"xargs.basename": {
			Leading: []string{"--no-run-if-empty", "--max-args=1", "--", "basename"},
			Stdin:   &execgate.StdinSpec{Max: 4096},
		},
		// npm run of a declared script.
		"npm.run": {
			Leading:     []string{"run"},
			Flags:       []execgate.Flag{{Name: "silent"}},
			Positionals: execgate.Positionals{Max: 1, Pattern: `^(test|lint|build)$`},
		},
		// zip -q -r ARCHIVE PATH...: zip refuses "--" before the archive
		// name, so positionals are refused when they start with '-'.
		"zip.create": {
			Leading:     []string{"-q", "-r"},
			Positionals: execgate.Positionals{Max: 8, Pattern: relPathPattern},
		},
	}
}

// catFileArgs is cat of one workspace file.
type catFileArgs struct {
	Path string `json:"path" validate:"required,max=255,regexp=^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$"`
}

// gitShowArgs is git show of one revision, optionally limited to paths.
type gitShowArgs struct {
	Rev   string   `json:"rev" validate:"required,max=100,regexp=^[A-Za-z0-9][A-Za-z0-9._/~^-]*$"`
	Stat  bool     `json:"stat"`
	Paths []string `json:"paths" validate:"max=8,dive,required,max=255,regexp=^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$"`
}

// awkSumArgs sums one column of a file with a fixed awk program.
type awkSumArgs struct {
	Column    int     `json:"column" validate:"required,min=1,max=100"`
	File      string  `json:"file" validate:"required,max=255,regexp=^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$"`
	Separator *string `json:"separator" validate:"omitempty,oneof=comma tab space"`
}

// echoDataArgs echoes bytes sent as base64: only the gate's last check
// stands between a NUL in them and the argv.
type echoDataArgs struct {
	Data []byte `json:"data" validate:"max=64"`
}

// adversarialStructSpecs are the Struct and Fixed specs of the corpus.
func adversarialStructSpecs() map[string]execgate.ArgsSchema {
	return map[string]execgate.ArgsSchema{
		"cat.file": execgate.Struct(func(in catFileArgs) execgate.Argv {
			return execgate.Argv{Args: []string{"--", in.Path}}
		}),
		"git.show": execgate.Struct(func(in gitShowArgs) execgate.Argv {
			args := []string{"--no-pager", "show", "--no-ext-diff", "--no-textconv"}
			if in.Stat {
				args = append(args, "--stat")
			}
			args = append(args, in.Rev, "--")
			return execgate.Argv{Args: append(args, in.Paths...)}
		}),
		"awk.sum": execgate.Struct(func(in awkSumArgs) execgate.Argv {
			sep := " "
			if in.Separator != nil {
				sep = map[string]string{"comma": ",", "tab": `\t`, "space": " "}[*in.Separator]
			}
			program := "{ s += $" + strconv.Itoa(in.Column) + " } END { print s }"
			return execgate.Argv{Args: []string{"-F", sep, program, "--", in.File}}
		}),
		"echo.data": execgate.Struct(func(in echoDataArgs) execgate.Argv {
			return execgate.Argv{Args: []string{string(in.Data)}}
		}),
		"env.show": execgate.Fixed(),
	}
}

// adversarialDispatchSpecs are the dispatcher specs of the corpus: "vcs"
// serves "vcs.<subcommand>" for any subcommand without a spec of its own,
// under the default floor (deny).
func adversarialDispatchSpecs() map[string]execgate.SubcommandSpec {
	return map[string]execgate.SubcommandSpec{
		"vcs": {Leading: []string{"--no-pager", "-c", "core.hooksPath=/dev/null"}},
	}
}

// adversarialGate builds an Executor over every corpus spec with a
// Recorder as its ExecFn and a MemoryStore the test can inspect. The
// Recorder starts nothing; every spec names the test binary only because
// NewAllowlist needs an executable that exists.
func adversarialGate(t *testing.T) (*execgate.Executor, *execgatetest.Recorder, *execgate.MemoryStore, map[string]bool) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	ids := map[string]bool{}
	var specs []execgate.CommandSpec
	for id, fs := range adversarialFlagSpecs() {
		specs = append(specs, execgate.CommandSpec{Name: id, Command: exe, Args: execgate.Flags(fs), Dir: "/"})
		ids[id] = true
	}
	for id, schema := range adversarialStructSpecs() {
		specs = append(specs, execgate.CommandSpec{Name: id, Command: exe, Args: schema, Dir: "/"})
		ids[id] = true
	}
	for id, ss := range adversarialDispatchSpecs() {
		specs = append(specs, execgate.CommandSpec{Name: id, Command: exe, Args: execgate.Subcommands(ss), Dir: "/", Dispatch: true})
		ids[id] = true
	}
	a, err := execgate.NewAllowlist(specs...)
	require.NoError(t, err)
	rec := execgatetest.NewRecorder()
	store := execgate.NewMemoryStore(execgate.MemoryStoreOptions{})
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: a, ExecFn: rec.Exec, Store: store})
	require.NoError(t, err)
	return x, rec, store, ids
}

// adversarialCase is one line of the corpus.
type adversarialCase struct {
	ID        string `json:"id"`
	Technique string `json:"technique"`
	Tool      string `json:"tool"`
	Spec      string `json:"spec"`
	// Name, if set, is the command name requested instead of Spec.
	Name *string `json:"name"`
	// Exactly one of Input (a JSON value, kept byte for byte, duplicate
	// keys included), InputText (any text) and InputBase64 (any bytes)
	// is the input.
	Input       json.RawMessage `json:"input"`
	InputText   *string         `json:"input_text"`
	InputBase64 *string         `json:"input_base64"`
	// Fill, if set, replaces Marker in the input with With repeated
	// Times times, for oversized inputs.
	Fill *struct {
		Marker string `json:"marker"`
		With   string `json:"with"`
		Times  int    `json:"times"`
	} `json:"fill"`
	Expect adversarialExpect `json:"expect"`
}

type adversarialExpect struct {
	// Outcome is "refused" or "inert".
	Outcome string `json:"outcome"`
	// Error is the refusal's type: "not_found", "validation", or "policy"
	// for a call the spec's floor denies (Check, which validates only,
	// accepts it; Argv is then what Check shows).
	Error string `json:"error"`
	// Field, if set, must be the Field of one of the refusal's Issues.
	Field *string `json:"field"`
	// Message, if set, must occur in that Issue's Message (in any
	// Issue's, when Field is not set).
	Message string `json:"message"`
	// Argv is the exact argv (after the program name) of an inert case,
	// or what Check shows for a "policy" refusal.
	Argv []string `json:"argv"`
	// Stdin is the exact stdin of an inert case; absent means none.
	Stdin *string `json:"stdin"`
	// Literal, if set, is the argv element of an inert case that carries
	// the dangerous text (the text itself, or a --name=value argument
	// holding it): it must occur exactly once in Argv.
	Literal *string `json:"literal"`
}

// loadAdversarialCorpus reads and checks the corpus file.
func loadAdversarialCorpus(t *testing.T) []adversarialCase {
	t.Helper()
	f, err := os.Open(filepath.FromSlash(adversarialCorpus))
	require.NoError(t, err)
	defer f.Close()
	var cases []adversarialCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		var c adversarialCase
		require.NoError(t, dec.Decode(&c), "%s:%d", adversarialCorpus, line)
		require.False(t, dec.More(), "%s:%d: one case per line", adversarialCorpus, line)
		cases = append(cases, c)
	}
	require.NoError(t, sc.Err())
	return cases
}

// input returns the bytes the case sends.
func (c *adversarialCase) input(t *testing.T) []byte {
	t.Helper()
	var in []byte
	n := 0
	if c.Input != nil {
		in, n = []byte(c.Input), n+1
	}
	if c.InputText != nil {
		in, n = []byte(*c.InputText), n+1
	}
	if c.InputBase64 != nil {
		b, err := base64.StdEncoding.DecodeString(*c.InputBase64)
		require.NoError(t, err)
		in, n = b, n+1
	}
	require.LessOrEqual(t, n, 1, "at most one of input, input_text and input_base64")
	if c.Fill != nil {
		require.True(t, bytes.Contains(in, []byte(c.Fill.Marker)), "fill marker not in the input")
		in = bytes.ReplaceAll(in, []byte(c.Fill.Marker), bytes.Repeat([]byte(c.Fill.With), c.Fill.Times))
	}
	return in
}

func (c *adversarialCase) name() string {
	if c.Name != nil {
		return *c.Name
	}
	return c.Spec
}

func TestAdversarialCorpus(t *testing.T) {
	cases := loadAdversarialCorpus(t)
	x, rec, store, specIDs := adversarialGate(t)
	exe, err := os.Executable()
	require.NoError(t, err)

	// The corpus itself: enough cases, unique ids, every field filled in,
	// every spec used, both outcomes present.
	require.GreaterOrEqual(t, len(cases), adversarialMinCases)
	seen := map[string]bool{}
	used := map[string]int{}
	outcomes := map[string]int{}
	for _, c := range cases {
		require.NotEmpty(t, c.ID)
		require.False(t, seen[c.ID], "duplicate id %s", c.ID)
		seen[c.ID] = true
		require.NotEmpty(t, c.Technique, c.ID)
		require.NotEmpty(t, c.Tool, c.ID)
		require.True(t, specIDs[c.Spec], "%s: unknown spec %q", c.ID, c.Spec)
		used[c.Spec]++
		outcomes[c.Expect.Outcome]++
	}
	for id := range specIDs {
		assert.NotZero(t, used[id], "spec %s is not used by any case", id)
	}
	assert.NotZero(t, outcomes["refused"])
	assert.NotZero(t, outcomes["inert"])
	assert.Equal(t, len(cases), outcomes["refused"]+outcomes["inert"], "every outcome is refused or inert")

	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.ID, func(t *testing.T) {
			in := c.input(t)
			name := c.name()
			rec.Reset()
			pending := store.Len()
			switch c.Expect.Outcome {
			case "refused":
				if c.Expect.Error == "policy" {
					// Refused by the spec's floor, which the Policy step
					// applies: Run and Propose refuse, while Check, which
					// validates only, accepts and shows the argv.
					_, err := x.Run(ctx, name, in)
					requireRefusal(t, &c, err)
					t.Logf("refused: %v", err)
					_, err = x.Propose(ctx, name, in, "adversarial corpus")
					requireRefusal(t, &c, err)
					p, err := x.Proposer().Check(name, in)
					require.NoError(t, err, "Check validates only")
					assertArgv(t, c.Expect.Argv, p.Args)
					assert.Equal(t, pending, store.Len(), "a refused call was stored")
					assert.Zero(t, rec.Count(), "a refused call reached the ExecFn")
					return
				}
				_, err := x.Run(ctx, name, in)
				issues := requireRefusal(t, &c, err)
				assert.Zero(t, rec.Count(), "a refused call reached the ExecFn")
				t.Logf("refused: %v", err)

				// Check and Propose refuse it the same way.
				_, err = x.Proposer().Check(name, in)
				assert.Equal(t, issues, requireRefusal(t, &c, err), "Check and Run disagree")
				_, err = x.Propose(ctx, name, in, "adversarial corpus")
				assert.Equal(t, issues, requireRefusal(t, &c, err), "Propose and Run disagree")
				assert.Equal(t, pending, store.Len(), "a refused call was stored")
				assert.Zero(t, rec.Count(), "a refused call reached the ExecFn")

			case "inert":
				require.NotNil(t, c.Expect.Argv, "an inert case needs its exact argv")
				if c.Expect.Literal != nil {
					n := 0
					for _, a := range c.Expect.Argv {
						if a == *c.Expect.Literal {
							n++
						}
					}
					require.Equal(t, 1, n, "the literal must be exactly one argv element")
				}
				wantStdin := ""
				if c.Expect.Stdin != nil {
					wantStdin = *c.Expect.Stdin
				}

				res, err := x.Run(ctx, name, in)
				require.NoError(t, err)
				assert.True(t, res.OK)
				assertArgv(t, c.Expect.Argv, res.Args)
				calls := rec.Calls()
				require.Len(t, calls, 1)
				assert.Equal(t, exe, calls[0].Path)
				assertArgv(t, c.Expect.Argv, calls[0].Args)
				assert.Equal(t, wantStdin, string(calls[0].Stdin), "stdin")

				p, err := x.Proposer().Check(name, in)
				require.NoError(t, err)
				assertArgv(t, c.Expect.Argv, p.Args)
				assert.Equal(t, wantStdin, string(p.Stdin))

				ap, err := x.Propose(ctx, name, in, "adversarial corpus")
				require.NoError(t, err)
				assertArgv(t, c.Expect.Argv, ap.Args)
				assert.Equal(t, 1, rec.Count(), "Propose spawned")
				res, err = x.Execute(ctx, roundTrip(t, ap))
				require.NoError(t, err)
				assert.True(t, res.OK)
				calls = rec.Calls()
				require.Len(t, calls, 2)
				assertArgv(t, c.Expect.Argv, calls[1].Args)
				assert.Equal(t, wantStdin, string(calls[1].Stdin))
				assert.Equal(t, pending, store.Len())

			default:
				t.Fatalf("unknown outcome %q", c.Expect.Outcome)
			}
		})
	}
	t.Logf("%d cases: %d refused, %d inert, against %d specs", len(cases), outcomes["refused"], outcomes["inert"], len(specIDs))
}

// assertArgv compares an argv exactly, element by element; an empty argv
// may be nil or empty.
func assertArgv(t *testing.T, want, got []string) {
	t.Helper()
	if len(want) == 0 && len(got) == 0 {
		return
	}
	assert.Equal(t, want, got, "argv")
}

// requireRefusal checks that err is the refusal c expects and returns its
// issues (nil for a NotFoundError).
func requireRefusal(t *testing.T, c *adversarialCase, err error) []execgate.Issue {
	t.Helper()
	require.Error(t, err, "not refused")
	switch c.Expect.Error {
	case "not_found":
		var nf *execgate.NotFoundError
		require.ErrorAs(t, err, &nf)
		assert.Equal(t, c.name(), nf.Name)
		return nil
	case "policy":
		var pe *execgate.PolicyError
		require.ErrorAs(t, err, &pe, "%v", err)
		assert.Equal(t, c.name(), pe.Name)
		assert.Equal(t, execgate.ActionDeny, pe.Action)
		assert.Equal(t, execgate.FloorRule, pe.Rule)
		return nil
	case "validation":
		var ve *execgate.ValidationError
		require.ErrorAs(t, err, &ve, "%v", err)
		assert.Equal(t, c.name(), ve.Name)
		require.NotEmpty(t, ve.Issues)
		assertPrintable(t, err.Error())
		if c.Expect.Field != nil || c.Expect.Message != "" {
			found := false
			for _, is := range ve.Issues {
				if (c.Expect.Field == nil || is.Field == *c.Expect.Field) && strings.Contains(is.Message, c.Expect.Message) {
					found = true
					break
				}
			}
			assert.True(t, found, "no issue with field %s and message %q in %s", fieldText(c.Expect.Field), c.Expect.Message, issuesText(ve.Issues))
		}
		return ve.Issues
	default:
		t.Fatalf("unknown error kind %q", c.Expect.Error)
		return nil
	}
}

func fieldText(f *string) string {
	if f == nil {
		return "(any)"
	}
	return strconv.Quote(*f)
}

func issuesText(issues []execgate.Issue) string {
	var parts []string
	for _, is := range issues {
		parts = append(parts, fmt.Sprintf("%q: %s", is.Field, is.Message))
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// TestAdversarialCorpus_Tools lists how many cases the corpus holds per
// tool, so that a shrinking corpus is noticed in review, and checks that
// the tools the corpus promises are covered.
func TestAdversarialCorpus_Tools(t *testing.T) {
	cases := loadAdversarialCorpus(t)
	perTool := map[string]int{}
	for _, c := range cases {
		perTool[c.Tool]++
	}
	for _, tool := range []string{"git", "find", "rg", "sed", "tar", "ssh", "rsync", "curl", "awk", "xargs", "env", "npm", "zip", "cat", "any"} {
		assert.NotZero(t, perTool[tool], "no case against %s", tool)
	}
	tools := make([]string, 0, len(perTool))
	for tool := range perTool {
		tools = append(tools, tool)
	}
	sort.Strings(tools)
	var b strings.Builder
	for _, tool := range tools {
		fmt.Fprintf(&b, " %s=%d", tool, perTool[tool])
	}
	t.Logf("cases per tool:%s", b.String())
}
