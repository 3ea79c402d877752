package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/mcpserver"
)

// wireMessage is a JSON-RPC message as a client reads it.
type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Method string `json:"method"`
}

// stdioSession is a Server run over StdioTransport on pipes, driven by
// hand-written lines.
type stdioSession struct {
	in    *io.PipeWriter
	lines chan []byte
	done  chan error
}

func startStdio(t *testing.T, srv *mcpserver.Server) *stdioSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &stdioSession{in: inW, lines: make(chan []byte, 64), done: make(chan error, 1)}
	go func() {
		s.done <- srv.Run(context.Background(), mcpserver.StdioTransport(inR, outW))
		outW.Close()
	}()
	go func() {
		br := bufio.NewReader(outR)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				close(s.lines)
				return
			}
			s.lines <- line
		}
	}()
	t.Cleanup(func() { s.close(t) })
	return s
}

// send writes text to the server's input as it is.
func (s *stdioSession) send(t *testing.T, text string) {
	t.Helper()
	_, err := io.WriteString(s.in, text)
	require.NoError(t, err)
}

// recv returns the next line the server writes.
func (s *stdioSession) recv(t *testing.T) wireMessage {
	t.Helper()
	select {
	case line, ok := <-s.lines:
		require.True(t, ok, "the server stopped writing")
		require.True(t, strings.HasSuffix(string(line), "\n"))
		var m wireMessage
		require.NoError(t, json.Unmarshal(line, &m), "%s", line)
		assert.Equal(t, "2.0", m.JSONRPC, "%s", line)
		return m
	case <-time.After(20 * time.Second):
		require.FailNow(t, "no answer from the server")
		return wireMessage{}
	}
}

