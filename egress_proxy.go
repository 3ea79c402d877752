package execgate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The egress proxy's bounds, per call.
const (
	// egressMaxOpen is the most client connections the proxy serves at
	// once; more wait in the listener's backlog.
	egressMaxOpen = 64
	// egressResolveTimeout bounds one name lookup.
	egressResolveTimeout = 10 * time.Second
	// egressDialTimeout bounds one connection to a destination.
	egressDialTimeout = 10 * time.Second
	// egressHeaderTimeout bounds how long a client may take to send a
	// request's header.
	egressHeaderTimeout = 30 * time.Second
	// egressIdleTimeout closes a client connection that sends no next
	// request.
	egressIdleTimeout = 60 * time.Second
	// egressMaxHeaderBytes bounds a request's header.
	egressMaxHeaderBytes = 64 << 10
	// egressMaxHostBytes bounds the host a refused, malformed request is
	// reported with.
	egressMaxHostBytes = 253
)

// egressProxy is the egress proxy of one confined call (see [Egress]): an
// HTTP server on a listener inside the command's network namespace that
// tunnels CONNECT requests and forwards plain http:// requests to the
// destinations its rules allow, dialing from the gate's own network, and
// records every attempt.
type egressProxy struct {
	rules  *egressRules
	lookup func(ctx context.Context, host string) ([]netip.Addr, error) // host is rooted: "example.com."
	dial   func(ctx context.Context, network, address string) (net.Conn, error)
	local  map[netip.Addr]bool // the addresses of the gate's own interfaces

	ctx    context.Context // canceled by close: ends lookups, dials and forwards
	cancel context.CancelFunc
	srv    *http.Server

	mu      sync.Mutex
	closed  bool
	records []*connRecord // kept, in the order they were decided
	refused int           // refused records kept
	dropped int
	open    map[net.Conn]struct{} // tunnelled and upstream connections
	l       net.Listener
	wg      sync.WaitGroup // handlers that are running
	// counting is held, shared, by every read and write of a
	// destination while it counts its bytes (see countingConn): an
	// upstream connection of a forwarded request is written by the
	// HTTP transport's own goroutine, which may not have counted what it
	// sent when the handler returns.
	counting sync.RWMutex
}

// connRecord is one attempt being made; the byte counts are updated while
// it is open.
type connRecord struct {
	c              Connection // all but the byte counts, set under mu
	mu             *sync.Mutex
	sent, received atomic.Int64
}

// newEgressProxy returns a proxy enforcing rules, resolving and dialing
// with the standard library in the calling process's network.
func newEgressProxy(rules *egressRules) *egressProxy {
	p := &egressProxy{
		rules:  rules,
		local:  localAddrs(),
		lookup: lookupRooted,
		dial:   (&net.Dialer{Timeout: egressDialTimeout}).DialContext,
		open:   make(map[net.Conn]struct{}),
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(p.serveHTTP),
		ReadHeaderTimeout: egressHeaderTimeout,
		IdleTimeout:       egressIdleTimeout,
		MaxHeaderBytes:    egressMaxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return p.ctx },
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	return p
}

// hostsFile is the file of static host names that lookupRooted reads.
var hostsFile = "/etc/hosts"

// maxHostsFileBytes bounds what lookupRooted reads of hostsFile.
const maxHostsFileBytes = 1 << 20

// lookupRooted resolves host, a rooted name ("example.com."): first in
// hostsFile, for a line that names it exactly, then in the DNS, as the
// rooted name, so that no search-list suffix is ever tried (the standard
// library's resolver does not look a rooted name up in the hosts file).
func lookupRooted(ctx context.Context, host string) ([]netip.Addr, error) {
	if addrs := staticHost(hostsFile, strings.TrimSuffix(host, ".")); len(addrs) > 0 {
		return addrs, nil
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// staticHost returns the addresses file gives name, a lowercase name
// without a trailing dot, in the file's order.
func staticHost(file, name string) []netip.Addr {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []netip.Addr
	s := bufio.NewScanner(io.LimitReader(f, maxHostsFileBytes))
	for s.Scan() {
		line, _, _ := strings.Cut(s.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		a, err := netip.ParseAddr(fields[0])
		if err != nil || a.Zone() != "" {
			continue
		}
		for _, h := range fields[1:] {
			if strings.EqualFold(strings.TrimSuffix(h, "."), name) {
				out = append(out, a.Unmap())
				break
			}
		}
	}
	return out
}

// localAddrs returns the addresses of this host's interfaces (nil when
// they cannot be listed: loopback and private ones are refused anyway).
func localAddrs() map[netip.Addr]bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	out := make(map[netip.Addr]bool, len(addrs))
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out[ip.Unmap()] = true
			}
		}
	}
	return out
}

