package execgate

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Egress is the network a confined command may reach when its
// [Confinement] has Network false: the hosts and ports it may connect to
// through an egress proxy that [DefaultExecFn] runs for the call.
//
// The command still starts in a network namespace of its own, with no
// route anywhere. Its loopback interface has one more thing on it: the
// proxy, listening on 127.0.0.1:3128 (see [EgressProxyAddr]), and its
// environment names it in HTTP_PROXY, HTTPS_PROXY and ALL_PROXY (and in
// their lowercase spellings, which some programs read instead), with
// NO_PROXY (and no_proxy) "localhost,127.0.0.1,::1" so that the
// command's own loopback stays its own. These override the spec's Env. A
// program that honours the variables (curl, wget, git, Go's and Python's
// HTTP clients, gh, kubectl, terraform) reaches the listed hosts; one that
// ignores them, or opens a socket of its own, has no network at all.
//
// The proxy serves HTTP CONNECT (any protocol tunnelled to a listed host
// and port, TLS included) and plain http:// requests, one upstream
// connection each. It resolves names itself, in the gate's own network,
// and connects to the address it checked, so a name that resolves to
// another address later (DNS rebinding) changes nothing. It refuses an
// address that is loopback, private, link-local, shared (100.64.0.0/10),
// multicast, reserved, an address of the gate's own host, or a cloud
// metadata endpoint (169.254.169.254, fd00:ec2::254, 100.100.100.200,
// 168.63.129.16) unless an Allow entry names that address: an IP address,
// or a prefix within that special range ("10.0.0.0/8", not "0.0.0.0/0"),
// never a host name. Every
// connection attempt, allowed or refused, is reported in
// [Result.Connections] and in the audit [Event].
//
// What it cannot see: which host a TLS connection to a listed address
// talks to once it is established (a server that hosts several names may
// answer for one that is not listed, "domain fronting"). A plain http://
// request is always sent with the Host it was addressed to.
//
// An Egress needs the network namespace, whatever BestEffort says: a
// kernel that cannot give one makes the call a spawn_error, never a run
// on the caller's network.
//
// The lists are part of the spec's fingerprint, and so of every approval
// digest, and an [Approval] shows them.
type Egress struct {
	// Allow lists the destinations the command may connect to, each
	// HOST:PORT. HOST is a DNS name ("api.github.com"), a name pattern
	// ("*.githubusercontent.com": one or more labels before the rest),
	// "*" (any name, and any address that is not one of those refused
	// above), an IPv4 address ("10.1.2.3"), an IPv6 address in brackets
	// ("[fd00::1]"), or a prefix ("10.0.0.0/8", "[fd00::/8]"). PORT is a
	// number, a range ("8000-8999") or "*". Names are matched without
	// regard to case and without a trailing dot. Empty allows nothing:
	// every attempt is refused and reported.
	Allow []string
	// (Once MaxConnections attempts are recorded, or half of that of
	// refused ones, later ones are enforced and only counted.)
	//
	// Deny lists destinations that are refused even when Allow lists
	// them, in the same form: a name entry refuses a host by its name,
	// an address entry every address it covers, however the command
	// named the host. Deny wins.
	Deny []string
}

// EgressProxyAddr is the address of the egress proxy inside a confined
// command's network namespace, where its environment points (see
// [Egress]).
const EgressProxyAddr = "127.0.0.1:3128"

// MaxConnections is the most [Connection] entries a [Result] reports;
// [Result.ConnectionsDropped] counts the attempts past it.
const MaxConnections = 256

// maxEgressEntries bounds each list of an [Egress].
const maxEgressEntries = 1024

