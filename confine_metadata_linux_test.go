package execgate

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func init() {
	// meddle tries to change args[0], a file outside the write paths, in
	// every way but its content, and to move names between it and the
	// write path args[1]; it prints each result.
	moreHelpers["meddle"] = func(args []string) int {
		canary, write := helperArg(args, 0), helperArg(args, 1)
		dir := filepath.Dir(canary)
		then := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
		for _, c := range []struct {
			name string
			do   func() error
		}{
			{"chmod", func() error { return os.Chmod(canary, 0o777) }},
			{"chown", func() error { return os.Chown(canary, 1, 1) }},
			{"utimes", func() error { return os.Chtimes(canary, then, then) }},
			{"setxattr", func() error { return unix.Setxattr(canary, "user.execgate", []byte("x"), 0) }},
			{"removexattr", func() error { return unix.Removexattr(canary, "user.kept") }},
			{"truncate", func() error { return os.Truncate(canary, 0) }},
			{"link out of the write path", func() error { return os.Link(canary, filepath.Join(write, "hard")) }},
			{"rename into the write path", func() error { return os.Rename(canary, filepath.Join(write, "moved")) }},
			{"rename out of the write path", func() error {
				return os.Rename(filepath.Join(write, "mine"), filepath.Join(dir, "dropped"))
			}},
			{"symlink", func() error { return os.Symlink("/", filepath.Join(dir, "ln")) }},
			{"mkfifo", func() error { return unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644) }},
			{"mknod", func() error { return unix.Mknod(filepath.Join(dir, "node"), unix.S_IFCHR|0o644, int(unix.Mkdev(1, 3))) }},
			{"write inside", func() error { return os.WriteFile(filepath.Join(write, "new"), []byte("ok"), 0o644) }},
			{"chmod inside", func() error { return os.Chmod(filepath.Join(write, "mine"), 0o600) }},
		} {
			err := c.do()
			if err == nil {
				fmt.Printf("%s: ok\n", c.name)
			} else {
				fmt.Printf("%s: refused\n", c.name)
			}
		}
		return 0
	}
}

