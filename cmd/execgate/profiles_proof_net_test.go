package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/profiles"
)

// The proof tests of the profiles that reach the network (curl and gh)
// run the real program against HTTPS servers this test starts, under a
// certificate for a name signed by a CA of the test's own. The programs
// reach them as they reach a host in production: through the gate's
// egress proxy, which resolves the name itself, in the gate's network.
// So the name must be one the gate's resolver maps to an address of this
// machine (see newNetProofHost), and it cannot be "localhost": that is in
// NO_PROXY, and a program would connect to it directly, inside its
// network namespace, where nothing listens.
//
// The profile trusts only the system's CAs and names no port, so the test
// runs it through a tools entry built from the profile's own text with
// what only the test knows added: the variable that points the program at
// the test's CA, the file's read permission, for gh the host of the test
// server (GH_HOST), and two egress entries: the name on the test server's
// port, and the server's address on that port (the proxy refuses a
// loopback or private address unless an entry names the address; the
// profile's own entries stay). Everything else (the grammar, the fixed
// arguments, the rest of the environment and of the confinement) is the
// profile's. Beside the server runs a stray listener, on the same
// address, that no call may reach: every attack that would send a request
// elsewhere aims at it.

// netProofHost is the name the test servers are reached by and the
// address of this machine it stands for.
type netProofHost struct {
	name string
	addr netip.Addr
}

// at is the host's address and port as an egress entry and a URL's
// authority write it ("127.0.1.1:8443", "[::1]:8443").
func (h netProofHost) at(port int) string {
	return netip.AddrPortFrom(h.addr, uint16(port)).String()
}

// netProofHostName is a name the curl profile's hosts may list.
var netProofHostName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)

// newNetProofHost finds a name that the resolver of a Go program (the
// gate's) maps to a loopback or private address this machine can listen
// on, one the proxy refuses unless an entry names it: the machine's host
// name, which /etc/hosts holds on Debian (127.0.1.1 as the installer
// writes it, the container's address in a container, 127.0.0.1 on some
// virtual machines), else ip6-localhost or ip6-loopback (::1 in the
// /etc/hosts of Debian and of Docker).
func newNetProofHost(t *testing.T) netProofHost {
	t.Helper()
	var names []string
	if h, err := os.Hostname(); err == nil {
		names = append(names, strings.ToLower(h))
	}
	names = append(names, "ip6-localhost", "ip6-loopback")
	var tried []string
	for _, name := range names {
		if name == "localhost" || !netProofHostName.MatchString(name) || net.ParseIP(name) != nil {
			tried = append(tried, name+": not a name the test can use")
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", name)
		cancel()
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		for _, a := range addrs {
			a = a.Unmap()
			if !a.IsLoopback() && !a.IsPrivate() {
				tried = append(tried, fmt.Sprintf("%s: %s is neither a loopback nor a private address", name, a))
				continue
			}
			l, err := net.Listen("tcp", netip.AddrPortFrom(a, 0).String())
			if err != nil {
				tried = append(tried, fmt.Sprintf("%s: %s: %v", name, a, err))
				continue
			}
			l.Close()
			return netProofHost{name: name, addr: a}
		}
	}
	t.Fatalf("no name resolves to a loopback or private address of this machine (%s); the test needs the host name or ip6-localhost in /etc/hosts", strings.Join(tried, "; "))
	return netProofHost{}
}

// netProofCA is a self-signed certificate for the test's host name, the
// CA of the test servers, and the PEM file holding it.
type netProofCA struct {
	cert tls.Certificate
	file string
}

func newNetProofCA(t *testing.T, name string) netProofCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		DNSNames:              []string{name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644))
	return netProofCA{cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, file: file}
}

// netProofRequest is what a test server was sent.
type netProofRequest struct {
	method, uri, header, body string
}

// netProofServer is an HTTPS server on the test host's address that
// records every request it is sent.
type netProofServer struct {
	srv  *httptest.Server
	port int
	mu   sync.Mutex
	reqs []netProofRequest
}

// newNetProofServer starts an HTTPS server with ca's certificate; h
// answers each request after it is recorded, its body already read.
func newNetProofServer(t *testing.T, ca netProofCA, host netProofHost, h func(w http.ResponseWriter, r *http.Request, body []byte)) *netProofServer {
	t.Helper()
	s := &netProofServer{}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var hdr strings.Builder
		for k, vs := range r.Header {
			if k != "Authorization" { // gh's token, checked on its own
				fmt.Fprintf(&hdr, "%s: %s\n", k, strings.Join(vs, ", "))
			}
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, netProofRequest{r.Method, r.RequestURI, hdr.String(), string(body)})
		s.mu.Unlock()
		h(w, r, body)
	}))
	ln, err := net.Listen("tcp", host.at(0))
	require.NoError(t, err)
	s.srv.Listener.Close()
	s.srv.Listener = ln
	s.srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.cert}}
	// A client that refuses the certificate is what some calls are for.
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	s.port = s.srv.Listener.Addr().(*net.TCPAddr).Port
	return s
}

// requests returns what the server was sent so far.
func (s *netProofServer) requests() []netProofRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]netProofRequest(nil), s.reqs...)
}

// assertNothingLeaked checks that no request the server was sent carried
// the canary and that each used one of the methods in methods.
func (s *netProofServer) assertNothingLeaked(t *testing.T, methods ...string) {
	t.Helper()
	for _, r := range s.requests() {
		assert.NotContains(t, r.method+" "+r.uri+"\n"+r.header+"\n"+r.body, proofCanary, "the canary is never sent")
		assert.Contains(t, methods, r.method, "%s %s", r.method, r.uri)
	}
}