// Connection is one connection attempt a confined command made through
// its egress proxy (see [Egress]): where to, whether it was allowed, and
// how many bytes went each way.
type Connection struct {
	// Host is the host the command asked for, as it wrote it (lowercase,
	// without a trailing dot): a name or an address.
	Host string `json:"host"`
	// Port is the port it asked for.
	Port int `json:"port"`
	// Kind is "connect" for an HTTP CONNECT tunnel, "http" for a plain
	// http:// request.
	Kind string `json:"kind"`
	// Allowed reports whether the destination was allowed.
	Allowed bool `json:"allowed"`
	// Refusal says why a refused attempt was refused, such as
	// `"evil.example:443" is not on the allowlist`.
	Refusal string `json:"refusal,omitempty"`
	// Address is the IP address and port the proxy connected to, or ""
	// if it connected nowhere.
	Address string `json:"address,omitempty"`
	// Error says why an allowed connection failed ("connection refused"),
	// or "".
	Error string `json:"error,omitempty"`
	// BytesSent and BytesReceived count the bytes the proxy passed from
	// the command to the destination and back, protocol headers of the
	// proxy itself not included.
	BytesSent     int64 `json:"bytesSent"`
	BytesReceived int64 `json:"bytesReceived"`
}

// Connection kinds.
const (
	connectionConnect = "connect"
	connectionHTTP    = "http"
)

// egressEntry is one parsed entry of an Egress list.
type egressEntry struct {
	text string // the normalized entry

	// Exactly one of these says what the host part is.
	any    bool         // "*"
	name   string       // an exact name, or the suffix of a pattern
	suffix bool         // name is a pattern's ".rest"
	prefix netip.Prefix // an address (a full-length prefix) or a prefix

	lo, hi int // the ports, inclusive
}

// isAddress reports whether e names addresses rather than host names.
func (e *egressEntry) isAddress() bool { return e.prefix.IsValid() }

// portOK reports whether port is within e's ports.
func (e *egressEntry) portOK(port int) bool { return port >= e.lo && port <= e.hi }

// matchName reports whether e, a name entry or "*", covers host (a
// normalized name, not an address) on port.
func (e *egressEntry) matchName(host string, port int) bool {
	if !e.portOK(port) || e.isAddress() {
		return false
	}
	switch {
	case e.any:
		return true
	case e.suffix:
		return strings.HasSuffix(host, e.name) && len(host) > len(e.name)
	default:
		return host == e.name
	}
}

// matchAddr reports whether e, an address entry, covers a on port.
func (e *egressEntry) matchAddr(a netip.Addr, port int) bool {
	return e.isAddress() && e.portOK(port) && e.prefix.Contains(a)
}