// initialize does the MCP handshake.
func (s *stdioSession) initialize(t *testing.T) {
	t.Helper()
	s.send(t, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hand","version":"0"}}}`+"\n")
	m := s.recv(t)
	require.Nil(t, m.Error)
	require.JSONEq(t, `"init"`, string(m.ID))
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
}

// close ends the input and waits for the session to end cleanly.
func (s *stdioSession) close(t *testing.T) {
	t.Helper()
	_ = s.in.Close()
	select {
	case err := <-s.done:
		assert.NoError(t, err, "the end of input ends the session cleanly")
		s.done <- err
	case <-time.After(20 * time.Second):
		t.Error("the session did not end at the end of its input")
	}
	for range s.lines {
	}
}

// oversized is a message line longer than MaxFrameBytes, with its id
// after the long member, where clients that write "id" last put it.
func oversized(id string) string {
	pad := strings.Repeat("x", mcpserver.MaxFrameBytes)
	return `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo_hello","arguments":{"pad":"` + pad + `"}},"id":` + id + "}\n"
}

func TestStdioTransport_BadFramesAreAnsweredAndTheSessionGoesOn(t *testing.T) {
	const (
		parseError     = -32700
		invalidRequest = -32600
	)
	cases := []struct {
		name string
		line string
		code int    // 0: no answer
		id   string // the answer's id, as JSON
		why  string
	}{
		{"word", "hello\n", parseError, "null",
			"a stray word (a person typing into the session) is not JSON and must not end the session"},
		{"unterminated object", "{\n", parseError, "null",
			"a message cut short is a parse error, not the end of the input"},
		{"NUL bytes", "\x00\x00\x00\n", parseError, "null",
			"binary garbage is refused, not a crash"},
		{"NUL in a string", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\x00\"}\n", parseError, "null",
			"a raw NUL byte is never passed on, wherever it is"},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}\n", parseError, "null",
			"bytes that are not UTF-8 are refused rather than silently replaced"},
		{"trailing data", `{"jsonrpc":"2.0","id":1,"method":"ping"} {"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n", parseError, "null",
			"two messages on one line are not one message"},
		{"empty batch", "[]\n", invalidRequest, "null",
			"an empty array is an invalid request, as JSON-RPC says"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]` + "\n", invalidRequest, "null",
			"batches are refused whole: none of their messages is handled"},
		{"empty object", "{}\n", invalidRequest, "null",
			"an object with no members is not a message"},
		{"number", "42\n", invalidRequest, "null",
			"JSON that is not an object is not a message"},
		{"string", "\"ping\"\n", invalidRequest, "null",
			"a string is not a message"},
		{"null", "null\n", invalidRequest, "null",
			"null is not a message"},
		{"wrong version", `{"jsonrpc":"1.0","id":2,"method":"ping"}` + "\n", invalidRequest, "2",
			"only JSON-RPC 2.0 is spoken; the id is repeated so the client can match the answer"},
		{"no version", `{"id":"v","method":"ping"}` + "\n", invalidRequest, `"v"`,
			"the version member is required"},
		{"case variant", `{"JSONRPC":"2.0","ID":3,"METHOD":"ping"}` + "\n", invalidRequest, "null",
			"members match exactly, never case-insensitively"},
		{"no method, no id", `{"jsonrpc":"2.0"}` + "\n", invalidRequest, "null",
			"a message without method must be a response with an id"},
		{"no method, no result", `{"jsonrpc":"2.0","id":4}` + "\n", invalidRequest, "4",
			"a response carries a result or an error"},
		{"method not a string", `{"jsonrpc":"2.0","id":5,"method":5}` + "\n", invalidRequest, "5",
			"a method is a string"},
		{"method null", `{"jsonrpc":"2.0","id":6,"method":null}` + "\n", invalidRequest, "6",
			"a null method is not the empty method"},
		{"params not structured", `{"jsonrpc":"2.0","id":7,"method":"ping","params":"x"}` + "\n", invalidRequest, "7",
			"params are an object or an array"},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}` + "\n", invalidRequest, "null",
			"MCP requests never have a null id, and must not be taken for notifications"},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}` + "\n", invalidRequest, "1.5",
			"an id the SDK would round must not be answered under another id"},
		{"huge id", `{"jsonrpc":"2.0","id":18014398509481985,"method":"ping"}` + "\n", invalidRequest, "18014398509481985",
			"an id beyond 2^53 would lose digits on its way through the SDK"},
		{"an id of 2^53+1", `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}` + "\n", invalidRequest, "9007199254740993",
			"2^53+1 would be read as 2^53, another client's id"},
		{"an exponent id", `{"jsonrpc":"2.0","id":1e3,"method":"ping"}` + "\n", invalidRequest, "1e3",
			"an id written with an exponent could be read as another integer"},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"ping"}` + "\n", invalidRequest, "null",
			"an id is a string or a number"},
		{"repeated member", `{"jsonrpc":"2.0","id":8,"method":"ping","method":"tools/list"}` + "\n", invalidRequest, "8",
			"a repeated member is ambiguous and never resolved by guessing"},
		{"repeated id", `{"jsonrpc":"2.0","id":9,"method":"ping","id":10}` + "\n", invalidRequest, "null",
			"with two ids there is none to repeat"},
		{"request with a result", `{"jsonrpc":"2.0","id":11,"method":"ping","result":{}}` + "\n", invalidRequest, "11",
			"a message is a request or a response, not both"},
		{"result and error", `{"jsonrpc":"2.0","id":12,"result":{},"error":{"code":1,"message":"x"}}` + "\n", invalidRequest, "12",
			"a response has exactly one of result and error"},
		{"malformed error", `{"jsonrpc":"2.0","id":13,"error":{"code":"x"}}` + "\n", invalidRequest, "13",
			"a response's error has an integer code and a string message"},
		{"oversized", oversized("14"), invalidRequest, "14",
			"a line over the bound is dropped and answered under the id found in it"},
		{"oversized string id", oversized(`"big"`), invalidRequest, `"big"`,
			"a string id is found in an oversized line too"},
		{"oversized without id", strings.Repeat("y", mcpserver.MaxFrameBytes+1) + "\n", invalidRequest, "null",
			"a line over the bound that is not even JSON is refused the same way"},
		{"oversized with a nested id", `{"jsonrpc":"2.0","params":{"id":15,"pad":"` + strings.Repeat("z", mcpserver.MaxFrameBytes) + `"}}` + "\n", invalidRequest, "null",
			"an id inside params is not the message's id"},
		{"blank line", " \t\r\n", 0, "",
			"a line of white space is skipped without an answer"},
	}
	f := start(t, setup{})
	s := startStdio(t, f.srv)
	s.initialize(t)
	for _, tc := range cases {
		s.send(t, tc.line)
		if tc.code == 0 {
			continue
		}
		m := s.recv(t)
		require.NotNil(t, m.Error, "%s: %s", tc.name, tc.why)
		assert.Equal(t, tc.code, m.Error.Code, "%s: %s (%s)", tc.name, tc.why, m.Error.Message)
		assert.JSONEq(t, tc.id, string(m.ID), "%s: %s", tc.name, tc.why)
		assert.Nil(t, m.Result, tc.name)
	}

	// The session goes on: a valid call after all of that works.
	f.rec.On("echo.hello", execgate.Outcome{Stdout: []byte("hello\n")})
	s.send(t, `{"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"echo_hello","arguments":{}}}`+"\n")
	m := s.recv(t)
	require.Nil(t, m.Error)
	assert.JSONEq(t, `"after"`, string(m.ID), "no answer was left over from the bad lines")
	assert.Contains(t, string(m.Result), `hello\n`)
	assert.Equal(t, 1, f.rec.Count(), "no bad line ran anything")
}

