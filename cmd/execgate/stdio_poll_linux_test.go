package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// stdinNonblocking reports whether descriptor 0 of the process pid is
// non-blocking, from /proc/PID/fdinfo/0.
func stdinNonblocking(t *testing.T, pid int) bool {
	t.Helper()
	info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/0", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(info), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			require.NoError(t, err)
			return flags&unix.O_NONBLOCK != 0
		}
	}
	require.FailNow(t, "no flags in fdinfo", "%s", info)
	return false
}

// TestE2E_StdioPollsAPipeOfItsOwn: serve puts a standard input that is a
// pipe of its own in Go's poller (non-blocking), and leaves one it shares
// with standard output (one socket for both) blocking, since the flag
// belongs to the open file and would make its blocking writes fail; over
// either, a session works, and the end of input or SIGTERM (with the
// input still open, a read of it waiting) ends serve with exit 0.
func TestE2E_StdioPollsAPipeOfItsOwn(t *testing.T) {
	config := writeFile(t, "tools.yaml", testConfig)
	for _, tc := range []struct {
		name string
		// start starts cmd with its standard input and output connected
		// to the returned ends.
		start       func(t *testing.T, cmd *exec.Cmd) (io.WriteCloser, io.Reader)
		nonblocking bool
		sigterm     bool // end serve with SIGTERM, not the end of input
	}{
		{"a pipe of its own is polled", func(t *testing.T, cmd *exec.Cmd) (io.WriteCloser, io.Reader) {
			in, err := cmd.StdinPipe()
			require.NoError(t, err)
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			return in, out
		}, true, false},
		{"a polled pipe: SIGTERM ends a read in progress", func(t *testing.T, cmd *exec.Cmd) (io.WriteCloser, io.Reader) {
			in, err := cmd.StdinPipe()
			require.NoError(t, err)
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			return in, out
		}, true, true},
		{"one socket as standard input and output is left blocking", func(t *testing.T, cmd *exec.Cmd) (io.WriteCloser, io.Reader) {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			require.NoError(t, err)
			mine, theirs := os.NewFile(uintptr(fds[0]), "client"), os.NewFile(uintptr(fds[1]), "server")
			cmd.Stdin, cmd.Stdout = theirs, theirs
			require.NoError(t, cmd.Start())
			require.NoError(t, theirs.Close())
			t.Cleanup(func() { mine.Close() })
			return halfCloser{mine}, mine
		}, false, false},
		{"a blocking socket: SIGTERM ends the session all the same", func(t *testing.T, cmd *exec.Cmd) (io.WriteCloser, io.Reader) {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			require.NoError(t, err)
			mine, theirs := os.NewFile(uintptr(fds[0]), "client"), os.NewFile(uintptr(fds[1]), "server")
			cmd.Stdin, cmd.Stdout = theirs, theirs
			require.NoError(t, cmd.Start())
			require.NoError(t, theirs.Close())
			t.Cleanup(func() { mine.Close() })
			return halfCloser{mine}, mine
		}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(binary(t), "serve", "--config", config)
			var stderr syncBuffer
			cmd.Stderr = &stderr
			in, out := tc.start(t, cmd)
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			defer func() {
				_ = cmd.Process.Kill()
				<-exited
			}()
			lines := bufio.NewReader(out)
			roundTrip := func(line string) string {
				_, err := io.WriteString(in, line+"\n")
				require.NoError(t, err)
				answer, err := lines.ReadString('\n')
				require.NoError(t, err, "stderr: %s", stderr.String())
				return answer
			}
			assert.Contains(t, roundTrip(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`), `"result"`)
			_, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
			require.NoError(t, err)
			assert.Equal(t, tc.nonblocking, stdinNonblocking(t, cmd.Process.Pid))
			answer := roundTrip(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo_run","arguments":{"args":["polled"]}}}`)
			assert.Contains(t, answer, `polled\n`)
			assert.NotContains(t, answer, `"isError":true`)

			if tc.sigterm {
				require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
				defer in.Close()
			} else {
				require.NoError(t, in.Close())
			}
			select {
			case err := <-exited:
				exited <- err
				require.NoError(t, err, "serve ends with exit 0; stderr: %s", stderr.String())
			case <-time.After(20 * time.Second):
				require.FailNow(t, "serve did not end", "stderr: %s", stderr.String())
			}
		})
	}
}

// halfCloser closes the writing half of a socket, so that the other end
// reads the end of input while this end can still read.
type halfCloser struct{ f *os.File }

func (h halfCloser) Write(p []byte) (int, error) { return h.f.Write(p) }

func (h halfCloser) Close() error {
	raw, err := h.f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = unix.Shutdown(int(fd), unix.SHUT_WR) }); err != nil {
		return err
	}
	return serr
}
