package main

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/mcpserver"
)

// examplePath is the configuration the README shows.
const examplePath = "../../examples/tools.yaml"

// exampleTools are the programs examples/tools.yaml names, each through a
// profile. The tests put stand-ins for them on PATH, so that they pass
// whether or not a machine has them, and print the argv they were given.
// A profile's bin is found on PATH when the file loads, and a stand-in
// runs under the profile's confinement as the program would.
var exampleTools = []string{"git", "rg", "jq", "kubectl", "terraform", "curl"}

// gitFixed are the arguments the git profile puts before every command.
const gitFixed = "--no-pager --git-dir=.git/. --work-tree=. -c core.hooksPath=/dev/null -c core.fsmonitor=false -c core.pager=cat" +
	" -c core.attributesFile=/dev/null -c core.sshCommand=false -c protocol.allow=never" +
	" -c grep.fallbackToNoIndex=false -c log.showSignature=false -c help.autocorrect=0" +
	" -c diff.submodule=short -c diff.autoRefreshIndex=false -c mailmap.file=/dev/null" +
	" -c diff.orderFile=/dev/null -c core.excludesFile=/dev/null -c format.pretty=medium" +
	" -c gpg.program=/nonexistent -c gpg.openpgp.program=/nonexistent -c gpg.x509.program=/nonexistent" +
	" -c gpg.ssh.program=/nonexistent -c status.submoduleSummary=false -c submodule.recurse=false" +
	" -c color.ui=never -c color.diff=never -c color.status=never -c color.grep=never" +
	" -c blame.coloring=none -c grep.threads=0 -c index.threads=true -c core.checkStat=default -c core.trustctime=true" +
	" -c core.multiPackIndex=false"

// exampleNames are the tools examples/tools.yaml serves.
var exampleNames = []string{
	"git.log", "git.status", "git.show", "git.diff", "git.blame", "git.grep", "git.ls-files",
	"rg.run", "jq.run",
	"kubectl.get", "kubectl.describe", "kubectl.logs", "kubectl.api-resources",
	"terraform.validate", "terraform.plan", "terraform.show", "terraform.fmt", "terraform.apply",
	"curl.run",
}

