//go:build linux

package confine

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A warm helper is a helper started before its call: in its namespaces,
// its runtime started, its loopback interface up, waiting on descriptor 3
// (a Unix socket, WarmSocketFD) for a handoff. A handoff is one message
// that carries, as SCM_RIGHTS, the command's stdout and stderr, then its
// stdin if it has one, the pinned executable if the Request says so and
// the helper's end of the egress socket pair if it asks for one; and, as
// data, the Request's length as 8 big-endian bytes and the Request
// itself (its first handoffInline bytes, with the rest, if any, following
// on the same socket). From there on the helper does what a helper
// started for its call does (see confineAndExec), with the descriptors it
// was handed in the places a helper started for its call has them.
//
// Starting the helper, creating its namespaces and bringing its loopback
// interface up are most of what a confined start costs; a warm helper
// takes them out of the call.

// WarmSocketFD is a warm helper's descriptor 3: its end of the socket pair
// the handoff comes on.
const WarmSocketFD = 3

// maxHandoffFiles is the most descriptors a handoff carries: stdout,
// stderr, stdin, the pinned executable and the egress socket.
const maxHandoffFiles = 5

// handoffInline is the most of a Request the handoff's message carries
// after its length: what fits in an empty Unix socket's send buffer
// (wmem_default is 208 KiB) with room to spare, so that the handoff does
// not block. A larger Request's rest follows on the same socket.
const handoffInline = 32 << 10

// A warm helper's argv[3] says what it prepares while it waits, one
// letter each: warmPrepareNetwork, bringing up the loopback interface of
// the network namespace it was started in; warmPrepareMounts, sealing
// the mount tree of the mount namespace it was started in (see sealTree;
// each call then binds its own write paths); warmPrepareNothing alone
// when it prepares neither.
const (
	warmPrepareNetwork = 'n'
	warmPrepareMounts  = 'm'
	warmPrepareNothing = "-"
)

// warmPrepared is the byte a warm helper writes on its socket once it has
// prepared: from then on it only waits for its handoff.
const warmPrepared = 'p'

// runWarmHelper is the whole life of a warm helper. It returns the exit
// status only when the target could not be executed, or when the gate
// closed its end of the socket without a handoff (the helper was not
// needed, or the gate ended).
func runWarmHelper(token, prepare string) int {
	status, err := acceptWarm(token, prepare)
	if err != nil {
		fmt.Fprintf(os.Stderr, "execgate: not starting as a confinement helper: %v\n", err)
		return exitRefused
	}
	var sealed sealing
	if err := prepareWarm(prepare, &sealed); err != nil {
		writeStatus(status, statusError, err.Error())
		return exitRefused
	}
	if err := unix.Sendto(WarmSocketFD, []byte{warmPrepared}, unix.MSG_NOSIGNAL, nil); err != nil {
		return exitRefused // the gate is gone
	}
	req, err := receiveHandoff(token)
	if errors.Is(err, errNoHandoff) {
		return exitRefused
	}
	if err == nil {
		err = enterCall(req, sealed)
	}
	if err == nil {
		err = confineAndExec(req, status)
	}
	writeStatus(status, statusError, err.Error())
	return exitRefused
}

// prepareWarm does what prepare asks for, noting in sealed how the tree
// was sealed.
func prepareWarm(prepare string, sealed *sealing) error {
	quietRuntime()
	if strings.IndexByte(prepare, warmPrepareNetwork) >= 0 {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("bringing up the loopback interface of the new network namespace: %w", err)
		}
	}
	if strings.IndexByte(prepare, warmPrepareMounts) >= 0 {
		s, err := sealTree()
		if err != nil {
			return err
		}
		*sealed = s
	}
	return nil
}

// enterCall does, for a handed call, what the helper prepared the rest
// of: it binds the call's write paths writable in the tree it sealed (a
// request that asks for a read-only tree from a helper that sealed none
// is refused), and enters the call's working directory, through the new
// mounts. What is left is done by confineAndExec, as for a helper started
// for its call.
func enterCall(req *Request, sealed sealing) error {
	if req.ReadOnlyTree {
		if sealed == 0 {
			return errors.New("the request asks for a read-only tree and the helper made none")
		}
		var write []string
		for _, r := range req.Rules {
			if r.Access&AccessWrite != 0 {
				write = append(write, r.Path)
			}
		}
		if err := bindWritePaths(sealed, write); err != nil {
			return err
		}
		req.ReadOnlyTree = false // done
	}
	if req.Dir != "" {
		if err := unix.Chdir(req.Dir); err != nil {
			return fmt.Errorf("entering the working directory %s: %w", req.Dir, err)
		}
	}
	return nil
}