// isLocal reports whether a is an address of the gate's own host.
func (p *egressProxy) isLocal(a netip.Addr) bool { return p.local[a.Unmap()] }

// serve serves l until close is called; it closes l. It returns at once
// if close was called already.
func (p *egressProxy) serve(l net.Listener) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.Close()
		return
	}
	p.l = l
	p.mu.Unlock()
	p.srv.Serve(limitListener(l, egressMaxOpen)) // returns ErrServerClosed once close is called
}

// close stops the proxy: it closes the listener and every connection,
// ends every lookup, dial and forward, waits for the handlers, and
// returns the attempts recorded.
func (p *egressProxy) close() ([]Connection, int) {
	p.mu.Lock()
	p.closed = true
	for c := range p.open {
		c.Close()
	}
	p.mu.Unlock()
	p.cancel()
	p.srv.Close() // the listener, and the connections not tunnelled
	p.wg.Wait()
	// Every read and write under way has counted its bytes: the
	// destinations are closed, so none blocks.
	p.counting.Lock()
	p.counting.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Connection, 0, len(p.records))
	for _, r := range p.records {
		c := r.c
		c.BytesSent, c.BytesReceived = r.sent.Load(), r.received.Load()
		out = append(out, c)
	}
	return out, p.dropped
}

// enter counts a handler in, unless the proxy is closing.
func (p *egressProxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	return true
}

// track adds c to the connections close closes; it closes c at once, and
// reports false, if the proxy is closing.
func (p *egressProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.open[c] = struct{}{}
	return true
}

// untrack closes c and forgets it.
func (p *egressProxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.open, c)
	p.mu.Unlock()
}

// record starts the record of an attempt to reach host:port; keep adds
// it to the report once it is decided.
func (p *egressProxy) record(host string, port int, kind string) *connRecord {
	return &connRecord{c: Connection{Host: host, Port: port, Kind: kind}, mu: &p.mu}
}

// keep decides, once an attempt is allowed or refused, whether its record
// is kept: refused attempts fill at most half of MaxConnections, so that
// a flood of them cannot push the allowed ones out of the report; past
// that, and past MaxConnections in all, an attempt is counted in dropped
// (and enforced all the same).
func (p *egressProxy) keep(r *connRecord, allowed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r.c.Allowed = allowed
	switch {
	case len(p.records) >= MaxConnections, !allowed && p.refused >= MaxConnections/2:
		p.dropped++
		return
	case !allowed:
		p.refused++
	}
	p.records = append(p.records, r)
}

// set updates the fields of r's Connection under the proxy's lock.
func (r *connRecord) set(f func(c *Connection)) {
	r.mu.Lock()
	f(&r.c)
	r.mu.Unlock()
}

// serveHTTP serves one request from the command.
func (p *egressProxy) serveHTTP(w http.ResponseWriter, req *http.Request) {
	if !p.enter() {
		http.Error(w, "execgate egress proxy: the call is ending", http.StatusServiceUnavailable)
		return
	}
	defer p.wg.Done()
	if req.Method == http.MethodConnect {
		p.connect(w, req)
		return
	}
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		rec := p.record(reportedHost(req.URL.Host), 0, connectionHTTP)
		why := "only CONNECT and absolute http:// requests are proxied"
		if req.URL.Scheme != "" && req.URL.Scheme != "http" {
			why = fmt.Sprintf("only CONNECT and absolute http:// requests are proxied, not %s://", reportedHost(req.URL.Scheme))
		}
		rec.c.Refusal = why
		p.keep(rec, false)
		http.Error(w, "execgate egress proxy: refused: "+why, http.StatusBadRequest)
		return
	}
	p.forward(w, req)
}

// reportedHost is a malformed host as a record shows it: printable ASCII,
// at most egressMaxHostBytes.
func reportedHost(s string) string {
	b := make([]byte, 0, min(len(s), egressMaxHostBytes))
	for i := 0; i < len(s) && len(b) < egressMaxHostBytes; i++ {
		if c := s[i]; c > ' ' && c < 0x7f {
			b = append(b, c)
		} else {
			b = append(b, '?')
		}
	}
	return string(b)
}

