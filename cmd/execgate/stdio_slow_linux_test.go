//go:build linux

package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// napConfig serves nap.run (the MCP tool nap_run), /bin/sleep for a few
// seconds, over stdio.
var napConfig = `version: 1
defaults: {timeout: 60s, env: {PATH: /usr/bin:/bin}}
tools:
  - name: nap
    bin: /bin/sleep
    bare:
      positionals: {max: 1, pattern: '^[0-9]$'}
server:
  principal: local-agent
`

// TestE2E_StdioBadFramesDoNotCancelARunningCall: while a real /bin/sleep
// runs for a call, the client writes lines that are not messages; each
// gets its error at once, and the sleep runs to its end and its call
// returns an exit, not a cancellation.
func TestE2E_StdioBadFramesDoNotCancelARunningCall(t *testing.T) {
	const seconds = 2
	s := startRawStdio(t, "--config", writeFile(t, "nap.yaml", napConfig))
	s.initialize(t)
	s.send(t, `{"jsonrpc":"2.0","id":"nap","method":"tools/call","params":{"name":"nap_run","arguments":{"args":["2"]}}}`+"\n")
	sent := time.Now()

	// Wait until the server's sleep runs.
	server := s.cmd.Process.Pid
	var sleeping int
	for deadline := time.Now().Add(20 * time.Second); sleeping == 0 && time.Now().Before(deadline); {
		for pid, p := range procTree(t) {
			if p.comm == "sleep" && p.ppid == server {
				sleeping = pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.NotZero(t, sleeping, "the call started /bin/sleep; stderr: %s", s.stderr)

	for _, bad := range []string{"hello\n", "{\n", "[]\n", "\x00\x00\n", overBound(`"big"`)} {
		s.send(t, bad)
		m := s.recv(t)
		require.NotNil(t, m.Error, "%.20q is answered with an error, before the call's result", bad)
	}
	assert.True(t, alive(sleeping), "the sleep still runs after the bad lines")
	s.send(t, `{"jsonrpc":"2.0","id":"ping","method":"ping"}`+"\n")
	m := s.recv(t)
	require.JSONEq(t, `"ping"`, string(m.ID), "the session answers while the call runs")

	m = s.recv(t)
	require.JSONEq(t, `"nap"`, string(m.ID))
	isError, content := callResult(t, m)
	require.False(t, isError, "%s", content)
	var r execgate.Result
	require.NoError(t, json.Unmarshal(content, &r))
	assert.Equal(t, execgate.TerminationExit, r.Termination, "the call ran to its end, not canceled")
	assert.True(t, r.OK)
	assert.Equal(t, sleeping, r.PID)
	assert.GreaterOrEqual(t, time.Since(sent), seconds*time.Second)
	assert.GreaterOrEqual(t, r.Duration, seconds*time.Second-100*time.Millisecond)

	require.NoError(t, s.close(t), "stderr: %s", s.stderr)
}