// acceptWarm checks what accept checks of a helper started for its call,
// with descriptor 3 a socket instead of a pipe, and descriptors
// ExecutableFD and EgressFD open on a character device (/dev/null) that
// holds their places until the handoff puts its files there.
func acceptWarm(token, prepare string) (*os.File, error) {
	if len(token) != 2*TokenSize {
		return nil, errors.New("malformed token")
	}
	if _, err := hex.DecodeString(token); err != nil {
		return nil, errors.New("malformed token")
	}
	if prepare != warmPrepareNothing && (prepare == "" || strings.Trim(prepare, string([]byte{warmPrepareNetwork, warmPrepareMounts})) != "") {
		return nil, errors.New("malformed preparation")
	}
	if secure, err := secureExecution(); err != nil || secure {
		return nil, errors.New("refusing to run with privileges its caller does not have")
	}
	var st unix.Stat_t
	if err := unix.Fstat(WarmSocketFD, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return nil, fmt.Errorf("descriptor %d is not a socket", WarmSocketFD)
	}
	if err := unix.Fstat(StatusFD, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return nil, fmt.Errorf("descriptor %d is not a pipe", StatusFD)
	}
	// Descriptors 5 and 6 hold places for the pinned executable and the
	// egress socket: the runtime opens files of its own (a cgroup's CPU
	// quota, say) at the lowest free numbers.
	for _, fd := range []int{ExecutableFD, EgressFD} {
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
			return nil, fmt.Errorf("descriptor %d does not hold its place", fd)
		}
	}
	closeAboveStderrOnExec()
	return os.NewFile(StatusFD, "status"), nil
}

// errNoHandoff is receiveHandoff's error when the gate closed its end of
// the socket without sending anything.
var errNoHandoff = errors.New("no handoff")

// receiveHandoff waits, without a deadline, for the handoff on
// WarmSocketFD; reads the Request that follows within requestDeadline;
// checks its token and that the descriptors that came are the ones it
// asks for; and puts them in place: stdout and stderr on 1 and 2, stdin
// on 0 (the helper's own /dev/null stays there otherwise), the pinned
// executable on ExecutableFD and the egress socket on EgressFD, those two
// close-on-exec.
func receiveHandoff(token string) (*Request, error) {
	head := make([]byte, 8)
	oob := make([]byte, unix.CmsgSpace(4*maxHandoffFiles))
	var n, oobn int
	var err error
	var flags int
	for {
		n, oobn, flags, _, err = unix.Recvmsg(WarmSocketFD, head, oob, unix.MSG_CMSG_CLOEXEC)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("receiving the handoff: %w", err)
	}
	if n == 0 && oobn == 0 {
		return nil, errNoHandoff
	}
	files, err := handoffFiles(oob[:oobn])
	if err != nil {
		return nil, err
	}
	// From here on every received descriptor is closed on a failure
	// (they are close-on-exec in any case).
	defer func() {
		for _, fd := range files {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	if n != len(head) || flags&(unix.MSG_CTRUNC|unix.MSG_TRUNC) != 0 {
		return nil, errors.New("the handoff is malformed")
	}
	size := binary.BigEndian.Uint64(head)
	if size > MaxRequestSize {
		return nil, errors.New("the request is too large")
	}
	deadline := time.Now().Add(requestDeadline)
	b := make([]byte, size)
	for got := 0; got < len(b); {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, errors.New("reading the request: it did not arrive in time")
		}
		tv := unix.NsecToTimeval(left.Nanoseconds())
		if err := unix.SetsockoptTimeval(WarmSocketFD, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return nil, fmt.Errorf("reading the request: %w", err)
		}
		m, err := unix.Read(WarmSocketFD, b[got:])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, fmt.Errorf("reading the request: %w", err)
		case m == 0:
			return nil, errors.New("reading the request: it ended early")
		}
		got += m
	}
	req, err := DecodeRequest(b)
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare([]byte(req.Token), []byte(token)) != 1 {
		return nil, errors.New("the request's token does not match")
	}
	if err := placeHandoffFiles(req, files); err != nil {
		return nil, err
	}
	unix.Close(WarmSocketFD)
	return req, nil
}

// handoffFiles returns the descriptors of the handoff's one SCM_RIGHTS
// message, refusing any other control message.
func handoffFiles(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, errors.New("the handoff is malformed")
	}
	var files []int
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil || files != nil {
			for _, fd := range append(files, fds...) {
				unix.Close(fd)
			}
			return nil, errors.New("the handoff is malformed")
		}
		files = fds
	}
	return files, nil
}