// netProofStray is a TCP listener on the test host's address that no
// call may reach: it counts the connections it accepts and closes each.
type netProofStray struct {
	port     int
	accepted atomic.Int64
}

func newNetProofStray(t *testing.T, host netProofHost) *netProofStray {
	t.Helper()
	ln, err := net.Listen("tcp", host.at(0))
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	s := &netProofStray{port: ln.Addr().(*net.TCPAddr).Port}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			c.Close()
		}
	}()
	return s
}

// netProofEntry says what a tools entry built from a profile adds to the
// profile's text.
type netProofEntry struct {
	host       string            // the one value of ${hosts}, when the profile marks it
	env        map[string]string // variables added to the profile's env
	globalArgs []string          // tokens appended to its global_args
	read       []string          // paths added to its confine read
	egress     []string          // entries added to its confine network list
}

// netProofConfig writes a configuration with one tools entry: the text of
// the profile, with ${hosts} filled in as the loader fills it for one
// host (a pattern's mark becomes the quoted host in a group, any other
// mark the host), bin and working_dir set, the working directory added to
// the confinement's read paths as the loader adds it, and what e adds
// (the egress entries to the profile's network list).
func (s *proofScene) netProofConfig(t *testing.T, profile string, e netProofEntry) string {
	t.Helper()
	data, ok := profiles.Lookup(profile)
	require.True(t, ok)
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal(data, &doc))
	entry := doc.Content[0]
	netProofFillHosts(entry, e.host)
	str := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
	child := func(m *yaml.Node, key string, kind yaml.Kind) *yaml.Node {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i+1]
			}
		}
		n := &yaml.Node{Kind: kind}
		m.Content = append(m.Content, str(key), n)
		return n
	}
	child(entry, "bin", yaml.ScalarNode).Value = requireProgram(t, profile)
	*child(entry, "working_dir", yaml.ScalarNode) = *str(s.root)
	env := child(entry, "env", yaml.MappingNode)
	for k, v := range e.env {
		env.Content = append(env.Content, str(k), str(v))
	}
	ga := child(entry, "global_args", yaml.SequenceNode)
	for _, a := range e.globalArgs {
		ga.Content = append(ga.Content, str(a))
	}
	confine := child(entry, "confine", yaml.MappingNode)
	read := child(confine, "read", yaml.SequenceNode)
	read.Content = append([]*yaml.Node{str(s.root)}, read.Content...)
	for _, p := range e.read {
		read.Content = append(read.Content, str(p))
	}
	if len(e.egress) > 0 {
		network := child(confine, "network", yaml.SequenceNode)
		require.Equal(t, yaml.SequenceNode, network.Kind, "the profile's network is a list of hosts")
		for _, h := range e.egress {
			network.Content = append(network.Content, str(h))
		}
	}
	top := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		str("version"), {Kind: yaml.ScalarNode, Tag: "!!int", Value: "1"},
		str("tools"), {Kind: yaml.SequenceNode, Content: []*yaml.Node{entry}},
	}}
	out, err := yaml.Marshal(top)
	require.NoError(t, err)
	return writeFile(t, profile+"-site.yaml", string(out))
}

// netProofFillHosts puts host in place of every ${hosts} mark in n.
func netProofFillHosts(n *yaml.Node, host string) {
	const mark = "${hosts}"
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if v := n.Content[i+1]; n.Content[i].Value == "pattern" && v.Kind == yaml.ScalarNode {
				v.Value = strings.ReplaceAll(v.Value, mark, "(?:"+regexp.QuoteMeta(host)+")")
				continue
			}
			netProofFillHosts(n.Content[i+1], host)
		}
		return
	}
	if n.Kind == yaml.ScalarNode {
		n.Value = strings.ReplaceAll(n.Value, mark, host)
	}
	for _, c := range n.Content {
		netProofFillHosts(c, host)
	}
}

// netProofDest is where the connections of a call that reaches the test
// server go: the name the program asks the egress proxy for, the port,
// and the address the proxy connects to.
type netProofDest struct {
	host    string
	port    int
	address string
}

// assertReached checks that the call connected through the egress proxy,
// and that each of its connections went to dest, allowed, with bytes
// both ways.
func assertReached(t *testing.T, r execgate.Result, dest netProofDest) {
	t.Helper()
	require.NotEmpty(t, r.Connections, "the call connected through the egress proxy")
	for _, c := range r.Connections {
		assert.Equal(t, execgate.Connection{Host: dest.host, Port: dest.port, Kind: "connect", Allowed: true, Address: dest.address,
			BytesSent: c.BytesSent, BytesReceived: c.BytesReceived}, c)
		assert.Positive(t, c.BytesSent, "bytes went to the server")
		assert.Positive(t, c.BytesReceived, "bytes came back")
	}
}

// runNetAllowExamples runs every allow example of the profile for real,
// with ${hosts} in its arguments read as host: each must exit 0, print
// something on stdout, print neither the canary nor secret, and reach
// dest, and only dest, through the egress proxy.
func (s *proofScene) runNetAllowExamples(t *testing.T, profile, host, secret string, dest netProofDest) {
	t.Helper()
	ex := allowExamples(t, profile)
	require.NotEmpty(t, ex)
	for name, calls := range ex {
		require.NotEmpty(t, calls, "%s has allow examples", name)
		for _, in := range calls {
			if a, ok := in["args"].([]any); ok {
				for i, v := range a {
					if text, ok := v.(string); ok {
						a[i] = strings.ReplaceAll(text, "${hosts}", host)
					}
				}
			}
			t.Run(fmt.Sprintf("allow %s %v", name, in["args"]), func(t *testing.T) {
				code, out := s.run(t, name, in)
				require.Equal(t, exitOK, code, out)
				r := netProofResult(t, out)
				assert.Equal(t, 0, r.ExitCode, r.Stderr)
				assert.NotEmpty(t, r.Stdout, "the call printed what it fetched")
				assert.Contains(t, out, `"connections": [`, "the Result reports the connections")
				assertReached(t, r, dest)
				assert.NotContains(t, out, proofCanary)
				if secret != "" {
					assert.NotContains(t, out, secret)
				}
			})
		}
	}
}

