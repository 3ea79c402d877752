//go:build unix

package execgate

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTypedGrammars_PathsResolveAsTheKernelWould pins resolveExisting,
// on which a path rule's "leads outside through a symbolic link" rests
// (invariant 12 of DESIGN.md): each path resolves to where the kernel
// would open it, links in links' targets and ".." after a link included,
// what does not exist yet is appended as it is, and a link that leads to
// nothing or a loop of links is refused. Where the path exists, the
// answer is filepath.EvalSymlinks's.
func TestTypedGrammars_PathsResolveAsTheKernelWould(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	at := func(p string) string { return filepath.Join(base, p) }
	require.NoError(t, os.MkdirAll(at("root/sub/deep"), 0o755))
	require.NoError(t, os.WriteFile(at("root/sub/a.go"), []byte("a\n"), 0o644))
	require.NoError(t, os.WriteFile(at("root/file"), []byte("f\n"), 0o644))
	for link, to := range map[string]string{
		"root/rel":         "sub/a.go",         // a relative link to a file
		"root/abs":         at("root/sub"),     // an absolute link to a directory
		"root/deeplink":    "sub/deep",         // a link to a directory two down
		"root/sub/deep/up": "../a.go",          // ".." from where the link is, not from the path that led to it
		"root/chain":       "rel",              // a link to a link
		"root/slashes":     ".//sub///deep/./", // a target with empty and "." components
		"root/top":         "/",                // a link to the root of the file system
		"root/dangling":    "nothing",          // a link to nothing
		"root/halfway":     "sub/missing/x",    // a link whose target stops halfway
		"root/loop1":       "loop2",
		"root/loop2":       "loop1",
		"root/out":         "../../" + filepath.Base(base) + "/outside", // a link that climbs out to what does not exist
	} {
		require.NoError(t, os.Symlink(to, at(link)))
	}

	cases := []struct {
		why, path string
		want      string // the resolved path; "" when refused
		exists    bool   // what the path names is there
		err       error  // what it is refused with, matched by errors.Is; errAny for any error
	}{
		{"a file with no link on the way is itself", "root/sub/a.go", "root/sub/a.go", true, nil},
		{"a directory is itself", "root/sub", "root/sub", true, nil},
		{"a name that does not exist yet is appended to its directory", "root/sub/new.txt", "root/sub/new.txt", false, nil},
		{"the names after the first one missing are appended as they are", "root/sub/new/deeper/x", "root/sub/new/deeper/x", false, nil},
		{"a relative link is followed from its directory", "root/rel", "root/sub/a.go", true, nil},
		{"an absolute link is followed from the root", "root/abs/a.go", "root/sub/a.go", true, nil},
		{"a missing name after a linked directory is appended to its target", "root/abs/new.txt", "root/sub/new.txt", false, nil},
		{"'..' in a target goes up from the link's real directory", "root/deeplink/up", "root/sub/a.go", true, nil},
		{"a link to a link is followed to the end", "root/chain", "root/sub/a.go", true, nil},
		{"empty and '.' components of a target are skipped", "root/slashes", "root/sub/deep", true, nil},
		{"a link to / resolves to /", "root/top", "/", true, nil},
		{"a link that leads to nothing is refused", "root/dangling", "", false, errDanglingLink},
		{"a path through a link that leads to nothing is refused", "root/dangling/x", "", false, errDanglingLink},
		{"a link whose target stops halfway is refused", "root/halfway", "", false, errDanglingLink},
		{"a link that climbs out to nothing is refused, not appended", "root/out", "", false, errDanglingLink},
		{"a loop of links is refused", "root/loop1", "", false, errAny},
		{"a file with names after it is not a directory", "root/file/x", "", false, syscall.ENOTDIR},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			got, err := resolveExisting(at(c.path))
			if c.err != nil {
				if c.err != errAny {
					assert.ErrorIs(t, err, c.err)
				}
				assert.Error(t, err)
				assert.Empty(t, got)
				return
			}
			require.NoError(t, err)
			want := at(c.want)
			if c.want == "/" {
				want = "/"
			}
			assert.Equal(t, want, got)
			if !c.exists {
				return
			}
			ev, err := filepath.EvalSymlinks(at(c.path))
			require.NoError(t, err)
			assert.Equal(t, ev, got, "it is what filepath.EvalSymlinks finds")
		})
	}
	got, err := resolveExisting("/")
	require.NoError(t, err)
	assert.Equal(t, "/", got, "the root of the file system is itself")
}

// errAny stands, in a case of TestTypedGrammars_PathsResolveAsTheKernelWould,
// for any error.
var errAny = errors.New("any error")
