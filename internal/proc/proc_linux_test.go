//go:build linux

package proc

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWaitExitLeavesTheProcessUnreaped(t *testing.T) {
	cmd := startSleeper(t)
	pid := cmd.Process.Pid
	require.NoError(t, KillGroup(pid))
	require.NoError(t, WaitExit(pid))

	// Still a zombie: its ID is reserved until it is reaped.
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	require.NoError(t, err)
	i := bytes.LastIndexByte(stat, ')')
	require.Positive(t, i)
	assert.Equal(t, byte('Z'), stat[i+2], "state in %q", stat)

	// Reaping still reports the status.
	cmd.Wait()
	require.NotNil(t, cmd.ProcessState)
	assert.Equal(t, -1, cmd.ProcessState.ExitCode())
}

func TestOpenExecutableStaysClearOfTheChildsDescriptors(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	f, err := OpenExecutable(exe)
	require.NoError(t, err)
	defer f.Close()
	assert.GreaterOrEqual(t, f.Fd(), uintptr(minExecFD))
}

func TestExecPathNamesTheOpenedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prog")
	require.NoError(t, os.WriteFile(path, []byte("original"), 0o755))
	f, err := OpenExecutable(path)
	require.NoError(t, err)
	defer f.Close()

	// Whatever happens to the path, the descriptor's name leads to the
	// opened file.
	require.NoError(t, os.WriteFile(path+".new", []byte("replacement"), 0o755))
	require.NoError(t, os.Rename(path+".new", path))

	p, err := ExecPath(f)
	require.NoError(t, err)
	assert.Equal(t, "/proc/self/fd/"+strconv.FormatUint(uint64(f.Fd()), 10), p)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "original", string(b))
}
