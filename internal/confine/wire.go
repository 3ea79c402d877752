package confine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"golang.org/x/net/bpf"
)

// Marker is argv[1] of a helper process. Together with argv[2], the
// per-spawn token, it is the only thing in the helper's argv; the helper
// has an empty environment.
const Marker = "-execgate-confinement-helper:v1"

// WarmMarker is argv[1] of a helper started ahead of its call (see Warm):
// its argv is [name, WarmMarker, token, prepare], and its descriptor 3 is
// a Unix socket on which the Request and the command's descriptors come.
const WarmMarker = "-execgate-confinement-helper-warm:v1"

// The descriptors a helper process inherits, in the order of
// exec.Cmd.ExtraFiles.
const (
	// RequestFD is the read end of the pipe that carries the Request.
	RequestFD = 3
	// StatusFD is the write end of the pipe the helper reports on. It is
	// close-on-exec in the helper, so the parent reads end-of-file once the
	// target has been executed or the helper has died.
	StatusFD = 4
	// ExecutableFD, when Request.PinnedFD is set, is the opened, hashed
	// executable that the helper executes through /proc/self/fd.
	ExecutableFD = 5
	// EgressFD, when Request.EgressListener is set, is one end of a Unix
	// socket pair on which the helper sends the parent the listening
	// socket of the egress proxy, made inside the new network namespace.
	EgressFD = 6
)

// EgressProxyPort is the port, on 127.0.0.1 of the new network namespace,
// that the egress proxy's listener is bound to.
const EgressProxyPort = 3128

// TokenSize is the number of random bytes in a spawn token; argv carries
// them as lowercase hex.
const TokenSize = 32

// MaxRequestSize bounds the encoded Request a helper accepts.
const MaxRequestSize = 64 << 20

// maxFilters and maxFilterInstructions bound the system call filters a
// Request carries (the kernel's BPF_MAXINSNS is 4096).
const (
	maxFilters            = 8
	maxFilterInstructions = 4096
)

// maxStatusSize bounds what the parent reads from the status pipe.
const maxStatusSize = 64 << 10

// requestMagic starts every encoded Request: the format and its version.
const requestMagic = "execgate.confine.request.v2"

// Access is a set of rights a Rule grants beneath its path.
type Access uint8

// The rights a Rule can grant. Rights that only make sense on directories
// (listing, creating, removing, renaming entries) are dropped for a path
// that is not a directory.
const (
	// AccessReadFile: open files for reading.
	AccessReadFile Access = 1 << iota
	// AccessReadDir: list directories.
	AccessReadDir
	// AccessWrite: write, truncate, create, remove and rename files and
	// directories, make device nodes, pipes, sockets and links, use
	// device ioctls and connect to Unix sockets, beneath the path.
	AccessWrite
	// AccessExecute: execute files.
	AccessExecute

	accessAll = AccessReadFile | AccessReadDir | AccessWrite | AccessExecute
)

// Rule grants Access beneath Path (or to Path alone if it is a file).
type Rule struct {
	Path   string
	Access Access
}

// Limits are resource limits, each 0 for none. They are set with
// setrlimit(2) in the helper just before it executes the target.
type Limits struct {
	CPUSeconds   uint64 // RLIMIT_CPU: soft limit; the hard limit is one second more
	AddressSpace uint64 // RLIMIT_AS, bytes
	Files        uint64 // RLIMIT_NOFILE
	FileSize     uint64 // RLIMIT_FSIZE, bytes
	Processes    uint64 // RLIMIT_NPROC
}

