package execgate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/internal/confine"
)

func TestEgress_EntriesAreCheckedAndNormalized(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		in       string
		want     string // "" when refused
		errHas   string
	}{
		{"a name and a port", "api.github.com:443", "api.github.com:443", ""},
		{"names are lowercased and lose a trailing dot", "API.GitHub.COM.:443", "api.github.com:443", ""},
		{"a pattern keeps its star", "*.GitHubUserContent.com:443", "*.githubusercontent.com:443", ""},
		{"any host", "*:443", "*:443", ""},
		{"any port is written *", "example.com:1-65535", "example.com:*", ""},
		{"a port range", "example.com:8000-8999", "example.com:8000-8999", ""},
		{"an IPv4 address", "10.1.2.3:5432", "10.1.2.3:5432", ""},
		{"an IPv4 prefix is masked", "10.1.2.3/8:*", "10.0.0.0/8:*", ""},
		{"an IPv6 address in brackets", "[FD00::1]:443", "[fd00::1]:443", ""},
		{"an IPv6 prefix", "[fd00::/8]:443", "[fd00::/8]:443", ""},
		{"no port", "example.com", "", "has no port"},
		{"a bracketed address without a port", "[::1]", "", "has no port"},
		{"port zero", "example.com:0", "", "from 1 to 65535"},
		{"a port too large", "example.com:65536", "", "from 1 to 65535"},
		{"a signed port", "example.com:+443", "", "from 1 to 65535"},
		{"a range that ends before it starts", "example.com:9-1", "", "ends before it starts"},
		{"a star inside a name", "api.*.com:443", "", "is not a host name"},
		{"a bare star pattern", "*.:443", "", "is not a host name"},
		{"a user in the host", "user@example.com:443", "", "is not a host name"},
		{"a path in the host", "example.com/x:443", "", "not an IPv4 address or prefix"},
		{"an IPv6 address without brackets", "fd00::1:443", "", "written in brackets"},
		{"a URL", "https://api.github.com:443", "", "is a URL"},
		{"an IPv4-mapped address in brackets", "[::ffff:10.0.0.1]:443", "", "not an IPv6 address"},
		{"an IPv4 address in brackets", "[10.0.0.1]:443", "", "not an IPv6 address"},
		{"a zone", "[fe80::1%eth0]:443", "", "not an IPv6 address"},
		{"a numeric last label is an address or nothing", "10.1.2:443", "", "not an IPv4 address"},
		{"a label starting with a hyphen", "-x.example.com:443", "", "is not a host name"},
		{"a control character", "exa\nmple.com:443", "", "is not a host name"},
		{"an empty host", ":443", "", "is not a host name"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			e, err := parseEgressEntry(tc.in)
			if tc.want == "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.errHas)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, e.text)
			again, err := parseEgressEntry(e.text)
			require.NoError(t, err, "the normal form parses")
			assert.Equal(t, e.text, again.text, "the normal form is a fixed point")
		})
	}
}

// An Egress is checked by NewAllowlist, lists sorted and deduplicated,
// and only with the network off.
func TestEgress_NewAllowlistChecksIt(t *testing.T) {
	spec := func(c *Confinement) CommandSpec {
		return CommandSpec{Name: "t", Command: "/bin/echo", Args: Fixed(), Confine: c}
	}
	a, err := NewAllowlist(spec(&Confinement{Egress: &Egress{Allow: []string{"b.example:443", "A.example:443", "a.example:443"}}}))
	require.NoError(t, err)
	s, _ := a.Lookup("t")
	assert.Equal(t, []string{"a.example:443", "b.example:443"}, s.Confine.Egress.Allow)

	_, err = NewAllowlist(spec(&Confinement{Network: true, Egress: &Egress{}}))
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Confine.Egress", ce.Field)
	assert.Contains(t, ce.Message, "needs Network false")

	_, err = NewAllowlist(spec(&Confinement{Egress: &Egress{Deny: []string{"nope"}}}))
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Confine.Egress.Deny", ce.Field)
	assert.Contains(t, ce.Message, "has no port")
}

