package main

import (
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/execgatetest"
)

// elicitationFile is a file for serve --mcp-http whose one tool needs a
// person's approval for every call and which lists no approvers, with
// server.mcp_http_elicitation in place of ELICIT.
const elicitationFile = `version: 1
defaults: {env: {PATH: /usr/bin:/bin}}
tools:
  - name: held
    bin: /bin/true
    bare: {human_approval: true}
server:
  principal: local-agent
  mcp_http_elicitation: ELICIT
  tokens:
    - {principal: ci-bot, sha256: "CALLER"}
`

// TestReload_NeverRunJudgesTheSettingsInForce: a reload does not apply
// server.mcp_http_elicitation (it warns that the value serve started
// with stays in force), so the tools it logs as never able to run are
// judged with the value in force, not the new file's. With elicitation
// off at the start and no approver, a held tool can never run, whether
// the new file turns elicitation on or not; with it on at the start, the
// tool can run, whatever the new file says.
func TestReload_NeverRunJudgesTheSettingsInForce(t *testing.T) {
	text := func(elicit string) string {
		return strings.NewReplacer("ELICIT", elicit, "CALLER", tokenHash(callerToken)).Replace(elicitationFile)
	}
	for _, c := range []struct {
		start, next string
		never       bool
	}{
		{"false", "true", true},
		{"false", "false", true},
		{"true", "false", false},
		{"true", "true", false},
	} {
		path := writeFile(t, "test.yaml", text(c.start))
		loaded, err := config.LoadFile(path)
		require.NoError(t, err)
		g, err := newGate(loaded, "", execgatetest.NewRecorder().Exec)
		require.NoError(t, err)
		logs := &syncBuffer{}
		r := &reloader{path: path, log: slog.New(slog.NewTextHandler(logs, nil)), x: g.x, cur: loaded,
			needTokens: true, mcpHTTP: true,
			gate: g, audience: mcpHTTPAudience(serverOf(loaded).MCPHTTPElicitation)}
		require.NoError(t, os.WriteFile(path, []byte(text(c.next)), 0o600))
		r.reloadAndLog()
		out := logs.String()
		require.Contains(t, out, "reloaded the configuration")
		if c.never {
			assert.Contains(t, out, `the tool \"held.run\" can never run here`, "elicitation %s at the start, %s in the file: %s", c.start, c.next, out)
		} else {
			assert.NotContains(t, out, "can never run", "elicitation %s at the start, %s in the file: %s", c.start, c.next, out)
		}
		g.Close()
	}
}

// TestReload_RulesInForceWithGrantsNotMadeIsNoRefusal: when the new
// file's rules went into force but some of its grants could not be made
// (config.Loaded.ReloadBytes returns the new configuration with the
// error), the reload puts the new tools in force beside those rules and
// logs the grants not made, and never says that it was refused and that
// the configuration loaded before is still served, which would be false.
func TestReload_RulesInForceWithGrantsNotMadeIsNoRefusal(t *testing.T) {
	const v1 = `version: 1
tools:
  - {name: one, bin: /bin/true, bare: {}}
server:
  tokens:
    - {principal: ci-bot, sha256: "CALLER"}
`
	text := func(tools string) string {
		return strings.NewReplacer("CALLER", tokenHash(callerToken), "one,", tools).Replace(v1)
	}
	path := writeFile(t, "test.yaml", text("one,"))
	loaded, err := config.LoadFile(path)
	require.NoError(t, err)
	g, err := newGate(loaded, "", execgatetest.NewRecorder().Exec)
	require.NoError(t, err)
	defer g.Close()
	logs := &syncBuffer{}
	notMade := config.ErrorList{{File: path, Line: 9, Column: 5, Path: "grants[0]", Message: "not created: the Engine holds as many grants as it may"}}
	r := &reloader{path: path, log: slog.New(slog.NewTextHandler(logs, nil)), x: g.x, cur: loaded,
		reloadBytes: func(cur *config.Loaded, name string, data []byte) (*config.Loaded, error) {
			next, err := cur.ReloadBytes(name, data)
			require.NoError(t, err)
			return next, notMade
		}}
	require.NoError(t, os.WriteFile(path, []byte(text("two,")), 0o600))
	r.reloadAndLog()
	out := logs.String()
	_, ok := g.x.Allowlist().Lookup("two.run")
	assert.True(t, ok, "the new tools are served beside the rules in force")
	_, ok = g.x.Allowlist().Lookup("one.run")
	assert.False(t, ok)
	assert.NotContains(t, out, "reload refused")
	assert.Contains(t, out, "reloaded the configuration, but for what it could not put in force")
	assert.Contains(t, out, "a grant of the configuration was not made")
	assert.Contains(t, out, "grants[0]")
}