// Request is what the parent sends a helper over the request pipe.
type Request struct {
	// Token must equal the token in the helper's argv.
	Token string
	// Path is the file to execute; "" with PinnedFD means the descriptor
	// ExecutableFD.
	Path string
	// PinnedFD says that the target is the descriptor ExecutableFD.
	PinnedFD bool
	// Argv and Env are the target's exact argv (argv[0] included) and
	// environment.
	Argv, Env []string
	// Rules are the Landlock rules. The filesystem is always confined:
	// an empty list allows nothing.
	Rules []Rule
	// NetworkIsolated says the helper was started in a new user and
	// network namespace, whose loopback interface it brings up.
	NetworkIsolated bool
	// ReadOnlyTree says the helper was started in a new mount namespace,
	// which it makes read-only but for the write paths (the rules with
	// AccessWrite).
	ReadOnlyTree bool
	// UnixSockets lets the target create Unix sockets; without it the
	// system call filter refuses socket(AF_UNIX, ...).
	UnixSockets bool
	// EgressListener asks the helper, started in a new network namespace,
	// for a listening TCP socket on 127.0.0.1:EgressProxyPort there, sent
	// to the parent on EgressFD before the target starts.
	EgressListener bool
	// ScopeAbstractUnix also confines abstract Unix sockets to the
	// sandbox (Landlock ABI 6 or later).
	ScopeAbstractUnix bool
	// Limits are the resource limits.
	Limits Limits
	// Filters are the system call filters the helper installs, in order,
	// as the parent built them (Filters in seccomp_linux.go): a helper
	// refuses a request that does not carry all of them.
	Filters [][]bpf.RawInstruction
	// BestEffort lets the helper go on when the kernel lacks Landlock,
	// reporting what it could not apply, instead of failing.
	BestEffort bool
	// Dir is the working directory a warm helper enters before anything
	// else; "" leaves the one it was started in (a helper started for
	// its call is started in the command's).
	Dir string
	// Stdin says that a warm helper's handoff carries the command's
	// stdin; without it the command reads the helper's /dev/null.
	Stdin bool
}

// Encode returns the binary encoding of r: the magic string, then every
// field in order; strings as an 8-byte big-endian length and the bytes,
// lists as an 8-byte count and their elements, integers and booleans as 8
// bytes.
func (r *Request) Encode() []byte { return r.appendEncoding(nil) }

// appendEncoding appends the encoding of r (see Encode) to b.
func (r *Request) appendEncoding(b []byte) []byte {
	e := encoder{b: b}
	e.str(requestMagic)
	e.str(r.Token)
	e.str(r.Path)
	e.bool(r.PinnedFD)
	e.strs(r.Argv)
	e.strs(r.Env)
	e.u64(uint64(len(r.Rules)))
	for _, rule := range r.Rules {
		e.str(rule.Path)
		e.u64(uint64(rule.Access))
	}
	e.bool(r.NetworkIsolated)
	e.bool(r.ScopeAbstractUnix)
	for _, v := range r.Limits.values() {
		e.u64(*v)
	}
	e.bool(r.BestEffort)
	e.bool(r.ReadOnlyTree)
	e.bool(r.UnixSockets)
	e.bool(r.EgressListener)
	e.str(r.Dir)
	e.bool(r.Stdin)
	e.u64(uint64(len(r.Filters)))
	for _, f := range r.Filters {
		e.u64(uint64(len(f)))
		for _, in := range f {
			e.u64(uint64(in.Op)<<48 | uint64(in.Jt)<<40 | uint64(in.Jf)<<32 | uint64(in.K))
		}
	}
	return e.b
}

