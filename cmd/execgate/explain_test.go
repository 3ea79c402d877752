package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

const gateConfig = "testdata/gate.yaml"

func TestExplain_JSONNamesTheRefusedTokenAndItsRule(t *testing.T) {
	code, out, errOut := runCLI(t, "", "explain", "--config", gateConfig, "--principal", "agent-1", "--json",
		"log.show", `{"args":["--oneline","-n","99","--all"]}`)
	require.Equal(t, exitFailed, code, errOut)
	var ex explanation
	require.NoError(t, json.Unmarshal([]byte(out), &ex), out)
	assert.Equal(t, verdictRefused, ex.Verdict)
	assert.Equal(t, refusedValidation, ex.Kind)
	require.Len(t, ex.Steps, 2)
	assert.Equal(t, step{Step: "lookup", Outcome: "found", Spec: "log.show", Mode: "declared", Detail: ex.Steps[0].Detail}, ex.Steps[0])
	v := ex.Steps[1]
	assert.Equal(t, "validation", v.Step)
	assert.Equal(t, "refused", v.Outcome)
	require.Len(t, v.Tokens, 2)
	assert.Equal(t, "99", v.Tokens[0].Token)
	assert.Equal(t, 2, *v.Tokens[0].Index)
	assert.Equal(t, "the value of --max-count must be an integer from 1 to 50", v.Tokens[0].Rule)
	assert.Equal(t, "--all", v.Tokens[1].Token)
	assert.Equal(t, "undeclared flag", v.Tokens[1].Rule)
	assert.Empty(t, ex.Argv)
}

func TestExplain_Steps(t *testing.T) {
	for _, tc := range []struct {
		name, principal, tool, input string
		code                         int
		verdict, kind                string
		policy, rule, floor          string
	}{
		{"runs", "agent-1", "log.show", `{"args":["main"]}`, exitOK, verdictRun, "", "allow", "agents/reads", "allow"},
		{"policy denies", "stranger", "log.show", `{}`, exitFailed, verdictRefused, refusedPolicy, "deny", "default", "allow"},
		{"floor raises", "agent-1", "deploy.staging", `{"args":["--fast"]}`, exitOK, verdictApproval, "", "allow", "agents/deploys", "require_approval"},
		{"rule denies", "agent-1", "deploy.prod", `{}`, exitFailed, verdictRefused, refusedPolicy, "deny", "agents/no-deploy-prod", "require_approval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", "explain", "--config", gateConfig, "--principal", tc.principal, "--json", tc.tool, tc.input)
			require.Equal(t, tc.code, code, errOut)
			var ex explanation
			require.NoError(t, json.Unmarshal([]byte(out), &ex), out)
			assert.Equal(t, tc.verdict, ex.Verdict)
			assert.Equal(t, tc.kind, ex.Kind)
			require.Len(t, ex.Steps, 4, out)
			assert.Equal(t, tc.policy, ex.Steps[2].Outcome)
			assert.Equal(t, tc.rule, ex.Steps[2].Rule)
			assert.Equal(t, tc.floor, ex.Steps[3].Outcome)
			if tc.verdict != verdictRefused {
				assert.Equal(t, "/bin/echo", ex.Argv[0])
			}
		})
	}
	code, out, _ := runCLI(t, "", "explain", "--config", gateConfig, "log.nope")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, out, "1. lookup     refused")
	assert.Contains(t, out, "verdict: refused (not_found)")
}

func TestTest_PassingTable(t *testing.T) {
	code, out, errOut := runCLI(t, "", "test", "--config", gateConfig, "testdata/cases_pass.yaml")
	require.Equal(t, exitOK, code, out+errOut)
	assert.Contains(t, out, `ok   testdata/cases_pass.yaml:2 "log.show" (recent commits): allow`)
	assert.Contains(t, out, "6 cases, 6 passed, 0 failed")
	assert.NotContains(t, out, "FAIL")
}

func TestTest_FailingTableShowsDiffs(t *testing.T) {
	code, out, _ := runCLI(t, "", "test", "--config", gateConfig, "testdata/cases_fail.yaml")
	require.Equal(t, exitFailed, code, out)
	assert.Contains(t, out, `FAIL testdata/cases_fail.yaml:2 "log.show" (wrong argv)
  - want: allow ["log" "show" "--oneline" "main"]
  + got:  allow ["log" "show" "--oneline"]
`)
	assert.Contains(t, out, `ok   testdata/cases_fail.yaml:8 "log.show": allow`)
	assert.Contains(t, out, `FAIL testdata/cases_fail.yaml:11 "deploy.staging" (not a refusal)
  - want: refuse (policy)
  + got:  approval ["staging"]
`)
	assert.Contains(t, out, `  - want: refuse (policy)
  + got:  refuse (validation): invalid input for "log.show": args[0]: "--all": undeclared flag
`)
	assert.Contains(t, out, "4 cases, 1 passed, 3 failed")
}

func TestTest_BadFilesExit2(t *testing.T) {
	for name, text := range map[string]string{
		"unknown key":  "cases: [{tool: log.show, want: allow, wnat: x}]",
		"bad want":     "cases: [{tool: log.show, want: maybe}]",
		"bad error":    "cases: [{tool: log.show, want: refuse, error: nope}]",
		"no tool":      "cases: [{want: allow}]",
		"no cases":     "cases: []",
		"bad yaml":     "cases: [",
		"top key":      "case: []",
		"input string": "cases: [{tool: log.show, want: allow, input: '{}'}]",
	} {
		t.Run(name, func(t *testing.T) {
			code, _, errOut := runCLI(t, "", "test", "--config", gateConfig, writeFile(t, "cases.yaml", text))
			assert.Equal(t, exitUsage, code)
			assert.NotEmpty(t, errOut)
		})
	}
	code, _, _ := runCLI(t, "", "test", "--config", gateConfig, "testdata/missing.yaml")
	assert.Equal(t, exitUsage, code)
	code, _, errOut := runCLI(t, "", "test", "--config", writeFile(t, "bad.yaml", "version: 2\ntools: []\n"), "testdata/cases_pass.yaml")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "unsupported version")
}