func TestSpecialAddress(t *testing.T) {
	for _, tc := range []struct {
		addr, kind string
	}{
		{"93.184.215.14", ""},
		{"2606:4700::1111", ""},
		{"127.0.0.1", "a loopback address"},
		{"127.255.0.9", "a loopback address"},
		{"::1", "a loopback address"},
		{"::ffff:127.0.0.1", "a loopback address"},
		{"10.0.0.1", "a private address"},
		{"172.16.0.1", "a private address"},
		{"192.168.1.1", "a private address"},
		{"fd12::1", "a private address"},
		{"169.254.169.254", "a cloud metadata address"},
		{"::ffff:169.254.169.254", "a cloud metadata address"},
		{"fd00:ec2::254", "a cloud metadata address"},
		{"100.100.100.200", "a cloud metadata address"},
		{"168.63.129.16", "a cloud platform address"},
		{"169.254.1.1", "a link-local address"},
		{"fe80::1", "a link-local address"},
		{"100.64.0.1", "a shared (carrier-grade NAT) address"},
		{"0.0.0.0", "the unspecified address"},
		{"0.1.2.3", "a reserved address"},
		{"::7f00:1", "an IPv6 address that embeds an IPv4 one"},
		{"::ffff:0:7f00:1", "an IPv6 address that embeds an IPv4 one"},
		{"fec0::1", "a site-local address"},
		{"2001:10::1", "a reserved address"},
		{"3fff::1", "a documentation address"},
		{"5f00::1", "a reserved IPv6 address (not global unicast)"},
		{"ff02::1", "a multicast address"},
		{"::", "the unspecified address"},
		{"224.0.0.1", "a multicast address"},
		{"255.255.255.255", "a reserved address"},
		{"64:ff9b::a9fe:a9fe", "a NAT64 address"},
		{"2002:a9fe:a9fe::1", "a 6to4 address"},
		{"2001:0:a9fe::1", "a Teredo address"},
		{"192.0.0.192", "a reserved address"},
	} {
		assert.Equal(t, tc.kind, specialAddress(netip.MustParseAddr(tc.addr)), tc.addr)
	}
}

// fakeResolver answers lookups from a table and counts them.
type fakeResolver struct {
	names map[string][]string
	mu    sync.Mutex
	asked []string
}

