package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/execgatetest"
)

// TestProbes_Answers: /healthz is 200 whenever the process answers;
// /readyz only while the listener serves and the gate behind it is
// ready. Both answer GET and HEAD with a fixed body and nothing else,
// whatever the request carries; every other request goes on to the
// handler behind them.
func TestProbes_Answers(t *testing.T) {
	notReady := func(*http.Request) error { return errors.New("the audit trail refuses records") }
	for _, tc := range []struct {
		about  string
		state  int32
		ready  func(*http.Request) error
		method string
		path   string
		status int    // 0: the request goes on to the handler behind
		body   string // "" for HEAD
	}{
		{"healthz while serving", listenerServing, nil, "GET", "/healthz", 200, `{"status":"ok"}`},
		{"healthz by HEAD", listenerServing, nil, "HEAD", "/healthz", 200, ""},
		{"healthz before serving", listenerStarting, nil, "GET", "/healthz", 200, `{"status":"ok"}`},
		{"healthz while shutting down", listenerStopping, nil, "GET", "/healthz", 200, `{"status":"ok"}`},
		{"healthz while the gate is not ready", listenerServing, notReady, "GET", "/healthz", 200, `{"status":"ok"}`},
		{"readyz while serving", listenerServing, nil, "GET", "/readyz", 200, `{"status":"ok"}`},
		{"readyz by HEAD", listenerServing, nil, "HEAD", "/readyz", 200, ""},
		{"readyz before serving", listenerStarting, nil, "GET", "/readyz", 503, `{"status":"unavailable"}`},
		{"readyz while shutting down", listenerStopping, nil, "GET", "/readyz", 503, `{"status":"unavailable"}`},
		{"readyz by HEAD while shutting down", listenerStopping, nil, "HEAD", "/readyz", 503, ""},
		{"readyz while the gate is not ready", listenerServing, notReady, "GET", "/readyz", 503, `{"status":"unavailable"}`},
		{"another method goes on, to be refused there", listenerServing, nil, "POST", "/healthz", 0, ""},
		{"DELETE goes on", listenerServing, nil, "DELETE", "/readyz", 0, ""},
		{"a trailing slash is not a probe", listenerServing, nil, "GET", "/healthz/", 0, ""},
		{"another path goes on", listenerServing, nil, "GET", "/v1/tools", 0, ""},
		{"an escaped spelling is not a probe", listenerServing, nil, "GET", "/%68ealthz", 0, ""},
	} {
		behind := false
		p := newProbes(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			behind = true
			w.WriteHeader(http.StatusTeapot)
		}), tc.ready)
		p.state.Store(tc.state)
		req := httptest.NewRequest(tc.method, tc.path, nil)
		// Neither a token, nor a wrong one, nor a page's headers change
		// a probe's answer.
		req.Header.Set("Authorization", "Bearer not-a-token")
		req.Header.Set("Origin", "https://example.com")
		// httptest.ResponseRecorder keeps a HEAD's body; the server
		// drops it.
		w := httptest.NewRecorder()
		p.ServeHTTP(w, req)
		if tc.status == 0 {
			assert.True(t, behind, tc.about)
			assert.Equal(t, http.StatusTeapot, w.Code, tc.about)
			continue
		}
		assert.False(t, behind, tc.about)
		assert.Equal(t, tc.status, w.Code, tc.about)
		assert.Equal(t, "application/json", w.Header().Get("Content-Type"), tc.about)
		assert.Equal(t, "no-store", w.Header().Get("Cache-Control"), tc.about)
		if tc.method == "GET" {
			assert.Equal(t, tc.body+"\n", w.Body.String(), tc.about)
		}
	}
}

