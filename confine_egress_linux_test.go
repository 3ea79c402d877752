//go:build linux

package execgate

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/internal/confine"
)

// egressServer is an HTTP server on 127.0.0.2, a loopback address that no
// program's NO_PROXY lists, so that a proxy-aware client inside the
// sandbox goes through the egress proxy to reach it. It answers every
// request with "hello from the test server" and counts them.
func egressServer(t *testing.T) (addr string, hits *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.2:0")
	require.NoError(t, err)
	hits = &atomic.Int64{}
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "hello from the test server\n")
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	return l.Addr().String(), hits
}

// egressProgram is the system's program name, the file itself (not a
// link, nor a shim in the PATH). CI installs every one these tests run.
func egressProgram(t *testing.T, name string) string {
	t.Helper()
	p, err := systemProgram(name)
	require.NoError(t, err, "%s is not installed (CI installs it)", name)
	p, err = filepath.EvalSymlinks(p)
	require.NoError(t, err)
	return p
}

// egressSpec is a confined spec of program with args, the network off and
// the given egress lists.
func egressSpec(program string, args []string, allow ...string) CommandSpec {
	return CommandSpec{Command: program, Args: Fixed(args...), Timeout: 20e9,
		Confine: &Confinement{Read: []string{"/"}, Egress: &Egress{Allow: allow}}}
}

func TestConfinement_EgressReachesOnlyListedHosts(t *testing.T) {
	if !requireSupport(t, true, true) {
		return
	}
	curl := egressProgram(t, "curl")
	addr, hits := egressServer(t)
	_, port, _ := net.SplitHostPort(addr)
	url := "http://" + addr + "/"

	for _, tc := range []struct {
		sentence string
		tool     string // "" for curl
		allow    []string
		args     []string
		reached  bool
		refusal  string
	}{
		{"wget reaches a listed address through the proxy", "wget",
			[]string{addr}, []string{"-q", "-O", "-", url}, true, ""},
		{"wget is refused another port", "wget",
			[]string{"127.0.0.2:1"}, []string{"-q", "-O", "-", url}, false, "not on the allowlist"},
		{"python3's urllib reaches a listed address through the proxy", "python3",
			[]string{addr}, []string{"-c", "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(" + fmt.Sprintf("%q", url) + ", timeout=5).read().decode())"}, true, ""},
		{"python3's urllib is refused an unlisted one", "python3",
			[]string{"127.0.0.3:" + port}, []string{"-c", "import urllib.request; urllib.request.urlopen(" + fmt.Sprintf("%q", url) + ", timeout=5)"}, false, "not on the allowlist"},
		{"a listed address and port is reached through the proxy, by plain HTTP", "",
			[]string{addr}, []string{"-sSf", url}, true, ""},
		{"the same through a CONNECT tunnel", "",
			[]string{addr}, []string{"-sSf", "-p", url}, true, ""},
		{"the address on another port is refused", "",
			[]string{"127.0.0.2:1"}, []string{"-sSf", url}, false, "not on the allowlist"},
		{"a name pattern does not reach an address", "",
			[]string{"*.example.com:" + port}, []string{"-sSf", url}, false, "not on the allowlist"},
		{"'*' reaches no loopback address", "",
			[]string{"*:*"}, []string{"-sSf", url}, false, "loopback address"},
		{"an empty allowlist reaches nothing", "",
			nil, []string{"-sSf", url}, false, "not on the allowlist"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			before := hits.Load()
			prog := curl
			if tc.tool != "" {
				prog = egressProgram(t, tc.tool)
			}
			res := runSpec(t, egressSpec(prog, tc.args, tc.allow...))
			require.Empty(t, res.SpawnError)
			if tc.reached {
				require.True(t, res.OK, "%+v", res)
				assert.Equal(t, "hello from the test server\n", res.Stdout)
				assert.Equal(t, before+1, hits.Load())
				require.Len(t, res.Connections, 1, "%+v", res.Connections)
				c := res.Connections[0]
				assert.True(t, c.Allowed, "%+v", c)
				assert.Equal(t, "127.0.0.2", c.Host)
				assert.Equal(t, addr, c.Address)
				assert.Positive(t, c.BytesSent)
				assert.Positive(t, c.BytesReceived)
				return
			}
			assert.False(t, res.OK, "%+v", res)
			assert.Equal(t, before, hits.Load(), "the server was reached")
			require.Len(t, res.Connections, 1, "%+v", res.Connections)
			c := res.Connections[0]
			assert.False(t, c.Allowed)
			assert.Contains(t, c.Refusal, tc.refusal)
			assert.Zero(t, c.BytesSent+c.BytesReceived)
			assert.Empty(t, c.Address)
		})
	}
}

