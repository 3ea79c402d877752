//go:build unix

package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pollableStdin returns what serve reads MCP messages from over stdio: r
// itself, unless r is this process's standard input and that is a pipe
// or a socket of its own, which it then returns as an *os.File in Go's
// poller (its descriptor set non-blocking).
//
// A read of a descriptor in the poller parks the goroutine instead of
// holding a thread in a blocking read(2) between messages, and
// mcpserver's transport reads it from the session's own reader, since
// closing such a file ends a read in progress; a blocking standard input
// costs a thread handoff and a goroutine switch per message instead.
//
// Only a pipe or socket that standard output and standard error do not
// share is changed: O_NONBLOCK belongs to the open file, which a
// terminal shares with the shell, and which descriptors 1 and 2 share
// when they are the same socket, so that their blocking writes would
// start to fail with EAGAIN. The pipe is left non-blocking when serve
// ends, which only another reader of the same pipe could notice, and a
// stdio session has none: it would take lines meant for serve. Other
// readers (a terminal, a file, a test's reader) are returned as they are.
func pollableStdin(r io.Reader) io.Reader {
	if r != io.Reader(os.Stdin) {
		return r
	}
	var in unix.Stat_t
	if unix.Fstat(0, &in) != nil {
		return r
	}
	if kind := in.Mode & unix.S_IFMT; kind != unix.S_IFIFO && kind != unix.S_IFSOCK {
		return r
	}
	for _, fd := range []int{1, 2} {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Dev == in.Dev && st.Ino == in.Ino {
			return r
		}
	}
	if unix.SetNonblock(0, true) != nil {
		return r
	}
	// NewFile puts a descriptor that is already non-blocking in the poller.
	return os.NewFile(0, "/dev/stdin")
}
