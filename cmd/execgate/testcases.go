package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/execgate/execgate/config"
)

var testCmd = &command{
	name:    "test",
	summary: "check a table of calls against their expected outcomes (for CI)",
	usage: `Usage: execgate test --config FILE CASES.yaml

Test runs every call of CASES.yaml through the configuration's gate, as
explain does (nothing is started), and compares what happened with what
the case expects. It prints one line per case, "ok" or "FAIL" with the
file's line, and for a mismatch the expectation (-) and the outcome (+).
Each case starts from the configuration as loaded (rate limits and
grants are fresh for every case).

CASES.yaml:

	cases:
	  - name: recent commits        # optional; shown in the report
	    tool: git.log               # required: the requested name
	    principal: agent-1          # optional; default: the server
	                                # section's stdio principal
	    input: {args: [-n, "5"]}    # optional; the arguments object, {} if unset
	    want: allow                 # allow (runs now), approval (needs a
	                                # person's approval) or refuse
	    args: [log, -n, "5"]        # optional, allow and approval only: the
	                                # exact arguments after the executable
	  - tool: git.push
	    want: refuse
	    error: not_found            # optional, refuse only: not_found,
	                                # validation or policy

Exit codes: 0 every case passes; 1 a case does not; 2 usage error, a
configuration that does not load, or a cases file that cannot be used.
`,
	setup: func(fs *flag.FlagSet) func(*cli, context.Context, []string) int {
		file := fs.String("config", "", "the configuration `FILE` (required)")
		return func(c *cli, ctx context.Context, args []string) int {
			if *file == "" {
				return c.usageError("--config is required")
			}
			if len(args) != 1 {
				return c.usageError("want one CASES.yaml file")
			}
			data, err := os.ReadFile(*file)
			if err != nil {
				return c.fail(exitUsage, err)
			}
			if _, err := config.LoadBytes(*file, data); err != nil {
				return c.loadError(err)
			}
			raw, err := os.ReadFile(args[0])
			if err != nil {
				return c.fail(exitUsage, err)
			}
			cases, err := parseCases(raw)
			if err != nil {
				return c.fail(exitUsage, fmt.Errorf("%s: %w", args[0], err))
			}
			failed := 0
			for _, tc := range cases {
				l, err := config.LoadBytes(*file, data) // fresh rate limits and grants
				if err != nil {
					return c.loadError(err)
				}
				p := tc.Principal
				if p == "" && l.Server != nil {
					p = l.Server.Principal
				}
				ex := explain(ctx, l, tc.Tool, p, tc.input)
				label := fmt.Sprintf("%s:%d %s", args[0], tc.line, strconv.Quote(tc.Tool))
				if tc.Name != "" {
					label += " (" + tc.Name + ")"
				}
				if diff := tc.diff(ex); diff != "" {
					failed++
					fmt.Fprintf(c.stdout, "FAIL %s\n%s", label, diff)
					continue
				}
				fmt.Fprintf(c.stdout, "ok   %s: %s\n", label, tc.Want)
			}
			fmt.Fprintf(c.stdout, "%d cases, %d passed, %d failed\n", len(cases), len(cases)-failed, failed)
			if failed > 0 {
				return exitFailed
			}
			return exitOK
		}
	},
}

// testCase is one entry of a cases file.
type testCase struct {
	Name      string    `yaml:"name"`
	Tool      string    `yaml:"tool"`
	Principal string    `yaml:"principal"`
	Input     yaml.Node `yaml:"input"`
	Want      string    `yaml:"want"`
	Args      *[]string `yaml:"args"`
	Error     string    `yaml:"error"`

	line  int
	input json.RawMessage
}

var caseKeys = []string{"name", "tool", "principal", "input", "want", "args", "error"}

// parseCases reads a cases file: a mapping with one key, cases, a list.
func parseCases(data []byte) ([]*testCase, error) {
	var root struct {
		Cases []yaml.Node `yaml:"cases"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&root); err != nil {
		return nil, err
	}
	if len(root.Cases) == 0 {
		return nil, errors.New("no cases: write cases: [...]")
	}
	out := make([]*testCase, 0, len(root.Cases))
	for i := range root.Cases {
		n := &root.Cases[i]
		at := func(format string, args ...any) error {
			return fmt.Errorf("line %d: %s", n.Line, fmt.Sprintf(format, args...))
		}
		if n.Kind != yaml.MappingNode {
			return nil, at("a case must be a mapping")
		}
		for j := 0; j < len(n.Content); j += 2 {
			if !slices.Contains(caseKeys, n.Content[j].Value) {
				return nil, at("unknown key %q (known keys: %s)", n.Content[j].Value, strings.Join(caseKeys, ", "))
			}
		}
		tc := &testCase{line: n.Line}
		if err := n.Decode(tc); err != nil {
			return nil, at("%v", err)
		}
		if tc.Tool == "" {
			return nil, at("tool is required")
		}
		switch tc.Want {
		case "allow", "approval":
			if tc.Error != "" {
				return nil, at("error goes with want: refuse only")
			}
		case "refuse":
			if tc.Args != nil {
				return nil, at("args goes with want: allow or approval only")
			}
			switch tc.Error {
			case "", refusedNotFound, refusedValidation, refusedPolicy:
			default:
				return nil, at("error must be not_found, validation or policy, not %q", tc.Error)
			}
		default:
			return nil, at("want must be allow, approval or refuse, not %q", tc.Want)
		}
		tc.input = json.RawMessage("{}")
		if tc.Input.Kind != 0 && tc.Input.Tag != "!!null" {
			if tc.Input.Kind != yaml.MappingNode {
				return nil, at("input must be a mapping (the call's arguments object)")
			}
			var v any
			if err := tc.Input.Decode(&v); err != nil {
				return nil, at("input: %v", err)
			}
			b, err := json.Marshal(v)
			if err != nil {
				return nil, at("input cannot be written as JSON: %v", err)
			}
			tc.input = b
		}
		out = append(out, tc)
	}
	return out, nil
}

// diff compares the case with what happened, and returns "" when they
// agree, or a "- want" and a "+ got" line.
func (tc *testCase) diff(ex *explanation) string {
	var args []string
	if len(ex.Argv) > 0 {
		args = ex.Argv[1:]
	}
	got := map[string]string{verdictRun: "allow", verdictApproval: "approval", verdictRefused: "refuse"}[ex.Verdict]
	ok := got == tc.Want
	if ok && tc.Want == "refuse" && tc.Error != "" {
		ok = ex.Kind == tc.Error
	}
	if ok && tc.Args != nil {
		ok = slices.Equal(args, *tc.Args)
	}
	if ok {
		return ""
	}
	want := tc.Want
	switch {
	case tc.Args != nil:
		want += " " + quoteArgv(*tc.Args)
	case tc.Error != "":
		want += " (" + tc.Error + ")"
	}
	if ex.Verdict == verdictRefused {
		got += " (" + ex.Kind + "): " + ex.Error
	} else {
		got += " " + quoteArgv(args)
	}
	return fmt.Sprintf("  - want: %s\n  + got:  %s\n", want, got)
}
