//go:build linux

package confine

import (
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// warmProcess is this test binary started as a warm helper without
// namespaces, with the descriptors a pool gives it unless files replaces
// them.
type warmProcess struct {
	w      *Warm
	cmd    *exec.Cmd
	stderr strings.Builder
}

func startWarm(t *testing.T, argv func(w *Warm) []string, files func(w *Warm, null *os.File) []*os.File) *warmProcess {
	t.Helper()
	w, err := NewWarm(Namespaces{})
	require.NoError(t, err)
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer null.Close()
	args := w.Args()
	if argv != nil {
		args = argv(w)
	}
	extra := w.Files(null)
	if files != nil {
		extra = files(w, null)
	}
	p := &warmProcess{w: w}
	p.cmd = &exec.Cmd{Path: "/proc/self/exe", Args: args, Env: []string{}, ExtraFiles: extra, Stderr: &p.stderr}
	require.NoError(t, p.cmd.Start())
	w.Started()
	if argv == nil && files == nil {
		require.NoError(t, w.Prepared(), "%s", p.stderr.String())
	}
	t.Cleanup(func() {
		w.Close()
		p.cmd.Process.Kill()
		p.cmd.Wait()
	})
	return p
}

// wait waits for the helper to end, at most a few seconds, and returns
// its exit status.
func (p *warmProcess) wait(t *testing.T) int {
	t.Helper()
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-done
		t.Fatal("the warm helper did not end")
	}
	return p.cmd.ProcessState.ExitCode()
}

// echoRequest runs echo with out as the only file it may write.
func echoRequest(t *testing.T) Request {
	t.Helper()
	echo, err := exec.LookPath("echo")
	require.NoError(t, err)
	filters, err := Filters(true)
	require.NoError(t, err)
	req := Request{Path: echo, Argv: []string{echo, "handed"}, Env: []string{}, Filters: filters, BestEffort: true, Dir: "/"}
	req.Rules = append(req.Rules, ExecutableRules(echo, nil, "")...)
	return req
}

func TestWarm_AHandedCallRuns(t *testing.T) {
	p := startWarm(t, nil, nil)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	defer outR.Close()
	l, err := p.w.Handoff(echoRequest(t), outW, outW, nil, nil)
	require.NoError(t, err)
	outW.Close()
	out, err := io.ReadAll(outR)
	require.NoError(t, err)
	assert.Equal(t, 0, p.wait(t), "%s", p.stderr.String())
	rep := l.Wait()
	require.NoError(t, rep.Err)
	assert.True(t, rep.Ready)
	assert.Equal(t, "handed\n", string(out))
	l.Close()
}

