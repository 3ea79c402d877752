package execgate

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// escapeProgram is one real program's way of reaching a listener: argv,
// given the listener's TCP port and Unix socket path.
type escapeProgram struct {
	why, program string
	argv         func(port, sock string) []string
	unix         bool // reaches the Unix socket rather than the TCP port
}

var escapePrograms = []escapeProgram{
	{"curl over TCP", "curl", func(port, _ string) []string {
		return []string{"-s", "-m", "3", "http://127.0.0.1:" + port + "/"}
	}, false},
	{"bash's /dev/tcp", "bash", func(port, _ string) []string {
		return []string{"-c", "exec 3<>/dev/tcp/127.0.0.1/" + port + " && echo connected"}
	}, false},
	{"python3's socket module", "python3", func(port, _ string) []string {
		return []string{"-c", "import socket; socket.create_connection(('127.0.0.1', " + port + "), 3); print('connected')"}
	}, false},
	{"wget", "wget", func(port, _ string) []string {
		return []string{"-q", "-T", "3", "-t", "1", "-O", "-", "http://127.0.0.1:" + port + "/"}
	}, false},
	{"nc", "nc", func(port, _ string) []string { return []string{"-w", "3", "127.0.0.1", port} }, false},
	{"curl to a Unix socket", "curl", func(_, sock string) []string {
		return []string{"-s", "-m", "3", "--unix-socket", sock, "http://x/"}
	}, true},
	{"python3 to a Unix socket", "python3", func(_, sock string) []string {
		return []string{"-c", "import socket; s = socket.socket(socket.AF_UNIX); s.connect('" + sock + "'); print('connected')"}
	}, true},
}

// escapeListeners starts a TCP listener on the gate's loopback and a Unix
// socket outside any write path, each counting the connections it accepts.
func escapeListeners(t *testing.T) (port, sock string, tcp, unix *atomic.Int64) {
	t.Helper()
	count := func(l net.Listener) *atomic.Int64 {
		var n atomic.Int64
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				n.Add(1)
				// Read what the client sends before answering: closing
				// a Unix socket with unread data resets it.
				c.SetDeadline(time.Now().Add(3 * time.Second))
				c.Read(make([]byte, 4096))
				c.Write([]byte("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"))
				c.Close()
			}
		}()
		t.Cleanup(func() { l.Close() })
		return &n
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	sock = filepath.Join(t.TempDir(), "daemon.sock")
	u, err := net.Listen("unix", sock)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(sock, 0o777))
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port), sock, count(l), count(u)
}

// systemProgram finds the distribution's own name, in /usr/bin or /bin,
// before PATH (where a version manager's shim may stand in for it).
func systemProgram(name string) (string, error) {
	for _, dir := range []string{"/usr/bin", "/bin"} {
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p, nil
		}
	}
	return exec.LookPath(name)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// TestConfinement_RealProgramsCannotEscapeTheSandbox runs real programs,
// as an agent's command would, against a listener on the gate's own
// loopback and a Unix socket outside the write paths, such as a container
// runtime's (invariant 13 of DESIGN.md): with the network off none of them
// reaches the TCP listener, and with the network on or off none reaches
// the Unix socket; unconfined, each does. A program not installed here is
// named in the log; curl, bash and python3 are (CI installs them).
func TestConfinement_RealProgramsCannotEscapeTheSandbox(t *testing.T) {
	port, sock, tcp, unixConns := escapeListeners(t)
	for _, p := range escapePrograms {
		path, err := systemProgram(p.program)
		if err != nil {
			if p.program == "curl" || p.program == "bash" || p.program == "python3" {
				t.Fatalf("%s is not installed (CI installs it)", p.program)
			}
			t.Logf("%s is not installed here: %s not tried", p.program, p.why)
			continue
		}
		path, err = filepath.EvalSymlinks(path)
		require.NoError(t, err)
		t.Run(p.why, func(t *testing.T) {
			counter := tcp
			if p.unix {
				counter = unixConns
			}
			networks := []bool{false}
			if p.unix {
				networks = []bool{false, true}
			}
			for _, network := range networks {
				spec := CommandSpec{Command: path, Args: Fixed(p.argv(port, sock)...), Dir: "/",
					Confine: &Confinement{Read: []string{"/"}, Exec: []string{"/usr", "/bin", "/lib"}, Network: network}}
				if !requireSupport(t, true, !network) {
					assertRefused(t, runSpec(t, spec))
					continue
				}
				before := counter.Load()
				res := runSpec(t, spec)
				assert.False(t, res.OK, "network %v: %s reached the listener: %+v", network, p.why, res)
				assert.Equal(t, before, counter.Load(), "network %v: no connection arrived", network)
			}
			// The contrast: unconfined, the program reaches it.
			before := counter.Load()
			res := runSpec(t, CommandSpec{Command: path, Args: Fixed(p.argv(port, sock)...), Dir: "/"})
			assert.True(t, res.OK, "unconfined, %s reaches the listener: %+v", p.why, res)
			// The listener counts a connection once it has accepted it,
			// which may be after the program ended: wait for it, so
			// that it is not counted against the next program.
			assert.Eventually(t, func() bool { return counter.Load() > before }, 10*time.Second, time.Millisecond)
		})
	}
}