// placeHandoffFiles checks that files are what req asks for and moves
// each to its place. The descriptors it placed are closed, and set to -1
// in files.
func placeHandoffFiles(req *Request, files []int) error {
	extra := 0
	if req.PinnedFD {
		extra++
	}
	if req.EgressListener {
		extra++
	}
	if req.Stdin {
		extra++
	}
	if len(files) != 2+extra {
		return errors.New("the handoff carries other descriptors than its request asks for")
	}
	// Where each received descriptor goes, in the order they came, and
	// what it must be: the gate hands the command pipes.
	places := []int{1, 2}
	kinds := []uint32{unix.S_IFIFO, unix.S_IFIFO}
	if req.Stdin {
		places = append(places, 0)
		kinds = append(kinds, unix.S_IFIFO)
	}
	if req.PinnedFD {
		places = append(places, ExecutableFD)
		kinds = append(kinds, unix.S_IFREG)
	}
	if req.EgressListener {
		places = append(places, EgressFD)
		kinds = append(kinds, unix.S_IFSOCK)
	}
	for i, fd := range files {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != kinds[i] {
			return fmt.Errorf("the handoff's descriptor for %d is not what it should be", places[i])
		}
	}
	// The received descriptors were given the lowest free numbers, above
	// every place (0 to 6 are all open), so no dup3 below overwrites one
	// that is yet to be placed.
	for i, fd := range files {
		if fd <= EgressFD {
			return errors.New("the handoff's descriptors came where they cannot")
		}
		flags := 0
		if places[i] > 2 {
			flags = unix.O_CLOEXEC
		}
		if err := unix.Dup3(fd, places[i], flags); err != nil {
			return fmt.Errorf("placing the handoff's descriptor %d: %w", places[i], err)
		}
	}
	for i, fd := range files {
		unix.Close(fd)
		files[i] = -1
	}
	return nil
}

// Warm is the parent's side of a warm helper: its token, its socket and
// its status pipe. The caller starts the helper with HelperPath, Args,
// Files and the SysProcAttr of the Namespaces it is for, calls Started,
// and later either hands it a call with Handoff or ends it (Close, then
// kill and reap it: a warm helper whose socket closes exits by itself).
type Warm struct {
	token        string
	ns           Namespaces
	uid, gid     int // the user and group its user namespace maps
	conn, child  *os.File
	statR, statW *os.File
}