// A program that ignores the proxy variables, or opens a socket of its
// own, reaches nothing, listed or not.
func TestConfinement_EgressIsTheOnlyWayOut(t *testing.T) {
	if !requireSupport(t, true, true) {
		return
	}
	addr, hits := egressServer(t)
	host, port, _ := net.SplitHostPort(addr)
	for _, tc := range []struct {
		sentence string
		tool     string
		args     []string
	}{
		{"curl told to ignore the proxy", "curl", []string{"-sS", "--max-time", "5", "--noproxy", "*", "http://" + addr + "/"}},
		{"bash's /dev/tcp", "bash", []string{"-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%s && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3", host, port)}},
		{"python3's socket module", "python3", []string{"-c", fmt.Sprintf("import socket; s = socket.create_connection((%q, %s), 5); s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n'); print(s.recv(100))", host, port)}},
		{"the proxy's own address for something that is not HTTP", "bash", []string{"-c", "exec 3<>/dev/tcp/127.0.0.1/3128 && printf 'SSH-2.0-x\\r\\n\\r\\n' >&3 && cat <&3"}},
		{"nc", "nc", []string{"-w", "3", host, port}},
		{"wget told not to use the proxy", "wget", []string{"-q", "--no-proxy", "-T", "5", "-t", "1", "-O", "-", "http://" + addr + "/"}},
		{"getent, which asks a name server directly", "getent", []string{"ahosts", "example.com"}},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			before := hits.Load()
			res := runSpec(t, egressSpec(egressProgram(t, tc.tool), tc.args, addr))
			require.Empty(t, res.SpawnError)
			assert.Equal(t, before, hits.Load(), "the server was reached: %+v", res)
			assert.NotContains(t, res.Stdout, "hello from the test server")
			for _, c := range res.Connections {
				assert.False(t, c.Allowed, "%+v", c)
			}
		})
	}
}

func TestConfinement_EgressProxyEnvironment(t *testing.T) {
	if !requireSupport(t, true, true) {
		return
	}
	env := lookTool(t, "env")
	spec := egressSpec(env, nil)
	spec.Env = map[string]string{"HTTPS_PROXY": "http://elsewhere:1", "KEEP": "1"}
	res := runSpec(t, spec)
	require.True(t, res.OK, "%+v", res)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	assert.ElementsMatch(t, []string{
		"KEEP=1",
		"ALL_PROXY=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128", "HTTP_PROXY=http://127.0.0.1:3128",
		"all_proxy=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "http_proxy=http://127.0.0.1:3128",
		"NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1",
	}, lines)
	assert.Empty(t, res.Connections)
}

// A best-effort confinement with an egress list is never retried without
// its namespaces: the command would get the caller's whole network.
func TestConfinement_EgressIsNeverDroppedForBestEffort(t *testing.T) {
	ns := confine.Namespaces{User: true, Net: true, PID: true, Mount: true}
	with := &confinedStart{ns: ns, bestEffort: true, proxy: newEgressProxy(&egressRules{})}
	defer with.proxy.close()
	assert.False(t, with.retry())
	assert.Equal(t, ns, with.ns)

	without := &confinedStart{ns: ns, bestEffort: true}
	assert.True(t, without.retry(), "the control: best effort without an egress list drops its namespaces")
	assert.Contains(t, without.unconfined, "network")
}
