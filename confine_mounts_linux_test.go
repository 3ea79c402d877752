//go:build linux

package execgate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// mountTmpfs mounts a small tmpfs on dir, for the test's lifetime.
func mountTmpfs(t *testing.T, dir string) {
	t.Helper()
	require.NoError(t, unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"))
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
}

// TestConfinement_MountsBeneathAWritePathStayReadOnly: a write path is
// writable, but a filesystem mounted beneath it is not, nor is one of
// two filesystems stacked on the same directory outside it (invariant 13
// of DESIGN.md: nothing outside the write paths changes, and a write path
// does not open what is mounted inside it).
func TestConfinement_MountsBeneathAWritePathStayReadOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to mount the filesystems it checks (CI runs as root)")
	}
	base := t.TempDir()
	write := filepath.Join(base, "write")
	nested := filepath.Join(write, "nested")
	stacked := filepath.Join(base, "stacked")
	for _, d := range []string{nested, stacked} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	mountTmpfs(t, nested)
	mountTmpfs(t, stacked)
	mountTmpfs(t, stacked) // a second one on top of the first
	touch := lookTool(t, "touch")
	for _, network := range []bool{true, false} {
		for _, tc := range []struct {
			sentence string
			target   string
			ok       bool
		}{
			{"the write path itself is writable", filepath.Join(write, "file"), true},
			{"a filesystem mounted beneath it is not", filepath.Join(nested, "file"), false},
			{"the top of two stacked filesystems outside it is not", filepath.Join(stacked, "file"), false},
		} {
			spec := CommandSpec{Command: touch, Args: Fixed(tc.target), Dir: "/",
				Confine: &Confinement{Read: []string{"/"}, Write: []string{write}, Network: network}}
			if !requireSupport(t, true, !network) {
				assertRefused(t, runSpec(t, spec))
				continue
			}
			res := runSpec(t, spec)
			assert.Equal(t, tc.ok, res.OK, "network %v: %s: %+v", network, tc.sentence, res)
			if tc.ok {
				assert.FileExists(t, tc.target)
				require.NoError(t, os.Remove(tc.target))
			} else {
				assert.NoFileExists(t, tc.target, tc.sentence)
				assert.Contains(t, res.Stderr, "Read-only file system", tc.sentence)
			}
		}
	}
}
