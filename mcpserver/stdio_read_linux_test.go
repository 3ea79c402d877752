//go:build linux

package mcpserver

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// plainReader hides every method of its reader but Read.
type plainReader struct{ r io.Reader }

func (p plainReader) Read(b []byte) (int, error) { return p.r.Read(b) }

func TestLineConn_ReadsItselfWhenCloseEndsARead(t *testing.T) {
	blockingPipe := func(t *testing.T) (io.ReadCloser, io.WriteCloser) {
		var fds [2]int
		require.NoError(t, unix.Pipe2(fds[:], unix.O_CLOEXEC)) // blocking: not in Go's poller
		return os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	}
	for _, tc := range []struct {
		name string
		pipe func(t *testing.T) (io.ReadCloser, io.WriteCloser)
		// direct: the session's reader reads r itself, with no goroutine
		// of the transport's own between them.
		direct bool
	}{
		{"an io.Pipe, whose Close ends a Read, is read directly",
			func(*testing.T) (io.ReadCloser, io.WriteCloser) { return io.Pipe() }, true},
		{"an os.Pipe in Go's poller (non-blocking) is read directly",
			func(t *testing.T) (io.ReadCloser, io.WriteCloser) {
				r, w, err := os.Pipe()
				require.NoError(t, err)
				return r, w
			}, true},
		{"a blocking pipe, whose Close does not end a read(2), is read by a goroutine of the transport's",
			blockingPipe, false},
		{"a reader of unknown kind is read by a goroutine of the transport's",
			func(t *testing.T) (io.ReadCloser, io.WriteCloser) {
				r, w := io.Pipe()
				return struct {
					io.Reader
					io.Closer
				}{plainReader{r}, r}, w
			}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w := tc.pipe(t)
			defer w.Close()
			conn, err := StdioTransport(r, io.Discard).Connect(context.Background())
			require.NoError(t, err)
			c := conn.(*lineConn)
			assert.Equal(t, tc.direct, c.lr != nil, "reads r itself")
			assert.Equal(t, tc.direct, c.frames == nil, "no goroutine of its own reads r")

			// Either way a message is read, and a Close ends a Read that
			// waits for input (the SDK's contract for a Connection).
			wrote := make(chan error, 1)
			go func() {
				_, err := io.WriteString(w, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n")
				wrote <- err
			}()
			msg, err := c.Read(context.Background())
			require.NoError(t, <-wrote)
			require.NoError(t, err)
			assert.Equal(t, "ping", msg.(*jsonrpc.Request).Method)
			read := make(chan error, 1)
			go func() {
				_, err := c.Read(context.Background())
				read <- err
			}()
			require.NoError(t, c.Close())
			select {
			case err := <-read:
				assert.ErrorIs(t, err, io.EOF, "a Read ended by Close reports the end of input")
			case <-time.After(20 * time.Second):
				require.FailNow(t, "Close did not end a Read waiting for input")
			}
			_, err = c.Read(context.Background())
			assert.ErrorIs(t, err, io.EOF, "a Read after Close")
		})
	}
}