// netProofResult reads the Result that execgate run printed first.
func netProofResult(t *testing.T, out string) execgate.Result {
	t.Helper()
	var r execgate.Result
	require.NoError(t, json.NewDecoder(strings.NewReader(out)).Decode(&r), out)
	return r
}

// netRefusedBeforeRunning checks that each call is refused before
// anything runs: by the grammar, or as a command no tools entry serves.
// runAttacks alone would also pass a call that ran and was inert.
func (s *proofScene) netRefusedBeforeRunning(t *testing.T, attacks []attack) {
	t.Helper()
	for _, a := range attacks {
		t.Run("refused: "+a.why, func(t *testing.T) {
			code, out := s.run(t, a.name, a.input)
			assert.Equal(t, exitFailed, code, out)
			assert.Regexp(t, `"kind": "(validation|not_found)"`, out, "refused before the program runs")
			assert.NotContains(t, out, `"exitCode"`)
		})
	}
}

func TestProfileProof_Curl(t *testing.T) {
	host := newNetProofHost(t)
	name := host.name
	ca := newNetProofCA(t, name)
	stray := newNetProofStray(t, host)
	strayAddr := host.at(stray.port)
	strayURL := "https://" + strayAddr + "/"
	srv := newNetProofServer(t, ca, host, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		switch r.URL.Path {
		case "/redirect":
			// A listed host that sends curl elsewhere: to the stray
			// listener, under the listed name (an address of this
			// machine's loopback would be in NO_PROXY, and curl would
			// connect to it in its own network, where nothing listens).
			http.Redirect(w, r, "https://"+net.JoinHostPort(name, strconv.Itoa(stray.port))+"/", http.StatusFound)
		case "/README":
			http.ServeContent(w, r, "README", time.Time{}, strings.NewReader("hello from the listed host\n"))
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, "{\"hello\":\"from the listed host\",\"path\":%q}\n", r.URL.Path)
		}
	})
	port := strconv.Itoa(srv.port)

	// The scene's own configuration names the profile with hosts:
	// [name]; site is the same profile with the test's CA trusted and
	// name:443 sent to the test server's port (a fixed --connect-to the
	// caller cannot give; through a proxy, curl asks it for name:port),
	// which the egress list allows by name and by address.
	s := newProofSceneWith(t, "curl", "    hosts: ["+name+"]\n")
	require.NoError(t, os.WriteFile(filepath.Join(s.root, ".curlrc"),
		[]byte("output = \""+s.marker+"\"\nurl = \"file://"+s.secret+"\"\n"), 0o644))
	connectTo := []string{"--connect-to", name + ":443::" + port}
	egress := []string{name + ":" + port, host.at(srv.port)}
	entry := func(globalArgs []string, egress []string) string {
		return s.netProofConfig(t, "curl", netProofEntry{
			host:       name,
			env:        map[string]string{"CURL_CA_BUNDLE": ca.file},
			globalArgs: globalArgs,
			read:       []string{ca.file},
			egress:     egress,
		})
	}
	site := *s
	site.config = entry(connectTo, egress)
	dest := netProofDest{host: name, port: srv.port, address: host.at(srv.port)}

	// The profile trusts the system's CAs and no other: without the
	// test's CA the call fails verification after curl read the system
	// store through the confinement (curl exits 77 when it cannot read
	// the store, 60 when the server's certificate is not in it).
	untrusted := *s
	untrusted.config = s.netProofConfig(t, "curl", netProofEntry{host: name, globalArgs: connectTo, egress: egress})
	code, out := untrusted.run(t, "curl.run", args("https://"+name+"/"))
	require.Equal(t, exitFailed, code, out)
	r := netProofResult(t, out)
	assert.Equal(t, 60, r.ExitCode, out)
	assertReached(t, r, dest)

	site.runNetAllowExamples(t, "curl", name, "", dest)
	var seen []string
	for _, r := range srv.requests() {
		seen = append(seen, r.method+" "+r.uri)
	}
	assert.Subset(t, seen, []string{"GET /", "GET /data.json?page=1&per_page=10", "HEAD /", "GET /api/v1/items", "GET /README"},
		"each allow example reached the listed host")

	url := "https://" + name + "/"
	outside := "../secret.txt"
	grammar := []attack{
		{"a file:// URL of the canary", "curl.run", args("file://" + s.secret)},
		{"a file:// URL through the link-out symlink", "curl.run", args("file://" + filepath.Join(s.root, "link-out"))},
		{"plain http", "curl.run", args("http://" + name + "/")},
		{"another scheme (dict)", "curl.run", args("dict://" + strayAddr + "/info")},
		{"an unlisted host: the stray listener", "curl.run", args(strayURL)},
		{"the listed host on the stray port", "curl.run", args("https://" + name + ":" + strconv.Itoa(stray.port) + "/")},
		{"the listed name as userinfo", "curl.run", args("https://" + name + "@" + strayAddr + "/")},
		{"userinfo before the listed name", "curl.run", args("https://user:pw@" + name + "/")},
		{"the listed name as the start of a longer one", "curl.run", args("https://" + name + ".evil.example/")},
		{"a trailing dot", "curl.run", args("https://" + name + "./")},
		{"a backslash before userinfo", "curl.run", args(`https://` + name + `\@` + strayAddr + "/")},
		{"a percent-encoded slash before userinfo", "curl.run", args("https://" + name + "%2F@" + strayAddr + "/")},
		{"a fragment before userinfo", "curl.run", args("https://" + name + "#@" + strayAddr + "/")},
		{"an IDN of full-width digits for the stray address", "curl.run", args("https://" + strings.Replace(strayAddr, host.addr.String(), fullWidth(host.addr.String()), 1) + "/")},
		{"an IDN of full-width letters for the listed name", "curl.run", args("https://" + fullWidth(name) + "/")},
		{"URL globbing of two hosts", "curl.run", args("https://{" + name + "," + strayAddr + "}/")},
		{"URL globbing of a range", "curl.run", args("https://" + name + "/[1-9]")},
		{"a second URL", "curl.run", args(url, strayURL)},
		{"--url", "curl.run", args("--url", strayURL, url)},
		{"--next and a second URL", "curl.run", args(url, "--next", strayURL)},
		{"-o writes a file", "curl.run", args("-o", s.marker, url)},
		{"--output climbing out", "curl.run", args("--output", "../pwned", url)},
		{"-O with --output-dir", "curl.run", args("--output-dir", s.base, "-O", url)},
		{"-D writes the headers to a file", "curl.run", args("-D", s.marker, url)},
		{"-c writes a cookie jar", "curl.run", args("-c", s.marker, url)},
		{"--trace writes a file", "curl.run", args("--trace", s.marker, url)},
		{"--trace-ascii writes a file", "curl.run", args("--trace-ascii", s.marker, url)},
		{"--stderr writes a file", "curl.run", args("--stderr", s.marker, url)},
		{"--libcurl writes a file", "curl.run", args("--libcurl", s.marker, url)},
		{"-K reads options from the canary", "curl.run", args("-K", s.secret)},
		{"--config climbing out", "curl.run", args("--config", outside, url)},
		{"--config through the link-out symlink", "curl.run", args("--config", "link-out", url)},
		{"-T uploads the canary", "curl.run", args("-T", s.secret, url)},
		{"-d @file posts the canary", "curl.run", args("-d", "@"+s.secret, url)},
		{"--data-binary @file", "curl.run", args("--data-binary", "@"+outside, url)},
		{"-F with @file", "curl.run", args("-F", "f=@"+s.secret, url)},
		{"--json @file", "curl.run", args("--json", "@"+s.secret, url)},
		{"-X changes the method", "curl.run", args("-X", "DELETE", url)},
		{"-H @file reads headers from the canary", "curl.run", args("-H", "@"+s.secret, url)},
		{"-H sets another header", "curl.run", args("-H", "Host: "+strayAddr, url)},
		{"-H glued to its flag", "curl.run", args("-HAccept: */*", url)},
		{"-b reads cookies from the canary", "curl.run", args("-b", s.secret, url)},
		{"--netrc-file", "curl.run", args("--netrc-file", s.secret, url)},
		{"-E reads a client certificate", "curl.run", args("-E", s.secret, url)},
		{"--cacert trusts a file", "curl.run", args("--cacert", s.secret, url)},
		{"-k trusts any certificate", "curl.run", args("-k", url)},
		{"--engine loads an engine", "curl.run", args("--engine", "list", url)},
		{"-w @file reads the format from the canary", "curl.run", args("-w", "@"+s.secret, url)},
		{"-w with %{stderr}", "curl.run", args("-w", "%{stderr}%{url}", url)},
		{"--unix-socket", "curl.run", args("--unix-socket", "/run/docker.sock", url)},
		{"--abstract-unix-socket", "curl.run", args("--abstract-unix-socket", "x", url)},
		{"-x sends the request to a proxy", "curl.run", args("-x", "http://"+strayAddr, url)},
		{"--preproxy", "curl.run", args("--preproxy", "socks5://"+strayAddr, url)},
		{"--resolve points the name elsewhere", "curl.run", args("--resolve", name+":443:"+host.addr.String(), "https://"+name+":"+strconv.Itoa(stray.port)+"/")},
		{"--connect-to sends the name to the stray port", "curl.run", args("--connect-to", name+":443:"+strayAddr, url)},
		{"-L follows the listed host's redirect", "curl.run", args("-L", url+"redirect")},
		{"a -q of the caller's", "curl.run", args("-q", url)},
		{"a range that is not one", "curl.run", args("--range", "0-1,@x", url)},
	}
	inert := []attack{
		{"a listed host's redirect is not followed", "curl.run", args("-i", url+"redirect")},
		{"nor with --head", "curl.run", args("--head", url+"redirect")},
		{"a .curlrc in the working directory is not read", "curl.run", args(url)},
		{"dot segments stay on the listed host", "curl.run", args(url + "../../secret.txt")},
		{"percent-encoded dot segments are the server's to read", "curl.run", args(url + "%2e%2e/%2e%2e/secret.txt")},
	}
	s.netRefusedBeforeRunning(t, grammar)
	site.netRefusedBeforeRunning(t, grammar)
	site.runAttacks(t, append(grammar, inert...))

	// What only the egress list stops. The grammar lets an allow example
	// through, but a DNS answer that points the listed name at a loopback
	// address (a rebinding, or a site's own name that resolves inside) is
	// refused: the proxy connects to a loopback, private or metadata
	// address only when an entry names the address. The entry here is
	// the site's without the address entry, as production's would be.
	rebound := *s
	rebound.config = entry(connectTo, []string{name + ":" + port})
	code, out = rebound.run(t, "curl.run", args(url))
	require.Equal(t, exitFailed, code, out)
	r = netProofResult(t, out)
	assert.Equal(t, 56, r.ExitCode, "curl: the proxy refused the CONNECT: %s", r.Stderr)
	require.Len(t, r.Connections, 1, out)
	assert.False(t, r.Connections[0].Allowed)
	assert.Contains(t, r.Connections[0].Refusal, host.addr.String()+" is a ")
	assert.Contains(t, r.Connections[0].Refusal, "which no allow entry names by address")

	// The rest are options the grammar never lets a caller give: each
	// tools entry below adds one to the fixed arguments on purpose, as a
	// loosened grammar (or a curl that misread its arguments) would, to
	// show that the confinement still keeps curl on the listed hosts.
	for _, c := range []struct {
		why        string
		globalArgs []string
		url        string
		refused    string // the destination the proxy refuses, or "" when curl reaches no proxy at all
	}{
		{"a redirect followed (-L) to the stray listener", append(slices.Clone(connectTo), "-L", "--max-redirs", "1"), url + "redirect", name + ":" + strconv.Itoa(stray.port)},
		{"--connect-to the stray listener", []string{"--connect-to", name + ":443:" + strayAddr}, url, strayAddr},
		{"--noproxy: a connection of curl's own, in a network of nothing", append(slices.Clone(connectTo), "--noproxy", "*"), url, ""},
		{"-x: a proxy of the caller's, the stray listener", append(slices.Clone(connectTo), "-x", "http://"+strayAddr), url, ""},
	} {
		t.Run("backstop: "+c.why, func(t *testing.T) {
			loose := *s
			loose.config = entry(c.globalArgs, egress)
			code, out := loose.run(t, "curl.run", args(c.url))
			require.Equal(t, exitFailed, code, out)
			r := netProofResult(t, out)
			assert.NotEqual(t, 0, r.ExitCode, r.Stderr)
			var refused []string
			for _, conn := range r.Connections {
				if !conn.Allowed {
					refused = append(refused, net.JoinHostPort(conn.Host, strconv.Itoa(conn.Port)))
					assert.Contains(t, conn.Refusal, "is not on the allowlist")
				}
			}
			if c.refused == "" {
				assert.Empty(t, r.Connections, "curl reached no proxy: it had no network")
			} else {
				assert.Equal(t, []string{c.refused}, refused, out)
			}
		})
	}
	assert.Zero(t, stray.accepted.Load(), "no call reached the stray listener")
	srv.assertNothingLeaked(t, http.MethodGet, http.MethodHead)
}