// parseEgressEntry parses and normalizes one HOST:PORT entry.
func parseEgressEntry(s string) (egressEntry, error) {
	if strings.Contains(s, "://") {
		return egressEntry{}, fmt.Errorf("%q is a URL; write HOST:PORT, such as %q", s, "api.github.com:443")
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 || strings.HasSuffix(s, "]") {
		return egressEntry{}, fmt.Errorf("%q has no port; write HOST:PORT, such as %q or %q", s, "api.github.com:443", s+":*")
	}
	host, port := s[:i], s[i+1:]
	var e egressEntry
	var err error
	if e.lo, e.hi, err = parsePorts(port); err != nil {
		return egressEntry{}, fmt.Errorf("%q: %v", s, err)
	}
	switch {
	case host == "*":
		e.any = true
	case strings.HasPrefix(host, "["):
		if !strings.HasSuffix(host, "]") {
			return egressEntry{}, fmt.Errorf("%q: an IPv6 address is written in brackets, such as [fd00::1]:443", s)
		}
		p, err := parseAddrOrPrefix(host[1 : len(host)-1])
		if err != nil || !p.Addr().Is6() || p.Addr().Is4In6() {
			return egressEntry{}, fmt.Errorf("%q: %q is not an IPv6 address or prefix", s, host)
		}
		e.prefix = p
	case strings.ContainsAny(host, "/") || looksNumeric(host):
		p, err := parseAddrOrPrefix(host)
		if err != nil || !p.Addr().Is4() {
			return egressEntry{}, fmt.Errorf("%q: %q is not an IPv4 address or prefix (an IPv6 one is written in brackets)", s, host)
		}
		e.prefix = p
	case strings.Contains(host, ":"):
		return egressEntry{}, fmt.Errorf("%q: an IPv6 address is written in brackets, such as [fd00::1]:443", s)
	default:
		name := strings.ToLower(strings.TrimSuffix(host, "."))
		pattern := strings.HasPrefix(name, "*.")
		if pattern {
			name = name[1:] // keep the dot: ".example.com"
		}
		if !validHostName(strings.TrimPrefix(name, ".")) {
			return egressEntry{}, fmt.Errorf("%q: %q is not a host name (letters, digits, '-' and '_' in dot-separated labels, optionally after \"*.\"), an address or \"*\"", s, host)
		}
		e.name, e.suffix = name, pattern
	}
	e.text = e.format()
	return e, nil
}

// format is the normalized text of e.
func (e *egressEntry) format() string {
	var host string
	switch {
	case e.any:
		host = "*"
	case e.isAddress():
		host = e.prefix.Addr().String()
		if e.prefix.Bits() != e.prefix.Addr().BitLen() {
			host = e.prefix.String()
		}
		if e.prefix.Addr().Is6() {
			host = "[" + host + "]"
		}
	case e.suffix:
		host = "*" + e.name
	default:
		host = e.name
	}
	port := strconv.Itoa(e.lo)
	switch {
	case e.lo == 1 && e.hi == 65535:
		port = "*"
	case e.lo != e.hi:
		port += "-" + strconv.Itoa(e.hi)
	}
	return host + ":" + port
}

// parsePorts parses "443", "8000-8999" or "*".
func parsePorts(s string) (lo, hi int, err error) {
	if s == "*" {
		return 1, 65535, nil
	}
	a, b, isRange := strings.Cut(s, "-")
	if lo, err = parsePort(a); err != nil {
		return 0, 0, err
	}
	hi = lo
	if isRange {
		if hi, err = parsePort(b); err != nil {
			return 0, 0, err
		}
		if hi < lo {
			return 0, 0, fmt.Errorf("the port range %s ends before it starts", s)
		}
	}
	return lo, hi, nil
}

// parsePort parses a port number from 1 to 65535, digits only.
func parsePort(s string) (int, error) {
	if s == "" || len(s) > 5 || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("the port %q must be a number from 1 to 65535, a range such as 8000-8999, or *", s)
	}
	n, _ := strconv.Atoi(s)
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("the port %q must be a number from 1 to 65535, a range such as 8000-8999, or *", s)
	}
	return n, nil
}

// parseAddrOrPrefix parses an address (as a full-length prefix) or a
// prefix, masked.
func parseAddrOrPrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("not an address")
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// looksNumeric reports whether s is made of digits and dots only, as an
// IPv4 address is (and a host name's last label never is).
func looksNumeric(s string) bool {
	return s != "" && strings.Trim(s, "0123456789.") == ""
}

// validHostName reports whether s is a DNS name of at most 253 bytes:
// labels of 1 to 63 letters, digits, '-' and '_', not starting or ending
// with '-', whose last label is not all digits.
func validHostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return !looksNumeric(labels[len(labels)-1])
}

// normalizeEgress checks e and returns a normalized copy: each list
// parsed, written in its normal form, sorted and deduplicated; or the
// field at fault ("Allow" or "Deny") and why. Nil stays nil.
func normalizeEgress(e *Egress) (*Egress, string, error) {
	if e == nil {
		return nil, "", nil
	}
	out := &Egress{}
	for _, l := range []struct {
		field string
		in    []string
		out   *[]string
	}{{"Allow", e.Allow, &out.Allow}, {"Deny", e.Deny, &out.Deny}} {
		if len(l.in) > maxEgressEntries {
			return nil, l.field, fmt.Errorf("at most %d entries", maxEgressEntries)
		}
		for _, s := range l.in {
			entry, err := parseEgressEntry(s)
			if err != nil {
				return nil, l.field, err
			}
			*l.out = append(*l.out, entry.text)
		}
		slices.Sort(*l.out)
		*l.out = slices.Compact(*l.out)
	}
	return out, "", nil
}

