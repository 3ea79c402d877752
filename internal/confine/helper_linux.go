//go:build linux

package confine

import (
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// requestDeadline bounds how long a helper waits for its request.
const requestDeadline = 10 * time.Second

// exitRefused is the exit status of a process that was started as a
// helper without a valid request, and of a helper that failed.
const exitRefused = 2

// RunHelperIfRequested turns the calling process into a confinement helper
// if, and only if, it was started as one: argv is exactly
// [name, Marker, token], or [name, WarmMarker, token, preparation] for a
// warm helper (see Warm). Otherwise it returns at once, having looked at
// nothing but os.Args. Once in helper mode it never returns: it either
// executes the target or exits with status 2.
//
// It must be called from an init function, before the program does
// anything else.
func RunHelperIfRequested() {
	switch {
	case len(os.Args) == 3 && os.Args[1] == Marker:
		os.Exit(runHelper(os.Args[2]))
	case len(os.Args) == 4 && os.Args[1] == WarmMarker:
		os.Exit(runWarmHelper(os.Args[2], os.Args[3]))
	}
}

// runHelper is the whole life of a helper process. It returns the exit
// status only when the target could not be executed.
func runHelper(token string) int {
	req, status, err := accept(token)
	if err != nil {
		// Not started by execgate, or not in a way this helper trusts:
		// do nothing but say so and exit.
		fmt.Fprintf(os.Stderr, "execgate: not starting as a confinement helper: %v\n", err)
		return exitRefused
	}
	// From here on the parent is listening on the status pipe.
	if err := confineAndExec(req, status); err != nil {
		writeStatus(status, statusError, err.Error())
	}
	return exitRefused
}

// accept checks that this process was started by execgate's parent side
// and reads its request. It refuses a process that runs with more
// privileges than whoever started it (set-user-ID, set-group-ID or file
// capabilities: the kernel's AT_SECURE), descriptors 3 and 4 that are not
// pipes, a request that does not arrive in time, is malformed, or carries
// a token other than the one in argv.
func accept(token string) (*Request, *os.File, error) {
	if len(token) != 2*TokenSize {
		return nil, nil, errors.New("malformed token")
	}
	if _, err := hex.DecodeString(token); err != nil {
		return nil, nil, errors.New("malformed token")
	}
	if secure, err := secureExecution(); err != nil || secure {
		return nil, nil, errors.New("refusing to run with privileges its caller does not have")
	}
	for _, fd := range []int{RequestFD, StatusFD} {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
			return nil, nil, fmt.Errorf("descriptor %d is not a pipe", fd)
		}
	}
	// Close-on-exec first, so that none of these reaches the target: the
	// helper's own descriptors, and every other one above stderr that the
	// program which started the gate may have left open (a socket would
	// get around Network: false, a file around the Landlock rules).
	closeAboveStderrOnExec()
	b, err := readRequest()
	if err != nil {
		return nil, nil, err
	}
	req, err := DecodeRequest(b)
	if err != nil {
		return nil, nil, err
	}
	if subtle.ConstantTimeCompare([]byte(req.Token), []byte(token)) != 1 {
		return nil, nil, errors.New("the request's token does not match")
	}
	if req.PinnedFD {
		var st unix.Stat_t
		if err := unix.Fstat(ExecutableFD, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			return nil, nil, fmt.Errorf("descriptor %d is not a regular file", ExecutableFD)
		}
	}
	if req.EgressListener {
		var st unix.Stat_t
		if err := unix.Fstat(EgressFD, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			return nil, nil, fmt.Errorf("descriptor %d is not a socket", EgressFD)
		}
	}
	return req, os.NewFile(StatusFD, "status"), nil
}

