package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/mcpserver"
)

// rawMessage is a JSON-RPC message as the binary writes it on stdout.
type rawMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// rawStdio is the binary serving MCP on stdio, driven by hand-written
// lines.
type rawStdio struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *syncBuffer
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

// startRawStdio starts "execgate serve" with args and reads its stdout
// line by line.
func startRawStdio(t *testing.T, args ...string) *rawStdio {
	t.Helper()
	s := &rawStdio{cmd: exec.Command(binary(t), append([]string{"serve"}, args...)...),
		lines: make(chan []byte, 64), stderr: &syncBuffer{}, exited: make(chan struct{})}
	s.cmd.Stderr = s.stderr
	var err error
	s.stdin, err = s.cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := s.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, s.cmd.Start())
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(s.lines)
		br := bufio.NewReader(stdout)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			s.lines <- line
		}
	}()
	go func() {
		<-read // Wait closes stdout: read it all first
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		_ = s.stdin.Close()
		select {
		case <-s.exited:
		case <-time.After(20 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})
	return s
}

func (s *rawStdio) send(t *testing.T, text string) {
	t.Helper()
	_, err := io.WriteString(s.stdin, text)
	require.NoError(t, err, "the server stopped reading; stderr: %s", s.stderr)
}

// recv returns the next message the binary writes.
func (s *rawStdio) recv(t *testing.T) rawMessage {
	t.Helper()
	select {
	case line, ok := <-s.lines:
		require.True(t, ok, "the server closed stdout; stderr: %s", s.stderr)
		var m rawMessage
		require.NoError(t, json.Unmarshal(line, &m), "%s", line)
		require.Equal(t, "2.0", m.JSONRPC, "%s", line)
		return m
	case <-time.After(30 * time.Second):
		require.FailNow(t, "no answer", "stderr: %s", s.stderr)
		return rawMessage{}
	}
}

// initialize does the MCP handshake.
func (s *rawStdio) initialize(t *testing.T) {
	t.Helper()
	s.send(t, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"by-hand","version":"0"}}}`+"\n")
	m := s.recv(t)
	require.Nil(t, m.Error, "stderr: %s", s.stderr)
	require.JSONEq(t, `"init"`, string(m.ID))
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
}

// callResult decodes the result of a tools/call.
func callResult(t *testing.T, m rawMessage) (isError bool, content json.RawMessage) {
	t.Helper()
	require.Nil(t, m.Error)
	var res struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	require.NoError(t, json.Unmarshal(m.Result, &res), "%s", m.Result)
	return res.IsError, res.StructuredContent
}

// close ends stdin and returns the binary's exit status.
func (s *rawStdio) close(t *testing.T) error {
	t.Helper()
	require.NoError(t, s.stdin.Close())
	select {
	case <-s.exited:
		return s.err
	case <-time.After(20 * time.Second):
		require.FailNow(t, "serve did not exit at the end of stdin", "stderr: %s", s.stderr)
		return nil
	}
}

// overBound is a tools/call line longer than the stdio transport reads as
// one message, with its id last.
func overBound(id string) string {
	return `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo_run","arguments":{"args":["` +
		strings.Repeat("a", mcpserver.MaxFrameBytes) + `"]}},"id":` + id + "}\n"
}

// TestE2E_StdioBadFramesGetJSONRPCErrors: the binary answers every line
// that is not a JSON-RPC message with a JSON-RPC error on stdout and
// keeps serving; a later handshake and call work, an unlisted tool's
// refusal is in the audit file, and the end of stdin still exits 0.
func TestE2E_StdioBadFramesGetJSONRPCErrors(t *testing.T) {
	path := writeFile(t, "tools.yaml", testConfig)
	trail := writeFile(t, "audit.jsonl", "")
	s := startRawStdio(t, "--config", path, "--audit", trail)
	const parseError, invalidRequest = -32700, -32600
	for _, tc := range []struct {
		name, line string
		code       int
		id         string
	}{
		{"a word", "hello\n", parseError, "null"},
		{"an unterminated object", "{\n", parseError, "null"},
		{"an empty batch", "[]\n", invalidRequest, "null"},
		{"a batch", `[{"jsonrpc":"2.0","id":9,"method":"ping"}]` + "\n", invalidRequest, "null"},
		{"NUL bytes", "\x00\x00\x00\x00\n", parseError, "null"},
		{"invalid UTF-8", "\xff\xfe\xfd\n", parseError, "null"},
		{"an empty object", "{}\n", invalidRequest, "null"},
		{"a number", "42\n", invalidRequest, "null"},
		{"a request without method", `{"jsonrpc":"2.0","id":5}` + "\n", invalidRequest, "5"},
		{"a line over the bound", overBound("6"), invalidRequest, "6"},
	} {
		s.send(t, tc.line)
		m := s.recv(t)
		require.NotNil(t, m.Error, tc.name)
		assert.Equal(t, tc.code, m.Error.Code, "%s: %s", tc.name, m.Error.Message)
		assert.JSONEq(t, tc.id, string(m.ID), tc.name)
	}

	s.initialize(t)
	s.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo_run","arguments":{"args":["after","bad","frames"]}}}`+"\n")
	m := s.recv(t)
	assert.JSONEq(t, "2", string(m.ID), "no answer is left over from the bad lines")
	isError, content := callResult(t, m)
	require.False(t, isError, "%s", content)
	var r execgate.Result
	require.NoError(t, json.Unmarshal(content, &r))
	assert.Equal(t, "after bad frames\n", r.Stdout)
	assert.Equal(t, "echo.run", r.Name, "the tool echo_run is the command echo.run")

	// After the handshake too, a bad line is answered and the session goes on.
	s.send(t, "hello again\n")
	m = s.recv(t)
	require.NotNil(t, m.Error)
	assert.Equal(t, parseError, m.Error.Code)
	s.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"rm_run","arguments":{}}}`+"\n")
	m = s.recv(t)
	assert.JSONEq(t, "3", string(m.ID))
	isError, content = callResult(t, m)
	assert.True(t, isError)
	var st mcpserver.CallStatus
	require.NoError(t, json.Unmarshal(content, &st))
	assert.Equal(t, mcpserver.KindNotFound, st.Kind)

	require.NoError(t, s.close(t), "the end of stdin ends serve with exit 0; stderr: %s", s.stderr)

	// The unlisted tool's refusal is in the audit file, which verifies.
	code, out, errOut := runCLI(t, "", "audit", "verify", trail)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "ok:")
	b, err := os.ReadFile(trail)
	require.NoError(t, err)
	var found, echoed bool
	badLines := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.Contains(line, `"route":"mcp stdio"`) {
			badLines++
			assert.Contains(t, line, `"error":"request"`)
			assert.Contains(t, line, `"principal":"local-agent"`)
			assert.NotContains(t, line, "hello", "nothing of a refused line is recorded")
		}
		if strings.Contains(line, `"name":"echo.run"`) {
			echoed = true
		}
		assert.NotContains(t, line, `"name":"echo_run"`, "the trail names the command, not the MCP tool")
		if strings.Contains(line, `"name":"rm_run"`) {
			found = true
			assert.Contains(t, line, `"error":"not_found"`)
			assert.Contains(t, line, `"route":"mcp tools/call"`)
			assert.Contains(t, line, `"principal":"local-agent"`)
		}
	}
	assert.True(t, found, "the refusal of rm_run is in the trail:\n%s", b)
	assert.True(t, echoed, "the call of echo_run is in the trail as echo.run:\n%s", b)
	assert.Equal(t, 11, badLines, "every refused line is in the trail:\n%s", b)
}
