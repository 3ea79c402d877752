package main

import (
	"log/slog"
	"net/http"
	"time"
)

// The limits of serve's HTTP connections; see the package documentation
// for what net/http answers itself when a client exceeds them.
const (
	// readHeaderTimeout bounds the time from a connection's (or a
	// request's, on a kept-alive connection) first byte to the end of its
	// request header.
	readHeaderTimeout = 10 * time.Second
	// readTimeout bounds reading a whole request, body included.
	readTimeout = time.Minute
	// idleTimeout bounds how long a kept-alive connection waits for its
	// next request.
	idleTimeout = 2 * time.Minute
	// maxHeaderBytes bounds a request header; net/http allows 4 KiB more
	// before it answers 431.
	maxHeaderBytes = 64 << 10
)

// newHTTPServer returns the http.Server that serves h. Every request that
// net/http can parse reaches h, OPTIONS * included (net/http would answer
// it itself), so that its answer is JSON.
func newHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:                      h,
		ReadHeaderTimeout:            readHeaderTimeout,
		ReadTimeout:                  readTimeout,
		IdleTimeout:                  idleTimeout,
		MaxHeaderBytes:               maxHeaderBytes,
		DisableGeneralOptionsHandler: true,
		ErrorLog:                     slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}
