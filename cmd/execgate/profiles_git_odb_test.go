package main

import (
	"bytes"
	"crypto/sha1"
	be "encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gitMidxOutside copies the multi-pack-index of the repository dir into
// the root's, each pack name prefixed with prefix (a path from the
// root's .git/objects/pack).
func gitMidxOutside(t *testing.T, from, to, prefix string) {
	t.Helper()
	d, err := os.ReadFile(from)
	require.NoError(t, err)
	n := int(d[6])
	type chunk struct {
		id   []byte
		body []byte
	}
	var cs []chunk
	for i := 0; i < n; i++ {
		e := d[12+12*i:]
		off, next := be.BigEndian.Uint64(e[4:12]), be.BigEndian.Uint64(e[16:24])
		cs = append(cs, chunk{e[:4], d[off:next]})
	}
	for i := range cs {
		if string(cs[i].id) == "PNAM" {
			var p []byte
			for _, nm := range bytes.Split(bytes.TrimRight(cs[i].body, "\x00"), []byte{0}) {
				p = append(append(append(p, prefix...), nm...), 0)
			}
			for len(p)%4 != 0 {
				p = append(p, 0)
			}
			cs[i].body = p
		}
	}
	out := append([]byte{}, d[:12]...)
	off := uint64(12 + 12*(n+1))
	for _, c := range cs {
		out = append(out, c.id...)
		out = be.BigEndian.AppendUint64(out, off)
		off += uint64(len(c.body))
	}
	out = append(out, 0, 0, 0, 0)
	out = be.BigEndian.AppendUint64(out, off)
	for _, c := range cs {
		out = append(out, c.body...)
	}
	sum := sha1.Sum(out)
	require.NoError(t, os.WriteFile(to, append(out, sum[:]...), 0o644))
}

// TestTypedGrammars_GitProfileReadsNoPackElsewhere: a multi-pack-index
// names its packs by paths git joins to .git/objects/pack unchecked:
// "../../../../other/.git/objects/pack/pack-<hash>.idx" has git read a
// repository's objects outside the root, with no link and no alternates.
func TestTypedGrammars_GitProfileReadsNoPackElsewhere(t *testing.T) {
	s := newProofScratch(t, "git", "")
	other := s.otherRepository(t)
	s.git(t, "-C", other, "repack", "-q", "-a", "-d")
	s.git(t, "-C", other, "multi-pack-index", "write")
	blob := s.gitOut(t, "-C", other, "rev-parse", "HEAD:private.txt")
	s.git(t, "init", "-q")
	s.git(t, "add", "README")
	s.git(t, "commit", "-q", "-m", "one")
	gitMidxOutside(t, filepath.Join(other, ".git", "objects", "pack", "multi-pack-index"),
		filepath.Join(s.root, ".git", "objects", "pack", "multi-pack-index"), "../../../../other/.git/objects/pack/")
	r := unconfinedGitRun(t, s)("git.show", blob)
	assert.NotContains(t, r.Stdout+r.Stderr, proofCanary, "git read a pack outside the root")

	// The scene is live: git that reads the multi-pack-index shows the
	// blob of the repository beside the root.
	live := exec.Command("git", "--no-pager", "--git-dir=.git/.", "-c", "core.multiPackIndex=true", "show", blob)
	live.Dir = s.root
	live.Env = []string{"HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1"}
	got, _ := live.CombinedOutput()
	assert.Contains(t, string(got), proofCanary, "the crafted multi-pack-index reaches the other repository")
}

// TestProfileProof_GitSharedIndexConfined: every git that reads an index
// split by core.splitIndex resets the time of .git/sharedindex.<hash>,
// which no option turns off; the confinement holds it (invariant 13 of
// DESIGN.md): the read-only mount refuses the utime, git ignores that,
// and the call changes nothing. Unconfined, the same call changes the
// file's time (the scene is live).
func TestProfileProof_GitSharedIndexConfined(t *testing.T) {
	s := newProofScene(t, "git")
	s.git(t, "init", "-q")
	s.git(t, "add", "README", "src/main.go")
	s.git(t, "commit", "-q", "-m", "one")
	s.git(t, "update-index", "--split-index")
	shared, err := filepath.Glob(filepath.Join(s.root, ".git", "sharedindex.*"))
	require.NoError(t, err)
	require.Len(t, shared, 1)
	then := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, os.Chtimes(shared[0], then, then))
	before := s.snapshot(t)
	code, out := s.run(t, "git.ls-files", map[string]any{})
	assert.Equal(t, 0, code, out)
	assert.Equal(t, before, s.snapshot(t), "confined ls-files changed a file's time")

	unconfinedGitRun(t, s)("git.ls-files")
	fi, err := os.Stat(shared[0])
	require.NoError(t, err)
	assert.True(t, fi.ModTime().After(then), "unconfined, git freshens the shared index")
}
