package execgate

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Confinement is what an allowed command may touch once it runs, enforced
// by the Linux kernel on the process and everything it starts. It is set
// on a [CommandSpec]; nil there means no confinement. The zero Confinement
// is the strictest one: the command may read only what it needs to start
// (see Read), write nothing, execute nothing else, reach no network, and
// every part is required.
//
// [DefaultExecFn] applies it through a re-exec helper: the calling program's
// own binary, started in a helper mode that confines itself and then
// executes the command. See "Confinement" in the package documentation
// for how that works, what it costs, and what each kernel supports.
//
// [NewAllowlist] checks and normalizes a Confinement: path lists are
// cleaned, sorted and deduplicated, and CPU is rounded up to a whole
// second. Everything in it is part of the spec's fingerprint, so changing
// it makes pending approvals for the command refuse with policy_changed.
type Confinement struct {
	// Read lists the files and directory trees the command may read (and,
	// for directories, list). Every path must be absolute; paths that do
	// not exist when the command starts grant nothing. Symbolic links are
	// followed when the command starts.
	//
	// Besides these, the command may always read and execute its own
	// executable (and the interpreter of a "#!" script); a dynamically
	// linked one may also execute its dynamic loader and read files (not
	// list directories) beneath /lib, /lib32, /lib64, /libx32, /usr/lib,
	// /usr/lib32, /usr/lib64, /usr/libx32, /usr/local/lib and its RPATH and
	// RUNPATH, and read /etc/ld.so.cache and /etc/ld.so.preload. The
	// spec's Dir is not granted: the command starts there, but reads
	// nothing in it unless Dir is listed here or under Write (an empty Dir
	// is the gate's own working directory, which may be "/" or a home
	// directory). Descriptors the command inherits (its
	// stdin, stdout and stderr) work whatever the paths say; opening a
	// path such as /dev/null does not. Nil or empty allows nothing more.
	Read []string

	// Write lists the files and directory trees the command may write:
	// create, modify, truncate, remove and rename files and directories,
	// make links, pipes, sockets and device nodes, and connect to Unix
	// sockets beneath them. Write paths are readable too. Nil or empty
	// means the command can write no file (it can still write to its
	// inherited descriptors).
	Write []string

	// Exec lists the files and directory trees the command may execute
	// (start other programs from). Exec paths are readable too, as
	// executing a file needs reading it. Programs started this way get no
	// grants of their own: a dynamically linked one can use the loader and
	// library directories granted for the command's executable (usually
	// the same ones); anything else it needs must be in Read. Nil or empty
	// means the command can execute nothing but its own executable.
	Exec []string

	// Network, if true, leaves the command on the caller's network. False
	// (the default) starts it in a new network namespace, which has only
	// a loopback interface of its own: it can reach no other host and no
	// port opened outside it, not even on the caller's 127.0.0.1. This
	// needs a new user namespace too (unprivileged user namespaces must
	// be enabled, see the package documentation); the command runs there
	// as the caller's effective user and group (no other user or group is
	// mapped).
	//
	// Whatever Network says, a confined command holds no capability (its
	// effective, permitted, inheritable, ambient and bounding sets are
	// empty, also when the gate runs as root; a gate running as an
	// ordinary user with the network on keeps the bounding set it has,
	// which grants nothing under no_new_privs), and it is the first
	// process of a new PID namespace: when it ends, or is killed, the
	// kernel kills every process it started, including those that left
	// its process group (setsid, a double fork, a daemon). A gate that is
	// not root needs a user namespace for that, with the network on too.
	// The first process of a PID namespace ignores the signals it has no
	// handler for when they come from inside the namespace or from the
	// kernel's own checks (SIGTERM from a child, SIGPIPE, SIGXCPU,
	// SIGXFSZ, its own abort); the gate's SIGKILL, and faults such as
	// SIGSEGV, still end it. So a command that writes to a closed pipe
	// gets EPIPE, a SIGKILL it sends itself is ignored, abort() ends it
	// by the fault that follows (SIGSEGV or SIGILL) rather than SIGABRT,
	// and the limits below end it as they say.
	Network bool

	// Egress, if not nil, lets a command whose Network is false reach the
	// hosts and ports it lists, and only those, through an egress proxy
	// that [DefaultExecFn] runs for the call; every attempt is reported
	// in [Result.Connections]. See [Egress]. It needs Network false: a
	// command on the caller's network could go around the proxy.
	Egress *Egress

	// UnixSockets, if true, lets the command create Unix sockets (socket
	// with AF_UNIX), and so connect to any pathname socket it can reach,
	// a container runtime's or a session bus's included: Landlock stops
	// that only from ABI 9 on, and the network namespace never does. False
	// (the default) refuses the socket call with EPERM, and socketpair of
	// a datagram or sequenced-packet type (such a socket can send to any
	// pathname socket, /dev/log say, without connecting); a stream
	// socketpair still works.
	UnixSockets bool

	// Limits are resource limits. The zero [Limits] sets none.
	Limits Limits

	// BestEffort lets the command run when the kernel lacks something the
	// [Confinement] asks for; [Result.Unconfined] then names what was not
	// applied. False (the default) means every part is required: a kernel
	// without Landlock ABI 3 or later, or without the user namespaces it
	// needs (when Network is false, or when the gate is not root), makes
	// the call a spawn_error and nothing runs. A best-effort call that
	// cannot have its namespaces runs without them: the network shared
	// ("network"), processes that may outlive it ("processes"), metadata
	// outside the write paths that may change ("filesystem.metadata").
	BestEffort bool
}

