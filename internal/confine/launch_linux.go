//go:build linux

package confine

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// HelperPath is the executable of every helper process: the running
// program itself, named through /proc so that it is the very binary that
// is running, even if the file it was started from has been replaced
// since.
const HelperPath = "/proc/self/exe"

// Launch is the parent's side of one confined start: the request, the two
// pipes to the helper and the per-spawn token. The caller starts the
// helper process with HelperPath, Args, Files and SysProcAttr, then calls
// Started, supervises the process, and calls Wait for the helper's Report.
// Close releases everything; it may be called at any time, more than once.
type Launch struct {
	req          Request
	exe          *os.File
	reqR, reqW   *os.File
	statR, statW *os.File
	// egressP and egressC are the parent's and the helper's ends of the
	// socket pair the egress proxy's listener comes on, when the request
	// asks for one.
	egressP, egressC *os.File
	report           chan Report
}

// NewLaunch prepares a start for req with a new random token. exe, if not
// nil, is the pinned executable, handed to the helper as ExecutableFD; the
// caller keeps ownership of it.
func NewLaunch(req Request, exe *os.File) (*Launch, error) {
	token := make([]byte, TokenSize)
	rand.Read(token) // never fails (crypto/rand panics otherwise)
	req.Token = hex.EncodeToString(token)
	req.PinnedFD = exe != nil
	if req.PinnedFD {
		req.Path = ""
	}
	l := &Launch{req: req, exe: exe}
	var err error
	if l.reqR, l.reqW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if l.statR, l.statW, err = os.Pipe(); err != nil {
		l.Close()
		return nil, err
	}
	if req.EgressListener {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			l.Close()
			return nil, err
		}
		l.egressP, l.egressC = os.NewFile(uintptr(fds[0]), "egress"), os.NewFile(uintptr(fds[1]), "egress")
	}
	return l, nil
}

// Args is the helper's argv: a name, Marker and the token.
func (l *Launch) Args() []string {
	return []string{"execgate-confine", Marker, l.req.Token}
}

// Files are the helper's descriptors 3 and up (exec.Cmd.ExtraFiles).
func (l *Launch) Files() []*os.File {
	files := []*os.File{l.reqR, l.statW}
	if l.exe != nil || l.egressC != nil {
		files = append(files, l.exe) // nil: descriptor 5 stays closed
	}
	if l.egressC != nil {
		files = append(files, l.egressC)
	}
	return files
}

// Namespaces are the new namespaces a helper is started in.
type Namespaces struct {
	// User is a new user namespace, mapping only the caller's effective
	// user and group to themselves: what lets an ordinary user make the
	// others.
	User bool
	// Net is a new network namespace, with nothing but a loopback
	// interface: no network. It needs User unless the caller is root.
	Net bool
	// Mount is a new mount namespace, which the helper makes read-only
	// but for the write paths, and a new IPC namespace. It needs User
	// unless the caller is root.
	Mount bool
	// PID is a new PID namespace, whose first process is the helper and
	// then the command it becomes:
	// when it ends, the kernel kills every process left in it, however
	// it detached itself (setsid, a double fork). It needs User unless
	// the caller is root.
	PID bool
}

// SysProcAttr returns the helper's process attributes: a new session (and
// so a new process group) and the namespaces ns asks for.
//
// A helper in a user namespace of its own also gets CAP_NET_ADMIN,
// CAP_SETPCAP and CAP_SYS_ADMIN as ambient capabilities, which are
// capabilities over its own namespaces only: a helper that is not root in
// its user namespace would otherwise lose every capability at its own
// exec, and could neither bring the loopback interface up, empty its
// bounding set nor remount its tree read-only. It drops all of them
// before it starts the target.
func (l *Launch) SysProcAttr(ns Namespaces) *syscall.SysProcAttr {
	// A session of its own, not only a process group: a session leader
	// cannot move to another group, and a first process of a PID
	// namespace that did (setpgid into its child's group, then exit)
	// would leave the kernel waiting for that group forever, and the
	// call with it.
	return sysProcAttr(ns, os.Geteuid(), os.Getegid())
}

// sysProcAttr is Launch.SysProcAttr with a user namespace, if ns asks for
// one, that maps uid and gid to themselves.
func sysProcAttr(ns Namespaces, uid, gid int) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true}
	if ns.User {
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.GidMappingsEnableSetgroups = false
		a.AmbientCaps = []uintptr{unix.CAP_NET_ADMIN, unix.CAP_SETPCAP, unix.CAP_SYS_ADMIN}
	}
	if ns.Net {
		a.Cloneflags |= syscall.CLONE_NEWNET
	}
	if ns.PID {
		a.Cloneflags |= syscall.CLONE_NEWPID
	}
	if ns.Mount {
		// With its own System V and POSIX message queues: no segment or
		// queue of the host is reachable, none of the command's stays.
		a.Cloneflags |= syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC
	}
	return a
}

// Started must be called once the helper process has started. It closes
// the helper's ends of the pipes in this process, and sends the request
// (telling the helper whether it was started isolated) and collects the
// report in the background.
func (l *Launch) Started(ns Namespaces) {
	l.reqR.Close()
	l.statW.Close()
	if l.egressC != nil {
		l.egressC.Close()
	}
	req := l.req
	req.NetworkIsolated = ns.Net
	req.EgressListener = req.EgressListener && ns.Net
	req.ReadOnlyTree = ns.Mount
	b := req.Encode()
	l.report = make(chan Report, 1)
	go func() {
		_, werr := l.reqW.Write(b)
		l.reqW.Close()
		rep := readReport(l.statR)
		l.statR.Close()
		if rep.Err == nil && !rep.Ready && werr != nil {
			rep.Err = fmt.Errorf("sending the confinement helper its request: %w", werr)
		}
		l.report <- rep
	}()
}

// Wait returns the helper's report. It returns once the helper has
// executed the target or ended, so call it after the process has been
// reaped (or killed).
func (l *Launch) Wait() Report {
	return <-l.report
}

// EgressListener waits for the egress proxy's listener that the helper
// makes in its network namespace and returns it, or nil if the request
// asked for none, or if the helper ended, or executed the target, without
// sending one (it was started without a network namespace). Call it once,
// after Started.
func (l *Launch) EgressListener() (net.Listener, error) {
	if l.egressP == nil {
		return nil, nil
	}
	defer l.egressP.Close()
	rc, err := l.egressP.SyscallConn()
	if err != nil {
		return nil, err
	}
	var n, oobn int
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	var rerr error
	if err := rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
		return rerr != unix.EAGAIN
	}); err != nil {
		return nil, err
	}
	if rerr != nil {
		return nil, rerr
	}
	if n == 0 && oobn == 0 {
		return nil, nil // the helper's end closed: no listener
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, errors.New("the confinement helper sent a malformed egress listener")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, errors.New("the confinement helper sent a malformed egress listener")
	}
	f := os.NewFile(uintptr(fds[0]), "egress-listener")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("the confinement helper sent an egress listener that is not one: %w", err)
	}
	if _, ok := ln.(*net.TCPListener); !ok {
		ln.Close()
		return nil, errors.New("the confinement helper sent an egress listener that is not a TCP listener")
	}
	return ln, nil
}

// Close closes every pipe end this process still holds. It does not
// close the pinned executable.
func (l *Launch) Close() {
	for _, f := range []*os.File{l.reqR, l.reqW, l.statR, l.statW, l.egressP, l.egressC} {
		if f != nil {
			f.Close() // an error means it was closed already
		}
	}
}
