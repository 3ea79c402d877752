//go:build linux

package confine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"sync"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls are the system calls a confined command may not make:
// each is a way around the rest of the confinement, or a large piece of
// kernel a command that reads files and talks to a server does not need.
// They fail with ENOSYS, as on a kernel without them, so that a program
// that probes for one (io_uring) falls back as it would there.
var deniedSyscalls = []string{
	// Asynchronous I/O that runs outside the checks made on the calling
	// thread.
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	// Reading and writing other processes' memory.
	"ptrace", "process_vm_readv", "process_vm_writev",
	// Replacing the kernel, loading code into it.
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "bpf",
	// Watching the machine, and the kernel's own memory faults.
	"perf_event_open", "userfaultfd",
	// The kernel's key store, shared beyond the process.
	"add_key", "request_key", "keyctl",
	// Changing the filesystem tree or the namespaces, once the helper
	// has set them up.
	"mount", "umount2", "pivot_root", "setns", "unshare", "chroot",
	"fsopen", "fsconfig", "fsmount", "fspick", "open_tree", "move_mount", "mount_setattr",
	// Opening a file by handle, around every path check.
	"open_by_handle_at", "name_to_handle_at",
	// clone3 takes its flags in memory a filter cannot read; C
	// libraries and Go fall back to clone, whose flags it can.
	"clone3",
}

// cloneFlagsArgument is the argument of clone that holds its flags: the
// first, except on s390x, where it is the second.
var cloneFlagsArgument = func() uint32 {
	if runtime.GOARCH == "s390x" {
		return 1
	}
	return 0
}()

// cloneNamespaceFlags are the clone flags that make a namespace: clone
// with any of them is refused, as unshare is.
var cloneNamespaceFlags = []uint64{
	unix.CLONE_NEWNS, unix.CLONE_NEWUSER, unix.CLONE_NEWPID, unix.CLONE_NEWNET,
	unix.CLONE_NEWIPC, unix.CLONE_NEWUTS, unix.CLONE_NEWCGROUP, unix.CLONE_NEWTIME,
}

// deniedSocketFamilies are the address families a confined command may not
// open a socket of: raw frames (AF_PACKET), virtual-machine sockets
// (AF_VSOCK), and, unless its confinement allows them, Unix sockets (a
// pathname socket, such as a container runtime's, is reachable from any
// network namespace, and Landlock below ABI 9 does not restrict connecting
// to one; socketpair still works).
func deniedSocketFamilies(noUnix bool) []uint64 {
	f := []uint64{unix.AF_PACKET, unix.AF_VSOCK}
	if noUnix {
		f = append(f, unix.AF_UNIX)
	}
	return f
}

// syscallPolicy returns the deny list as a seccomp policy for the running
// architecture: every other call is allowed. Names the architecture does
// not have are left out.
//
// The calls denied by name fail with ENOSYS. A clone with a namespace
// flag fails with EPERM; its conditions are one group, the last: the
// filter the policy assembles loads a call's arguments to test them and
// does not reload its number, so a second group of conditions would
// compare an argument where it means the number. The sockets are decided
// by socketFilter: the policy's Equal compares all 64 bits of an
// argument, while the kernel reads socket's family and type as 32-bit
// ints, so a family with high bits set would pass it.
func syscallPolicy() (seccomp.Policy, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return seccomp.Policy{}, err
	}
	var names []string
	for _, n := range deniedSyscalls {
		if _, ok := info.SyscallNames[n]; ok {
			names = append(names, n)
		}
	}
	var byArgs []seccomp.NameWithConditions
	cond := func(name string, cs ...seccomp.Condition) {
		byArgs = append(byArgs, seccomp.NameWithConditions{Name: name, Conditions: cs})
	}
	for _, f := range cloneNamespaceFlags {
		// BitsSet tests (arg & value) != 0: here, that one flag.
		cond("clone", seccomp.Condition{Argument: cloneFlagsArgument, Operation: seccomp.BitsSet, Value: f})
	}
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: names},
			{Action: seccomp.ActionErrno | seccomp.Action(unix.EPERM), NamesWithCondtions: byArgs},
		},
	}, nil
}

// seccompData offsets (linux/seccomp.h): the system call number, then the
// architecture.
const (
	seccompDataNr   = 0
	seccompDataArch = 4
)

// archFilter returns a filter that kills the process on any system call
// made through another architecture's interface than the running one (on
// amd64, the i386 int 0x80 entry), whose numbers the deny list does not
// cover. (The deny list's own filter lets such calls through, and refuses
// only the x32 calls.)
func archFilter() ([]bpf.RawInstruction, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	return bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: seccompDataArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
	})
}

// argLow is the offset in seccomp_data of the low 32 bits of argument i,
// which is where the kernel's int arguments are: an int takes the low
// word of its register, whatever the high word holds.
func argLow(i uint32) uint32 {
	off := 16 + 8*i
	if binary.NativeEndian.Uint16([]byte{0, 1}) == 1 { // big-endian
		off += 4
	}
	return off
}