// clone returns a deep copy of e, or nil.
func (e *Egress) clone() *Egress {
	if e == nil {
		return nil
	}
	return &Egress{Allow: slices.Clone(e.Allow), Deny: slices.Clone(e.Deny)}
}

// egressRules are the parsed lists of a normalized Egress.
type egressRules struct {
	allow, deny []egressEntry
}

// compileEgress parses the lists of a normalized Egress.
func compileEgress(e *Egress) (*egressRules, error) {
	r := &egressRules{}
	for _, l := range []struct {
		in  []string
		out *[]egressEntry
	}{{e.Allow, &r.allow}, {e.Deny, &r.deny}} {
		for _, s := range l.in {
			entry, err := parseEgressEntry(s)
			if err != nil {
				return nil, err
			}
			*l.out = append(*l.out, entry)
		}
	}
	return r, nil
}

// egressTarget is a destination as the command asked for it.
type egressTarget struct {
	host string     // normalized: lowercase, no trailing dot, no brackets
	addr netip.Addr // valid when host is an address literal (unmapped)
	port int
}

// parseEgressTarget parses the authority of a CONNECT request or of an
// http:// URL: host:port, with defaultPort used when the port is absent
// (0 means the port is required).
func parseEgressTarget(authority string, defaultPort int) (egressTarget, error) {
	host, port := authority, ""
	if i := strings.LastIndexByte(authority, ':'); i >= 0 && !strings.HasSuffix(authority, "]") {
		host, port = authority[:i], authority[i+1:]
	}
	var t egressTarget
	switch {
	case port != "":
		n, err := parsePort(port)
		if err != nil {
			return t, err
		}
		t.port = n
	case defaultPort != 0:
		t.port = defaultPort
	default:
		return t, fmt.Errorf("no port")
	}
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		a, err := netip.ParseAddr(host[1 : len(host)-1])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return t, fmt.Errorf("not an IPv6 address")
		}
		t.addr = a.Unmap()
		t.host = t.addr.String()
		return t, nil
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Is4() {
		t.addr, t.host = a, a.String()
		return t, nil
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if !validHostName(name) {
		return t, fmt.Errorf("not a host name or an address")
	}
	t.host = name
	return t, nil
}

// String is the target as host:port.
func (t egressTarget) String() string {
	if t.addr.Is6() {
		return "[" + t.host + "]:" + strconv.Itoa(t.port)
	}
	return t.host + ":" + strconv.Itoa(t.port)
}

// refusedByName returns the deny entry that refuses t by its name, or nil.
func (r *egressRules) refusedByName(t egressTarget) *egressEntry {
	for i := range r.deny {
		d := &r.deny[i]
		if t.addr.IsValid() {
			if d.any && d.portOK(t.port) || d.matchAddr(t.addr, t.port) {
				return d
			}
			continue
		}
		if d.matchName(t.host, t.port) {
			return d
		}
	}
	return nil
}

// namedByName reports whether an Allow entry names t: a name entry (or
// "*") for a name, "*" for an address literal.
func (r *egressRules) namedByName(t egressTarget) bool {
	for i := range r.allow {
		a := &r.allow[i]
		if t.addr.IsValid() {
			if a.any && a.portOK(t.port) {
				return true
			}
			continue
		}
		if a.matchName(t.host, t.port) {
			return true
		}
	}
	return false
}

