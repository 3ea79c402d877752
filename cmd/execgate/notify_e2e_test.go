package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/execgatetest"
)

// The secrets of the webhook end-to-end test, none of which may appear in
// a byte a webhook is sent.
const (
	e2eHookKey    = "e2e-webhook-signing-key-0123456789"
	e2eEnvValue   = "ENV-VALUE-only-the-child-sees-7f3a"
	e2eStdin      = "STDIN-CONTENT-kind: ClusterRoleBinding-9c1e"
	e2ePathSecret = "P4THSECRET"
)

// notifyConfig holds cat.run and env.run for an approval, the webhook at
// URL, and the env value only the children see.
const notifyConfig = `version: 1
defaults: {timeout: 10s, env: {PATH: /usr/bin:/bin, GATE_SECRET: "ENVVALUE"}}
tools:
  - name: cat
    bin: /bin/cat
    description: Print stdin.
    bare:
      stdin: {}
  - name: env
    bin: /usr/bin/env
    description: Print the environment.
    bare: {}
policies:
  - name: everyone
    principal: "*"
    rules:
      - {name: held, tools: [cat.run, env.run], action: require_approval}
server:
  tokens:
    - {principal: ci-bot, sha256: "CALLER"}
  approvers:
    - {principal: alice, sha256: "APPROVER"}
  notify:
    - url: URL
      secret_env: EXECGATE_E2E_HOOK_KEY
      timeout: 5s
`

func notifyConfigText(url string) string {
	return strings.NewReplacer("URL", url, "ENVVALUE", e2eEnvValue,
		"CALLER", tokenHash(callerToken), "APPROVER", tokenHash(approverToken)).Replace(notifyConfig)
}

// TestE2E_WebhooksAreToldAndNeverSentSecrets: serve --http, with a
// webhook, posts it a signed message for each pending approval and each
// decision, and not one byte delivered (headers or body) holds a bearer
// token, the signing key, an environment value or stdin's content, though
// the approved calls printed them.
func TestE2E_WebhooksAreToldAndNeverSentSecrets(t *testing.T) {
	h := newHookReceiver(t)
	h.key = e2eHookKey
	path := writeFile(t, "tools.yaml", notifyConfigText(h.srv.URL+"/hooks/"+e2ePathSecret))
	p := startServeEnv(t, []string{"PATH=/usr/bin:/bin", "EXECGATE_E2E_HOOK_KEY=" + e2eHookKey}, "--config", path, "--http", "127.0.0.1:0")
	base := p.stderr.waitFor(t, regexp.MustCompile(`serving the HTTP API on (http://127\.0\.0\.1:\d+)`))
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	call := func(method, route, token, body string) (int, response) {
		t.Helper()
		req, err := http.NewRequest(method, base+route, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var r response
		require.NoError(t, json.Unmarshal(b, &r), "%s", b)
		return resp.StatusCode, r
	}

	stdin, _ := json.Marshal(map[string]string{"stdin": e2eStdin})
	code, catHeld := call("POST", "/v1/tools/cat.run", callerToken, string(stdin))
	require.Equal(t, http.StatusAccepted, code, "%+v", catHeld.Error)
	code, envHeld := call("POST", "/v1/tools/env.run", callerToken, `{}`)
	require.Equal(t, http.StatusAccepted, code, "%+v", envHeld.Error)
	waitFor(t, "both pending approvals are told", func() bool { return len(h.deliveries()) >= 2 })

	code, ran := call("POST", "/v1/approvals/"+catHeld.Approval.ID, approverToken, `{"action":"approve"}`)
	require.Equal(t, http.StatusOK, code, "%+v", ran.Error)
	require.Equal(t, e2eStdin, ran.Result.Stdout, "cat printed stdin")
	code, ran = call("POST", "/v1/approvals/"+envHeld.Approval.ID, approverToken, `{"action":"approve"}`)
	require.Equal(t, http.StatusOK, code, "%+v", ran.Error)
	require.Contains(t, ran.Result.Stdout, e2eEnvValue, "env printed the value")
	waitFor(t, "both decisions are told", func() bool { return len(h.deliveries()) >= 4 })
	p.stop(t)

	got := h.deliveries()
	require.Len(t, got, 4, "one message per pending approval and per decision")
	var lines []string
	for _, d := range got {
		shown := d.msg["approval"].(map[string]any)
		line := fmt.Sprintf("%s %s %s", d.msg["type"], shown["name"], shown["principal"])
		if dec, ok := d.msg["decision"].(map[string]any); ok {
			line += fmt.Sprintf(" %s by %s: %s", dec["action"], dec["approver"], dec["state"])
		}
		lines = append(lines, line)
	}
	assert.Equal(t, []string{
		"approval.pending cat.run ci-bot",
		"approval.pending env.run ci-bot",
		"approval.decided cat.run ci-bot approve by alice: approved",
		"approval.decided env.run ci-bot approve by alice: approved",
	}, lines)
	stdinShown := got[0].msg["approval"].(map[string]any)["stdin"]
	assert.Equal(t, map[string]any{"bytes": float64(len(e2eStdin)), "sha256": tokenHash(e2eStdin)}, stdinShown)

	for _, d := range got {
		var all strings.Builder
		_ = d.header.Write(&all)
		all.Write(d.body)
		for _, secret := range []string{callerToken, approverToken, e2eHookKey, e2eEnvValue, e2eStdin, "STDIN-CONTENT", "ENV-VALUE"} {
			assert.NotContains(t, all.String(), secret, "a delivered %s", d.msg["type"])
		}
	}
	logs := p.stderr.String()
	assert.Equal(t, 4, strings.Count(logs, "a webhook took a message"), logs)
	for _, secret := range []string{e2eHookKey, e2ePathSecret} {
		assert.NotContains(t, logs, secret, "the logs name a webhook by scheme and host only")
	}
}

// TestServe_WebhookKeyMissingRefusesStart: serve refuses to start when a
// webhook's key is not in its environment, naming the variable at the
// entry's line; and over stdio alone, where no approval waits for
// approvers, the webhooks are not started and the key is not needed.
func TestServe_WebhookKeyMissingRefusesStart(t *testing.T) {
	require.Empty(t, os.Getenv("EXECGATE_E2E_HOOK_KEY"))
	path := writeFile(t, "tools.yaml", notifyConfigText("https://hooks.example.com/x"))
	code, _, stderr := runCLI(t, "", "serve", "--config", path, "--http", "127.0.0.1:0")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, path+":24: server.notify[0].secret_env: the environment variable EXECGATE_E2E_HOOK_KEY is not set in serve's environment")

	code, _, stderr = runCLI(t, "", "serve", "--config", path)
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, "server.notify is not used over stdio without --approver-http")
}