func TestExample_Checks(t *testing.T) {
	t.Setenv("PATH", standIns(t, exampleTools...))
	code, out, errOut := runCLI(t, "", "check", "--config", examplePath)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, ": ok: 6 tools, 19 commands")
	assert.Regexp(t, `(?m)^  git +strict +git\.log, git\.status, git\.show, git\.diff, git\.blame, git\.grep, git\.ls-files$`, out)
	assert.Regexp(t, `(?m)^  rg +bare +rg\.run$`, out)
	assert.Regexp(t, `(?m)^  jq +bare +jq\.run$`, out)
	assert.Regexp(t, `(?m)^  kubectl +strict +kubectl\.get, kubectl\.describe, kubectl\.logs, kubectl\.api-resources$`, out)
	assert.Regexp(t, `(?m)^  terraform +strict +terraform\.plan, terraform\.validate, terraform\.show, terraform\.fmt, terraform\.apply$`, out)
	assert.Regexp(t, `(?m)^  curl +bare +curl\.run$`, out)
	assert.Contains(t, out, "local: principal local-agent, 3 rules")
	assert.Contains(t, out, "ci: principal ci-bot, 2 rules")
	assert.Contains(t, out, "server: stdio principal local-agent; 1 caller tokens (ci-bot); 1 approver tokens (alice)")
	// Nothing to warn of: every policy pattern matches a served name,
	// every command is described, and no profile's example needs a file
	// this directory may lack.
	assert.Empty(t, errOut)

	code, out, errOut = runCLI(t, "", "tools", "--config", examplePath)
	require.Equal(t, exitOK, code, errOut)
	var list toolList
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	assert.ElementsMatch(t, exampleNames, names)
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

	for _, tc := range []struct {
		about string
		args  []string
		argv  string
	}{
		{"git runs with the profile's -c overrides, and log with --no-ext-diff --no-textconv",
			[]string{"git.log", `{"flags":{"max-count":5,"oneline":true},"args":["README.md"]}`},
			gitFixed + " log --no-ext-diff --no-textconv --max-count=5 --oneline -- README.md"},
		{"rg reads no config file and no ignore file",
			[]string{"rg.run", `{"flags":{"line-number":true,"regexp":["func main"]},"args":["main.go"]}`},
			"--no-config --no-ignore --regexp=func main --line-number -- main.go"},
		{"jq takes the filter and the JSON on stdin",
			[]string{"jq.run", `{"flags":{"raw-output":true},"args":[".items[] | .name"],"stdin":"{\"items\":[]}"}`},
			"-L /dev/null --raw-output .items[] | .name"},
		{"kubectl uses the file's kubeconfig and its first namespace, which a caller's listed -n overrides",
			[]string{"kubectl.get", `{"flags":{"namespace":"staging","output":"wide"},"args":["pods/web-1"]}`},
			"--kubeconfig=/etc/execgate/kubeconfig --namespace=default get --namespace=staging --output=wide pods/web-1"},
		{"ci-bot plans, without input, colour or the state lock",
			[]string{"--principal", "ci-bot", "terraform.plan", `{"flags":{"target":["module.web"]}}`},
			"plan -input=false -no-color -lock=false -target module.web"},
		{"curl fetches a listed host over https only, following no redirect",
			[]string{"curl.run", `{"flags":{"head":true},"args":["https://api.github.com/repos/execgate/execgate"]}`},
			"-q --globoff --proto =https --proto-redir =https --max-redirs 0 --max-filesize 8388608 --no-progress-meter --head -- https://api.github.com/repos/execgate/execgate"},
	} {
		code, r, ref := run(tc.args...)
		require.Equal(t, exitOK, code, "%s: %+v", tc.about, ref.Error)
		assert.Equal(t, tc.argv+"\n", r.Stdout, tc.about)
	}

	for _, tc := range []struct {
		about      string
		args       []string
		kind, rule string
	}{
		{"git push is not a git command the profile serves",
			[]string{"git.push", `{}`}, execgate.ErrorKindNotFound, ""},
		{"git.log declares no --output",
			[]string{"git.log", `{"flags":{"output":"/tmp/x"}}`}, execgate.ErrorKindValidation, ""},
		{"a path out of the tree, which git diff would answer with --no-index",
			[]string{"git.diff", `{"args":["src/../../secret.txt","README"]}`}, execgate.ErrorKindValidation, ""},
		{"secrets are not a kind kubectl.get takes",
			[]string{"kubectl.get", `{"args":["secrets"]}`}, execgate.ErrorKindValidation, ""},
		{"kube-system is not a namespace the file lists",
			[]string{"kubectl.get", `{"flags":{"namespace":"kube-system"},"args":["pods"]}`}, execgate.ErrorKindValidation, ""},
		{"kubectl delete is not served",
			[]string{"kubectl.delete", `{}`}, execgate.ErrorKindNotFound, ""},
		{"curl reaches only the listed host",
			[]string{"curl.run", `{"args":["https://example.com/"]}`}, execgate.ErrorKindValidation, ""},
		{"apply needs a person, and run cannot wait for one",
			[]string{"terraform.apply", `{"flags":{"target":["module.web"]}}`}, execgate.ErrorKindPolicy, "local/infra"},
		{"terraform destroy is not served",
			[]string{"terraform.destroy", `{}`}, execgate.ErrorKindNotFound, ""},
		{"ci-bot may not read the cluster",
			[]string{"--principal", "ci-bot", "kubectl.get", `{"args":["pods"]}`}, execgate.ErrorKindPolicy, "ci/default"},
		{"ci-bot may not reach the network",
			[]string{"--principal", "ci-bot", "curl.run", `{"args":["https://api.github.com/"]}`}, execgate.ErrorKindPolicy, "ci/default"},
	} {
		code, _, ref := run(tc.args...)
		assert.Equal(t, exitFailed, code, tc.about)
		require.NotNil(t, ref.Error, tc.about)
		assert.Equal(t, tc.kind, ref.Error.Kind, "%s: %s", tc.about, ref.Error.Message)
		if tc.rule != "" {
			assert.Equal(t, tc.rule, ref.Error.Rule, tc.about)
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
	var names, want []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	for _, n := range exampleNames {
		want = append(want, mcpserver.ToolName(n))
	}
	assert.ElementsMatch(t, want, names, "each command under its client-safe name")
	assert.Contains(t, names, "git_status")

	res := callTool(t, cs, "git_status", `{"flags":{"short":true}}`)
	require.False(t, res.IsError, "%+v", res.Content)
	var r execgate.Result
	structured(t, res, &r)
	assert.Equal(t, "git.status", r.Name)
	assert.Equal(t, gitFixed+" status --ignore-submodules=dirty --short --\n", r.Stdout)

	for _, tc := range []struct{ about, tool, args, kind string }{
		{"the git.diff leak: a path out of the tree", "git_diff", `{"args":["src/../../secret.txt","README"]}`, mcpserver.KindInvalidInput},
		{"secrets are not a kind kubectl.get takes", "kubectl_get", `{"args":["secrets"]}`, mcpserver.KindInvalidInput},
		{"terraform destroy is not served", "terraform_destroy", `{}`, mcpserver.KindNotFound},
	} {
		res := callTool(t, cs, tc.tool, tc.args)
		require.True(t, res.IsError, tc.about)
		var st mcpserver.CallStatus
		structured(t, res, &st)
		assert.Equal(t, mcpserver.StatusRefused, st.Status, tc.about)
		assert.Equal(t, tc.kind, st.Kind, tc.about)
	}

	// This client cannot elicit and no approver is reachable: apply,
	// which needs a person's approval, is refused, saying so.
	res = callTool(t, cs, "terraform_apply", `{"flags":{"target":["module.web"]}}`)
	require.True(t, res.IsError)
	var st mcpserver.CallStatus
	structured(t, res, &st)
	assert.Equal(t, mcpserver.StatusRefused, st.Status)
	assert.Contains(t, st.Message, "nothing here can give one")
	assert.NotEqual(t, os.Getenv("PATH"), "", "the test's own PATH is untouched")
}

// TestExample_CasesPass runs the cases file shipped next to
// examples/tools.yaml, as an operator's CI would.
func TestExample_CasesPass(t *testing.T) {
	t.Setenv("PATH", standIns(t, exampleTools...))
	code, out, errOut := runCLI(t, "", "test", "--config", examplePath, "../../examples/tools_test.yaml")
	require.Equal(t, exitOK, code, out+errOut)
	assert.Contains(t, out, "14 cases, 14 passed, 0 failed")
}