// readRequest reads the request pipe to its end, within requestDeadline
// and MaxRequestSize.
func readRequest() ([]byte, error) {
	if err := unix.SetNonblock(RequestFD, true); err != nil {
		return nil, err
	}
	f := os.NewFile(RequestFD, "request") // pollable: non-blocking
	defer f.Close()
	f.SetReadDeadline(time.Now().Add(requestDeadline))
	b, err := io.ReadAll(io.LimitReader(f, MaxRequestSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading the request: %w", err)
	}
	if len(b) > MaxRequestSize {
		return nil, errors.New("the request is too large")
	}
	return b, nil
}

// atSecure is the auxiliary vector's AT_SECURE entry (linux/auxvec.h).
const atSecure = 23

// secureExecution reports the kernel's AT_SECURE flag: whether this
// process gained privileges at exec.
func secureExecution() (bool, error) {
	auxv, err := unix.Auxv()
	if err != nil {
		return false, err
	}
	for _, kv := range auxv {
		if kv[0] == atSecure {
			return kv[1] != 0, nil
		}
	}
	return false, errors.New("no AT_SECURE in the auxiliary vector")
}

// confineAndExec applies the request to this process and executes the
// target. It returns only on failure.
//
// Everything happens on one locked OS thread, the one that calls execve:
// no_new_privs and the Landlock domain are properties of a thread, and
// execve keeps those of the thread that calls it. The thread is never
// unlocked.
func confineAndExec(req *Request, status *os.File) error {
	runtime.LockOSThread()
	quietRuntime()

	if req.ReadOnlyTree {
		var write []string
		for _, r := range req.Rules {
			if r.Access&AccessWrite != 0 {
				write = append(write, r.Path)
			}
		}
		if err := readOnlyTree(write); err != nil {
			return err
		}
	}
	if req.NetworkIsolated {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("bringing up the loopback interface of the new network namespace: %w", err)
		}
		if req.EgressListener {
			if err := sendEgressListener(); err != nil {
				return fmt.Errorf("making the egress proxy's listener on 127.0.0.1:%d: %w", EgressProxyPort, err)
			}
		}
	}
	if err := dropCapabilities(); err != nil {
		return fmt.Errorf("dropping every capability: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	unapplied, err := restrictFilesystem(req)
	if err != nil {
		return err
	}
	path := req.Path
	if req.PinnedFD {
		path = pinnedPath
	}
	// After everything else, as they refuse calls the steps above make.
	if err := loadSyscallFilters(req.Filters); err != nil {
		return err
	}
	argv, env := req.Argv, req.Env
	for _, u := range unapplied {
		if err := writeStatus(status, statusUnapplied, u); err != nil {
			return err
		}
	}
	if err := writeStatus(status, statusReady, ""); err != nil {
		return err
	}
	// The limits last, just before execve: from here on a new mapping
	// may fail (the helper is a Go program, whose address space may
	// already be larger than the command's limit), and nothing between
	// here and the exec enters the scheduler or maps memory.
	if err := setLimits(req.Limits); err != nil {
		return err
	}
	err = execTarget(path, argv, env)
	return fmt.Errorf("cannot execute %s: %w", req.Argv[0], err)
}

// quietRuntime readies the runtime for the exec. A warm helper does it
// while it waits, where it is off the call's path (dropping to one P
// stops the world and frees the other Ps' caches, a few hundred
// microseconds of page faults); for it, the call's own quietRuntime
// changes nothing.
//
// One P, held by the goroutine that executes the command: a runtime
// goroutine that wakes (a timer, the GOMAXPROCS updater) finds no idle P
// to be run on, so the runtime starts no thread. A thread started once
// the limits are set could fail (RLIMIT_NPROC counts the user's every
// task), and the runtime aborts when it cannot start one. And no
// collection: once the address-space limit is set, a new heap mapping
// could fail.
func quietRuntime() {
	runtime.GOMAXPROCS(1)
	debug.SetGCPercent(-1)
}

// pinnedPath names the descriptor ExecutableFD. It is close-on-exec: the
// kernel resolves it, then closes it as the target starts.
var pinnedPath = fmt.Sprintf("/proc/self/fd/%d", ExecutableFD)

// loopbackUp sets the loopback interface of this network namespace up.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// sendEgressListener makes a TCP socket listening on
// 127.0.0.1:EgressProxyPort of this network namespace, sends it to the
// parent on EgressFD, and closes both here: the parent accepts the
// command's connections to the proxy on it, and the command never holds
// it.
func sendEgressListener() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: EgressProxyPort, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return err
	}
	if err := unix.Listen(fd, 128); err != nil {
		return err
	}
	if err := unix.Sendmsg(EgressFD, []byte{'L'}, unix.UnixRights(fd), nil, 0); err != nil {
		return err
	}
	return unix.Close(EgressFD)
}

