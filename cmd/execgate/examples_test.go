package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// examplePath is the configuration the README shows.
const examplePath = "../../examples/tools.yaml"

// exampleTools are the programs examples/tools.yaml names. The tests put
// stand-ins for them on PATH, so that they pass whether or not a machine
// has them, and print the argv they were given.
var exampleTools = []string{"git", "kubectl", "jq", "terraform"}

func TestExample_Checks(t *testing.T) {
	t.Setenv("PATH", standIns(t, exampleTools...))
	code, out, errOut := runCLI(t, "", "check", "--config", examplePath)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, ": ok: 4 tools, 9 commands")
	assert.Regexp(t, `(?m)^  git +strict +git\.log, git\.status, git\.show, git\.diff$`, out)
	assert.Regexp(t, `(?m)^  kubectl +strict +kubectl\.get, kubectl\.describe$`, out)
	assert.Regexp(t, `(?m)^  jq +bare +jq\.run$`, out)
	assert.Regexp(t, `(?m)^  terraform +fine-tuned +terraform\.plan, terraform \(dispatcher: terraform\.<subcommand>, default_action require_approval\)$`, out)
	assert.Contains(t, out, "server: stdio principal local-agent; 1 caller tokens (ci-bot); 1 approver tokens (alice)")

	code, out, errOut = runCLI(t, "", "tools", "--config", examplePath)
	require.Equal(t, exitOK, code, errOut)
	var list toolList
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	assert.Len(t, list.Tools, 9)
}

func TestExample_Calls(t *testing.T) {
	t.Setenv("PATH", standIns(t, exampleTools...))
	run := func(args ...string) (int, execgate.Result, refusalBody) {
		t.Helper()
		code, out, errOut := runCLI(t, "", append([]string{"run", "--config", examplePath}, args...)...)
		var r execgate.Result
		var ref refusalBody
		if out != "" {
			require.NoError(t, json.Unmarshal([]byte(out), &r), out)
		}
		if errOut != "" {
			require.NoError(t, json.Unmarshal([]byte(errOut), &ref), errOut)
		}
		return code, r, ref
	}

	code, r, _ := run("git.log", `{"flags":{"max-count":5,"oneline":true},"args":["README.md"]}`)
	require.Equal(t, exitOK, code)
	assert.Equal(t, "--no-pager -c core.hooksPath=/dev/null -c core.fsmonitor=false log --max-count=5 --oneline -- README.md\n", r.Stdout)

	code, r, _ = run("kubectl.get", `{"flags":{"namespace":"staging","output":"wide"},"args":["pods/web-1"]}`)
	require.Equal(t, exitOK, code)
	assert.Equal(t, "--request-timeout=20s get --namespace=staging --output=wide pods/web-1\n", r.Stdout)

	code, r, _ = run("jq.run", `{"flags":{"raw-output":true},"args":[".items[] | .name"],"stdin":"{\"items\":[]}"}`)
	require.Equal(t, exitOK, code)
	assert.Equal(t, "--raw-output .items[] | .name\n", r.Stdout)

	code, r, _ = run("--principal", "ci-bot", "terraform.plan", `{"flags":{"no-color":true,"target":["module.web"]}}`)
	require.Equal(t, exitOK, code)
	assert.Equal(t, "plan -no-color -target module.web\n", r.Stdout)

	for _, tc := range []struct {
		args       []string
		kind, rule string
	}{
		{[]string{"git.push", `{}`}, execgate.ErrorKindNotFound, ""},
		{[]string{"git.log", `{"flags":{"output":"/tmp/x"}}`}, execgate.ErrorKindValidation, ""},
		{[]string{"kubectl.get", `{"args":["secrets"]}`}, execgate.ErrorKindValidation, ""},
		{[]string{"kubectl.get", `{"flags":{"namespace":"kube-system"},"args":["pods"]}`}, execgate.ErrorKindValidation, ""},
		{[]string{"kubectl.delete", `{}`}, execgate.ErrorKindNotFound, ""},
		{[]string{"terraform.apply", `{"args":["-auto-approve"]}`}, execgate.ErrorKindPolicy, "local/infra"},
		{[]string{"terraform.destroy", `{}`}, execgate.ErrorKindPolicy, "local/no-destroy"},
		{[]string{"--principal", "ci-bot", "kubectl.get", `{"args":["pods"]}`}, execgate.ErrorKindPolicy, "ci/default"},
	} {
		code, _, ref := run(tc.args...)
		assert.Equal(t, exitFailed, code, "%q", tc.args)
		require.NotNil(t, ref.Error, "%q", tc.args)
		assert.Equal(t, tc.kind, ref.Error.Kind, "%q: %s", tc.args, ref.Error.Message)
		if tc.rule != "" {
			assert.Equal(t, tc.rule, ref.Error.Rule, "%q", tc.args)
		}
	}
}

// TestExample_ServeStdio starts the binary on examples/tools.yaml as an
// MCP client would: execgate serve --config tools.yaml.
func TestExample_ServeStdio(t *testing.T) {
	env := []string{"PATH=" + standIns(t, exampleTools...), "HOME=" + t.TempDir()}
	cs, _ := startMCP(t, env, "--config", examplePath)
	list, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	assert.ElementsMatch(t, []string{
		"git.log", "git.status", "git.show", "git.diff", "kubectl.get", "kubectl.describe", "jq.run", "terraform.plan", "terraform",
	}, names)
	res := callTool(t, cs, "git.status", `{"flags":{"short":true}}`)
	require.False(t, res.IsError)
	var r execgate.Result
	structured(t, res, &r)
	assert.True(t, strings.HasSuffix(r.Stdout, " status --short --\n"), r.Stdout)
	assert.NotEqual(t, os.Getenv("PATH"), "", "the test's own PATH is untouched")
}

// TestExample_CasesPass runs the cases file shipped next to
// examples/tools.yaml, as an operator's CI would.
func TestExample_CasesPass(t *testing.T) {
	t.Setenv("PATH", standIns(t, exampleTools...))
	code, out, errOut := runCLI(t, "", "test", "--config", examplePath, "../../examples/tools_test.yaml")
	require.Equal(t, exitOK, code, out+errOut)
	assert.Contains(t, out, "9 cases, 9 passed, 0 failed")
}