// TestProbes_BeforeTheAPI: in front of the HTTP API and of MCP over
// Streamable HTTP, as serve puts them, the probes need no token and
// leave no record in the audit trail; another method on their paths is
// refused as the API refuses a method a route does not serve, 405 with
// Allow, and recorded as that refusal is.
func TestProbes_BeforeTheAPI(t *testing.T) {
	loaded, err := config.LoadBytes("test.yaml", []byte(testConfig))
	require.NoError(t, err)
	discard := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		about   string
		handler func(t *testing.T, g *gate) http.Handler
	}{
		{"the HTTP API", func(t *testing.T, g *gate) http.Handler {
			h, err := newAPI(apiOptions{Executor: g.x, Server: g.server()})
			require.NoError(t, err)
			return h
		}},
		{"MCP over Streamable HTTP", func(t *testing.T, g *gate) http.Handler {
			h, err := newMCPHTTPServer(context.Background(), g, g.server(), false, discard, discard)
			require.NoError(t, err)
			return h
		}},
		{"the approval routes", func(t *testing.T, g *gate) http.Handler {
			h, err := newAPI(apiOptions{Executor: g.x, Server: g.server(), ApprovalsOnly: true})
			require.NoError(t, err)
			return h
		}},
	} {
		t.Run(tc.about, func(t *testing.T) {
			trail := filepath.Join(t.TempDir(), "audit.jsonl")
			g, err := newGate(loaded, trail, execgatetest.NewRecorder().Exec)
			require.NoError(t, err)
			defer g.Close()
			p := newProbes(tc.handler(t, g), g.readiness())
			p.serving()
			srv := httptest.NewServer(p)
			defer srv.Close()

			for _, path := range []string{"/healthz", "/readyz"} {
				for _, method := range []string{"GET", "HEAD"} {
					for _, token := range []string{"", callerToken, "wrong-token"} {
						status, body, _ := askProbe(t, srv.URL, method, path, token)
						assert.Equal(t, http.StatusOK, status, "%s %s", method, path)
						if method == "GET" {
							assert.JSONEq(t, `{"status":"ok"}`, body)
						} else {
							assert.Empty(t, body)
						}
					}
				}
			}
			assert.Empty(t, trailRoutes(t, trail), "a probe leaves no record")

			for _, method := range []string{"POST", "PUT", "DELETE"} {
				status, body, h := askProbe(t, srv.URL, method, "/healthz", "")
				assert.Equal(t, http.StatusMethodNotAllowed, status, method)
				assert.Equal(t, "GET, HEAD", h.Get("Allow"), method)
				var e struct{ Error errorInfo }
				require.NoError(t, json.Unmarshal([]byte(body), &e), body)
				assert.Equal(t, execgate.ErrorKindRequest, e.Error.Kind)
			}
			assert.Equal(t, []string{"POST /healthz", "PUT /healthz", "DELETE /healthz"}, trailRoutes(t, trail),
				"a method the probes do not serve is refused and recorded as on every route")
		})
	}
}

// askProbe sends one request and returns its status, body and header.
func askProbe(t *testing.T, base, method, path, token string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body), resp.Header
}

// trailRoutes returns the route of each entry of the audit file at path
// that has one, in order.
func trailRoutes(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var routes []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var e audit.Entry
		require.NoError(t, json.Unmarshal([]byte(line), &e), line)
		if e.Route != "" {
			routes = append(routes, e.Route)
		}
	}
	return routes
}

// diskWriter is an audit file that can be made to refuse every write,
// as a full disk does, before it takes a byte.
type diskWriter struct {
	mu     sync.Mutex
	full   bool
	writes int // attempts
	buf    bytes.Buffer
}

func (d *diskWriter) Write(b []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.writes++
	if d.full {
		return 0, errors.New("no space left on device")
	}
	return d.buf.Write(b)
}

func (d *diskWriter) set(full bool) (writes int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.full = full
	return d.writes
}

// TestProbes_ReadyzFollowsTheAuditTrail: /readyz is 503 while the audit
// trail refuses records, which refuses every call; since only a record
// can tell that the trail takes them again, and a balancer sends no
// calls to an address that is not ready, the probe itself tries to
// record, at most once a second, and /readyz is 200 again from the
// record that succeeds, which marks in the trail where recording
// resumed. A trail that takes records gets nothing from a probe.
func TestProbes_ReadyzFollowsTheAuditTrail(t *testing.T) {
	loaded, err := config.LoadBytes("test.yaml", []byte(testConfig))
	require.NoError(t, err)
	disk := &diskWriter{}
	chain := audit.NewChain(disk, audit.ChainOptions{})
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: loaded.Allowlist, Policy: loaded.Policy, Auditor: chain, ExecFn: execgatetest.NewRecorder().Exec})
	require.NoError(t, err)
	now := time.Unix(1_700_000_000, 0)
	g := &gate{loaded: loaded, x: x, chain: chain}
	ap := &auditProbe{trail: g.chain, x: g.x, now: func() time.Time { return now }}
	p := newProbes(http.NotFoundHandler(), ap.ready)
	p.serving()
	readyz := func() int {
		w := httptest.NewRecorder()
		p.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
		return w.Code
	}
	ctx := execgate.WithPrincipal(context.Background(), "ci-bot")

	require.Equal(t, http.StatusOK, readyz())
	assert.Zero(t, disk.set(false), "a ready trail gets no record from a probe")

	_, err = x.Run(ctx, "echo.run", json.RawMessage(`{"args":["one"]}`))
	require.NoError(t, err)
	before := disk.set(true)
	_, err = x.Run(ctx, "echo.run", json.RawMessage(`{"args":["two"]}`))
	var ae *execgate.AuditError
	require.ErrorAs(t, err, &ae, "a call whose intent cannot be recorded is refused")
	failed := disk.set(true)
	require.Greater(t, failed, before)

	assert.Equal(t, http.StatusServiceUnavailable, readyz(), "the trail refuses records")
	assert.Equal(t, failed+1, disk.set(true), "the probe tried to record")
	assert.Equal(t, http.StatusServiceUnavailable, readyz())
	assert.Equal(t, failed+1, disk.set(false), "within a second, a probe does not try again")

	assert.Equal(t, http.StatusServiceUnavailable, readyz(), "the disk has room again, and nothing has tried it yet")
	now = now.Add(time.Second)
	assert.Equal(t, http.StatusOK, readyz(), "the probe's record succeeded")
	resumed := disk.set(false)
	assert.Equal(t, failed+2, resumed)
	assert.Equal(t, http.StatusOK, readyz())
	now = now.Add(time.Minute)
	assert.Equal(t, http.StatusOK, readyz())
	assert.Equal(t, resumed, disk.set(false), "a ready trail gets no record from a probe")

	lines := strings.Split(strings.TrimSpace(disk.buf.String()), "\n")
	var last audit.Entry
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &last))
	assert.Equal(t, execgate.OpRequest, last.Op)
	assert.Equal(t, "GET /readyz", last.Route)
	assert.Equal(t, execgate.ErrorKindAudit, last.Error)
	assert.Contains(t, last.Reason, "readiness probe")
	assert.Empty(t, last.Principal)

	_, err = x.Run(ctx, "echo.run", json.RawMessage(`{"args":["three"]}`))
	assert.NoError(t, err, "calls run again")
}