// fullWidth writes the ASCII letters and digits of s in their full-width
// forms (U+FF10 on), which an IDN-aware URL parser maps back to ASCII.
func fullWidth(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			c += 0xFEE0
		}
		b.WriteRune(c)
	}
	return b.String()
}

// ghProofToken is the token the gh test server is given: it holds the
// canary, so that a call printing it fails like a call printing the
// canary file.
const ghProofToken = "token-" + proofCanary

// ghProofREST are the test server's answers to gh's REST requests, by
// the path after /api/v3/repos/OWNER/REPO/; {{base}} is the server's URL.
var ghProofREST = map[string]string{
	"actions/runs":              `{"total_count":1,"workflow_runs":[` + ghProofRun + `]}`,
	"actions/runs/5":            ghProofRun,
	"actions/runs/5/jobs":       `{"total_count":1,"jobs":[{"id":11,"run_id":5,"status":"completed","conclusion":"success","name":"build","started_at":"2024-01-02T03:04:05Z","completed_at":"2024-01-02T03:05:05Z","url":"{{base}}/api/v3/repos/cli/cli/actions/jobs/11","html_url":"https://github.com/cli/cli/actions/runs/5/job/11","steps":[{"name":"test","status":"completed","conclusion":"success","number":1}]}]}`,
	"actions/runs/5/artifacts":  `{"total_count":0,"artifacts":[]}`,
	"check-runs/11/annotations": `[]`,
	"actions/workflows":         `{"total_count":1,"workflows":[{"id":9,"name":"ci","path":".github/workflows/ci.yml","state":"active"}]}`,
	"actions/workflows/9":       `{"id":9,"name":"ci","path":".github/workflows/ci.yml","state":"active"}`,
	"releases/tags/v2.23.0":     `{"id":1,"tag_name":"v2.23.0","name":"GitHub CLI 2.23.0","body":"The release notes.","draft":false,"prerelease":false,"created_at":"2024-01-02T03:04:05Z","published_at":"2024-01-02T03:04:05Z","html_url":"https://github.com/cli/cli/releases/tag/v2.23.0","url":"{{base}}/api/v3/repos/cli/cli/releases/1","author":{"login":"ann"},"assets":[]}`,
	"readme":                    `{"name":"README.md","path":"README.md","encoding":"base64","content":"IyBjbGkKCkdpdEh1YidzIG9mZmljaWFsIGNvbW1hbmQgbGluZSB0b29sLgo=","html_url":"https://github.com/cli/cli/blob/trunk/README.md"}`,
}

