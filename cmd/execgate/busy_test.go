package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
)

// busyConfig is a configuration whose sleep.run runs /bin/sleep, for
// three callers, with the server section's bounds in place of BOUNDS.
var busyConfig = `version: 1
defaults: {timeout: 60s, env: {PATH: /usr/bin:/bin}}
tools:
  - name: sleep
    bin: /bin/sleep
    bare:
      positionals: {max: 1, pattern: '^[0-9]{1,2}$'}
server:
BOUNDS
  tokens:
    - {principal: bot-1, sha256: "` + tokenHash("token-1") + `"}
    - {principal: bot-2, sha256: "` + tokenHash("token-2") + `"}
    - {principal: bot-3, sha256: "` + tokenHash("token-3") + `"}
`

// TestHTTP_ConcurrencyBounds: with real processes held running, a call
// over a bound is refused at once, before anything starts, with 429 for
// the caller's own bound and 503 for the server's, a JSON body naming the
// bound, and Retry-After; once the running calls end, calls run again.
func TestHTTP_ConcurrencyBounds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bounds  string
		running []string // the tokens of the calls held running
		over    string   // the token of the call over the bound
		status  int
		scope   string
		limit   int
	}{
		{"two calls of two callers fill max_concurrent 2, and a third caller's call is 503",
			"  max_concurrent: 2", []string{"token-1", "token-2"}, "token-3",
			http.StatusServiceUnavailable, execgate.BusyExecutor, 2},
		{"one call fills its caller's max_concurrent_per_principal 1, and the same caller's second call is 429",
			"  max_concurrent: 3\n  max_concurrent_per_principal: 1", []string{"token-1"}, "token-1",
			http.StatusTooManyRequests, execgate.BusyPrincipal, 1},
		{"a caller's bound does not hold back another caller, until the server is full",
			"  max_concurrent: 2\n  max_concurrent_per_principal: 1", []string{"token-1", "token-2"}, "token-3",
			http.StatusServiceUnavailable, execgate.BusyExecutor, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loaded, err := config.LoadBytes("busy.yaml", []byte(strings.Replace(busyConfig, "BOUNDS", tc.bounds, 1)))
			require.NoError(t, err)
			started, ended := make(chan struct{}, 10), make(chan execgate.Outcome, 10)
			g, err := newGate(loaded, "", func(ctx context.Context, inv execgate.Invocation) execgate.Outcome {
				started <- struct{}{}
				out := execgate.DefaultExecFn(ctx, inv)
				ended <- out
				return out
			})
			require.NoError(t, err)
			defer g.Close()
			h, err := newAPI(apiOptions{Executor: g.x, Server: g.server()})
			require.NoError(t, err)
			srv := httptest.NewServer(h)
			defer srv.Close()

			call := func(ctx context.Context, token, seconds string) (*http.Response, response, error) {
				req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/tools/sleep.run", strings.NewReader(`{"args":["`+seconds+`"]}`))
				require.NoError(t, err)
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := srv.Client().Do(req)
				if err != nil {
					return nil, response{}, err
				}
				defer resp.Body.Close()
				data, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				var r response
				require.NoError(t, json.Unmarshal(data, &r), "%s", data)
				return resp, r, nil
			}

			// Hold the running calls: sleep 50 until their clients go away.
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for _, token := range tc.running {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, _, _ = call(ctx, token, "50")
				}()
			}
			for range tc.running {
				select {
				case <-started:
				case <-time.After(20 * time.Second):
					t.Fatal("the running calls did not start")
				}
			}

			resp, r, err := call(context.Background(), tc.over, "0")
			require.NoError(t, err)
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.Equal(t, "1", resp.Header.Get("Retry-After"))
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			require.NotNil(t, r.Error)
			assert.Equal(t, execgate.ErrorKindBusy, r.Error.Kind)
			assert.Equal(t, tc.scope, r.Error.Reason)
			assert.Equal(t, tc.limit, r.Error.Limit)
			assert.Equal(t, "sleep.run", r.Error.Name)
			assert.NotEmpty(t, r.TraceID, "the gate recorded the refusal")
			assert.Nil(t, r.Result)
			assert.Empty(t, started, "the refused call started nothing")

			// Going away kills the running calls' processes and frees
			// their slots, right after the processes end.
			cancel()
			wg.Wait()
			for range tc.running {
				out := <-ended
				assert.Equal(t, execgate.TerminationCanceled, out.Termination)
			}
			assert.Eventually(t, func() bool {
				resp, r, err := call(context.Background(), tc.over, "0")
				return err == nil && resp.StatusCode == http.StatusOK && r.Result.OK
			}, 10*time.Second, 10*time.Millisecond, "a call runs again once the running calls ended")
			srv.Client().CloseIdleConnections()
		})
	}
}

// TestCheck_PrintsBounds: execgate check says how many commands serve
// would run at once.
func TestCheck_PrintsBounds(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"a file without a server section has the defaults",
			"version: 1\ntools: []\n",
			"bounds: 64 commands at once, 32 per principal; a call over them is refused at once"},
		{"a server section without bounds has the defaults",
			"version: 1\ntools: []\nserver: {principal: p}\n",
			"bounds: 64 commands at once, 32 per principal; a call over them is refused at once"},
		{"the bounds and the wait of the file are printed",
			"version: 1\ntools: []\nserver: {max_concurrent: 8, max_concurrent_per_principal: 2, max_queue_wait: 1500ms}\n",
			"bounds: 8 commands at once, 2 per principal; a call over them waits up to 1.5s for a slot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", "check", "--config", writeFile(t, "tools.yaml", tc.text))
			require.Equal(t, exitOK, code, errOut)
			assert.Contains(t, out, tc.want+"\n")
		})
	}
}