// dropCapabilities leaves the calling thread, and whatever it executes,
// without any capability, whoever started the gate: it clears the ambient
// set; where it may (it holds CAP_SETPCAP: a gate running as root, or a
// helper in a user namespace of its own, which is given that capability
// for this) it empties the bounding set and locks the secure bits that
// stop root from regaining capabilities at execve (SECBIT_NOROOT,
// SECBIT_NO_SETUID_FIXUP, SECBIT_NO_CAP_AMBIENT_RAISE, SECBIT_KEEP_CAPS
// off, each locked); and then it clears the effective, permitted and
// inheritable sets. A helper without CAP_SETPCAP (a gate running as an
// ordinary user, with the network allowed, so without a user namespace)
// holds no capability to begin with and keeps the bounding set it
// inherited, which under no_new_privs grants nothing at execve.
// (Capabilities are per thread, and execve keeps the calling thread's:
// this is the thread that executes the target.)
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clearing the ambient set: %w", err)
	}
	if hasCapability(unix.CAP_SETPCAP) {
		last := lastCapability()
		for c := 0; c <= last; c++ {
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
				return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
			}
		}
		if err := unix.Prctl(unix.PR_SET_SECUREBITS, secureBits, 0, 0, 0); err != nil {
			return fmt.Errorf("setting the secure bits: %w", err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("clearing the effective, permitted and inheritable sets: %w", err)
	}
	return nil
}

// The secure bits of linux/securebits.h: each SECURE_* number n is the
// bit 1<<n, and its lock the bit above it.
const (
	secbitNoRoot                  = 1 << 0
	secbitNoRootLocked            = 1 << 1
	secbitNoSetuidFixup           = 1 << 2
	secbitNoSetuidFixupLocked     = 1 << 3
	secbitKeepCapsLocked          = 1 << 5
	secbitNoCapAmbientRaise       = 1 << 6
	secbitNoCapAmbientRaiseLocked = 1 << 7

	secureBits = secbitNoRoot | secbitNoRootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked |
		secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLocked
)

// hasCapability reports whether the calling thread's effective set holds
// capability c.
func hasCapability(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[c/32].Effective&(1<<(uint(c)%32)) != 0
}

// lastCapability is the highest capability number the kernel knows, from
// /proc/sys/kernel/cap_last_cap, or 63 when that cannot be read (dropping
// a number the kernel does not know fails with EINVAL, which is ignored).
func lastCapability() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 63
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 || n > 63 {
		return 63
	}
	return n
}

// setLimits sets each resource limit that is not 0. A limit above the
// current hard limit is lowered to it (only a privileged process could
// raise it, and lower is stricter). RLIMIT_CPU gets a hard limit one
// second above the soft one: SIGXCPU first, SIGKILL for a process that
// ignores it.
func setLimits(l Limits) error {
	for _, lim := range []struct {
		name     string
		resource int
		value    uint64
		grace    uint64
	}{
		{"cpu", unix.RLIMIT_CPU, l.CPUSeconds, 1},
		{"address space", unix.RLIMIT_AS, l.AddressSpace, 0},
		{"open files", unix.RLIMIT_NOFILE, l.Files, 0},
		{"file size", unix.RLIMIT_FSIZE, l.FileSize, 0},
		{"processes", unix.RLIMIT_NPROC, l.Processes, 0},
	} {
		if lim.value == 0 {
			continue
		}
		var cur syscall.Rlimit
		if err := syscall.Getrlimit(lim.resource, &cur); err != nil {
			return fmt.Errorf("reading the %s limit: %w", lim.name, err)
		}
		want := syscall.Rlimit{Cur: lim.value, Max: lim.value + lim.grace}
		if want.Max < want.Cur { // overflow
			want.Max = unix.RLIM_INFINITY
		}
		want.Max = min(want.Max, cur.Max)
		want.Cur = min(want.Cur, want.Max)
		// syscall.Setrlimit, not unix.Setrlimit: for RLIMIT_NOFILE it also
		// stops syscall.Exec from restoring the soft limit Go found at
		// start-up.
		if err := syscall.Setrlimit(lim.resource, &want); err != nil {
			return fmt.Errorf("setting the %s limit: %w", lim.name, err)
		}
	}
	return nil
}

// closeAboveStderrOnExec marks every descriptor above 2 close-on-exec, with
// close_range where the kernel has it (5.11) and one by one otherwise.
func closeAboveStderrOnExec() {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		for fd := 3; fd < 1024; fd++ {
			unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC) // fails harmlessly on a closed descriptor
		}
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
		}
	}
}

// init enters the helper as early as the program's initialization allows:
// Go initializes packages in the order of their import paths, each once
// its imports are, so this one runs before most of what the program that
// embeds execgate imports (a validator's tables, a schema library, a
// protocol SDK), whose initialization a helper would only pay for.
func init() { RunHelperIfRequested() }