const ghProofRun = `{"id":5,"name":"ci","display_title":"Fix the parser","head_branch":"trunk","head_sha":"0123456789abcdef0123456789abcdef01234567","status":"completed","conclusion":"success","event":"push","workflow_id":9,"run_number":12,"run_attempt":1,"created_at":"2024-01-02T03:04:05Z","updated_at":"2024-01-02T03:05:05Z","run_started_at":"2024-01-02T03:04:05Z","html_url":"https://github.com/cli/cli/actions/runs/5","jobs_url":"{{base}}/api/v3/repos/cli/cli/actions/runs/5/jobs","url":"{{base}}/api/v3/repos/cli/cli/actions/runs/5","repository":{"owner":{"login":"cli"},"name":"cli","full_name":"cli/cli"},"head_repository":{"owner":{"login":"cli"},"name":"cli","full_name":"cli/cli"}}`

// ghProofDiff is the diff of pull request 7.
const ghProofDiff = "diff --git a/parse.go b/parse.go\n--- a/parse.go\n+++ b/parse.go\n@@ -1 +1 @@\n-old\n+new\n"

const ghProofPR = `{"id":"PR_7","url":"https://github.com/cli/cli/pull/7","number":7,"title":"Fix the parser","state":"OPEN","body":"It parses now.","author":{"login":"ann"},"headRefName":"fix-parser","baseRefName":"trunk","additions":3,"deletions":1,"commits":{"totalCount":1},"createdAt":"2024-01-02T03:04:05Z","headRepositoryOwner":{"id":"U1","login":"ann"},"headRepository":{"id":"R1","name":"cli"},"isCrossRepository":false,"isDraft":false,"reviewRequests":{"nodes":[]},"reviews":{"nodes":[],"totalCount":0},"assignees":{"nodes":[],"totalCount":0},"labels":{"nodes":[{"id":"L1","name":"bug","description":"","color":"d73a4a"}],"totalCount":1},"projectCards":{"nodes":[],"totalCount":0},"comments":{"nodes":[{"id":"C1","author":{"login":"bob"},"authorAssociation":"MEMBER","body":"Looks good.","createdAt":"2024-01-02T03:04:05Z","includesCreatedEdit":false,"isMinimized":false,"minimizedReason":"","reactionGroups":[],"url":"https://github.com/cli/cli/pull/7#issuecomment-1","viewerDidAuthor":false}],"totalCount":1},"reactionGroups":[],"statusCheckRollup":{"nodes":[]}}`

