//go:build linux

package confine

import (
	"encoding/binary"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompInput is the seccomp_data of one call (its number, architecture
// and arguments) laid out for the BPF interpreter of golang.org/x/net/bpf,
// which reads each 32-bit word in network byte order where the kernel
// reads it in the machine's: every word is where this machine's kernel
// has it (an argument's low half first on a little-endian one), written
// big-endian.
func seccompInput(nr uintptr, archID uint32, args ...uint64) []byte {
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[0:], uint32(nr))
	binary.BigEndian.PutUint32(data[4:], archID)
	lo, hi := 0, 4
	if binary.NativeEndian.Uint16([]byte{0, 1}) == 1 { // big-endian
		lo, hi = 4, 0
	}
	for i, a := range args {
		binary.BigEndian.PutUint32(data[16+8*i+lo:], uint32(a))
		binary.BigEndian.PutUint32(data[16+8*i+hi:], uint32(a>>32))
	}
	return data
}

// TestSyscallPolicy_DecidesEachCallAsWritten runs the assembled deny list
// in a BPF interpreter on calls a command makes: each denied call gets its
// errno, and the calls around them (the same system call with other
// arguments) are allowed, so no condition is tested against the wrong
// word.
func TestSyscallPolicy_DecidesEachCallAsWritten(t *testing.T) {
	info, err := arch.GetInfo("")
	require.NoError(t, err)
	const (
		allow  = unix.SECCOMP_RET_ALLOW
		enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	)
	p, err := syscallPolicy()
	require.NoError(t, err)
	insts, err := p.Assemble()
	require.NoError(t, err)
	policyVM, err := bpf.NewVM(insts)
	require.NoError(t, err)
	for _, noUnix := range []bool{false, true} {
		raw, err := socketFilter(noUnix)
		require.NoError(t, err)
		sockInsts, ok := bpf.Disassemble(raw)
		require.True(t, ok)
		socketVM, err := bpf.NewVM(sockInsts)
		require.NoError(t, err)
		// The kernel runs every filter and keeps the strictest answer;
		// here no call is refused by both.
		run := func(data []byte) (int, error) {
			a, err := policyVM.Run(data)
			if err != nil {
				return 0, err
			}
			b, err := socketVM.Run(data)
			if err != nil {
				return 0, err
			}
			if uint32(a) != allow {
				return a, nil
			}
			return b, nil
		}
		unixSocket := uint32(allow)
		if noUnix {
			unixSocket = eperm
		}
		for _, c := range []struct {
			why  string
			nr   uintptr
			args []uint64
			want uint32
		}{
			{"ptrace is denied by name", unix.SYS_PTRACE, nil, enosys},
			{"io_uring_setup is denied by name", unix.SYS_IO_URING_SETUP, nil, enosys},
			{"clone3 is denied by name", unix.SYS_CLONE3, nil, enosys},
			{"read is allowed", unix.SYS_READ, []uint64{0, 0, 0}, allow},
			{"a TCP socket is allowed", unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_CLOEXEC, 0}, allow},
			{"a UDP socket is allowed", unix.SYS_SOCKET, []uint64{unix.AF_INET6, unix.SOCK_DGRAM, 0}, allow},
			{"a netlink socket (SOCK_RAW, not IP) is allowed", unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, unix.SOCK_RAW | unix.SOCK_CLOEXEC, 0}, allow},
			{"a raw IPv4 socket is denied", unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP}, eperm},
			{"a raw IPv6 socket with flags is denied", unix.SYS_SOCKET, []uint64{unix.AF_INET6, unix.SOCK_RAW | unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC, 0}, eperm},
			{"a packet socket is denied", unix.SYS_SOCKET, []uint64{unix.AF_PACKET, unix.SOCK_DGRAM, 0}, eperm},
			{"a vsock socket is denied", unix.SYS_SOCKET, []uint64{unix.AF_VSOCK, unix.SOCK_STREAM, 0}, eperm},
			{"a Unix socket is denied unless allowed", unix.SYS_SOCKET, []uint64{unix.AF_UNIX, unix.SOCK_STREAM, 0}, unixSocket},
			{"a Unix socket with high bits in its family, which the kernel drops", unix.SYS_SOCKET, []uint64{unix.AF_UNIX | 1<<32, unix.SOCK_STREAM, 0}, unixSocket},
			{"a vsock socket with high bits in its family", unix.SYS_SOCKET, []uint64{unix.AF_VSOCK | 1<<40, unix.SOCK_STREAM, 0}, eperm},
			{"a raw IPv4 socket with high bits in its type", unix.SYS_SOCKET, []uint64{unix.AF_INET | 1<<33, unix.SOCK_RAW | 1<<35, 0}, eperm},
			{"a stream socketpair is allowed", unix.SYS_SOCKETPAIR, []uint64{unix.AF_UNIX, unix.SOCK_STREAM | unix.SOCK_CLOEXEC, 0}, allow},
			{"a datagram socketpair is denied unless Unix sockets are allowed", unix.SYS_SOCKETPAIR, []uint64{unix.AF_UNIX, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC | 1<<36, 0}, unixSocket},
			{"a sequenced-packet socketpair is denied unless Unix sockets are allowed", unix.SYS_SOCKETPAIR, []uint64{unix.AF_UNIX, unix.SOCK_SEQPACKET, 0}, unixSocket},
			{"a plain fork by clone is allowed", unix.SYS_CLONE, []uint64{unix.CLONE_VM | unix.CLONE_VFORK | uint64(unix.SIGCHLD)}, allow},
			{"a clone whose flags equal the socket number is allowed", unix.SYS_CLONE, []uint64{uint64(unix.SYS_SOCKET)}, allow},
			{"clone with CLONE_NEWUSER is denied", unix.SYS_CLONE, []uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, eperm},
			{"clone with CLONE_NEWNS is denied", unix.SYS_CLONE, []uint64{unix.CLONE_NEWNS}, eperm},
		} {
			got, err := run(seccompInput(c.nr, uint32(info.ID), c.args...))
			require.NoError(t, err)
			assert.Equal(t, c.want, uint32(got), "Unix sockets refused %v: %s", noUnix, c.why)
		}
	}
}