// TestConfinement_NothingOutsideTheWritePathsChanges lets a confined
// command, which may read a canary file and write one directory beside
// it, try to change the canary's mode, owner, times and extended
// attributes, truncate it, link and rename it, move a file out of the
// write path, and make links, fifos and device nodes beside it
// (invariant 13 of DESIGN.md): each is refused and the canary is as it
// was, with the network off and on, also as root; inside the write path
// it may still write and chmod. Unconfined, chmod succeeds.
func TestConfinement_NothingOutsideTheWritePathsChanges(t *testing.T) {
	for _, network := range []bool{false, true} {
		t.Run(fmt.Sprintf("network %v", network), func(t *testing.T) {
			base := t.TempDir()
			canary := filepath.Join(base, "canary")
			write := filepath.Join(base, "write")
			require.NoError(t, os.WriteFile(canary, []byte("canary\n"), 0o644))
			xattrs := unix.Setxattr(canary, "user.kept", []byte("v"), 0) == nil
			require.NoError(t, os.Mkdir(write, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(write, "mine"), []byte("mine"), 0o644))
			before := fileState(t, canary)

			spec := selfSpec(t, "meddle", canary, write)
			spec.Confine = &Confinement{Read: []string{base}, Write: []string{write}, Network: network}
			if !requireSupport(t, true, !network) {
				assertRefused(t, runSpec(t, spec))
				return
			}
			res := runSpec(t, spec)
			require.True(t, res.OK, "%+v", res)
			assert.Empty(t, res.Unconfined)
			for _, refused := range []string{"chmod", "chown", "utimes", "setxattr", "truncate",
				"link out of the write path", "rename into the write path", "rename out of the write path",
				"symlink", "mkfifo", "mknod"} {
				assert.Contains(t, res.Stdout, refused+": refused\n", "%s outside the write paths is refused", refused)
			}
			if xattrs {
				assert.Contains(t, res.Stdout, "removexattr: refused\n")
			}
			assert.Contains(t, res.Stdout, "write inside: ok\n")
			assert.Contains(t, res.Stdout, "chmod inside: ok\n")
			assert.Equal(t, before, fileState(t, canary), "the canary is as it was")
			for _, name := range []string{"dropped", "ln", "fifo", "node"} {
				assert.NoFileExists(t, filepath.Join(base, name))
			}
			assert.FileExists(t, filepath.Join(write, "mine"))
		})
	}

	base := t.TempDir()
	canary := filepath.Join(base, "canary")
	require.NoError(t, os.WriteFile(canary, []byte("canary\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(base, "write"), 0o755))
	res := runSpec(t, selfSpec(t, "meddle", canary, filepath.Join(base, "write")))
	require.True(t, res.OK, "%+v", res)
	assert.Contains(t, res.Stdout, "chmod: ok\n", "unconfined, the mode changes")
}

// fileState is what TestConfinement_NothingOutsideTheWritePathsChanges
// compares: the content, mode, owner, times and extended attributes.
func fileState(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(path, &st))
	buf := make([]byte, 4096)
	n, _ := unix.Listxattr(path, buf)
	v := make([]byte, 64)
	m, _ := unix.Getxattr(path, "user.kept", v)
	return fmt.Sprintf("%q mode %o uid %d gid %d mtime %d.%d ctime %d.%d xattrs %q %q",
		b, st.Mode, st.Uid, st.Gid, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec, buf[:max(n, 0)], v[:max(m, 0)])
}

// TestConfinement_NoHelperStaysBehind checks that the confined command is
// the first process of its PID namespace (invariant 13 of DESIGN.md): the
// helper has become it, so no process of the helper, with the privileges
// it started with, is left for the command to signal, trace or read
// through /proc, and no status pipe of its is left to forge a report on.
func TestConfinement_NoHelperStaysBehind(t *testing.T) {
	sh := lookTool(t, "sh")
	for _, network := range []bool{false, true} {
		spec := CommandSpec{Command: sh, Args: Fixed("-c", `echo "pid $$"; kill -TERM 1; echo "after $?"`), Dir: "/",
			Confine: &Confinement{Read: []string{"/"}, Network: network}}
		if !requireSupport(t, true, !network) {
			assertRefused(t, runSpec(t, spec))
			continue
		}
		res := runSpec(t, spec)
		require.True(t, res.OK, "%+v", res)
		assert.Contains(t, res.Stdout, "pid 1\n", "network %v: the command is the namespace's first process", network)
		assert.Contains(t, res.Stdout, "after 0\n", "a SIGTERM the command sends itself as the first process is ignored")
		assert.Empty(t, res.Unconfined)
	}
}

func init() {
	// pgtrap starts a child in a process group of its own, moves itself
	// into that group and exits: as the first process of a PID namespace
	// outside a session of its own, that would leave the kernel waiting
	// for the group forever (and the call with it).
	moreHelpers["pgtrap"] = func(args []string) int {
		pid, err := syscall.ForkExec("/bin/sleep", []string{"sleep", "1"}, &syscall.ProcAttr{
			Files: []uintptr{0, 1, 2}, Sys: &syscall.SysProcAttr{Setpgid: true}})
		if err != nil {
			return helperFail(err)
		}
		fmt.Printf("setpgid: %v\n", syscall.Setpgid(0, pid))
		return 0
	}
}

// TestConfinement_ACommandCannotHangItsCall runs pgtrap confined
// (invariant 6 of DESIGN.md, bounded time, and 13): the helper is a session
// leader, so the command cannot move to another process group, and the
// call returns.
func TestConfinement_ACommandCannotHangItsCall(t *testing.T) {
	lookTool(t, "sleep")
	spec := selfSpec(t, "pgtrap")
	spec.Timeout = 5 * time.Second
	spec.Confine = &Confinement{Read: []string{"/"}, Exec: []string{"/bin", "/usr/bin"}, Network: false}
	if !requireSupport(t, true, true) {
		assertRefused(t, runSpec(t, spec))
		return
	}
	done := make(chan Result, 1)
	go func() { done <- runSpec(t, spec) }()
	select {
	case res := <-done:
		require.True(t, res.OK, "%+v", res)
		assert.Contains(t, res.Stdout, "setpgid: operation not permitted")
	case <-time.After(60 * time.Second):
		t.Fatal("the call did not return: the command moved the namespace's first process into another group")
	}
}