func TestExplain_JSONSaysWhyEachAcceptedArgument(t *testing.T) {
	code, out, errOut := runCLI(t, "", "explain", "--config", gateConfig, "--principal", "agent-1", "--json",
		"log.show", `{"args":["-n","5","--oneline","main"]}`)
	require.NotEqual(t, exitUsage, code, errOut)
	var ex explanation
	require.NoError(t, json.Unmarshal([]byte(out), &ex), out)
	require.GreaterOrEqual(t, len(ex.Steps), 2)
	v := ex.Steps[1]
	require.Equal(t, "accepted", v.Outcome)
	assert.Equal(t, []execgate.ArgNote{
		{Arg: "log", Why: "fixed leading argument of the spec"},
		{Arg: "show", Why: "fixed leading argument of the spec"},
		{Arg: "--max-count=5", Why: `declared flag --max-count with its value "5", an integer from 1 to 50`},
		{Arg: "--oneline", Why: "declared flag --oneline"},
		{Arg: "main", Why: "positional argument, matching ^[a-z]+$"},
	}, v.Args)
}

// TestExplain_PathsSayTheirRuleAndWhyTheyWereRefused: explain names the
// path rule of a path positional and of each value of jq's --rawfile
// NAME FILE, and says why a path that climbs out or a symbolic link that
// points out was refused.
func TestExplain_PathsSayTheirRuleAndWhyTheyWereRefused(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	require.NoError(t, os.MkdirAll(root, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(base, "secret.txt"), []byte("secret\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(root, "d.json"), []byte("{}\n"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(root, "link-out")))
	cfg := writeFile(t, "tools.yaml", "version: 1\ntools:\n  - profile: cat\n    working_dir: "+root+"\n  - profile: jq\n    working_dir: "+root+"\n")
	explainJSON := func(t *testing.T, wantCode int, name, input string) explanation {
		t.Helper()
		code, out, errOut := runCLI(t, "", "explain", "--config", cfg, "--json", name, input)
		require.Equal(t, wantCode, code, out+errOut)
		var ex explanation
		require.NoError(t, json.Unmarshal([]byte(out), &ex), out)
		require.GreaterOrEqual(t, len(ex.Steps), 2, out)
		return ex
	}
	inside := "a path inside the working directory " + root + ", passed cleaned"

	for _, tc := range []struct {
		why, token, rule string
	}{
		{"a path that climbs out of the working directory", "../secret.txt", `path "../secret.txt" is outside the working directory ` + root},
		{"a symbolic link that points outside", "link-out", `path "link-out" leads outside the working directory ` + root + " through a symbolic link"},
	} {
		t.Run("refused: "+tc.why, func(t *testing.T) {
			ex := explainJSON(t, exitFailed, "cat.run", `{"args":["`+tc.token+`"]}`)
			assert.Equal(t, refusedValidation, ex.Kind)
			v := ex.Steps[1]
			require.Equal(t, "refused", v.Outcome)
			require.Len(t, v.Tokens, 1)
			assert.Equal(t, tc.token, v.Tokens[0].Token)
			assert.Contains(t, v.Tokens[0].Rule, tc.rule)
		})
	}

	t.Run("accepted: a path positional", func(t *testing.T) {
		ex := explainJSON(t, exitOK, "cat.run", `{"args":["./d.json"]}`)
		args := ex.Steps[1].Args
		require.NotEmpty(t, args)
		assert.Equal(t, execgate.ArgNote{Arg: "d.json", Why: "positional argument, " + inside +
			"; it must be a regular file; no glob characters; symbolic links resolved: none may lead outside"}, args[len(args)-1])
	})

	t.Run("accepted: jq --rawfile x d.json", func(t *testing.T) {
		ex := explainJSON(t, exitOK, "jq.run", `{"args":["--rawfile","x","d.json","$x"],"stdin":"{}"}`)
		var got []execgate.ArgNote
		for i, a := range ex.Steps[1].Args {
			if a.Arg == "--rawfile" {
				require.Greater(t, len(ex.Steps[1].Args), i+2)
				got = ex.Steps[1].Args[i : i+3]
			}
		}
		assert.Equal(t, []execgate.ArgNote{
			{Arg: "--rawfile", Why: "declared flag --rawfile, taking 2 values"},
			{Arg: "x", Why: "the name value of --rawfile, matching ^[A-Za-z_][A-Za-z0-9_]{0,63}$"},
			{Arg: "d.json", Why: "the file value of --rawfile, " + inside +
				"; it must be a regular file; no glob characters; symbolic links resolved: none may lead outside"},
		}, got)
		last := ex.Steps[1].Args[len(ex.Steps[1].Args)-1]
		assert.Equal(t, "$x", last.Arg)
		assert.Contains(t, last.Why, "positional argument, matching")
	})

	// The text form says the same.
	code, out, _ := runCLI(t, "", "explain", "--config", cfg, "cat.run", `{"args":["link-out"]}`)
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, out, `token 0 "link-out": a positional argument: path "link-out" leads outside`)
}