const ghProofIssue = `{"__typename":"Issue","id":"I_3","number":3,"url":"https://github.com/cli/cli/issues/3","state":"OPEN","createdAt":"2024-01-02T03:04:05Z","updatedAt":"2024-01-02T03:04:05Z","title":"Parser crashes","body":"On empty input.","author":{"login":"bob"},"assignees":{"nodes":[],"totalCount":0},"labels":{"nodes":[{"id":"L1","name":"bug","description":"","color":"d73a4a"}],"totalCount":1},"projectCards":{"nodes":[],"totalCount":0},"reactionGroups":[],"comments":{"nodes":[{"author":{"login":"ann"},"authorAssociation":"MEMBER","body":"Confirmed.","createdAt":"2024-01-02T03:04:05Z","includesCreatedEdit":false,"isMinimized":false,"minimizedReason":"","reactionGroups":[]}],"totalCount":1}}`

// ghProofGraphQL are the test server's answers to gh's GraphQL queries,
// by the query's name.
var ghProofGraphQL = map[string]string{
	"PullRequestList":         `{"data":{"repository":{"pullRequests":{"totalCount":1,"nodes":[` + ghProofPR + `],"pageInfo":{"hasNextPage":false,"endCursor":""}}}}}`,
	"PullRequestSearch":       `{"data":{"search":{"issueCount":1,"nodes":[` + ghProofPR + `],"pageInfo":{"hasNextPage":false,"endCursor":""}}}}`,
	"PullRequestByNumber":     `{"data":{"repository":{"pullRequest":` + ghProofPR + `}}}`,
	"PullRequestStatusChecks": `{"data":{"node":{"statusCheckRollup":{"nodes":[{"commit":{"statusCheckRollup":{"contexts":{"nodes":[{"__typename":"CheckRun","name":"build","status":"COMPLETED","conclusion":"SUCCESS","startedAt":"2024-01-02T03:04:05Z","completedAt":"2024-01-02T03:05:05Z","detailsUrl":"https://github.com/cli/cli/actions/runs/5","checkSuite":{"workflowRun":{"workflow":{"name":"ci"}}}}],"pageInfo":{"hasNextPage":false,"endCursor":""}}}}}]}}}}`,
	"PullRequestForRun":       `{"data":{"repository":{"pullRequests":{"nodes":[]}}}}`,
	"Issue_fields":            `{"data":{"Issue":{"fields":[{"name":"number"},{"name":"title"},{"name":"stateReason"}]}}}`,
	"IssueList":               `{"data":{"repository":{"hasIssuesEnabled":true,"issues":{"totalCount":1,"nodes":[` + ghProofIssue + `],"pageInfo":{"hasNextPage":false,"endCursor":""}}}}}`,
	"IssueSearch":             `{"data":{"repository":{"hasIssuesEnabled":true},"search":{"issueCount":1,"nodes":[` + ghProofIssue + `],"pageInfo":{"hasNextPage":false,"endCursor":""}}}}`,
	"IssueByNumber":           `{"data":{"repository":{"hasIssuesEnabled":true,"issue":` + ghProofIssue + `}}}`,
	"RepositoryReleaseList":   `{"data":{"repository":{"releases":{"nodes":[{"name":"GitHub CLI 2.23.0","tagName":"v2.23.0","isDraft":false,"isLatest":true,"isPrerelease":false,"createdAt":"2024-01-02T03:04:05Z","publishedAt":"2024-01-02T03:04:05Z"}],"pageInfo":{"hasNextPage":false,"endCursor":""}}}}}`,
	"RepositoryReleaseByTag":  `{"data":{"repository":{"release":{"databaseId":1,"isDraft":false}}}}`,
	"CommentsForIssue":        `{"data":{"node":{"comments":{"nodes":[{"id":"C2","author":{"login":"ann"},"authorAssociation":"MEMBER","body":"Confirmed.","createdAt":"2024-01-02T03:04:05Z","includesCreatedEdit":false,"isMinimized":false,"minimizedReason":"","reactionGroups":[],"url":"https://github.com/cli/cli/issues/3#issuecomment-2","viewerDidAuthor":false}],"totalCount":1,"pageInfo":{"hasNextPage":false,"endCursor":""}}}}}`,
	"LabelList":               `{"data":{"repository":{"labels":{"totalCount":1,"nodes":[{"name":"bug","color":"d73a4a","description":"Something is broken"}],"pageInfo":{"hasNextPage":false,"endCursor":""}}}}}`,
	"RepositoryInfo":          `{"data":{"repository":{"name":"cli","owner":{"id":"O1","login":"cli"},"description":"GitHub's official command line tool"}}}`,
}