// TestWarm_ARefusedHandoffRunsNothing hands a warm helper what only a
// forger would: each is refused, the helper exits with status 2, and the
// command, which would create a file, never runs.
func TestWarm_ARefusedHandoffRunsNothing(t *testing.T) {
	touch, err := exec.LookPath("touch")
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		// send hands the helper something, given a request that would
		// touch the target and an open file to pass.
		send func(t *testing.T, p *warmProcess, req Request, f *os.File)
		want string
	}{
		{"a request with another token is refused", func(t *testing.T, p *warmProcess, req Request, f *os.File) {
			req.Token = strings.Repeat("0", 2*TokenSize)
			sendRaw(t, p.w, req.Encode(), f, f)
		}, "token does not match"},
		{"a handoff without stdout and stderr is refused", func(t *testing.T, p *warmProcess, req Request, f *os.File) {
			req.Token = p.w.token
			sendRaw(t, p.w, req.Encode(), f)
		}, "other descriptors than its request asks for"},
		{"a handoff with a descriptor its request does not ask for is refused", func(t *testing.T, p *warmProcess, req Request, f *os.File) {
			req.Token = p.w.token
			sendRaw(t, p.w, req.Encode(), f, f, f, f)
		}, "other descriptors than its request asks for"},
		{"a pinned executable that is not a regular file is refused", func(t *testing.T, p *warmProcess, req Request, f *os.File) {
			req.Token, req.PinnedFD, req.Path, req.Stdin = p.w.token, true, "", true
			sendRaw(t, p.w, req.Encode(), f, f, f, f) // stdin, then a pipe where the executable goes
		}, "is not what it should be"},
		{"an egress socket that is not a socket is refused", func(t *testing.T, p *warmProcess, req Request, f *os.File) {
			req.Token, req.NetworkIsolated, req.EgressListener = p.w.token, true, true
			sendRaw(t, p.w, req.Encode(), f, f, f)
		}, "is not what it should be"},
		{"a stdout that is not a pipe is refused", func(t *testing.T, p *warmProcess, req Request, f *os.File) {
			req.Token = p.w.token
			file, err := os.Create(filepath.Join(t.TempDir(), "out"))
			require.NoError(t, err)
			defer file.Close()
			sendRaw(t, p.w, req.Encode(), file, f)
		}, "is not what it should be"},
		{"stdin the request does not ask for is refused", func(t *testing.T, p *warmProcess, req Request, f *os.File) {
			req.Token = p.w.token
			sendRaw(t, p.w, req.Encode(), f, f, f)
		}, "other descriptors than its request asks for"},
		{"a truncated set of descriptors is refused", func(t *testing.T, p *warmProcess, req Request, f *os.File) {
			req.Token = p.w.token
			fds := make([]int, maxHandoffFiles+3) // more than the helper makes room for
			for i := range fds {
				fds[i] = int(f.Fd())
			}
			b := req.Encode()
			head := binary.BigEndian.AppendUint64(nil, uint64(len(b)))
			require.NoError(t, unix.Sendmsg(int(p.w.conn.Fd()), head, unix.UnixRights(fds...), nil, 0))
			_, err := p.w.conn.Write(b)
			require.NoError(t, err)
		}, "malformed"},
		{"a request larger than a request may be is refused", func(t *testing.T, p *warmProcess, req Request, f *os.File) {
			head := binary.BigEndian.AppendUint64(nil, MaxRequestSize+1)
			require.NoError(t, unix.Sendmsg(int(p.w.conn.Fd()), head, unix.UnixRights(int(f.Fd()), int(f.Fd())), nil, 0))
		}, "too large"},
		{"a request that ends early is refused", func(t *testing.T, p *warmProcess, req Request, f *os.File) {
			req.Token = p.w.token
			b := req.Encode()
			head := binary.BigEndian.AppendUint64(nil, uint64(len(b)))
			require.NoError(t, unix.Sendmsg(int(p.w.conn.Fd()), head, unix.UnixRights(int(f.Fd()), int(f.Fd())), nil, 0))
			_, err := p.w.conn.Write(b[:len(b)/2])
			require.NoError(t, err)
			p.w.conn.Close()
		}, "ended early"},
		{"a request that asks for a read-only tree the helper did not make is refused", func(t *testing.T, p *warmProcess, req Request, f *os.File) {
			req.Token, req.ReadOnlyTree = p.w.token, true
			sendRaw(t, p.w, req.Encode(), f, f)
		}, "read-only tree"},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "touched")
			req := echoRequest(t)
			req.Path, req.Argv = touch, []string{touch, target}
			req.Rules = append(ExecutableRules(touch, nil, ""), Rule{Path: filepath.Dir(target), Access: AccessWrite | AccessReadDir | AccessReadFile})
			p := startWarm(t, nil, nil)
			_, pw, err := os.Pipe()
			require.NoError(t, err)
			defer pw.Close()
			c.send(t, p, req, pw)
			assert.Equal(t, exitRefused, p.wait(t))
			rep := readReport(p.w.statR)
			require.Error(t, rep.Err)
			assert.Contains(t, rep.Err.Error(), c.want)
			assert.False(t, rep.Ready)
			assert.NoFileExists(t, target)
		})
	}
}

// sendRaw sends b as a handoff with files, as a forger holding the
// socket could.
func sendRaw(t *testing.T, w *Warm, b []byte, files ...*os.File) {
	t.Helper()
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	head := binary.BigEndian.AppendUint64(nil, uint64(len(b)))
	require.NoError(t, unix.Sendmsg(int(w.conn.Fd()), head, unix.UnixRights(fds...), nil, 0))
	_, err := w.conn.Write(b)
	require.NoError(t, err)
}