// target parses a request's authority, recording the attempt; it writes
// the refusal and returns false when the authority is malformed or the
// destination refused.
func (p *egressProxy) target(w http.ResponseWriter, authority string, defaultPort int, kind string) (*connRecord, egressTarget, []netip.Addr, bool) {
	t, err := parseEgressTarget(authority, defaultPort)
	if err != nil {
		why := fmt.Sprintf("%q is not a host:port (%v)", reportedHost(authority), err)
		rec := p.record(reportedHost(authority), t.port, kind)
		rec.c.Refusal = why
		p.keep(rec, false)
		http.Error(w, "execgate egress proxy: refused: "+why, http.StatusBadRequest)
		return nil, t, nil, false
	}
	rec := p.record(t.host, t.port, kind)
	addrs, why := p.decide(t)
	if why != "" {
		rec.c.Refusal = why
		p.keep(rec, false)
		http.Error(w, "execgate egress proxy: refused: "+why+"; only the hosts of the command's egress allowlist can be reached", http.StatusForbidden)
		return nil, t, nil, false
	}
	p.keep(rec, true)
	return rec, t, addrs, true
}

// decide returns the addresses t may be reached at, in the order to try
// them, or why it may not be reached. A name is resolved only once an
// Allow entry names it, so that a name the rules refuse is never looked
// up (a lookup is itself a message to whoever serves the name).
func (p *egressProxy) decide(t egressTarget) ([]netip.Addr, string) {
	if d := p.rules.refusedByName(t); d != nil {
		return nil, fmt.Sprintf("%q is refused by the deny entry %q", t.String(), d.text)
	}
	byName := p.rules.namedByName(t)
	addrs := []netip.Addr{t.addr}
	if !t.addr.IsValid() {
		if !byName {
			return nil, fmt.Sprintf("%q is not on the allowlist", t.String())
		}
		ctx, cancel := context.WithTimeout(p.ctx, egressResolveTimeout)
		defer cancel()
		var err error
		// Rooted, so that no resolver tries the names of a search list
		// (x.example.com.corp.internal), which the rules never saw.
		addrs, err = p.lookup(ctx, t.host+".")
		if err != nil || len(addrs) == 0 {
			why := "no address"
			var dnsErr *net.DNSError
			switch {
			case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
				why = "no such host"
			case errors.As(err, &dnsErr) && dnsErr.IsTimeout:
				why = "the lookup timed out"
			case err != nil:
				why = "the lookup failed"
			}
			return nil, fmt.Sprintf("%q cannot be resolved: %s", t.host, why)
		}
	}
	var ok []netip.Addr
	first := ""
	for _, a := range addrs {
		if why := p.rules.decideAddr(t, a, byName, p.isLocal); why != "" {
			if first == "" {
				first = why
			}
			continue
		}
		ok = append(ok, a.Unmap())
	}
	if len(ok) == 0 {
		if !t.addr.IsValid() {
			first = fmt.Sprintf("%q resolves to no address it may reach: %s", t.host, first)
		}
		return nil, first
	}
	return ok, ""
}

// dialAny connects to the first of addrs that answers on port, recording
// the address, or the error of the last one tried.
func (p *egressProxy) dialAny(ctx context.Context, addrs []netip.Addr, port int, rec *connRecord) (net.Conn, error) {
	var err error
	for _, a := range addrs {
		addr := netip.AddrPortFrom(a, uint16(port)).String()
		var c net.Conn
		c, err = p.dial(ctx, "tcp", addr)
		rec.set(func(r *Connection) { r.Address = addr })
		if err == nil {
			rec.set(func(r *Connection) { r.Error = "" })
			return &countingConn{Conn: c, sent: &rec.sent, received: &rec.received, counting: &p.counting}, nil
		}
		why := dialError(err)
		rec.set(func(r *Connection) { r.Error = why })
	}
	return nil, err
}

// dialError is a failed dial in a few words, without addresses or
// anything the destination chose.
func dialError(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "no route to the host"
	case errors.Is(err, context.Canceled):
		return "the call ended"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ETIMEDOUT):
		return "timed out"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timed out"
	}
	return "the connection failed"
}