// NewWarm prepares a warm helper for namespaces ns.
func NewWarm(ns Namespaces) (*Warm, error) {
	token := make([]byte, TokenSize)
	rand.Read(token) // never fails (crypto/rand panics otherwise)
	w := &Warm{token: hex.EncodeToString(token), ns: ns, uid: os.Geteuid(), gid: os.Getegid()}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	w.conn, w.child = os.NewFile(uintptr(fds[0]), "warm"), os.NewFile(uintptr(fds[1]), "warm")
	if w.statR, w.statW, err = os.Pipe(); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// Args is the warm helper's argv.
func (w *Warm) Args() []string {
	var prepare []byte
	if w.ns.Net {
		prepare = append(prepare, warmPrepareNetwork)
	}
	if w.ns.Mount {
		prepare = append(prepare, warmPrepareMounts)
	}
	if prepare == nil {
		prepare = []byte(warmPrepareNothing)
	}
	return []string{"execgate-confine", WarmMarker, w.token, string(prepare)}
}

// Files are the warm helper's descriptors 3 to 6 (exec.Cmd.ExtraFiles):
// its socket, its status pipe, and null, an open /dev/null, twice, which
// holds the places of the pinned executable and the egress socket.
func (w *Warm) Files(null *os.File) []*os.File {
	return []*os.File{w.child, w.statW, null, null}
}

// SysProcAttr is Launch.SysProcAttr for the warm helper's namespaces, with
// the user and group of IDs.
func (w *Warm) SysProcAttr() *syscall.SysProcAttr { return sysProcAttr(w.ns, w.uid, w.gid) }

// IDs are the effective user and group this process had when NewWarm made
// w: those the helper's user namespace maps, and the helper runs as.
func (w *Warm) IDs() (uid, gid int) { return w.uid, w.gid }

// Prepared waits, at most requestDeadline, for the started helper to say
// it has prepared what it prepares ahead, and returns why not when it
// does not: its own report if it failed, or that it did not answer.
func (w *Warm) Prepared() error {
	fd := int(w.conn.Fd())
	tv := unix.NsecToTimeval(requestDeadline.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return err
	}
	b := make([]byte, 1)
	var n int
	var err error
	for {
		n, err = unix.Read(fd, b)
		if err != unix.EINTR {
			break
		}
	}
	switch {
	case err != nil:
		return fmt.Errorf("the confinement helper did not say it was prepared: %w", err)
	case n == 1 && b[0] == warmPrepared:
		return nil
	}
	// It ended: its status says why.
	if rep := readReport(w.statR); rep.Err != nil {
		return rep.Err
	}
	return errors.New("the confinement helper ended before it was prepared")
}

// Started must be called once the warm helper has started: it closes the
// helper's ends in this process.
func (w *Warm) Started() {
	w.child.Close()
	w.statW.Close()
}

// Close closes what this process still holds of the warm helper. A helper
// that was not handed a call sees its socket close and exits.
func (w *Warm) Close() {
	for _, f := range []*os.File{w.conn, w.child, w.statR, w.statW} {
		if f != nil {
			f.Close() // an error means it was closed already
		}
	}
}

// Handoff gives the warm helper its call: req (whose Token, PinnedFD and
// namespace fields it sets as NewLaunch and Launch.Started would), the
// command's stdout and stderr, its stdin if not nil (the helper's own
// /dev/null otherwise), and exe, the pinned executable, if not nil. It
// returns the call's Launch, already started: Wait and EgressListener
// work as for a helper started for its call. The caller keeps ownership
// of the files it passed, which it may close once Handoff returns.
//
// An error means the helper did not get the call (it ended while it
// waited, say) and nothing of it ran; the caller ends the helper and
// starts the call another way.
func (w *Warm) Handoff(req Request, stdout, stderr, stdin, exe *os.File) (*Launch, error) {
	req.Token = w.token
	req.PinnedFD = exe != nil
	if req.PinnedFD {
		req.Path = ""
	}
	req.NetworkIsolated = w.ns.Net
	req.EgressListener = req.EgressListener && w.ns.Net
	req.ReadOnlyTree = w.ns.Mount
	req.Stdin = stdin != nil
	l := &Launch{req: req, statR: w.statR}
	files := []*os.File{stdout, stderr}
	if stdin != nil {
		files = append(files, stdin)
	}
	if exe != nil {
		files = append(files, exe)
	}
	if req.EgressListener {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		l.egressP, l.egressC = os.NewFile(uintptr(fds[0]), "egress"), os.NewFile(uintptr(fds[1]), "egress")
		files = append(files, l.egressC)
	}
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	// The length first, then the Request, in one buffer.
	msg := req.appendEncoding(make([]byte, 8, 4<<10))
	b := msg[8:]
	binary.BigEndian.PutUint64(msg, uint64(len(b)))
	// One message on an empty socket, small enough not to block: the
	// length, then the Request itself, or as much of it as
	// handoffInline allows (all of any ordinary one). The helper finds
	// the Request there as soon as it has the descriptors, and does not
	// wait for this process to schedule a goroutine that writes it.
	inline := min(len(b), handoffInline)
	rest := b[inline:]
	msg = msg[:8+inline]
	sent, err := unix.SendmsgN(int(w.conn.Fd()), msg, unix.UnixRights(fds...), nil, unix.MSG_NOSIGNAL)
	switch {
	case err == nil && sent < 8:
		// The helper reads the length with the descriptors, whole.
		err = fmt.Errorf("only %d bytes of the handoff were sent", sent)
	case err == nil && sent < len(msg):
		// The socket is a stream: what was not sent follows, before
		// the rest of the Request.
		rest = append(slices.Clip(msg[sent:]), rest...)
	}
	if l.egressC != nil {
		l.egressC.Close()
	}
	if err != nil {
		if l.egressP != nil {
			l.egressP.Close()
		}
		return nil, fmt.Errorf("handing the call to the confinement helper: %w", err)
	}
	conn := w.conn
	w.conn, w.statR = nil, nil // the Launch has them now
	l.report = make(chan Report, 1)
	go func() {
		var werr error
		if len(rest) > 0 {
			_, werr = conn.Write(rest)
		}
		conn.Close()
		rep := readReport(l.statR)
		l.statR.Close()
		if rep.Err == nil && !rep.Ready && werr != nil {
			rep.Err = fmt.Errorf("sending the confinement helper its request: %w", werr)
		}
		l.report <- rep
	}()
	return l, nil
}
