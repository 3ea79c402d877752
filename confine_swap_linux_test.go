//go:build linux

package execgate

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func init() {
	// swap tries to reach args[0], a file outside the write path args[1],
	// through names it makes or finds inside the write path: a symbolic
	// link it makes, one that was there before it started (args[1]/pre),
	// and a directory of the write path (args[1]/d) that it replaces with
	// a link to the canary's directory. It prints each result.
	moreHelpers["swap"] = func(args []string) int {
		canary, write := helperArg(args, 0), helperArg(args, 1)
		made := filepath.Join(write, "made")
		swapped := filepath.Join(write, "d")
		for _, c := range []struct {
			name string
			do   func() error
		}{
			{"make a link to the canary", func() error { return os.Symlink(canary, made) }},
			{"write through the link it made", func() error { return os.WriteFile(made, []byte("swapped\n"), 0o644) }},
			{"chmod through the link it made", func() error { return os.Chmod(made, 0o777) }},
			{"write through the link found there", func() error {
				return os.WriteFile(filepath.Join(write, "pre"), []byte("swapped\n"), 0o644)
			}},
			{"swap a directory for a link outside", func() error {
				if err := os.RemoveAll(swapped); err != nil {
					return err
				}
				return os.Symlink(filepath.Dir(canary), swapped)
			}},
			{"write through the swapped directory", func() error {
				return os.WriteFile(filepath.Join(swapped, filepath.Base(canary)), []byte("swapped\n"), 0o644)
			}},
			{"make a file through the swapped directory", func() error {
				return os.WriteFile(filepath.Join(swapped, "planted"), []byte("x"), 0o644)
			}},
			{"write inside", func() error { return os.WriteFile(filepath.Join(write, "new"), []byte("ok"), 0o644) }},
		} {
			if err := c.do(); err != nil {
				fmt.Printf("%s: refused\n", c.name)
			} else {
				fmt.Printf("%s: ok\n", c.name)
			}
		}
		return 0
	}
}

// TestConfinement_SymlinkSwapsReachNothingOutsideTheWritePaths lets a
// confined command make and swap symbolic links inside its write path so
// that they point at a canary outside it (invariant 13 of DESIGN.md):
// making a link inside the write path is allowed, but every write, mode
// change or new file through one lands outside and is refused, whether the
// link was made by the command, was there before, or replaced a directory
// of the write path; the canary is as it was. Unconfined, the write through
// the link lands.
func TestConfinement_SymlinkSwapsReachNothingOutsideTheWritePaths(t *testing.T) {
	setup := func(t *testing.T) (base, canary, write string) {
		base = t.TempDir()
		canary = filepath.Join(base, "canary")
		write = filepath.Join(base, "write")
		require.NoError(t, os.WriteFile(canary, []byte("canary\n"), 0o644))
		require.NoError(t, os.MkdirAll(filepath.Join(write, "d"), 0o755))
		require.NoError(t, os.Symlink(canary, filepath.Join(write, "pre")))
		return base, canary, write
	}
	for _, network := range []bool{false, true} {
		t.Run(fmt.Sprintf("network %v", network), func(t *testing.T) {
			base, canary, write := setup(t)
			before := fileState(t, canary)
			spec := selfSpec(t, "swap", canary, write)
			spec.Confine = &Confinement{Read: []string{base}, Write: []string{write}, Network: network}
			if !requireSupport(t, true, !network) {
				assertRefused(t, runSpec(t, spec))
				return
			}
			res := runSpec(t, spec)
			require.True(t, res.OK, "%+v", res)
			for _, ok := range []string{"make a link to the canary", "swap a directory for a link outside", "write inside"} {
				assert.Contains(t, res.Stdout, ok+": ok\n", "inside the write path, %s is allowed", ok)
			}
			for _, refused := range []string{"write through the link it made", "chmod through the link it made",
				"write through the link found there", "write through the swapped directory",
				"make a file through the swapped directory"} {
				assert.Contains(t, res.Stdout, refused+": refused\n", "%s is refused", refused)
			}
			assert.Equal(t, before, fileState(t, canary), "the canary is as it was")
			assert.NoFileExists(t, filepath.Join(base, "planted"))
		})
	}

	_, canary, write := setup(t)
	res := runSpec(t, selfSpec(t, "swap", canary, write))
	require.True(t, res.OK, "%+v", res)
	assert.Contains(t, res.Stdout, "write through the link it made: ok\n", "unconfined, the write lands")
	b, err := os.ReadFile(canary)
	require.NoError(t, err)
	assert.Equal(t, "swapped\n", string(b))
}