// TestE2E_Probes: every listener serve starts answers /healthz and
// /readyz without a token, with nothing but the status, and records no
// probe in the audit trail; another method is refused (405) and recorded.
func TestE2E_Probes(t *testing.T) {
	path := writeFile(t, "tools.yaml", testConfig)
	for _, tc := range []struct {
		about string
		args  []string
		addr  *regexp.Regexp
	}{
		{"--http", []string{"--http", "127.0.0.1:0"}, regexp.MustCompile(`serving the HTTP API on (http://127\.0\.0\.1:\d+)`)},
		{"--mcp-http", []string{"--mcp-http", "127.0.0.1:0"}, mcpHTTPAddrRe},
		{"--approver-http", []string{"--approver-http", "127.0.0.1:0"}, approvalsAddrRe},
	} {
		t.Run(tc.about, func(t *testing.T) {
			trail := filepath.Join(t.TempDir(), "audit.jsonl")
			args := append([]string{"--config", path, "--audit", trail}, tc.args...)
			var base string
			if tc.about == "--approver-http" {
				// Over stdio, serve runs while its client holds stdin.
				_, stderr := startMCP(t, os.Environ(), args...)
				base = stderr.waitFor(t, tc.addr)
			} else {
				p := startServe(t, args...)
				defer p.stop(t)
				base = p.stderr.waitFor(t, tc.addr)
			}
			for _, path := range []string{"/healthz", "/readyz"} {
				status, body, h := askProbe(t, base, "GET", path, "")
				assert.Equal(t, http.StatusOK, status, path)
				assert.Equal(t, `{"status":"ok"}`+"\n", body, "nothing but the status")
				assert.Equal(t, "application/json", h.Get("Content-Type"))
				status, body, _ = askProbe(t, base, "HEAD", path, "wrong-token")
				assert.Equal(t, http.StatusOK, status, path)
				assert.Empty(t, body)
			}
			status, _, h := askProbe(t, base, "POST", "/readyz", "")
			assert.Equal(t, http.StatusMethodNotAllowed, status)
			assert.Equal(t, "GET, HEAD", h.Get("Allow"))
			assert.Equal(t, []string{"POST /readyz"}, trailRoutes(t, trail), "only the refusal is recorded")
		})
	}
}

// TestE2E_ReadyzWhenTheAuditTrailIsFull: serve with its audit trail on
// a device that takes no byte (a full disk) is ready until a record
// fails, then not ready, while /healthz stays 200.
func TestE2E_ReadyzWhenTheAuditTrailIsFull(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	path := writeFile(t, "tools.yaml", testConfig)
	p := startServe(t, "--config", path, "--http", "127.0.0.1:0", "--audit", "/dev/full")
	defer p.stop(t)
	base := p.stderr.waitFor(t, regexp.MustCompile(`serving the HTTP API on (http://127\.0\.0\.1:\d+)`))
	status, _, _ := askProbe(t, base, "GET", "/readyz", "")
	assert.Equal(t, http.StatusOK, status, "nothing has failed to record yet")

	status, _, _ = askProbe(t, base, "GET", "/v1/tools", "")
	require.Equal(t, http.StatusUnauthorized, status, "a refusal, which cannot be recorded")
	status, body, _ := askProbe(t, base, "GET", "/readyz", "")
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.JSONEq(t, `{"status":"unavailable"}`, body, "nothing but the status")
	status, _, _ = askProbe(t, base, "GET", "/healthz", "")
	assert.Equal(t, http.StatusOK, status, "the process is alive")
}