// TestReloader_Webhooks: a reload applies server.notify (a webhook added
// is told from then on, one removed is told nothing more), and refuses a
// file whose webhook's key is not in the environment, keeping the
// webhooks before.
func TestReloader_Webhooks(t *testing.T) {
	first, second := newHookReceiver(t), newHookReceiver(t)
	section := func(url, env string) string {
		return "  notify:\n    - {url: \"" + url + "\", secret_env: " + env + "}\n"
	}
	path := writeFile(t, "test.yaml", reloadText("require_approval", section(first.srv.URL, "RELOAD_KEY")))
	loaded, err := config.LoadFile(path)
	require.NoError(t, err)
	g, err := newGate(loaded, "", execgatetest.NewRecorder().Exec)
	require.NoError(t, err)
	env := map[string]string{"RELOAD_KEY": testHookKey}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	n, err := startNotifier(path, g.server(), func(k string) string { return env[k] }, log)
	require.NoError(t, err)
	t.Cleanup(func() { n.close(time.Minute) })
	r := &reloader{path: path, log: log, x: g.x, cur: loaded, notify: n}

	require.NoError(t, os.WriteFile(path, []byte(reloadText("require_approval", section(second.srv.URL, "RELOAD_KEY"))), 0o600))
	_, err = r.reload()
	require.NoError(t, err)
	n.pending(hookApproval("x"))
	waitFor(t, "the new webhook is told", func() bool { return len(second.deliveries()) == 1 })

	require.NoError(t, os.WriteFile(path, []byte(reloadText("require_approval", section(first.srv.URL, "UNSET_KEY"))), 0o600))
	_, err = r.reload()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "test.yaml:20: server.notify[0].secret_env: the environment variable UNSET_KEY is not set")
	n.pending(hookApproval("x"))
	n.close(time.Minute)
	assert.Len(t, second.deliveries(), 2, "the webhooks before stay in force")
	assert.Empty(t, first.deliveries(), "a webhook removed by a reload is told nothing more")
}