func (f *fakeResolver) lookup(_ context.Context, host string) ([]netip.Addr, error) {
	if !strings.HasSuffix(host, ".") {
		// A name that is not rooted goes through the resolver's search
		// list: names the rules never saw.
		return nil, fmt.Errorf("the proxy looked up %q, which is not a rooted name", host)
	}
	host = strings.TrimSuffix(host, ".")
	f.mu.Lock()
	f.asked = append(f.asked, host)
	f.mu.Unlock()
	addrs, ok := f.names[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range addrs {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

func (f *fakeResolver) lookups() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}

func mustRules(t *testing.T, allow, deny []string) *egressRules {
	t.Helper()
	e, _, err := normalizeEgress(&Egress{Allow: allow, Deny: deny})
	require.NoError(t, err)
	r, err := compileEgress(e)
	require.NoError(t, err)
	return r
}

func TestEgress_Decide(t *testing.T) {
	res := &fakeResolver{names: map[string][]string{
		"api.example.com":      {"93.184.215.14"},
		"cdn.example.com":      {"93.184.215.15", "10.0.0.9"},
		"internal.example.com": {"10.0.0.7"},
		"rebind.example.com":   {"127.0.0.1"},
		"meta.example.com":     {"169.254.169.254"},
		"mapped.example.com":   {"::ffff:10.0.0.7"},
		"db.corp.example":      {"10.1.2.3"},
	}}
	for _, tc := range []struct {
		sentence    string
		allow, deny []string
		target      string
		want        []string // addresses, in order; nil when refused
		refusal     string
		resolved    bool // whether the name was looked up
	}{
		{"a listed name reaches its public address",
			[]string{"api.example.com:443"}, nil, "api.example.com:443", []string{"93.184.215.14"}, "", true},
		{"the port must match",
			[]string{"api.example.com:443"}, nil, "api.example.com:80", nil, "not on the allowlist", false},
		{"a pattern covers a subdomain",
			[]string{"*.example.com:443"}, nil, "api.example.com:443", []string{"93.184.215.14"}, "", true},
		{"a pattern does not cover its own domain",
			[]string{"*.example.com:443"}, nil, "example.com:443", nil, "not on the allowlist", false},
		{"a pattern does not cover a name that merely ends the same",
			[]string{"*.example.com:443"}, nil, "evilexample.com:443", nil, "not on the allowlist", false},
		{"a name that is not listed is never looked up",
			[]string{"api.example.com:443"}, nil, "secret-in-a-label.attacker.example:443", nil, "not on the allowlist", false},
		{"a listed name resolving to a private address is refused (the DNS rebinding case)",
			[]string{"internal.example.com:443"}, nil, "internal.example.com:443", nil, "10.0.0.7 is a private address", true},
		{"a listed name resolving to loopback is refused",
			[]string{"*:*"}, nil, "rebind.example.com:80", nil, "127.0.0.1 is a loopback address", true},
		{"a listed name resolving to the metadata address is refused",
			[]string{"*:*"}, nil, "meta.example.com:80", nil, "cloud metadata", true},
		{"an IPv4-mapped answer is judged as the IPv4 address it is",
			[]string{"*:*"}, nil, "mapped.example.com:80", nil, "10.0.0.7 is a private address", true},
		{"of several answers only the public ones are dialed",
			[]string{"cdn.example.com:443"}, nil, "cdn.example.com:443", []string{"93.184.215.15"}, "", true},
		{"an entry naming the address lets a listed name reach it",
			[]string{"db.corp.example:5432", "10.0.0.0/8:5432"}, nil, "db.corp.example:5432", []string{"10.1.2.3"}, "", true},
		{"an address entry alone does not let a name be looked up",
			[]string{"10.0.0.0/8:5432"}, nil, "db.corp.example:5432", nil, "not on the allowlist", false},
		{"an address entry lets the address literal through",
			[]string{"10.0.0.0/8:5432"}, nil, "10.1.2.3:5432", []string{"10.1.2.3"}, "", false},
		{"an IPv4-mapped literal is the IPv4 address",
			[]string{"*:*"}, nil, "[::ffff:169.254.169.254]:80", nil, "cloud metadata", false},
		{"'*' lets a public literal through",
			[]string{"*:443"}, nil, "93.184.215.14:443", []string{"93.184.215.14"}, "", false},
		{"'*' does not let a private literal through",
			[]string{"*:443"}, nil, "192.168.1.1:443", nil, "private address", false},
		{"the metadata literal needs an entry naming it",
			[]string{"*:*"}, nil, "169.254.169.254:80", nil, "cloud metadata", false},
		{"deny by name wins over allow",
			[]string{"*.example.com:443"}, []string{"internal.example.com:*"}, "internal.example.com:443", nil, "deny entry", false},
		{"deny by address wins over a name that resolves into it",
			[]string{"db.corp.example:5432", "10.0.0.0/8:5432"}, []string{"10.1.0.0/16:*"}, "db.corp.example:5432", nil, "deny entry", true},
		{"deny by address wins over an address allow",
			[]string{"10.0.0.0/8:*"}, []string{"10.1.2.3:*"}, "10.1.2.3:22", nil, "deny entry", false},
		{"deny '*' refuses everything on its ports",
			[]string{"*:*"}, []string{"*:25"}, "api.example.com:25", nil, "deny entry", false},
		{"a name that does not resolve is refused",
			[]string{"*:*"}, nil, "nowhere.example.com:443", nil, "no such host", true},
		{"nothing listed refuses everything",
			nil, nil, "api.example.com:443", nil, "not on the allowlist", false},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			before := len(res.lookups())
			p := newEgressProxy(mustRules(t, tc.allow, tc.deny))
			p.lookup = res.lookup
			defer p.close()
			target, err := parseEgressTarget(tc.target, 0)
			require.NoError(t, err)
			addrs, why := p.decide(target)
			if tc.want == nil {
				assert.Empty(t, addrs)
				assert.Contains(t, why, tc.refusal)
			} else {
				assert.Empty(t, why)
				var got []string
				for _, a := range addrs {
					got = append(got, a.String())
				}
				assert.Equal(t, tc.want, got)
			}
			assert.Equal(t, tc.resolved, len(res.lookups()) > before, "looked up: %v", res.lookups()[before:])
		})
	}
}

