package main

import (
	"log/slog"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/execgatetest"
)

// TestReloader_ApprovalWaitWaitsForARestart: a reload that changes
// server.approval_wait is applied, and says the wait serve started with
// stays in force over MCP; serving only the HTTP API, which has no such
// wait, it says nothing.
func TestReloader_ApprovalWaitWaitsForARestart(t *testing.T) {
	for _, overMCP := range []bool{true, false} {
		path := writeFile(t, "test.yaml", reloadText("allow", ""))
		loaded, err := config.LoadFile(path)
		require.NoError(t, err)
		g, err := newGate(loaded, "", execgatetest.NewRecorder().Exec)
		require.NoError(t, err)
		logs := &syncBuffer{}
		r := &reloader{path: path, log: slog.New(slog.NewTextHandler(logs, nil)), x: g.x, cur: loaded}
		if overMCP {
			r.mcp = newTestMCP(t, g.x)
		}
		require.NoError(t, os.WriteFile(path, []byte(reloadText("allow", "  approval_wait: 2m\n")), 0o600))
		_, err = r.reload()
		require.NoError(t, err)
		if overMCP {
			assert.Contains(t, logs.String(), "key=server.approval_wait\n")
		} else {
			assert.NotContains(t, logs.String(), "approval_wait")
		}
	}
}