// TestWarm_AHelperWhoseGateEndsEndsToo: a warm helper waits on a socket
// only the gate holds the other end of; when it closes, as it does when
// the gate dies, the helper exits by itself.
func TestWarm_AHelperWhoseGateEndsEndsToo(t *testing.T) {
	p := startWarm(t, nil, nil)
	p.w.Close()
	assert.Equal(t, exitRefused, p.wait(t))
	assert.Empty(t, p.stderr.String(), "an unneeded helper ends quietly")
}

// TestWarm_AHelperStartedOtherwiseRefuses: argv and descriptors other than
// a pool's are refused before anything else.
func TestWarm_AHelperStartedOtherwiseRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		args  func(w *Warm) []string
		files func(w *Warm, null *os.File) []*os.File
		want  string
	}{
		{"a malformed token", func(w *Warm) []string {
			return []string{"x", WarmMarker, "zz", warmPrepareNothing}
		}, nil, "malformed token"},
		{"a preparation it does not know", func(w *Warm) []string {
			return []string{"x", WarmMarker, w.token, "nx"}
		}, nil, "malformed preparation"},
		{"an empty preparation", func(w *Warm) []string {
			return []string{"x", WarmMarker, w.token, ""}
		}, nil, "malformed preparation"},
		{"a pipe where the socket goes", nil, func(w *Warm, null *os.File) []*os.File {
			return []*os.File{w.statR, w.statW, null, null}
		}, "is not a socket"},
		{"no places held for the executable and the egress socket", nil, func(w *Warm, null *os.File) []*os.File {
			return []*os.File{w.child, w.statW}
		}, "does not hold its place"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := startWarm(t, c.args, c.files)
			assert.Equal(t, exitRefused, p.wait(t))
			assert.Contains(t, p.stderr.String(), c.want)
		})
	}
}

// TestWarm_TheHandoffCarriesItsRequest: the one message that hands a call
// over carries, with the descriptors, the Request's length and the whole
// Request, so the helper never waits for the rest of it.
func TestWarm_TheHandoffCarriesItsRequest(t *testing.T) {
	w, err := NewWarm(Namespaces{})
	require.NoError(t, err)
	defer w.Close()
	_, outW, err := os.Pipe()
	require.NoError(t, err)
	defer outW.Close()
	l, err := w.Handoff(echoRequest(t), outW, outW, nil, nil)
	require.NoError(t, err)

	buf := make([]byte, 1<<20)
	oob := make([]byte, unix.CmsgSpace(4*maxHandoffFiles))
	n, oobn, _, _, err := unix.Recvmsg(int(w.child.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	require.NoError(t, err)
	fds, err := handoffFiles(oob[:oobn])
	require.NoError(t, err)
	for _, fd := range fds {
		unix.Close(fd)
	}
	assert.Len(t, fds, 2)
	require.GreaterOrEqual(t, n, 8)
	size := binary.BigEndian.Uint64(buf[:8])
	require.Equal(t, uint64(n-8), size, "the Request comes in the handoff's message")
	req, err := DecodeRequest(buf[8:n])
	require.NoError(t, err)
	assert.Equal(t, w.token, req.Token)
	assert.Equal(t, []string{req.Argv[0], "handed"}, req.Argv)

	w.Close() // the helper's ends: the report ends
	rep := l.Wait()
	assert.False(t, rep.Ready)
	l.Close()
}

// TestWarm_ALargeRequestIsHandedWhole: a Request larger than the
// handoff's message carries is handed all the same, its rest following
// on the socket, and its call runs.
func TestWarm_ALargeRequestIsHandedWhole(t *testing.T) {
	p := startWarm(t, nil, nil)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	defer outR.Close()
	req := echoRequest(t)
	big := "BIG=" + strings.Repeat("x", 3*handoffInline)
	req.Env = []string{big}
	req.Argv = []string{req.Argv[0], "handed", strings.Repeat("y", handoffInline)}
	require.Greater(t, len(req.Encode()), 4*handoffInline)
	l, err := p.w.Handoff(req, outW, outW, nil, nil)
	require.NoError(t, err)
	outW.Close()
	out, err := io.ReadAll(outR)
	require.NoError(t, err)
	assert.Equal(t, 0, p.wait(t), "%s", p.stderr.String())
	rep := l.Wait()
	require.NoError(t, rep.Err)
	assert.True(t, rep.Ready)
	assert.Equal(t, "handed "+strings.Repeat("y", handoffInline)+"\n", string(out))
	l.Close()
}
