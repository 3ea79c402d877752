package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/mcpserver"
)

// reloadBase is the file a reloader starts with, with the action of its
// only rule in place of ACTION and more of the server section in place of
// SERVER.
const reloadBase = `version: 1
defaults: {env: {PATH: /usr/bin:/bin}}
tools:
  - name: echo
    bin: /bin/echo
    bare:
      positionals: {max: 2, pattern: '^[a-z]{1,10}$'}
policies:
  - name: all
    principal: "*"
    rules:
      - {name: echo, tools: [echo.run], action: ACTION}
server:
  principal: local-agent
  tokens:
    - {principal: ci-bot, sha256: "CALLER"}
  approvers:
    - {principal: alice, sha256: "APPROVER"}
SERVER`

func reloadText(action, server string) string {
	return strings.NewReplacer("ACTION", action, "SERVER", server,
		"CALLER", tokenHash(callerToken), "APPROVER", tokenHash(approverToken)).Replace(reloadBase)
}

// collidingTools are two tools whose names over MCP would both be a_b: the
// command a.b, and the dispatcher a_b. They go before the policies key.
const collidingTools = `  - name: a
    bin: /bin/echo
    strict: true
    commands:
      b: {}
  - name: a_b
    bin: /bin/echo
policies:
`

// TestReloader: what a reload applies, and what it refuses without
// changing anything.
func TestReloader(t *testing.T) {
	withoutPolicies := strings.Replace(reloadText("allow", ""), `policies:
  - name: all
    principal: "*"
    rules:
      - {name: echo, tools: [echo.run], action: allow}
`, "", 1)
	withoutApprovers := strings.Replace(reloadText("allow", ""), `  approvers:
    - {principal: alice, sha256: "`+tokenHash(approverToken)+`"}
`, "", 1)
	for _, tc := range []struct {
		name    string
		start   string // the file serve started with; reloadText("allow", "") if empty
		next    string // the file's new text; "" removes it
		options func(*reloader)
		err     string   // what the refusal says; "" when the reload is applied
		allowed bool     // whether echo.run runs for ci-bot afterwards
		callers []string // the tokens the API accepts afterwards
		warn    []string // what the warnings say
	}{
		{name: "a rule that now denies is in force after the reload",
			next: reloadText("deny", ""), allowed: false, callers: []string{callerToken}},
		{name: "a rule that now allows is in force after the reload",
			start: reloadText("deny", ""), next: reloadText("allow", ""), allowed: true, callers: []string{callerToken}},
		{name: "a new token is accepted, and the one the file no longer lists is refused",
			next:    strings.Replace(reloadText("allow", ""), tokenHash(callerToken), tokenHash("another-token"), 1),
			allowed: true, callers: []string{"another-token"}},
		{name: "a file with a problem changes nothing, and the error has its line",
			next: reloadText("allow", "  max_concurrent: 0\n"), err: "test.yaml:19:",
			allowed: true, callers: []string{callerToken}},
		{name: "a file that adds a policies section is refused, since the Executor has no Policy to swap rules into",
			start: withoutPolicies, next: reloadText("deny", ""), err: "a reload cannot add policies",
			allowed: true, callers: []string{callerToken}},
		{name: "a file that removes the policies section is refused, since every call would be allowed",
			start: reloadText("deny", ""), next: withoutPolicies, err: "a reload cannot remove the policies section",
			allowed: false, callers: []string{callerToken}},
		{name: "a file that is gone is refused",
			next: "", err: "no such file", allowed: true, callers: []string{callerToken}},
		{name: "a file over the size a load reads is refused",
			next: reloadText("allow", "#"+strings.Repeat("x", config.MaxFileSize)+"\n"), err: "larger than",
			allowed: true, callers: []string{callerToken}},
		{name: "a file without callers is refused when serving HTTP, and the policies are not swapped",
			next:    strings.Replace(strings.Replace(reloadText("deny", ""), "  tokens:\n", "", 1), `    - {principal: ci-bot, sha256: "`+tokenHash(callerToken)+`"}`+"\n", "", 1),
			options: func(r *reloader) { r.needTokens = true }, err: "lists no tokens",
			allowed: true, callers: []string{callerToken}},
		{name: "a file without approvers is applied when serving HTTP, with the warning a start gives",
			next: withoutApprovers, options: func(r *reloader) { r.needTokens = true },
			allowed: true, callers: []string{callerToken}, warn: []string{"lists no approvers"}},
		{name: "a file without approvers is refused when serving the approval routes",
			next: withoutApprovers, options: func(r *reloader) { r.needApprovers = true }, err: "needs approvers",
			allowed: true, callers: []string{callerToken}},
		{name: "changed bounds are reported as waiting for a restart, and the reload is applied",
			next: reloadText("deny", "  max_concurrent: 8\n  max_queue_wait: 1s\n"), allowed: false, callers: []string{callerToken},
			warn: []string{"key=server.max_concurrent\n", "key=server.max_concurrent_per_principal\n", "key=server.max_queue_wait\n"}},
		{name: "a changed approval store is reported as waiting for a restart: the approvals stay where they are",
			next: reloadText("deny", "  approval_store: {kind: postgres, dsn_env: EXECGATE_PG_DSN}\n"), allowed: false, callers: []string{callerToken},
			warn: []string{"key=server.approval_store\n"}},
		{name: "a changed audit store is reported as waiting for a restart: the calls go on to the trail serve started with",
			next: reloadText("deny", "  audit_store: {kind: postgres, dsn_env: EXECGATE_PG_DSN}\n"), allowed: false, callers: []string{callerToken},
			warn: []string{"key=server.audit_store\n"}},
		{name: "a changed principal over stdio is reported as waiting for a restart",
			next:    strings.Replace(reloadText("allow", ""), "principal: local-agent", "principal: other-agent", 1),
			options: func(r *reloader) { r.mcp = newTestMCP(t, r.x) }, allowed: true, callers: []string{callerToken},
			warn: []string{"key=server.principal\n"}},
		{name: "a file whose command names would be listed alike over MCP is refused, naming both",
			next:    strings.Replace(reloadText("allow", ""), "policies:\n", collidingTools, 1),
			options: func(r *reloader) { r.mcp = newTestMCP(t, r.x) }, err: "would both be listed",
			allowed: true, callers: []string{callerToken}},
		{name: "the same file is applied under --logical-names, whose tool names keep their dots",
			next:    strings.Replace(reloadText("allow", ""), "policies:\n", collidingTools, 1),
			options: func(r *reloader) { r.mcp, r.logicalNames = newTestMCP(t, r.x), true },
			allowed: true, callers: []string{callerToken}},
		{name: "a changed principal is not reported when --principal names it",
			next:    strings.Replace(reloadText("allow", ""), "principal: local-agent", "principal: other-agent", 1),
			options: func(r *reloader) { r.mcp, r.fixedPrincipal = newTestMCP(t, r.x), true }, allowed: true, callers: []string{callerToken}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := tc.start
			if start == "" {
				start = reloadText("allow", "")
			}
			path := writeFile(t, "test.yaml", start)
			loaded, err := config.LoadFile(path)
			require.NoError(t, err)
			rec := execgatetest.NewRecorder()
			g, err := newGate(loaded, "", rec.Exec)
			require.NoError(t, err)
			h, err := newAPI(apiOptions{Executor: g.x, Server: g.server()})
			require.NoError(t, err)
			logs := &syncBuffer{}
			r := &reloader{path: path, log: slog.New(slog.NewTextHandler(logs, nil)), x: g.x, cur: loaded, apis: []*api{h}}
			if tc.options != nil {
				tc.options(r)
			}
			if tc.next == "" {
				require.NoError(t, os.Remove(path))
			} else {
				require.NoError(t, os.WriteFile(path, []byte(tc.next), 0o600))
			}

			_, err = r.reload()
			if tc.err == "" {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.Same(t, loaded, r.cur, "the configuration in force is the one before")
			}

			_, err = g.x.Run(execgate.WithPrincipal(context.Background(), "ci-bot"), "echo.run", []byte(`{"args":["hi"]}`))
			var pe *execgate.PolicyError
			if tc.allowed {
				assert.NoError(t, err)
			} else {
				assert.True(t, errors.As(err, &pe), "%v", err)
			}
			for _, token := range []string{callerToken, "another-token"} {
				req := httptest.NewRequest("GET", "/v1/tools", nil)
				req.Header.Set("Authorization", "Bearer "+token)
				assert.Equal(t, contains(tc.callers, token), h.identify(req) == "ci-bot", token)
			}
			for _, w := range tc.warn {
				assert.Contains(t, logs.String(), w)
			}
			if tc.warn == nil {
				assert.NotContains(t, logs.String(), "level=WARN")
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// newTestMCP returns an MCP server of x's allowlist.
func newTestMCP(t *testing.T, x *execgate.Executor) *mcpserver.Server {
	t.Helper()
	ms, err := mcpserver.New(x, mcpserver.Options{Allowlist: x.Allowlist()})
	require.NoError(t, err)
	return ms
}

// TestReloader_LogsEveryProblem: a refused reload logs every problem of
// the file, each with its line, and says the configuration before stays.
func TestReloader_LogsEveryProblem(t *testing.T) {
	path := writeFile(t, "test.yaml", reloadText("allow", ""))
	loaded, err := config.LoadFile(path)
	require.NoError(t, err)
	g, err := newGate(loaded, "", execgatetest.NewRecorder().Exec)
	require.NoError(t, err)
	logs := &syncBuffer{}
	r := &reloader{path: path, log: slog.New(slog.NewTextHandler(logs, nil)), x: g.x, cur: loaded}
	bad := strings.Replace(reloadText("maybe", "  max_queue_wait: 5\n"), "bin: /bin/echo", "bin: echo/relative", 1)
	require.NoError(t, os.WriteFile(path, []byte(bad), 0o600))
	r.reloadAndLog()
	out := logs.String()
	for _, line := range []string{":5:", ":12:", ":19:"} {
		assert.Contains(t, out, "test.yaml"+line, "a problem at line %s", line)
	}
	assert.Equal(t, 3, strings.Count(out, "the configuration does not load"), out)
	assert.Contains(t, out, "reload refused; still serving the configuration loaded before")
}