// proxyFixture is an egress proxy served on a loopback listener of this
// process (no namespace: the proxy's own behaviour is what is tested), and
// a destination server.
type proxyFixture struct {
	p        *egressProxy
	addr     string // the proxy's
	upstream string // the destination's host:port
	hosts    chan string
	served   chan struct{}
}

func newProxyFixture(t *testing.T, allow, deny []string, names map[string][]string) *proxyFixture {
	t.Helper()
	f := &proxyFixture{hosts: make(chan string, 512), served: make(chan struct{})}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hosts <- r.Host
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "upstream saw %s %s %d", r.Method, r.URL.Path, len(body))
	}))
	t.Cleanup(up.Close)
	f.upstream = up.Listener.Addr().String()
	for i, a := range allow {
		allow[i] = strings.ReplaceAll(a, "UPSTREAM", f.upstream)
	}
	f.p = newEgressProxy(mustRules(t, allow, deny))
	f.p.lookup = (&fakeResolver{names: names}).lookup
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f.addr = l.Addr().String()
	go func() {
		defer close(f.served)
		f.p.serve(l)
	}()
	t.Cleanup(func() { f.close(t) })
	return f
}

func (f *proxyFixture) close(t *testing.T) ([]Connection, int) {
	cs, n := f.p.close()
	select {
	case <-f.served:
	case <-time.After(10 * time.Second):
		t.Fatal("the proxy still serves after close")
	}
	return cs, n
}

// client is an HTTP client that sends everything through the proxy.
func (f *proxyFixture) client() *http.Client {
	u, _ := url.Parse("http://" + f.addr)
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), DisableKeepAlives: true}, Timeout: 10 * time.Second}
}

// raw sends a request's bytes to the proxy and returns the status line.
func (f *proxyFixture) raw(t *testing.T, request string) string {
	t.Helper()
	c, err := net.Dial("tcp", f.addr)
	require.NoError(t, err)
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = io.WriteString(c, request)
	require.NoError(t, err)
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line)
}

func TestEgressProxy_ForwardsPlainHTTPToTheHostItWasAddressedTo(t *testing.T) {
	f := newProxyFixture(t, []string{"UPSTREAM"}, nil, nil)
	// A Host header that names another host is not where it goes, nor
	// what the destination is told: it gets the URL's host.
	c, err := net.Dial("tcp", f.addr)
	require.NoError(t, err)
	defer c.Close()
	fmt.Fprintf(c, "POST http://%s/p HTTP/1.1\r\nHost: elsewhere.example\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello", f.upstream)
	b, err := io.ReadAll(c)
	require.NoError(t, err)
	assert.Contains(t, string(b), "200 OK")
	assert.Contains(t, string(b), "upstream saw POST /p 5")
	assert.Equal(t, f.upstream, <-f.hosts)

	cs, dropped := f.close(t)
	require.Len(t, cs, 1)
	assert.Zero(t, dropped)
	conn := cs[0]
	assert.Equal(t, connectionHTTP, conn.Kind)
	assert.True(t, conn.Allowed)
	assert.Equal(t, "127.0.0.1", conn.Host)
	assert.Equal(t, f.upstream, conn.Address)
	assert.Positive(t, conn.BytesSent)
	assert.Positive(t, conn.BytesReceived)
	assert.Empty(t, conn.Refusal+conn.Error)
}

func TestEgressProxy_TunnelsConnectAndCountsBothWays(t *testing.T) {
	f := newProxyFixture(t, []string{"UPSTREAM"}, nil, nil)
	c, err := net.Dial("tcp", f.addr)
	require.NoError(t, err)
	defer c.Close()
	// The request behind the CONNECT is sent at once, before the
	// proxy's answer: it must not be lost in the proxy's buffer.
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nGET /t HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", f.upstream, f.upstream)
	b, err := io.ReadAll(c)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(b), "HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 OK"), "%q", b)
	assert.Contains(t, string(b), "upstream saw GET /t 0")

	cs, _ := f.close(t)
	require.Len(t, cs, 1)
	assert.Equal(t, connectionConnect, cs[0].Kind)
	assert.True(t, cs[0].Allowed)
	assert.Equal(t, int64(len("GET /t HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")), cs[0].BytesSent)
	assert.Equal(t, int64(len(b)-len("HTTP/1.1 200 Connection established\r\n\r\n")), cs[0].BytesReceived)
}

