package pgstore_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// fault is what a faultProxy does once the message it waits for passes.
type fault int

const (
	// cut drops the message and everything after it and closes both
	// connections: the request never reaches the database.
	cut fault = iota + 1
	// loseReply forwards the message and what follows, withholds the
	// database's answers, and closes both connections once the database
	// has answered (sent ReadyForQuery): the request ran, its answer is
	// lost.
	loseReply
	// stall forwards the message and what follows and withholds the
	// answers, keeping the connection open until the client gives up.
	stall
)

// faultProxy relays TCP connections from 127.0.0.1 to the test database,
// reading the PostgreSQL messages the client sends as they pass, so that
// a test can break a connection at an exact point of the protocol: after
// a request was sent and before its answer came, say.
type faultProxy struct {
	ln              net.Listener
	network, target string

	mu       sync.Mutex
	refusing bool
	match    func(typ byte, body []byte) bool // nil: nothing armed
	fault    fault
	answered chan struct{} // closed when the database has answered the matched request
	conns    map[net.Conn]struct{}

	wg sync.WaitGroup
}

// newFaultProxy starts a proxy to the database the test DSN names and
// returns it with a pool of one connection through it. Everything is
// closed when the test ends.
func newFaultProxy(t *testing.T) (*faultProxy, *pgxpool.Pool) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testDSN(t))
	if err != nil {
		t.Fatalf("parsing %s: %v", dsnEnv, err)
	}
	if cfg.ConnConfig.TLSConfig != nil && !hasPlainFallback(cfg) {
		t.Skipf("the fault tests read the protocol in the clear; %s requires TLS", dsnEnv)
	}
	p := &faultProxy{conns: make(map[net.Conn]struct{})}
	p.network, p.target = "tcp", net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))
	if strings.HasPrefix(cfg.ConnConfig.Host, "/") {
		p.network, p.target = "unix", filepath.Join(cfg.ConnConfig.Host, fmt.Sprintf(".s.PGSQL.%d", cfg.ConnConfig.Port))
	}
	if p.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	p.wg.Go(p.accept)
	t.Cleanup(p.close) // after the pool's Close, which is registered later

	cfg.ConnConfig.Host = "127.0.0.1"
	cfg.ConnConfig.Port = uint16(p.ln.Addr().(*net.TCPAddr).Port)
	cfg.ConnConfig.TLSConfig = nil
	cfg.ConnConfig.Fallbacks = nil
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return p, pool
}

func hasPlainFallback(cfg *pgxpool.Config) bool {
	for _, f := range cfg.ConnConfig.Fallbacks {
		if f.TLSConfig == nil {
			return true
		}
	}
	return false
}

// arm makes the next client message for which match is true trigger f,
// once. The returned channel is closed when the database has answered
// that request (for loseReply and stall).
func (p *faultProxy) arm(f fault, match func(typ byte, body []byte) bool) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.match, p.fault, p.answered = match, f, make(chan struct{})
	return p.answered
}

// refuse makes the proxy close every new connection at once, before the
// database sees it, while on is true.
func (p *faultProxy) refuse(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refusing = on
}

// commit matches the COMMIT that pgx's Tx.Commit sends.
func commit(typ byte, body []byte) bool {
	return typ == 'Q' && strings.EqualFold(string(bytes.TrimRight(body, "\x00")), "commit")
}

// bindsID matches the Bind message of a statement that has id as a
// parameter: Take's and Delete's statement, or Save's insert.
func bindsID(id string) func(byte, []byte) bool {
	return func(typ byte, body []byte) bool { return typ == 'B' && bytes.Contains(body, []byte(id)) }
}

func (p *faultProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refusing := p.refusing
		p.mu.Unlock()
		if refusing {
			_ = c.Close()
			continue
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

func (p *faultProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil { // closed
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *faultProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

// link is one proxied connection.
type link struct {
	client, server net.Conn

	mu       sync.Mutex
	withhold bool          // the server's answers are no longer relayed
	closeAtZ bool          // close both sides at the next ReadyForQuery
	answered chan struct{} // closed at that ReadyForQuery
}

func (l *link) close() {
	_ = l.client.Close()
	_ = l.server.Close()
}

func (p *faultProxy) serve(client net.Conn) {
	server, err := net.Dial(p.network, p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	l := &link{client: client, server: server}
	if !p.track(client) || !p.track(server) {
		l.close()
		return
	}
	p.wg.Go(func() { p.fromServer(l) })
	p.fromClient(l)
}

// readMessage reads one typed protocol message: a type byte, a length
// that counts itself, and the body.
func readMessage(r *bufio.Reader) (typ byte, msg []byte, err error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n < 4 || n > 1<<30 {
		return 0, nil, errors.New("bad message length")
	}
	msg = make([]byte, 5+int(n)-4)
	copy(msg, hdr[:])
	if _, err := io.ReadFull(r, msg[5:]); err != nil {
		return 0, nil, err
	}
	return hdr[0], msg, nil
}

// fromClient relays the client's messages: the untyped startup message
// first (answering a request for TLS with "no" itself), then typed
// messages, each checked against the armed fault.
func (p *faultProxy) fromClient(l *link) {
	defer l.close()
	r := bufio.NewReader(l.client)
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		code := binary.BigEndian.Uint32(hdr[4:])
		if n == 8 && (code == 80877103 || code == 80877104) { // SSLRequest, GSSENCRequest
			if _, err := l.client.Write([]byte{'N'}); err != nil {
				return
			}
			continue
		}
		if n < 8 || n > 1<<20 {
			return
		}
		msg := make([]byte, n)
		copy(msg, hdr[:])
		if _, err := io.ReadFull(r, msg[8:]); err != nil {
			return
		}
		if _, err := l.server.Write(msg); err != nil {
			return
		}
		break
	}
	for {
		typ, msg, err := readMessage(r)
		if err != nil {
			return
		}
		p.mu.Lock()
		var f fault
		if p.match != nil && p.match(typ, msg[5:]) {
			f = p.fault
			l.mu.Lock()
			l.answered = p.answered
			l.mu.Unlock()
			p.match = nil
		}
		p.mu.Unlock()
		switch f {
		case cut:
			return
		case loseReply, stall:
			l.mu.Lock()
			l.withhold, l.closeAtZ = true, f == loseReply
			l.mu.Unlock()
		}
		if _, err := l.server.Write(msg); err != nil {
			return
		}
	}
}

// fromServer relays the database's messages, or withholds them once a
// fault fired, noting the ReadyForQuery that ends the answer.
func (p *faultProxy) fromServer(l *link) {
	defer l.close()
	r := bufio.NewReader(l.server)
	for {
		typ, msg, err := readMessage(r)
		if err != nil {
			return
		}
		l.mu.Lock()
		withhold, closeAtZ, answered := l.withhold, l.closeAtZ, l.answered
		if withhold && typ == 'Z' && answered != nil {
			close(answered)
			l.answered = nil
		}
		l.mu.Unlock()
		if !withhold {
			if _, err := l.client.Write(msg); err != nil {
				return
			}
			continue
		}
		if typ == 'Z' && closeAtZ {
			return
		}
	}
}