var (
	ghProofQueryName = regexp.MustCompile(`\b(query|mutation)\s+(\w+)`)
	ghProofRepoPath  = regexp.MustCompile(`^/api/v3/repos/[^/]+/[^/]+/(.+)$`)
)

// ghProofServer answers gh's requests from the tables above and records
// what it could not answer, and any mutation. The REST requests for the
// repository cli/moved it answers as GitHub answers those for a renamed
// repository, with a redirect (301), here to movedTo and the same path.
type ghProofServer struct {
	*netProofServer
	movedTo    string
	mu         sync.Mutex
	unanswered []string
}

func newGhProofServer(t *testing.T, ca netProofCA, host netProofHost, movedTo string) *ghProofServer {
	t.Helper()
	g := &ghProofServer{movedTo: movedTo}
	g.netProofServer = newNetProofServer(t, ca, host, func(w http.ResponseWriter, r *http.Request, body []byte) {
		base := "https://" + host.name + ":" + strconv.Itoa(g.port)
		answer, ok := "", false
		switch {
		case r.Header.Get("Authorization") != "token "+ghProofToken:
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v3/repos/cli/moved/"):
			http.Redirect(w, r, g.movedTo+r.URL.Path, http.StatusMovedPermanently)
			return
		case r.Method == http.MethodPost && r.URL.Path == "/api/graphql":
			var q struct{ Query string }
			_ = json.Unmarshal(body, &q)
			if m := ghProofQueryName.FindStringSubmatch(q.Query); m != nil && m[1] == "query" {
				answer, ok = ghProofGraphQL[m[2]]
			}
		case r.Method == http.MethodGet:
			if m := ghProofRepoPath.FindStringSubmatch(r.URL.Path); m != nil {
				if m[1] == "pulls/7" {
					w.Header().Set("Content-Type", "text/plain")
					io.WriteString(w, ghProofDiff)
					return
				}
				answer, ok = ghProofREST[m[1]]
			}
		}
		if !ok {
			g.mu.Lock()
			g.unanswered = append(g.unanswered, r.Method+" "+r.RequestURI+" "+string(body))
			g.mu.Unlock()
			http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, strings.ReplaceAll(answer, "{{base}}", base))
	})
	return g
}

func (g *ghProofServer) takeUnanswered() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	u := g.unanswered
	g.unanswered = nil
	return u
}