func TestEgressProxy_RefusesAndRecordsWhatItDoesNotServe(t *testing.T) {
	names := map[string][]string{"rebind.example.com": {"127.0.0.1"}}
	f := newProxyFixture(t, []string{"*.example.com:*"}, nil, names)
	for _, tc := range []struct {
		sentence, request, status, host, refusal string
	}{
		{"a host that is not listed", "CONNECT " + "127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n", "403", "127.0.0.1", "not on the allowlist"},
		{"a listed name that resolves to loopback", "GET http://rebind.example.com/ HTTP/1.1\r\nHost: rebind.example.com\r\n\r\n", "403", "rebind.example.com", "loopback"},
		{"an https:// URL sent as a plain request", "GET https://a.example.com/ HTTP/1.1\r\nHost: a.example.com\r\n\r\n", "400", "a.example.com", "not https://"},
		{"a request for the proxy itself", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "400", "", "only CONNECT and absolute http://"},
		{"a CONNECT without a port", "CONNECT a.example.com HTTP/1.1\r\nHost: a.example.com\r\n\r\n", "400", "a.example.com", "is not a host:port"},
		{"a CONNECT to a user@host", "CONNECT u@a.example.com:443 HTTP/1.1\r\nHost: u@a.example.com:443\r\n\r\n", "400", "u@a.example.com:443", "is not a host:port"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			line := f.raw(t, tc.request)
			assert.Contains(t, line, tc.status, line)
		})
	}
	// The last one is refused by the HTTP server before the proxy sees a
	// request: it names no destination at all, and is not recorded.
	cs, _ := f.close(t)
	require.Len(t, cs, 5)
	for i, want := range []struct{ host, refusal string }{
		{"127.0.0.1", "not on the allowlist"}, {"rebind.example.com", "loopback"}, {"a.example.com", "not https://"},
		{"", "only CONNECT and absolute http://"}, {"a.example.com", "is not a host:port"},
	} {
		assert.False(t, cs[i].Allowed, "%+v", cs[i])
		assert.Equal(t, want.host, cs[i].Host)
		assert.Contains(t, cs[i].Refusal, want.refusal)
		assert.Zero(t, cs[i].BytesSent+cs[i].BytesReceived)
	}
	select {
	case h := <-f.hosts:
		t.Fatalf("the destination was reached, for %s", h)
	default:
	}
}

// However many attempts a command makes, the record keeps at most
// MaxConnections, of which at most half are refusals, and counts the
// rest: a flood of refused attempts cannot hide the allowed one after it.
func TestEgressProxy_RecordIsBounded(t *testing.T) {
	f := newProxyFixture(t, []string{"UPSTREAM"}, nil, nil)
	c, err := net.Dial("tcp", f.addr)
	require.NoError(t, err)
	defer c.Close()
	const n = MaxConnections + 44
	go func() {
		for range n {
			io.WriteString(c, "GET http://blocked.example/ HTTP/1.1\r\nHost: blocked.example\r\n\r\n")
		}
		fmt.Fprintf(c, "POST http://%s/exfil HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", f.upstream)
	}()
	r := bufio.NewReader(c)
	for i := range n + 1 {
		resp, err := http.ReadResponse(r, nil)
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if i < n {
			require.Equal(t, http.StatusForbidden, resp.StatusCode)
		} else {
			require.Equal(t, http.StatusOK, resp.StatusCode)
		}
	}
	cs, dropped := f.close(t)
	require.Len(t, cs, MaxConnections/2+1)
	assert.Equal(t, n-MaxConnections/2, dropped)
	last := cs[len(cs)-1]
	assert.True(t, last.Allowed, "%+v", last)
	assert.Positive(t, last.BytesSent)
	for _, c := range cs[:len(cs)-1] {
		assert.False(t, c.Allowed)
	}
}