func TestStdioTransport_BadFrameDoesNotCancelACallInProgress(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	var canceled atomic.Bool
	slow := func(ctx context.Context, _ execgate.Invocation) execgate.Outcome {
		close(entered)
		select {
		case <-release:
			return execgate.Outcome{Stdout: []byte("finished\n")}
		case <-ctx.Done():
			canceled.Store(true)
			return execgate.Outcome{Termination: execgate.TerminationCanceled, ExitCode: -1}
		}
	}
	f := start(t, setup{execFn: slow})
	s := startStdio(t, f.srv)
	s.initialize(t)

	s.send(t, `{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"echo_hello","arguments":{}}}`+"\n")
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		require.FailNow(t, "the call did not start")
	}
	for _, bad := range []string{"hello\n", "[]\n", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}\n", oversized("2")} {
		s.send(t, bad)
		m := s.recv(t)
		require.NotNil(t, m.Error, "%q", bad[:min(len(bad), 40)])
	}
	// Reusing the id of the call in progress does not disturb it either.
	s.send(t, `{"jsonrpc":"2.0","id":"slow","method":"ping"}`+"\n")
	s.send(t, `{"jsonrpc":"2.0","id":"ping","method":"ping"}`+"\n")
	m := s.recv(t)
	require.JSONEq(t, `"ping"`, string(m.ID), "the session answers while the call runs")
	close(release)

	m = s.recv(t)
	require.Nil(t, m.Error)
	require.JSONEq(t, `"slow"`, string(m.ID))
	var res struct {
		IsError           bool            `json:"isError"`
		StructuredContent execgate.Result `json:"structuredContent"`
	}
	require.NoError(t, json.Unmarshal(m.Result, &res))
	assert.False(t, res.IsError)
	assert.Equal(t, execgate.TerminationExit, res.StructuredContent.Termination)
	assert.Equal(t, "finished\n", res.StructuredContent.Stdout)
	assert.False(t, canceled.Load(), "no bad line canceled the call in progress")
}

func TestStdioTransport_LastLineWithoutNewline(t *testing.T) {
	f := start(t, setup{})
	s := startStdio(t, f.srv)
	s.send(t, "hello")
	_ = s.in.Close()
	m := s.recv(t)
	require.NotNil(t, m.Error, "a last line cut off by the end of input is still read and answered")
	assert.Equal(t, -32700, m.Error.Code)
}

// longLine is a Reader of one message line whose params hold a string of
// n bytes, produced as it is read, and whose id comes last.
type longLine struct {
	head, tail []byte
	n          int
}

func newLongLine(n int) *longLine {
	return &longLine{
		head: []byte(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo_hello","arguments":{"pad":"`),
		tail: []byte(`"}},"id":"long"}` + "\n"),
		n:    n,
	}
}

func (l *longLine) Read(p []byte) (int, error) {
	switch {
	case len(l.head) > 0:
		k := copy(p, l.head)
		l.head = l.head[k:]
		return k, nil
	case l.n > 0:
		k := copy(p[:min(len(p), l.n)], xs)
		l.n -= k
		return k, nil
	case len(l.tail) > 0:
		k := copy(p, l.tail)
		l.tail = l.tail[k:]
		return k, nil
	}
	return 0, io.EOF
}

var xs = []byte(strings.Repeat("x", 64<<10))

func TestStdioTransport_OversizedLineIsNotHeldWhole(t *testing.T) {
	// A line 16 times the bound must pass through in bounded memory: what
	// is allocated while it is read stays well under the line's size.
	const size = 16 * mcpserver.MaxFrameBytes
	f := start(t, setup{})
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	go func() {
		done <- f.srv.Run(context.Background(), mcpserver.StdioTransport(newLongLine(size), outW))
		outW.Close()
	}()
	line, err := bufio.NewReader(outR).ReadBytes('\n')
	require.NoError(t, err)
	runtime.ReadMemStats(&after)
	var m wireMessage
	require.NoError(t, json.Unmarshal(line, &m), "%s", line)
	require.NotNil(t, m.Error)
	assert.Equal(t, -32600, m.Error.Code)
	assert.Contains(t, m.Error.Message, "longer than")
	assert.JSONEq(t, `"long"`, string(m.ID), "the id after the long member is found")
	require.NoError(t, <-done)
	allocated := after.TotalAlloc - before.TotalAlloc
	assert.Less(t, allocated, uint64(size/4), "allocated %d bytes reading a %d-byte line", allocated, size)
}

func TestStdioTransport_ConnectsOnce(t *testing.T) {
	tr := mcpserver.StdioTransport(strings.NewReader(""), io.Discard)
	c, err := tr.Connect(context.Background())
	require.NoError(t, err)
	defer c.Close()
	_, err = tr.Connect(context.Background())
	assert.Error(t, err, "a second reader on the same input would split its lines")
}
