package main

import (
	"fmt"
	"io"
	"log/slog"
)

// logFormats are the values of serve's --log-format.
var logFormats = map[string]func(io.Writer, *slog.HandlerOptions) slog.Handler{
	"json": func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewJSONHandler(w, o) },
	"text": func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewTextHandler(w, o) },
}

// defaultLogFormat is serve's --log-format when none is given: one JSON
// object per line, for the log collectors a server's stderr goes to.
const defaultLogFormat = "json"

// checkLogFormat reports whether format is a value of --log-format.
func checkLogFormat(format string) error {
	if _, ok := logFormats[format]; !ok {
		return fmt.Errorf("--log-format must be json or text, not %q", format)
	}
	return nil
}

// newLogger returns a logger that writes records of level and above to
// w, in format (a checked --log-format; "" is the default).
func newLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	handler, ok := logFormats[format]
	if !ok {
		handler = logFormats[defaultLogFormat]
	}
	return slog.New(handler(w, &slog.HandlerOptions{Level: level}))
}