// A forwarded request's connection is forgotten once it is closed: a call
// that makes many requests does not make the gate hold a record of each.
func TestEgressProxy_ForgetsClosedForwardedConnections(t *testing.T) {
	f := newProxyFixture(t, []string{"UPSTREAM"}, nil, nil)
	client := f.client()
	for range 50 {
		resp, err := client.Get("http://" + f.upstream + "/")
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		<-f.hosts
	}
	require.Eventually(t, func() bool {
		f.p.mu.Lock()
		defer f.p.mu.Unlock()
		return len(f.p.open) == 0
	}, 5*time.Second, 10*time.Millisecond, "connections still held")
}

// A special address is let through only by an entry within its own
// range, and an address of the gate's own host is special.
func TestEgress_SpecialAddressesNeedAnEntryOfTheirOwn(t *testing.T) {
	local := map[netip.Addr]bool{netip.MustParseAddr("93.184.215.99"): true}
	for _, tc := range []struct {
		sentence string
		allow    []string
		target   string
		allowed  bool
	}{
		{"0.0.0.0/0 does not name the metadata address", []string{"0.0.0.0/0:80"}, "169.254.169.254:80", false},
		{"0.0.0.0/0 does not name loopback", []string{"0.0.0.0/0:80"}, "127.0.0.1:80", false},
		{"0.0.0.0/0 names a public address", []string{"0.0.0.0/0:80"}, "93.184.215.14:80", true},
		{"[::/0] does not name IPv6 loopback", []string{"[::/0]:80"}, "[::1]:80", false},
		{"the link-local prefix does not name the metadata address, a range of its own", []string{"169.254.0.0/16:80"}, "169.254.169.254:80", false},
		{"the metadata address named exactly", []string{"169.254.169.254:80"}, "169.254.169.254:80", true},
		{"10.0.0.0/8 names a private address", []string{"10.0.0.0/8:80"}, "10.9.9.9:80", true},
		{"10.0.0.0/7 is broader than the private range", []string{"10.0.0.0/7:80"}, "10.9.9.9:80", false},
		{"'*' does not reach the gate's own public address", []string{"*:*"}, "93.184.215.99:2375", false},
		{"a prefix does not either", []string{"93.184.215.0/24:*"}, "93.184.215.99:2375", false},
		{"naming it exactly does", []string{"93.184.215.99:2375"}, "93.184.215.99:2375", true},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			p := newEgressProxy(mustRules(t, tc.allow, nil))
			p.local = local
			defer p.close()
			target, err := parseEgressTarget(tc.target, 0)
			require.NoError(t, err)
			addrs, why := p.decide(target)
			assert.Equal(t, tc.allowed, why == "", why)
			assert.Equal(t, tc.allowed, len(addrs) == 1)
		})
	}
}

