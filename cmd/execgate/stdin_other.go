//go:build !unix

package main

import "io"

// pollableStdin returns r: only on Unix does serve put its standard input
// in Go's poller.
func pollableStdin(r io.Reader) io.Reader { return r }
