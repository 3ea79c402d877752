package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIDScanner(t *testing.T) {
	for _, tc := range []struct {
		line string
		id   string // "" means null
		why  string
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"x"}`, "7", "an integer id is found"},
		{`{"id":"a\"b","method":"x"}`, `"a\"b"`, "a string id keeps its escapes"},
		{`{"method":"x","params":{"s":"}{\"id\":1"},"id":-3}`, "-3", "braces and quotes inside strings do not change the depth"},
		{`{"params":{"id":1},"method":"x"}`, "", "an id inside params is not the message's"},
		{`{"params":[{"id":1}],"id":2}`, "2", "the top-level id after a nested one is found"},
		{`{"id":1,"id":2}`, "", "two ids are ambiguous"},
		{`{"id":null,"method":"x"}`, "", "a null id is null"},
		{`{"id":{"a":1}}`, "", "an object id is not repeated"},
		{`{"id":true}`, "", "a boolean id is not repeated"},
		{`{"id":1.5}`, "1.5", "a number id is repeated as sent, even one the transport refuses"},
		{`{"idx":1,"xid":2}`, "", "only the key id counts"},
		{`{"\u0069d":1}`, "", "a key written with escapes is not recognized"},
		{`{"id":"` + strings.Repeat("a", maxScannedID) + `"}`, "", "an id longer than the scanner keeps is dropped, not cut"},
		{`{"id": 12 , "method":"x"}`, "12", "white space around the id is skipped"},
		{`{"id":12`, "12", "a line cut after the id still yields it"},
		{`{"id":"abc`, "", "an unterminated string id is not used"},
		{`[{"id":1}]`, "", "an id inside a batch is not the line's"},
		{`xxxx`, "", "a line that is not JSON has no id"},
	} {
		for _, piece := range []int{1, 3, 1 << 20} {
			s := &idScanner{}
			for p := []byte(tc.line); len(p) > 0; {
				n := min(piece, len(p))
				s.scan(p[:n])
				p = p[n:]
			}
			got := s.id()
			if tc.id == "" {
				assert.Nil(t, got, "%s: %s (pieces of %d)", tc.line, tc.why, piece)
			} else {
				assert.Equal(t, tc.id, string(got), "%s: %s (pieces of %d)", tc.line, tc.why, piece)
			}
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func TestLineConn_Write(t *testing.T) {
	// A response the SDK writes without an id must still name an id, null,
	// as JSON-RPC requires of every response.
	var out lockedBuffer
	c := &lineConn{w: &out}
	require.NoError(t, c.Write(context.Background(), &jsonrpc.Response{Error: &jsonrpc.Error{Code: -32600, Message: "no"}}))
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no"}}`, out.buf.String())
	assert.True(t, strings.HasSuffix(out.buf.String(), "}\n"))

	// Concurrent writes never interleave: every line is one whole message.
	out.buf.Reset()
	var wg sync.WaitGroup
	big := strings.Repeat("y", 100<<10)
	for i := range 50 {
		wg.Go(func() {
			id, _ := jsonrpc.MakeID(float64(i))
			params, _ := json.Marshal(map[string]string{"big": big})
			assert.NoError(t, c.Write(context.Background(), &jsonrpc.Request{ID: id, Method: "m", Params: params}))
		})
		wg.Go(func() { assert.NoError(t, c.writeLine(invalid(nil, "x").encode())) })
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(out.buf.String(), "\n"), "\n")
	assert.Len(t, lines, 100)
	for _, l := range lines {
		assert.True(t, json.Valid([]byte(l)), "a line is one message: %.80s", l)
	}

	// A canceled context writes nothing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out.buf.Reset()
	assert.Error(t, c.Write(ctx, &jsonrpc.Response{}))
	assert.Zero(t, out.buf.Len())
}

func FuzzParseFrame(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"x","result":{}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"m","data":[1]}}`,
		`{"jsonrpc":"2.0","method":"n","params":[]}`,
		`[]`, `{}`, `hello`, "\x00", `{"id":1,"id":2}`, `{"jsonrpc":"2.0","id":1e3,"method":"m"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		msg, bad := parseFrame(line)
		blank := len(bytes.Trim(line, " \t\r\n")) == 0
		if blank {
			if msg != nil || bad != nil {
				t.Fatalf("a blank line got %v, %v", msg, bad)
			}
		} else if (msg == nil) == (bad == nil) {
			t.Fatalf("exactly one of a message and an error: %v, %v", msg, bad)
		}
		if bad != nil {
			out := bad.encode()
			var m struct {
				ID    json.RawMessage `json:"id"`
				Error struct{ Code int }
			}
			if err := json.Unmarshal(out, &m); err != nil || m.ID == nil || (m.Error.Code != -32700 && m.Error.Code != -32600) {
				t.Fatalf("a bad error response: %s", out)
			}
		}
		if msg != nil {
			if _, err := jsonrpc.EncodeMessage(msg); err != nil {
				t.Fatalf("a message the SDK cannot write back: %v", err)
			}
		}
		s := &idScanner{}
		s.scan(line)
		if id := s.id(); id != nil && !json.Valid(id) {
			t.Fatalf("a scanned id that is not JSON: %q", id)
		}
	})
}

func TestLineConn_WriteResultIsWhatTheSDKEncodes(t *testing.T) {
	intID, _ := jsonrpc.MakeID(float64(42))
	negID, _ := jsonrpc.MakeID(float64(-9007199254740991))
	strID, _ := jsonrpc.MakeID("call-1")
	escID, _ := jsonrpc.MakeID("a \"quoted\"\tid")
	uniID, _ := jsonrpc.MakeID("ünï")
	result := json.RawMessage(`{"content":[{"type":"text","text":"<b>&ünï\u2028</b>\n"}],"structuredContent":{"stdout":"x"},"isError":false}`)
	for _, tc := range []struct {
		name string
		resp *jsonrpc.Response
	}{
		{"an integer id", &jsonrpc.Response{ID: intID, Result: result}},
		{"the most negative integer id the transport takes", &jsonrpc.Response{ID: negID, Result: result}},
		{"a string id", &jsonrpc.Response{ID: strID, Result: result}},
		{"a string id JSON escapes is encoded by the SDK", &jsonrpc.Response{ID: escID, Result: result}},
		{"a string id beyond ASCII is encoded by the SDK", &jsonrpc.Response{ID: uniID, Result: result}},
		{"an empty object result", &jsonrpc.Response{ID: intID, Result: json.RawMessage(`{}`)}},
		{"an error response is encoded by the SDK", &jsonrpc.Response{ID: intID, Error: &jsonrpc.Error{Code: -32602, Message: "bad <params>"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out lockedBuffer
			c := &lineConn{w: &out}
			require.NoError(t, c.Write(context.Background(), tc.resp))
			want, err := jsonrpc.EncodeMessage(tc.resp)
			require.NoError(t, err)
			assert.Equal(t, string(want)+"\n", out.buf.String(), "the line is byte for byte the SDK's encoding")
		})
	}

	// A result that is not JSON is refused, as the SDK's encoding refuses
	// it, and nothing is written.
	var out lockedBuffer
	c := &lineConn{w: &out}
	assert.Error(t, c.Write(context.Background(), &jsonrpc.Response{ID: intID, Result: json.RawMessage(`{"a":`)}))
	assert.Zero(t, out.buf.Len())
}

// TestStdio_AResultWithANewlineIsLeftToTheSDK: a result holding a newline
// in its white space, which would end the line early and split the
// message in two frames, is not written as it is but left to the SDK's
// encoding, which compacts it; a compact one is written as it is, on one
// line.
func TestStdio_AResultWithANewlineIsLeftToTheSDK(t *testing.T) {
	id, err := jsonrpc.MakeID(float64(7)) // JSON numbers arrive as float64
	if err != nil {
		t.Fatal(err)
	}
	if got := resultLine(&jsonrpc.Response{ID: id, Result: json.RawMessage("{\"a\":\n1}")}); got != nil {
		t.Fatalf("a result with a newline was written as it is: %q", got)
	}
	got := resultLine(&jsonrpc.Response{ID: id, Result: json.RawMessage(`{"a":1}`)})
	if want := "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"a\":1}}\n"; string(got) != want {
		t.Fatalf("resultLine = %q, want %q", got, want)
	}
}