// Limits are resource limits for a confined command, set with setrlimit(2)
// just before it starts and inherited by every process it starts. A zero
// field sets no limit; negative values are refused.
type Limits struct {
	// CPU is the processor time the command may use. [NewAllowlist] rounds
	// it up to a whole second. The kernel sends SIGXCPU when it is used
	// up and SIGKILL one second of processor time later; the command
	// itself, the first process of its PID namespace, ignores SIGXCPU
	// (see Network), so it ends by SIGKILL, and the processes it starts
	// end by SIGXCPU unless they catch it. The [Result] reports
	// termination "signal" with that signal. It counts per process.
	CPU time.Duration

	// AddressSpace is the largest virtual address space, in bytes, each
	// process may map (RLIMIT_AS): memory allocations past it fail. That
	// is virtual, not resident memory: runtimes that reserve address space
	// up front (Go's race detector, the JVM) may need far more than they
	// use, and a Go program needs over a gigabyte just to start. How a
	// program ends when an allocation fails is up to the program: a C
	// program may crash with SIGSEGV, a Go program aborts ("out of
	// memory", exit status 2).
	AddressSpace int64

	// Files is one more than the highest file descriptor number each
	// process may open (RLIMIT_NOFILE).
	Files int64

	// FileSize is the largest file, in bytes, a process may write
	// (RLIMIT_FSIZE). Writing past it fails with EFBIG ("File too large")
	// for the command itself and raises SIGXFSZ in the processes it
	// starts.
	FileSize int64

	// Processes is the number of processes (threads included) the user
	// may have at once (RLIMIT_NPROC). The kernel counts every process of
	// the real user ID, not only the command's, and does not enforce the
	// limit for root.
	Processes int64
}

// maxConfinePathBytes is the longest path a [Confinement] accepts (Linux's
// PATH_MAX, less its NUL).
const maxConfinePathBytes = 4095

// normalizeConfinement checks c and returns a normalized copy, or a
// *ConfigError naming the field.
func normalizeConfinement(spec string, c *Confinement) (*Confinement, error) {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Spec: spec, Field: "Confine." + field, Message: fmt.Sprintf(format, args...)}
	}
	out := *c
	for _, l := range []struct {
		field string
		paths *[]string
	}{{"Read", &out.Read}, {"Write", &out.Write}, {"Exec", &out.Exec}} {
		clean := make([]string, 0, len(*l.paths))
		for _, p := range *l.paths {
			switch {
			case p == "" || !filepath.IsAbs(p):
				return nil, bad(l.field, "%q is not an absolute path", p)
			case strings.IndexByte(p, 0) >= 0:
				return nil, bad(l.field, "a path contains NUL")
			case len(p) > maxConfinePathBytes || !utf8.ValidString(p):
				return nil, bad(l.field, "a path must be valid UTF-8 of at most %d bytes", maxConfinePathBytes)
			}
			clean = append(clean, filepath.Clean(p))
		}
		slices.Sort(clean)
		*l.paths = slices.Compact(clean)
		if len(clean) == 0 {
			*l.paths = nil
		}
	}
	if out.Egress != nil {
		if out.Network {
			return nil, bad("Egress", "needs Network false: with the caller's network the command could connect around the proxy; leave Network false and list the hosts in Egress.Allow")
		}
		e, field, err := normalizeEgress(out.Egress)
		if err != nil {
			return nil, bad("Egress."+field, "%v", err)
		}
		out.Egress = e
	}
	lim := &out.Limits
	switch {
	case lim.CPU < 0:
		return nil, bad("Limits.CPU", "must not be negative")
	case lim.AddressSpace < 0:
		return nil, bad("Limits.AddressSpace", "must not be negative")
	case lim.Files < 0:
		return nil, bad("Limits.Files", "must not be negative")
	case lim.FileSize < 0:
		return nil, bad("Limits.FileSize", "must not be negative")
	case lim.Processes < 0:
		return nil, bad("Limits.Processes", "must not be negative")
	}
	if r := lim.CPU % time.Second; r != 0 {
		if lim.CPU > time.Duration(1<<63-1)-time.Second {
			return nil, bad("Limits.CPU", "too large")
		}
		lim.CPU += time.Second - r
	}
	return &out, nil
}

// clone returns a deep copy of c, or nil.
func (c *Confinement) clone() *Confinement {
	if c == nil {
		return nil
	}
	out := *c
	out.Read = slices.Clone(c.Read)
	out.Write = slices.Clone(c.Write)
	out.Exec = slices.Clone(c.Exec)
	out.Egress = c.Egress.clone()
	return &out
}

// features names the parts of c that a platform without confinement
// support cannot apply, in the vocabulary of Result.Unconfined.
func (c *Confinement) features() []string {
	out := []string{"filesystem"}
	if !c.Network {
		out = append(out, "network")
	}
	if c.Limits != (Limits{}) {
		out = append(out, "limits")
	}
	return append(out, "no_new_privs")
}
