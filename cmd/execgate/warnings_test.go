package main

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// neverRunConfig has a tool of each kind serve must judge, for
// local-agent over stdio and ci-bot over HTTP:
//
//   - echo.run is allowed; kube, a dispatcher, allows kube.get: both run;
//   - forbidden.run is denied by a rule, and locked, a dispatcher, by its
//     default_action: neither can ever run;
//   - deploy, a dispatcher, holds every call (default_action), and
//     review.run is held by a rule: they run only where something
//     approves;
//   - granted.run is held by a rule, and a grant waives that for
//     local-agent only.
//
// APPROVERS and MORE are more of the server section.
const neverRunConfig = `version: 1
defaults: {timeout: 10s, env: {PATH: /usr/bin:/bin}}
tools:
  - {name: echo, bin: /bin/echo, description: Print., bare: {}}
  - {name: forbidden, bin: /bin/echo, description: Denied., bare: {}}
  - {name: review, bin: /bin/echo, description: Reviewed., bare: {}}
  - {name: granted, bin: /bin/echo, description: Granted., bare: {}}
  - {name: deploy, bin: /bin/echo, description: Deploy., default_action: human_approval}
  - {name: kube, bin: /bin/echo, description: Kubectl., default_action: allow}
  - {name: locked, bin: /bin/echo, description: Locked., default_action: deny}
policies:
  - name: everyone
    principal: "*"
    rules:
      - {name: never, tools: [forbidden.run], action: deny}
      - {name: echo, tools: [echo.run, kube.get], action: allow}
      - {name: held, tools: ["deploy.*", review.run, granted.run], action: require_approval}
grants:
  - {principal: local-agent, tool: granted.run, expires: "EXPIRES"}
server:
  principal: local-agent
  tokens:
    - {principal: ci-bot, sha256: "CALLER"}
APPROVERSMORE`

// neverRunText is neverRunConfig, with approvers when approvers is set,
// and more at the end of the server section.
func neverRunText(approvers bool, more string) string {
	a := ""
	if approvers {
		a = "  approvers:\n    - {principal: alice, sha256: \"" + tokenHash(approverToken) + "\"}\n"
	}
	return strings.NewReplacer("EXPIRES", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "CALLER", tokenHash(callerToken),
		"APPROVERS", a, "MORE", more).Replace(neverRunConfig)
}

// neverRun returns, from serve's JSON log lines, the tools it warned can
// never run, each as many times as it was warned about, and the
// warnings' messages.
func neverRun(t *testing.T, stderr string) (tools, msgs []string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		var rec struct {
			Level, Msg, Tool string
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "every line is JSON: %q", line)
		if rec.Level == "WARN" && strings.Contains(rec.Msg, "can never run") {
			tools = append(tools, rec.Tool)
			msgs = append(msgs, rec.Msg)
		}
	}
	slices.Sort(tools)
	return tools, msgs
}

// TestE2E_ServeWarnsOfToolsThatCanNeverRun: serve, the built binary,
// warns at start, once per tool, about each tool that no call can run on
// the transport it serves: one the policy denies to every caller, and,
// where nothing could approve a held call, one whose every call is held.
// A tool some call of which can run is not named: an allowed one, a
// dispatcher that allows one of its subcommands, a held one where an
// approver or the client's user can approve, one a grant waives the
// approval of for the caller.
func TestE2E_ServeWarnsOfToolsThatCanNeverRun(t *testing.T) {
	denied := []string{"forbidden.run", "locked"}
	held := []string{"deploy", "forbidden.run", "granted.run", "locked", "review.run"}
	heldStdio := []string{"deploy", "forbidden.run", "locked", "review.run"} // granted.run: local-agent's grant
	for _, tc := range []struct {
		about     string
		approvers bool
		more      string
		args      []string
		want      []string
		says      string
	}{
		{"stdio: the client's user may be asked (elicit)", false, "", nil, denied, ""},
		{"stdio: with --approver-http", true, "", []string{"--approver-http", "127.0.0.1:0"}, denied, ""},
		{"stdio: --approvals pending without --approver-http", false, "", []string{"--approvals", "pending"}, heldStdio, "without --approver-http no approver can decide one"},
		{"stdio: --approvals refuse", true, "", []string{"--approvals", "refuse"}, heldStdio, "--approvals refuse refuses every call that needs an approval"},
		{"--mcp-http without approvers", false, "", []string{"--mcp-http", "127.0.0.1:0"}, held, "the server section lists no approvers, and server.mcp_http_elicitation is not true"},
		{"--mcp-http with approvers", true, "", []string{"--mcp-http", "127.0.0.1:0"}, denied, ""},
		{"--mcp-http where clients may approve by elicitation", false, "  mcp_http_elicitation: true\n", []string{"--mcp-http", "127.0.0.1:0"}, denied, ""},
		{"--http without approvers", false, "", []string{"--http", "127.0.0.1:0"}, held, "the server section lists no approvers"},
		{"--http with approvers", true, "", []string{"--http", "127.0.0.1:0"}, denied, ""},
	} {
		t.Run(tc.about, func(t *testing.T) {
			path := writeFile(t, "tools.yaml", neverRunText(tc.approvers, tc.more))
			args := append([]string{"--config", path}, tc.args...)
			var stderr string
			if slices.Contains(tc.args, "--http") || slices.Contains(tc.args, "--mcp-http") {
				p := startServe(t, args...)
				p.stderr.waitFor(t, regexp.MustCompile(`"msg":"execgate: (serving) `))
				p.stop(t)
				stderr = p.stderr.String()
			} else {
				// Over stdio, with stdin at its end: serve starts, warns,
				// and stops when the client is gone.
				cmd := exec.Command(binary(t), append([]string{"serve"}, args...)...)
				buf := &syncBuffer{}
				cmd.Stderr = buf
				require.NoError(t, cmd.Run(), "stderr: %s", buf)
				stderr = buf.String()
			}
			tools, msgs := neverRun(t, stderr)
			assert.Equal(t, tc.want, tools, "each tool that can never run, once; stderr:\n%s", stderr)
			for _, m := range msgs {
				if strings.Contains(m, "needs a person's approval") {
					assert.Contains(t, m, tc.says)
				} else {
					assert.Regexp(t, `the policy denies every call of it to every caller \("(local-agent|ci-bot)"\)$|"locked" can never run here: its default_action denies every call of it$`, m)
				}
			}
			if tc.says != "" {
				assert.Contains(t, strings.Join(msgs, "\n"), `execgate: the tool "deploy" can never run here: every call of it that the policy does not deny needs a person's approval, and nothing can give one: `+tc.says)
			}
		})
	}
}
