package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/execgatetest"
)

// TestHTTPServer_Limits pins the limits of serve's HTTP connections.
func TestHTTPServer_Limits(t *testing.T) {
	hs := newHTTPServer(http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	assert.Equal(t, 10*time.Second, hs.ReadHeaderTimeout)
	assert.Equal(t, time.Minute, hs.ReadTimeout)
	assert.Equal(t, 2*time.Minute, hs.IdleTimeout)
	assert.Equal(t, 64<<10, hs.MaxHeaderBytes)
	assert.True(t, hs.DisableGeneralOptionsHandler, "OPTIONS * reaches the handler")
}

// TestHTTPServer_RawRequests sends raw bytes to the HTTP API on
// 127.0.0.1, as serve serves it but with a short header timeout: every
// request net/http can parse is answered with JSON by the API; what
// net/http answers itself, before any handler runs, is what the package
// documentation says.
func TestHTTPServer_RawRequests(t *testing.T) {
	const headerTimeout = 200 * time.Millisecond
	loaded, err := config.LoadBytes("test.yaml", []byte(testConfig))
	require.NoError(t, err)
	g, err := newGate(loaded, "", execgatetest.NewRecorder().Exec)
	require.NoError(t, err)
	h, err := newAPI(apiOptions{Executor: g.x, Server: g.server()})
	require.NoError(t, err)
	hs := newHTTPServer(h, slog.New(slog.DiscardHandler))
	hs.ReadHeaderTimeout = headerTimeout
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	t.Cleanup(func() {
		require.NoError(t, hs.Close())
		assert.ErrorIs(t, <-served, http.ErrServerClosed)
	})

	const end = "Host: 127.0.0.1\r\nConnection: close\r\n\r\n"
	for _, tc := range []struct {
		name   string
		send   string
		status int    // 0: the connection is closed without a byte
		ctype  string // the response's Content-Type
		kind   string // the error kind of a JSON body
	}{
		{"an unknown route is a JSON 404",
			"GET /nope HTTP/1.1\r\n" + end, 404, "application/json", execgate.ErrorKindRequest},
		{"a path the mux would redirect to its clean form is a JSON 404, not a redirect",
			"GET /v1/tools/../approvals HTTP/1.1\r\n" + end, 404, "application/json", execgate.ErrorKindRequest},
		{"a doubled slash is a JSON 404, not a redirect",
			"GET //v1/tools HTTP/1.1\r\n" + end, 404, "application/json", execgate.ErrorKindRequest},
		{"a trailing slash is a JSON 404",
			"GET /v1/tools/ HTTP/1.1\r\n" + end, 404, "application/json", execgate.ErrorKindRequest},
		{"OPTIONS * reaches the API and is a JSON 404",
			"OPTIONS * HTTP/1.1\r\n" + end, 404, "application/json", execgate.ErrorKindRequest},
		{"CONNECT reaches the API and is a JSON 404",
			"CONNECT 127.0.0.1:1 HTTP/1.1\r\n" + end, 404, "application/json", execgate.ErrorKindRequest},
		{"a method a route does not serve is a JSON 405",
			"PUT /v1/tools HTTP/1.1\r\n" + end, 405, "application/json", execgate.ErrorKindRequest},
		{"a call without a token is a JSON 401",
			"POST /v1/tools/echo.run HTTP/1.1\r\nContent-Length: 2\r\n" + end + "{}", 401, "application/json", execgate.ErrorKindUnauthenticated},
		{"a body over its Content-Length bound is a JSON 413",
			"POST /v1/tools/echo.run HTTP/1.1\r\nAuthorization: Bearer " + callerToken + "\r\nContent-Length: 2000000\r\n" + end, 413, "application/json", execgate.ErrorKindRequest},
		{"HTTP/1.0 without Host is served as usual",
			"GET /nope HTTP/1.0\r\n\r\n", 404, "application/json", execgate.ErrorKindRequest},

		{"a request line that is not HTTP is net/http's plain-text 400",
			"garbage\r\n\r\n", 400, "text/plain; charset=utf-8", ""},
		{"an HTTP/1.1 request without Host is net/http's plain-text 400",
			"GET /v1/tools HTTP/1.1\r\n\r\n", 400, "text/plain; charset=utf-8", ""},
		{"a malformed Content-Length is net/http's plain-text 400",
			"POST /v1/tools/echo.run HTTP/1.1\r\nContent-Length: x\r\n" + end, 400, "text/plain; charset=utf-8", ""},
		{"an unknown HTTP version is net/http's plain-text 505",
			"GET /v1/tools HTTP/9.9\r\n" + end, 505, "text/plain; charset=utf-8", ""},
		{"an unknown transfer coding is net/http's plain-text 501",
			"POST /v1/tools/echo.run HTTP/1.1\r\nTransfer-Encoding: gzip\r\n" + end, 501, "text/plain; charset=utf-8", ""},
		{"an Expect other than 100-continue is net/http's empty 417",
			"GET /v1/tools HTTP/1.1\r\nExpect: later\r\n" + end, 417, "", ""},
		{"a header over the bound is net/http's plain-text 431",
			"GET /v1/tools HTTP/1.1\r\nX-Pad: " + strings.Repeat("a", maxHeaderBytes+8<<10) + "\r\n" + end, 431, "text/plain; charset=utf-8", ""},
		{"a request line cut short by the header timeout is net/http's plain-text 400",
			"GET /v1/to", 400, "text/plain; charset=utf-8", ""},
		{"a header cut short after its request line by the header timeout closes the connection without a byte",
			"GET /v1/tools HTTP/1.1\r\nHost: 127.0.0.1\r\n", 0, "", ""},
		{"a connection that sends nothing is closed at the header timeout without a byte",
			"", 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			require.NoError(t, err)
			defer conn.Close()
			require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
			_, err = io.WriteString(conn, tc.send)
			require.NoError(t, err)
			start := time.Now()
			raw, err := io.ReadAll(conn)
			require.NoError(t, err, "the server closes the connection")
			if tc.status == 0 {
				assert.Empty(t, raw)
				assert.Less(t, time.Since(start), 5*time.Second, "closed at the header timeout")
				return
			}
			resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
			require.NoError(t, err, "%q", raw)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, tc.status, resp.StatusCode, "%q", raw)
			assert.Equal(t, tc.ctype, resp.Header.Get("Content-Type"), "%q", raw)
			if tc.kind == "" {
				return
			}
			var r response
			require.NoError(t, json.Unmarshal(body, &r), "%q", raw)
			require.NotNil(t, r.Error)
			assert.Equal(t, tc.kind, r.Error.Kind)
			assert.NotEmpty(t, r.Error.Message)
		})
	}
}