// socketFilter returns a filter for socket and socketpair, which compares
// their family and type as the kernel reads them, as 32-bit ints: socket
// of a denied family (see deniedSocketFamilies), or of a raw IP socket
// (AF_INET or AF_INET6 of type SOCK_RAW, whatever flags the type carries),
// fails with EPERM; when noUnix is set, so does socketpair of a datagram
// or sequenced-packet type (a datagram socket can send to any pathname
// socket, /dev/log say, without connecting); every other call passes on.
func socketFilter(noUnix bool) ([]bpf.RawInstruction, error) {
	const (
		allow = unix.SECCOMP_RET_ALLOW
		eperm = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	)
	sock := []bpf.Instruction{bpf.LoadAbsolute{Off: argLow(0), Size: 4}}
	for _, f := range deniedSocketFamilies(noUnix) {
		sock = append(sock, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(f), SkipFalse: 1}, bpf.RetConstant{Val: eperm})
	}
	sock = append(sock,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_INET, SkipTrue: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_INET6, SkipTrue: 1},
		bpf.RetConstant{Val: allow},
		bpf.LoadAbsolute{Off: argLow(1), Size: 4},
		bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0xf},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SOCK_RAW, SkipFalse: 1},
		bpf.RetConstant{Val: eperm},
		bpf.RetConstant{Val: allow},
	)
	pair := []bpf.Instruction{bpf.RetConstant{Val: allow}}
	if noUnix {
		pair = []bpf.Instruction{
			bpf.LoadAbsolute{Off: argLow(1), Size: 4},
			bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0xf},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SOCK_DGRAM, SkipTrue: 1},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SOCK_SEQPACKET, SkipFalse: 1},
			bpf.RetConstant{Val: eperm},
			bpf.RetConstant{Val: allow},
		}
	}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: seccompDataNr, Size: 4},
		// socket: on to the socket checks, after the next three.
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(unix.SYS_SOCKET), SkipTrue: 3},
		// socketpair: on to the jump over the socket checks.
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(unix.SYS_SOCKETPAIR), SkipTrue: 1},
		bpf.RetConstant{Val: allow},
		bpf.Jump{Skip: uint32(len(sock))},
	}
	prog = append(prog, sock...)
	prog = append(prog, pair...)
	return bpf.Assemble(prog)
}

// Filters returns the system call filters of a confined command, in the
// order the helper installs them: the architecture check, the socket
// filter (Unix sockets refused when noUnix is set) and the deny list. They
// are built once per process for each value of noUnix, by the parent, and
// sent to the helper in its Request, so that no helper spends its start
// assembling them.
func Filters(noUnix bool) ([][]bpf.RawInstruction, error) {
	if noUnix {
		return filtersNoUnix()
	}
	return filtersUnix()
}

var (
	filtersNoUnix = sync.OnceValues(func() ([][]bpf.RawInstruction, error) { return buildSyscallFilters(true) })
	filtersUnix   = sync.OnceValues(func() ([][]bpf.RawInstruction, error) { return buildSyscallFilters(false) })
)

// buildSyscallFilters assembles the three filters Filters returns.
func buildSyscallFilters(noUnix bool) ([][]bpf.RawInstruction, error) {
	archF, err := archFilter()
	if err != nil {
		return nil, fmt.Errorf("building the architecture filter: %w", err)
	}
	sockets, err := socketFilter(noUnix)
	if err != nil {
		return nil, fmt.Errorf("building the socket filter: %w", err)
	}
	policy, err := syscallPolicy()
	if err != nil {
		return nil, fmt.Errorf("building the system call filter: %w", err)
	}
	insts, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("building the system call filter: %w", err)
	}
	deny, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("building the system call filter: %w", err)
	}
	return [][]bpf.RawInstruction{archF, sockets, deny}, nil
}

// filterNames name the filters of Filters, in order, for errors.
var filterNames = []string{"the architecture filter", "the socket filter", "the system call filter"}

// loadSyscallFilters installs filters, as Filters returns them, on the
// calling thread (which the target keeps through execve). Not with
// SECCOMP_FILTER_FLAG_TSYNC: the filters belong on this thread, the one
// that starts the target, and on no other thread of the helper.
// no_new_privs must already be set.
func loadSyscallFilters(filters [][]bpf.RawInstruction) error {
	if len(filters) != len(filterNames) {
		return fmt.Errorf("the request carries %d system call filters, not %d", len(filters), len(filterNames))
	}
	for i, f := range filters {
		if err := loadFilter(f); err != nil {
			return fmt.Errorf("loading %s: %w", filterNames[i], err)
		}
	}
	return nil
}

// loadFilter installs the classic BPF program raw as a seccomp filter of
// the calling thread.
func loadFilter(raw []bpf.RawInstruction) error {
	if len(raw) == 0 {
		return errors.New("empty filter")
	}
	insts := make([]syscall.SockFilter, len(raw))
	for i, r := range raw {
		insts[i] = syscall.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := syscall.SockFprog{Len: uint16(len(insts)), Filter: &insts[0]}
	return unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0)
}