// connect serves a CONNECT request: it checks and dials the destination,
// then passes bytes both ways until either side closes, counting them.
func (p *egressProxy) connect(w http.ResponseWriter, req *http.Request) {
	rec, t, addrs, ok := p.target(w, req.Host, 0, connectionConnect)
	if !ok {
		return
	}
	up, err := p.dialAny(req.Context(), addrs, t.port, rec)
	if err != nil {
		http.Error(w, fmt.Sprintf("execgate egress proxy: cannot connect to %s: %s", t.String(), dialError(err)), http.StatusBadGateway)
		return
	}
	if !p.track(up) {
		return
	}
	defer p.untrack(up)
	hj, isHijacker := w.(http.Hijacker)
	if !isHijacker {
		http.Error(w, "execgate egress proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	if !p.track(client) {
		return
	}
	defer p.untrack(client)
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(up, buf.Reader) // bytes the client sent after its header first
		closeWrite(up)
	}()
	io.Copy(client, up)
	closeWrite(client)
	<-done
}

// closeWrite shuts down c's writing side, or closes it.
func closeWrite(c net.Conn) {
	if cc, ok := c.(*countingConn); ok {
		c = cc.Conn // its CloseWrite is the destination's
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// forward serves a plain http:// request: it checks the destination,
// sends the request to it on a connection of its own, with the Host it
// was addressed to, and relays the response.
func (p *egressProxy) forward(w http.ResponseWriter, req *http.Request) {
	rec, t, addrs, ok := p.target(w, req.URL.Host, 80, connectionHTTP)
	if !ok {
		return
	}
	transport := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c, err := p.dialAny(ctx, addrs, t.port, rec)
			if err != nil {
				return nil, err
			}
			if !p.track(c) {
				return nil, context.Canceled
			}
			return &untrackingConn{Conn: c, p: p}, nil
		},
		DisableKeepAlives:      true,
		MaxResponseHeaderBytes: 1 << 20,
	}
	defer transport.CloseIdleConnections()
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// The destination checked, and no other: the request goes
			// to the host its URL names, with that Host.
			pr.Out.Host = ""
		},
		Transport:     transport,
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			why := dialError(err)
			rec.set(func(c *Connection) {
				if c.Error == "" {
					c.Error = why
				}
			})
			http.Error(w, fmt.Sprintf("execgate egress proxy: %s: %s", t.String(), why), http.StatusBadGateway)
		},
	}
	rp.ServeHTTP(w, req)
}

// untrackingConn is an upstream connection of a forwarded request, which
// the proxy forgets when the transport closes it.
type untrackingConn struct {
	net.Conn
	p    *egressProxy
	once sync.Once
}

func (c *untrackingConn) Close() error {
	c.once.Do(func() { c.p.untrack(c.Conn) })
	return nil
}

// limitListener accepts at most n connections at once from l; more wait
// in its backlog. The connections it returns keep CloseWrite, which a
// tunnel uses to pass on a half-close.
func limitListener(l net.Listener, n int) net.Listener {
	return &limitedListener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

type limitedListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *limitedListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limitedListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

// countingConn counts the bytes written to and read from a destination.
// Each read and write holds counting, shared, until its bytes are
// counted, so that the proxy's close sees them counted.
type countingConn struct {
	net.Conn
	sent, received *atomic.Int64
	counting       *sync.RWMutex
}

func (c *countingConn) Read(b []byte) (int, error) {
	c.counting.RLock()
	defer c.counting.RUnlock()
	n, err := c.Conn.Read(b)
	c.received.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.counting.RLock()
	defer c.counting.RUnlock()
	n, err := c.Conn.Write(b)
	c.sent.Add(int64(n))
	return n, err
}

// egressEnv returns env with the variables that point a program at the
// egress proxy, replacing any of the same name.
func egressEnv(env []string) []string {
	proxy := "http://" + EgressProxyAddr
	set := map[string]string{
		"HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "ALL_PROXY": proxy,
		"http_proxy": proxy, "https_proxy": proxy, "all_proxy": proxy,
		"NO_PROXY": "localhost,127.0.0.1,::1", "no_proxy": "localhost,127.0.0.1,::1",
	}
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ours := set[k]; !ours {
			out = append(out, kv)
		}
	}
	for _, k := range []string{"ALL_PROXY", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "all_proxy", "http_proxy", "https_proxy", "no_proxy"} {
		out = append(out, k+"="+set[k])
	}
	return out
}