// Closing the proxy ends a tunnel that is still open, and a client that
// has not finished its header, and returns.
func TestEgressProxy_CloseEndsEveryConnection(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer echo.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go io.Copy(c, c) // never closes on its own
		}
	}()
	f := newProxyFixture(t, []string{echo.Addr().String()}, nil, nil)
	tunnel, err := net.Dial("tcp", f.addr)
	require.NoError(t, err)
	defer tunnel.Close()
	fmt.Fprintf(tunnel, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\nping", echo.Addr())
	r := bufio.NewReader(tunnel)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, "200")
	r.ReadString('\n')
	buf := make([]byte, 4)
	_, err = io.ReadFull(r, buf)
	require.NoError(t, err)
	assert.Equal(t, "ping", string(buf))

	half, err := net.Dial("tcp", f.addr)
	require.NoError(t, err)
	defer half.Close()
	io.WriteString(half, "GET http://x.example/ HTTP/1.1\r\n") // and no more

	done := make(chan []Connection)
	go func() { cs, _ := f.close(t); done <- cs }()
	select {
	case cs := <-done:
		require.Len(t, cs, 1)
		assert.Equal(t, int64(4), cs[0].BytesSent)
		assert.Equal(t, int64(4), cs[0].BytesReceived)
	case <-time.After(10 * time.Second):
		t.Fatal("close did not return while a tunnel was open")
	}
	tunnel.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = r.ReadByte()
	assert.True(t, errors.Is(err, io.EOF) || err != nil && !isTimeout(err), "the tunnel is still open: %v", err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// A connection to a listed destination that refuses it is reported as
// allowed, with the error, and the command gets 502.
func TestEgressProxy_ReportsAFailedConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().String()
	l.Close()
	f := newProxyFixture(t, []string{closed}, nil, nil)
	resp, err := f.client().Get("http://" + closed + "/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
	cs, _ := f.close(t)
	require.Len(t, cs, 1)
	assert.True(t, cs[0].Allowed)
	assert.Equal(t, "connection refused", cs[0].Error)
	assert.Equal(t, closed, cs[0].Address)
}

func TestEgressEnv_OverridesTheSpecsProxyVariables(t *testing.T) {
	got := egressEnv([]string{"A=1", "https_proxy=http://elsewhere:1", "NO_PROXY=*"})
	assert.Equal(t, []string{"A=1",
		"ALL_PROXY=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128", "HTTP_PROXY=http://127.0.0.1:3128", "NO_PROXY=localhost,127.0.0.1,::1",
		"all_proxy=http://127.0.0.1:3128", "http_proxy=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "no_proxy=localhost,127.0.0.1,::1",
	}, got)
	// The address the environment names is the one the helper binds.
	assert.Equal(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(confine.EgressProxyPort)), EgressProxyAddr)
}

// A name is found in the hosts file as written there, and otherwise
// looked up rooted, so that no search-list suffix is tried.
func TestEgress_LookupReadsTheHostsFileThenTheRootedName(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hosts")
	require.NoError(t, os.WriteFile(file, []byte("# comment\n127.0.0.1 localhost\n10.0.0.7 Build.Internal build # the CI box\n::ffff:10.0.0.8 mapped\nfe80::1%eth0 zoned\nnot-an-address name\n10.0.0.9 build\n"), 0o644))
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"build.internal", []string{"10.0.0.7"}},
		{"build", []string{"10.0.0.7", "10.0.0.9"}},
		{"mapped", []string{"10.0.0.8"}},
		{"zoned", nil},
		{"name", nil},
		{"missing", nil},
	} {
		var got []string
		for _, a := range staticHost(file, tc.name) {
			got = append(got, a.String())
		}
		assert.Equal(t, tc.want, got, tc.name)
	}
	old := hostsFile
	hostsFile = file
	defer func() { hostsFile = old }()
	addrs, err := lookupRooted(context.Background(), "build.internal.")
	require.NoError(t, err)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("10.0.0.7")}, addrs)
}

// lateConn is a destination whose Write returns only a while after it
// has written, as a goroutine that is not scheduled at once would: close
// releases it.
type lateConn struct {
	net.Conn
	entered, closed chan struct{}
	once            sync.Once
}

func (c *lateConn) Write(b []byte) (int, error) {
	close(c.entered)
	<-c.closed
	time.Sleep(50 * time.Millisecond)
	return len(b), nil
}

func (c *lateConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// TestRecordIsTrue_EgressBytesCountedBeforeTheReport closes the proxy
// while a write to a destination, made by a goroutine the proxy's
// handlers do not wait for (the HTTP transport's own, for a forwarded
// request), has not yet counted its bytes: the report close returns
// counts them. It said 0 bytes sent for a request the server answered.
func TestRecordIsTrue_EgressBytesCountedBeforeTheReport(t *testing.T) {
	p := newEgressProxy(&egressRules{})
	rec := p.record("example.com", 80, connectionHTTP)
	p.keep(rec, true)
	a, b := net.Pipe()
	defer b.Close()
	late := &lateConn{Conn: a, entered: make(chan struct{}), closed: make(chan struct{})}
	c := &countingConn{Conn: late, sent: &rec.sent, received: &rec.received, counting: &p.counting}
	require.True(t, p.track(c))
	go c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	<-late.entered // the write is under way
	got, _ := p.close()
	require.Len(t, got, 1)
	assert.Equal(t, int64(len("GET / HTTP/1.1\r\n\r\n")), got[0].BytesSent)
}