func TestProfileProof_Gh(t *testing.T) {
	host := newNetProofHost(t)
	ca := newNetProofCA(t, host.name)
	stray := newNetProofStray(t, host)
	strayAddr := host.name + ":" + strconv.Itoa(stray.port)
	srv := newGhProofServer(t, ca, host, "https://"+strayAddr)

	// The scene's own configuration names the profile, which reaches
	// github.com; site is the same profile pointed at the test server
	// (GH_HOST, whose token is GH_ENTERPRISE_TOKEN) with the test's CA
	// trusted, and the server's name and address on its port added to
	// the egress list.
	s := newProofScene(t, "gh")
	payload := "sh -c 'cat " + s.secret + "; touch " + s.marker + "'"
	for _, dir := range []string{filepath.Join(s.root, ".config", "gh"), filepath.Join(s.base, ".config", "gh")} {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "config.yml"),
			[]byte("pager: "+payload+"\nbrowser: "+payload+"\naliases:\n  pr: '!"+payload+"'\n"), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(s.root, "gh-pwn"), []byte("#!/bin/sh\ntouch "+s.marker+"\n"), 0o755))
	ghHost := host.name + ":" + strconv.Itoa(srv.port)
	egress := []string{ghHost, host.at(srv.port)}
	entry := func(egress []string) string {
		return s.netProofConfig(t, "gh", netProofEntry{
			env:    map[string]string{"GH_HOST": ghHost, "GH_ENTERPRISE_TOKEN": ghProofToken, "SSL_CERT_FILE": ca.file},
			read:   []string{ca.file},
			egress: egress,
		})
	}
	site := *s
	site.config = entry(egress)
	dest := netProofDest{host: host.name, port: srv.port, address: host.at(srv.port)}

	// The profile trusts the system's CAs and no other: without the
	// test's CA the call fails verification after gh read the system
	// store through the confinement (Go says "failed to load system
	// roots" when it cannot).
	untrusted := *s
	untrusted.config = s.netProofConfig(t, "gh", netProofEntry{
		env:    map[string]string{"GH_HOST": ghHost, "GH_ENTERPRISE_TOKEN": ghProofToken},
		egress: egress,
	})
	code, out := untrusted.run(t, "gh.pr-list", args("-R", "cli/cli"))
	require.Equal(t, exitFailed, code, out)
	r := netProofResult(t, out)
	assert.Equal(t, 1, r.ExitCode, out)
	assert.Contains(t, r.Stderr, "certificate signed by unknown authority")
	assert.Empty(t, srv.requests(), "no request got through")
	assertReached(t, r, dest)

	site.runNetAllowExamples(t, "gh", "", ghProofToken, dest)
	assert.Empty(t, srv.takeUnanswered(), "the allow examples asked only what the test server answers")

	repo := []string{"-R", "cli/cli"}
	with := func(a ...string) map[string]any { return args(append(append([]string(nil), repo...), a...)...) }
	grammar := []attack{
		{"gh api, which can send any request", "gh.api", args("-X", "POST", "repos/cli/cli/issues", "-f", "title=x")},
		{"gh auth token prints the token", "gh.auth-token", args()},
		{"gh auth under another spelling", "gh.auth", args("token")},
		{"gh config", "gh.config-get", args("pager")},
		{"gh alias set defines a command", "gh.alias-set", args("x", "!"+payload)},
		{"gh extension install", "gh.extension-install", args("owner/gh-pwn")},
		{"an extension by its name", "gh.pwn", args()},
		{"gh pr checkout writes the working tree", "gh.pr-checkout", args("7")},
		{"gh run download writes files", "gh.run-download", with("5")},
		{"gh release download writes files", "gh.release-download", with("v2.23.0")},
		{"another subcommand through a command's arguments", "gh.pr-list", args("checkout", "7")},
		{"--web opens a browser", "gh.pr-view", with("--web", "7")},
		{"-w opens a browser", "gh.issue-list", with("-w")},
		{"--jq reads the environment", "gh.pr-list", with("--json", "number", "--jq", "$ENV")},
		{"-q reads the environment", "gh.issue-view", with("--json", "title", "-q", "env", "3")},
		{"--template", "gh.pr-list", with("--json", "number", "--template", "{{.}}")},
		{"-F/--field of gh api reading a file", "gh.pr-list", with("-F", "body=@"+s.secret)},
		{"--body-file reads the canary", "gh.issue-view", with("--body-file", s.secret, "3")},
		{"--repo with a host: the stray listener", "gh.pr-list", args("-R", strayAddr+"/cli/cli")},
		{"--repo with another host", "gh.issue-list", args("--repo", "evil.example.com/cli/cli")},
		{"--repo as a URL", "gh.pr-list", args("--repo=https://" + strayAddr + "/cli/cli")},
		{"--repo climbing the API's path", "gh.pr-list", args("-R", "cli/..")},
		{"--repo as a path outside", "gh.pr-list", args("-R", "../secret.txt")},
		{"a pull request named by a URL on the stray listener", "gh.pr-view", args("https://" + strayAddr + "/cli/cli/pull/7")},
		{"an issue named by a URL", "gh.issue-view", args("https://evil.example.com/cli/cli/issues/3")},
		{"a repository named by a URL", "gh.repo-view", args("https://" + strayAddr + "/cli/cli")},
		{"a repository with a host", "gh.repo-view", args(strayAddr + "/cli/cli")},
		{"a release tag climbing the API's path", "gh.release-view", with("../../../user")},
		{"run view --log caches the logs in a file", "gh.run-view", with("--log", "5")},
		{"pr checks --watch", "gh.pr-checks", with("--watch", "7")},
		{"--help", "gh.pr-list", with("--help")},
		{"a '--' of the caller's", "gh.pr-view", with("--", "--web", "7")},
	}
	inert := []attack{
		{"a config file in the working directory or its parent is not read", "gh.pr-list", with()},
		{"without --repo gh needs git, which does not run", "gh.pr-list", args()},
		{"nor for a pull request of the working directory's branch", "gh.pr-view", args()},
	}
	s.netRefusedBeforeRunning(t, grammar)
	site.netRefusedBeforeRunning(t, grammar)
	site.runAttacks(t, append(grammar, inert...))

	// What only the egress list stops, with the grammar as it is. A
	// repository that moved: the API answers with a redirect, which gh
	// follows, here to the stray listener under the server's own name;
	// the proxy refuses it, as it would any host but the listed ones.
	code, out = site.run(t, "gh.run-list", args("-R", "cli/moved"))
	require.Equal(t, exitFailed, code, out)
	r = netProofResult(t, out)
	assert.Equal(t, 1, r.ExitCode, r.Stderr)
	var refused []execgate.Connection
	for _, c := range r.Connections {
		if !c.Allowed {
			refused = append(refused, c)
		} else {
			assert.Equal(t, host.name, c.Host)
			assert.Equal(t, srv.port, c.Port)
		}
	}
	require.Len(t, refused, 1, out)
	assert.Equal(t, host.name, refused[0].Host)
	assert.Equal(t, stray.port, refused[0].Port)
	assert.Contains(t, refused[0].Refusal, "is not on the allowlist")
	assert.Empty(t, refused[0].Address, "the proxy connected nowhere")

	// A DNS answer that points the listed name at a loopback address (a
	// rebinding, or a site's own name that resolves inside): the proxy
	// connects to a loopback, private or metadata address only when an
	// entry names the address. The entry here is the site's without the
	// address entry, as production's would be.
	rebound := *s
	rebound.config = entry([]string{ghHost})
	code, out = rebound.run(t, "gh.pr-list", args("-R", "cli/cli"))
	require.Equal(t, exitFailed, code, out)
	r = netProofResult(t, out)
	assert.Equal(t, 1, r.ExitCode, r.Stderr)
	require.NotEmpty(t, r.Connections, out)
	for _, c := range r.Connections {
		assert.False(t, c.Allowed)
		assert.Contains(t, c.Refusal, host.addr.String()+" is a ")
		assert.Contains(t, c.Refusal, "which no allow entry names by address")
	}

	assert.Zero(t, stray.accepted.Load(), "no call reached the stray listener")
	srv.assertNothingLeaked(t, http.MethodGet, http.MethodPost)
	for _, r := range srv.requests() {
		assert.NotRegexp(t, `\bmutation\b`, r.body, "no call changes anything")
		assert.False(t, r.method == http.MethodPost && r.uri != "/api/graphql", "gh POSTs only GraphQL queries: %s", r.uri)
	}
	assert.Empty(t, srv.takeUnanswered(), "the inert calls asked nothing the test server does not answer")
}