// DecodeRequest parses an encoded Request. It refuses anything that is not
// exactly one well-formed Request.
func DecodeRequest(b []byte) (*Request, error) {
	d := decoder{b: b}
	if d.str() != requestMagic {
		return nil, errors.New("not an execgate confinement request")
	}
	r := &Request{}
	r.Token = d.str()
	r.Path = d.str()
	r.PinnedFD = d.bool()
	r.Argv = d.strs()
	r.Env = d.strs()
	n := d.count(16)
	for i := uint64(0); i < n && d.err == nil; i++ {
		rule := Rule{Path: d.str()}
		a := d.u64()
		if a == 0 || a&^uint64(accessAll) != 0 {
			d.fail()
		}
		rule.Access = Access(a)
		r.Rules = append(r.Rules, rule)
	}
	r.NetworkIsolated = d.bool()
	r.ScopeAbstractUnix = d.bool()
	for _, v := range r.Limits.values() {
		*v = d.u64()
	}
	r.BestEffort = d.bool()
	r.ReadOnlyTree = d.bool()
	r.UnixSockets = d.bool()
	r.EgressListener = d.bool()
	r.Dir = d.str()
	r.Stdin = d.bool()
	if n := d.count(8); n <= maxFilters {
		for i := uint64(0); i < n && d.err == nil; i++ {
			m := d.count(8)
			if m == 0 || m > maxFilterInstructions {
				d.fail()
				break
			}
			f := make([]bpf.RawInstruction, 0, m)
			for j := uint64(0); j < m && d.err == nil; j++ {
				v := d.u64()
				f = append(f, bpf.RawInstruction{Op: uint16(v >> 48), Jt: uint8(v >> 40), Jf: uint8(v >> 32), K: uint32(v)})
			}
			r.Filters = append(r.Filters, f)
		}
	} else {
		d.fail()
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(r.Argv) == 0 || (r.Path == "") != r.PinnedFD || r.EgressListener && !r.NetworkIsolated || r.Dir != "" && r.Dir[0] != '/' {
		return nil, errors.New("malformed execgate confinement request")
	}
	return r, nil
}

func (l *Limits) values() []*uint64 {
	return []*uint64{&l.CPUSeconds, &l.AddressSpace, &l.Files, &l.FileSize, &l.Processes}
}

type encoder struct{ b []byte }

func (e *encoder) u64(v uint64) { e.b = binary.BigEndian.AppendUint64(e.b, v) }
func (e *encoder) str(s string) { e.u64(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) bool(v bool) {
	if v {
		e.u64(1)
	} else {
		e.u64(0)
	}
}
func (e *encoder) strs(ss []string) {
	e.u64(uint64(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errors.New("malformed execgate confinement request")
	}
	d.b = nil
}

func (d *decoder) u64() uint64 {
	if d.err != nil || len(d.b) < 8 {
		d.fail()
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) bool() bool {
	switch d.u64() {
	case 0:
		return false
	case 1:
		return true
	default:
		d.fail()
		return false
	}
}

func (d *decoder) str() string {
	n := d.u64()
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// count reads a list length and checks that the rest of the input could
// hold that many elements of at least min bytes each, so that a forged
// count cannot make the decoder allocate more than the input's size.
func (d *decoder) count(min uint64) uint64 {
	n := d.u64()
	if d.err != nil || n > uint64(len(d.b))/min {
		d.fail()
		return 0
	}
	return n
}

func (d *decoder) strs() []string {
	n := d.count(8)
	out := make([]string, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		out = append(out, d.str())
	}
	return out
}

// Status records, written by the helper on the status pipe: a kind byte,
// a 4-byte big-endian length and the text.
const (
	statusUnapplied = 'u' // a part of the confinement that was not applied
	statusReady     = 'r' // everything applied; the helper executes the target next
	statusError     = 'e' // the helper failed; the target was not started
)

// writeStatus writes one status record.
func writeStatus(w io.Writer, kind byte, text string) error {
	if len(text) > 4096 {
		text = text[:4096]
	}
	b := make([]byte, 0, 5+len(text))
	b = append(b, kind)
	b = binary.BigEndian.AppendUint32(b, uint32(len(text)))
	b = append(b, text...)
	_, err := w.Write(b)
	return err
}

// Report is what the parent learned from a helper's status pipe.
type Report struct {
	// Ready says the helper applied the confinement and went on to execute
	// the target. A helper whose exec failed reports Ready and Err.
	Ready bool
	// Unapplied names the parts of the confinement that were not applied.
	Unapplied []string
	// Err is the helper's error, or why the status could not be read.
	Err error
}

// readReport reads status records until end-of-file.
func readReport(r io.Reader) Report {
	var rep Report
	b, err := io.ReadAll(io.LimitReader(r, maxStatusSize))
	if err != nil {
		rep.Err = fmt.Errorf("reading the confinement helper's status: %w", err)
		return rep
	}
	for len(b) > 0 {
		if len(b) < 5 || uint64(len(b)-5) < uint64(binary.BigEndian.Uint32(b[1:5])) {
			rep.Err = errors.New("the confinement helper's status is malformed")
			return rep
		}
		n := binary.BigEndian.Uint32(b[1:5])
		kind, text := b[0], string(b[5:5+n])
		b = b[5+n:]
		switch kind {
		case statusUnapplied:
			rep.Unapplied = append(rep.Unapplied, text)
		case statusReady:
			rep.Ready = true
		case statusError:
			rep.Err = errors.New(text)
		default:
			rep.Err = errors.New("the confinement helper's status is malformed")
			return rep
		}
	}
	return rep
}