// TestArchFilter_KillsCallsOfAnotherArchitecture runs the architecture
// check: a call through the running architecture's interface passes on
// to the deny list, one through another's (i386 on amd64) kills the
// process, which the deny list alone would have allowed.
func TestArchFilter_KillsCallsOfAnotherArchitecture(t *testing.T) {
	info, err := arch.GetInfo("")
	require.NoError(t, err)
	raw, err := archFilter()
	require.NoError(t, err)
	insts, ok := bpf.Disassemble(raw)
	require.True(t, ok)
	vm, err := bpf.NewVM(insts)
	require.NoError(t, err)
	got, err := vm.Run(seccompInput(unix.SYS_PTRACE, uint32(info.ID)))
	require.NoError(t, err)
	assert.Equal(t, uint32(unix.SECCOMP_RET_ALLOW), uint32(got))
	other := arch.I386.ID
	if info.ID == other {
		other = arch.X86_64.ID
	}
	got, err = vm.Run(seccompInput(26 /* ptrace on i386 */, uint32(other)))
	require.NoError(t, err)
	assert.Equal(t, uint32(unix.SECCOMP_RET_KILL_PROCESS), uint32(got))

	p, err := syscallPolicy()
	require.NoError(t, err)
	policy, err := p.Assemble()
	require.NoError(t, err)
	vm, err = bpf.NewVM(policy)
	require.NoError(t, err)
	got, err = vm.Run(seccompInput(26, uint32(other)))
	require.NoError(t, err)
	assert.Equal(t, uint32(unix.SECCOMP_RET_ALLOW), uint32(got), "the deny list alone lets another architecture's calls through")
}
