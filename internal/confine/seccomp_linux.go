//go:build linux

package confine

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

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
// The calls denied by name fail with ENOSYS. The calls denied by their
// arguments (clone with a namespace flag, socket of a denied family, raw
// IP sockets) fail with EPERM, and are one group, the last: the filter
// the policy assembles loads a call's arguments to test them and does not
// reload its number, so a second group of conditions would compare an
// argument where it means the number.
func syscallPolicy(noUnix bool) (seccomp.Policy, error) {
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
	for _, f := range deniedSocketFamilies(noUnix) {
		cond("socket", seccomp.Condition{Argument: 0, Operation: seccomp.Equal, Value: f})
	}
	// Raw IP sockets, which build their own packets: the type is
	// SOCK_RAW with either, both or none of the flags socket takes.
	for _, f := range []uint64{unix.AF_INET, unix.AF_INET6} {
		for _, flags := range []uint64{0, unix.SOCK_NONBLOCK, unix.SOCK_CLOEXEC, unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC} {
			cond("socket",
				seccomp.Condition{Argument: 0, Operation: seccomp.Equal, Value: f},
				seccomp.Condition{Argument: 1, Operation: seccomp.Equal, Value: unix.SOCK_RAW | flags})
		}
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

// loadSyscallFilters installs, on the calling thread (which the target
// keeps through execve), the architecture check and the deny list, with
// Unix sockets refused when noUnix is set.
// no_new_privs must already be set.
func loadSyscallFilters(noUnix bool) error {
	raw, err := archFilter()
	if err != nil {
		return fmt.Errorf("building the architecture filter: %w", err)
	}
	if err := loadFilter(raw); err != nil {
		return fmt.Errorf("loading the architecture filter: %w", err)
	}
	policy, err := syscallPolicy(noUnix)
	if err != nil {
		return fmt.Errorf("building the system call filter: %w", err)
	}
	// Not FilterFlagTSync: the filter belongs on this thread, the one
	// that starts the target, and on no other thread of the helper.
	if err := seccomp.LoadFilter(seccomp.Filter{Policy: policy}); err != nil {
		return fmt.Errorf("loading the system call filter: %w", err)
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
