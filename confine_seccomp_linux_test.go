package execgate

import (
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// syscallProbes are the calls the "syscalls" helper makes, each with
// arguments that make it fail harmlessly on a kernel that allows it
// (a null pointer, a bad descriptor, flags that contradict each other),
// and the errno a confined command must get instead.
var syscallProbes = []struct {
	name string
	nr   uintptr
	args [3]uintptr
	want syscall.Errno
}{
	{"io_uring_setup", unix.SYS_IO_URING_SETUP, [3]uintptr{0, 0}, unix.ENOSYS},
	{"io_uring_enter", unix.SYS_IO_URING_ENTER, [3]uintptr{^uintptr(0)}, unix.ENOSYS},
	{"io_uring_register", unix.SYS_IO_URING_REGISTER, [3]uintptr{^uintptr(0)}, unix.ENOSYS},
	{"ptrace", unix.SYS_PTRACE, [3]uintptr{unix.PTRACE_PEEKDATA, 0, 0}, unix.ENOSYS},
	{"process_vm_readv", unix.SYS_PROCESS_VM_READV, [3]uintptr{0, 0, 0}, unix.ENOSYS},
	{"process_vm_writev", unix.SYS_PROCESS_VM_WRITEV, [3]uintptr{0, 0, 0}, unix.ENOSYS},
	{"kexec_load", unix.SYS_KEXEC_LOAD, [3]uintptr{0, 0, 0}, unix.ENOSYS},
	{"kexec_file_load", unix.SYS_KEXEC_FILE_LOAD, [3]uintptr{^uintptr(0), ^uintptr(0), 0}, unix.ENOSYS},
	{"init_module", unix.SYS_INIT_MODULE, [3]uintptr{0, 0, 0}, unix.ENOSYS},
	{"finit_module", unix.SYS_FINIT_MODULE, [3]uintptr{^uintptr(0), 0, 0}, unix.ENOSYS},
	{"delete_module", unix.SYS_DELETE_MODULE, [3]uintptr{0, 0}, unix.ENOSYS},
	{"bpf", unix.SYS_BPF, [3]uintptr{^uintptr(0), 0, 0}, unix.ENOSYS},
	{"perf_event_open", unix.SYS_PERF_EVENT_OPEN, [3]uintptr{0, 0, 0}, unix.ENOSYS},
	{"userfaultfd", unix.SYS_USERFAULTFD, [3]uintptr{^uintptr(0)}, unix.ENOSYS},
	{"add_key", unix.SYS_ADD_KEY, [3]uintptr{0, 0, 0}, unix.ENOSYS},
	{"request_key", unix.SYS_REQUEST_KEY, [3]uintptr{0, 0, 0}, unix.ENOSYS},
	{"keyctl", unix.SYS_KEYCTL, [3]uintptr{^uintptr(0), 0, 0}, unix.ENOSYS},
	{"mount", unix.SYS_MOUNT, [3]uintptr{0, 0, 0}, unix.ENOSYS},
	{"umount2", unix.SYS_UMOUNT2, [3]uintptr{0, 0}, unix.ENOSYS},
	{"pivot_root", unix.SYS_PIVOT_ROOT, [3]uintptr{0, 0}, unix.ENOSYS},
	{"setns", unix.SYS_SETNS, [3]uintptr{^uintptr(0), 0}, unix.ENOSYS},
	{"unshare", unix.SYS_UNSHARE, [3]uintptr{0}, unix.ENOSYS},
	{"chroot", unix.SYS_CHROOT, [3]uintptr{0}, unix.ENOSYS},
	{"fsopen", unix.SYS_FSOPEN, [3]uintptr{0, 0}, unix.ENOSYS},
	{"fsconfig", unix.SYS_FSCONFIG, [3]uintptr{^uintptr(0), 0, 0}, unix.ENOSYS},
	{"fsmount", unix.SYS_FSMOUNT, [3]uintptr{^uintptr(0), 0, 0}, unix.ENOSYS},
	{"fspick", unix.SYS_FSPICK, [3]uintptr{^uintptr(0), 0, 0}, unix.ENOSYS},
	{"open_tree", unix.SYS_OPEN_TREE, [3]uintptr{^uintptr(0), 0, 0}, unix.ENOSYS},
	{"move_mount", unix.SYS_MOVE_MOUNT, [3]uintptr{^uintptr(0), 0, ^uintptr(0)}, unix.ENOSYS},
	{"mount_setattr", unix.SYS_MOUNT_SETATTR, [3]uintptr{^uintptr(0), 0, 0}, unix.ENOSYS},
	{"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT, [3]uintptr{^uintptr(0), 0, 0}, unix.ENOSYS},
	{"name_to_handle_at", unix.SYS_NAME_TO_HANDLE_AT, [3]uintptr{^uintptr(0), 0, 0}, unix.ENOSYS},
	{"clone3", unix.SYS_CLONE3, [3]uintptr{0, 0}, unix.ENOSYS},
	// CLONE_NEWUSER with CLONE_FS is refused by every kernel (EINVAL), so
	// the probe never forks; the filter answers first.
	{"clone with a namespace flag", unix.SYS_CLONE, [3]uintptr{unix.CLONE_NEWUSER | unix.CLONE_FS | uintptr(syscall.SIGCHLD)}, unix.EPERM},
	// The sockets are refused with EPERM, which the kernel also answers
	// for packet and raw sockets to a process without CAP_NET_RAW (and a
	// confined command has none): the filter is the second wall there.
	{"a packet socket", unix.SYS_SOCKET, [3]uintptr{unix.AF_PACKET, unix.SOCK_RAW, 0}, unix.EPERM},
	{"a vsock socket", unix.SYS_SOCKET, [3]uintptr{unix.AF_VSOCK, unix.SOCK_STREAM, 0}, unix.EPERM},
	{"a raw IPv4 socket", unix.SYS_SOCKET, [3]uintptr{unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP}, unix.EPERM},
	// The kernel reads the family as a 32-bit int: high bits change nothing.
	{"a Unix socket with high bits in its family", unix.SYS_SOCKET, [3]uintptr{unix.AF_UNIX | 1<<32, unix.SOCK_STREAM, 0}, unix.EPERM},
	{"a vsock socket with high bits in its family", unix.SYS_SOCKET, [3]uintptr{unix.AF_VSOCK | 1<<32, unix.SOCK_STREAM, 0}, unix.EPERM},
	{"a raw IPv6 socket", unix.SYS_SOCKET, [3]uintptr{unix.AF_INET6, unix.SOCK_RAW | unix.SOCK_CLOEXEC, unix.IPPROTO_ICMPV6}, unix.EPERM},
}

func init() {
	moreHelpers["syscalls"] = func(args []string) int { // make each probe and print its errno
		for _, p := range syscallProbes {
			r, _, errno := syscall.RawSyscall(p.nr, p.args[0], p.args[1], p.args[2])
			if errno == 0 && p.nr == unix.SYS_SOCKET {
				syscall.Close(int(r))
			}
			fmt.Printf("%s: %d\n", p.name, errno)
		}
		for _, s := range []struct {
			name         string
			family, kind int
		}{{"unix", unix.AF_UNIX, unix.SOCK_STREAM}, {"tcp", unix.AF_INET, unix.SOCK_STREAM}, {"netlink", unix.AF_NETLINK, unix.SOCK_RAW}} {
			fd, err := syscall.Socket(s.family, s.kind|syscall.SOCK_CLOEXEC, 0)
			if err == nil {
				syscall.Close(fd)
			}
			fmt.Printf("socket %s: %v\n", s.name, err)
		}
		fds, err := syscall.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err == nil {
			syscall.Close(fds[0])
			syscall.Close(fds[1])
		}
		fmt.Printf("socketpair unix: %v\n", err)
		return 0
	}
}

// TestConfinement_SyscallDenyList makes each system call of the deny list
// from a confined command, with the network off and on (invariant 13 of
// DESIGN.md): each fails as the filter says (ENOSYS, or EPERM for a clone
// that would make a namespace and for the refused sockets), and the
// sockets a command needs still open: TCP and netlink, and socketpair; a
// Unix socket only where the confinement allows it (UnixSockets).
// Unconfined, the probes answer otherwise.
func TestConfinement_SyscallDenyList(t *testing.T) {
	for _, network := range []bool{false, true} {
		t.Run(fmt.Sprintf("network %v", network), func(t *testing.T) {
			spec := selfSpec(t, "syscalls")
			spec.Confine = &Confinement{Read: []string{"/"}, Network: network}
			if !requireSupport(t, true, !network) {
				assertRefused(t, runSpec(t, spec))
				return
			}
			res := runSpec(t, spec)
			require.True(t, res.OK, "%+v", res)
			for _, p := range syscallProbes {
				assert.Contains(t, res.Stdout, fmt.Sprintf("%s: %d\n", p.name, p.want), "%s is refused with %v", p.name, p.want)
			}
			assert.Contains(t, res.Stdout, "socket unix: operation not permitted\n", "a Unix socket is refused, with the network on too")
			assert.Contains(t, res.Stdout, "socket tcp: <nil>\n")
			assert.Contains(t, res.Stdout, "socket netlink: <nil>\n")
			assert.Contains(t, res.Stdout, "socketpair unix: <nil>\n")
		})
	}
	spec := selfSpec(t, "syscalls")
	spec.Confine = &Confinement{Read: []string{"/"}, Network: true, UnixSockets: true}
	if requireSupport(t, true, false) {
		res := runSpec(t, spec)
		require.True(t, res.OK, "%+v", res)
		assert.Contains(t, res.Stdout, "socket unix: <nil>\n", "UnixSockets allows them")
		assert.Contains(t, res.Stdout, "a packet socket: 1\n", "and nothing else")
	}

	// Unconfined, the probes answer otherwise. (Not every probe: a kernel
	// built without kexec or modules answers ENOSYS itself, and a root
	// test opens packet sockets while an ordinary user gets EPERM.)
	res := runSpec(t, selfSpec(t, "syscalls"))
	require.True(t, res.OK, "%+v", res)
	for _, name := range []string{"ptrace", "mount", "unshare", "setns", "chroot", "clone3", "clone with a namespace flag", "open_by_handle_at"} {
		for _, p := range syscallProbes {
			if p.name == name {
				assert.NotContains(t, res.Stdout, fmt.Sprintf("%s: %d\n", p.name, p.want), "unconfined, %s answers otherwise", p.name)
			}
		}
	}
	assert.True(t, strings.Contains(res.Stdout, "socket unix: <nil>\n"), res.Stdout)
}