// decideAddr says whether the command may connect to a, one address of t
// (whose name an Allow entry names when byName is set): "" if it may,
// else why not. An address of the gate's own host (local, when not nil,
// reports them) counts as special, as loopback does.
//
// A special address (see specialRange) is let through only by an Allow
// entry that names it by an address or a prefix lying within the special
// range itself ("127.0.0.1:8080", "10.0.0.0/8:5432"): a prefix broader
// than the range ("0.0.0.0/0") names ordinary addresses, not these.
func (r *egressRules) decideAddr(t egressTarget, a netip.Addr, byName bool, local func(netip.Addr) bool) string {
	a = a.Unmap()
	for i := range r.deny {
		if r.deny[i].matchAddr(a, t.port) || r.deny[i].any && r.deny[i].portOK(t.port) {
			return fmt.Sprintf("%s is refused by the deny entry %q", a, r.deny[i].text)
		}
	}
	kind, special := specialRange(a)
	if kind == "" && local != nil && local(a) {
		kind, special = "an address of the gate's own host", netip.PrefixFrom(a, a.BitLen())
	}
	for i := range r.allow {
		e := &r.allow[i]
		if !e.matchAddr(a, t.port) {
			continue
		}
		if kind == "" || special.Contains(e.prefix.Addr()) && e.prefix.Bits() >= special.Bits() {
			return ""
		}
	}
	if !byName {
		return fmt.Sprintf("%q is not on the allowlist", t.String())
	}
	if kind != "" {
		return fmt.Sprintf("%s is %s, which no allow entry names by address", a, kind)
	}
	return ""
}

// specialRanges are the addresses a name never reaches unless an Allow
// entry names them by address: loopback, private, link-local, multicast,
// shared, reserved, documentation and benchmarking space, the IPv6
// prefixes that embed an IPv4 address (IPv4-compatible, SIIT, NAT64, 6to4,
// Teredo), IPv6 outside the global unicast 2000::/3, and public addresses
// that are cloud metadata or platform endpoints. The most specific range
// comes first.
var specialRanges = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("169.254.169.254/32"), "a cloud metadata address"},
	{netip.MustParsePrefix("100.100.100.200/32"), "a cloud metadata address"},
	{netip.MustParsePrefix("168.63.129.16/32"), "a cloud platform address"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "a cloud metadata address"},
	{netip.MustParsePrefix("0.0.0.0/32"), "the unspecified address"},
	{netip.MustParsePrefix("::/128"), "the unspecified address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("255.255.255.255/32"), "a reserved address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address"},
	{netip.MustParsePrefix("0.0.0.0/8"), "a reserved address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (carrier-grade NAT) address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "a reserved address"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "an IPv6 address that embeds an IPv4 one"},
	{netip.MustParsePrefix("::/96"), "an IPv6 address that embeds an IPv4 one"},
	{netip.MustParsePrefix("64:ff9b::/96"), "a NAT64 address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a NAT64 address"},
	{netip.MustParsePrefix("100::/64"), "a discard address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address"},
	{netip.MustParsePrefix("fc00::/7"), "a private address"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
	{netip.MustParsePrefix("2001::/32"), "a Teredo address"},
	{netip.MustParsePrefix("2001:10::/28"), "a reserved address"},
	{netip.MustParsePrefix("2001:20::/28"), "a reserved address"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
	{netip.MustParsePrefix("3fff::/20"), "a documentation address"},
	{netip.MustParsePrefix("2002::/16"), "a 6to4 address"},
	{netip.MustParsePrefix("::/3"), "a reserved IPv6 address (not global unicast)"},
	{netip.MustParsePrefix("4000::/2"), "a reserved IPv6 address (not global unicast)"},
	{netip.MustParsePrefix("8000::/1"), "a reserved IPv6 address (not global unicast)"},
}

// specialRange returns the kind and the range of a, a special address
// (see specialRanges), or "" for an ordinary public unicast address.
func specialRange(a netip.Addr) (string, netip.Prefix) {
	a = a.Unmap()
	for _, s := range specialRanges {
		if s.prefix.Contains(a) {
			return s.kind, s.prefix
		}
	}
	return "", netip.Prefix{}
}

// specialAddress names the kind of a that a host name must not reach
// unless an Allow entry names the address, or "" for an ordinary public
// unicast address.
func specialAddress(a netip.Addr) string {
	kind, _ := specialRange(a)
	return kind
}
