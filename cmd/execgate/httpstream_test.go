package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
)

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data string
}

// readEvents reads server-sent events from r until it ends or stop says
// so.
func readEvents(t *testing.T, r io.Reader, stop func(sseEvent) bool) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		case line == "":
			out = append(out, cur)
			if stop != nil && stop(cur) {
				return out
			}
			cur = sseEvent{}
		}
	}
	return out
}

// streamCall sends a streaming call of name.
func streamCall(t *testing.T, ctx context.Context, url, name, input string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/tools/"+name, strings.NewReader(input))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+callerToken)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}

func TestHTTP_StreamsOutputThenTheResult(t *testing.T) {
	f := newAPIFixture(t, testConfig)
	resp := streamCall(t, context.Background(), f.srv.URL, "echo.run", `{"args":["hi"]}`)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	events := readEvents(t, resp.Body, nil)
	require.NotEmpty(t, events)
	var names []string
	for _, e := range events {
		names = append(names, e.name)
	}
	assert.Equal(t, []string{"output", "progress", "result"}, names)
	var chunk execgate.OutputChunk
	require.NoError(t, json.Unmarshal([]byte(events[0].data), &chunk))
	assert.Equal(t, execgate.OutputChunk{Stream: execgate.StreamStdout, Data: []byte("ran\n")}, chunk)
	var body response
	require.NoError(t, json.Unmarshal([]byte(events[len(events)-1].data), &body))
	require.NotNil(t, body.Result)
	assert.Equal(t, "ran\n", body.Result.Stdout, "the result event is the body the call has without streaming")
	assert.NotEmpty(t, body.TraceID)
}

// A call that runs nothing starts no stream: a refusal or a pending
// approval comes as the JSON response it would be without streaming.
func TestHTTP_StreamingCallsThatRunNothingGetTheirResponse(t *testing.T) {
	f := newAPIFixture(t, testConfig)
	for _, tc := range []struct {
		sentence, name, input string
		status                int
	}{
		{"input the grammar refuses", "echo.run", `{"args":["$(id)"]}`, http.StatusUnprocessableEntity},
		{"a name no tool has", "nope.run", `{}`, http.StatusNotFound},
		{"a call held for approval", "deploy.now", `{}`, http.StatusAccepted},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			resp := streamCall(t, context.Background(), f.srv.URL, tc.name, tc.input)
			defer resp.Body.Close()
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		})
	}
}

// A client that goes away while its command runs cancels the call: the
// process is killed, and the audit trail says canceled.
func TestHTTP_AStreamingClientThatLeavesCancelsTheCall(t *testing.T) {
	text := strings.Replace(testConfig, `  - name: forbidden`, `  - name: slow
    bin: /bin/sh
    description: Print a line, then wait a long time.
    global_args: [-c, 'echo started; exec sleep 60']
    bare: {}
  - name: forbidden`, 1)
	text = strings.Replace(text, `      - {name: echo, tools: [echo.run], action: allow}`, `      - {name: echo, tools: [echo.run, slow.run], action: allow}`, 1)
	loaded, err := config.LoadBytes("test.yaml", []byte(text))
	require.NoError(t, err)
	outcomes := make(chan execgate.Outcome, 1)
	g, err := newGate(loaded, "", func(ctx context.Context, inv execgate.Invocation) execgate.Outcome {
		o := execgate.DefaultExecFn(ctx, inv)
		outcomes <- o
		return o
	})
	require.NoError(t, err)
	h, err := newAPI(apiOptions{Executor: g.x, Server: g.server(), Pending: newPendingSet(nil), Visible: g.visible})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	resp := streamCall(t, ctx, srv.URL, "slow.run", `{}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	first := readEvents(t, resp.Body, func(e sseEvent) bool { return e.name == "output" })
	require.NotEmpty(t, first)
	assert.Contains(t, first[len(first)-1].data, `"stream":"stdout"`)
	cancel()
	resp.Body.Close()

	select {
	case o := <-outcomes:
		assert.Equal(t, execgate.TerminationCanceled, o.Termination, "%+v", o)
		assert.Equal(t, "started\n", string(o.Stdout))
	case <-time.After(30 * time.Second):
		t.Fatal("the command still runs after its client went away")
	}
}
