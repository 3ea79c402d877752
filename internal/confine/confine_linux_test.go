//go:build linux

package confine

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExecutableRules(t *testing.T) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	rules := ExecutableRules(cat, nil, "")
	require.NotEmpty(t, rules)
	assert.Equal(t, Rule{Path: cat, Access: AccessReadFile | AccessExecute}, rules[0])
	// cat is dynamically linked on every distribution the tests run on:
	// its loader is executable, its libraries readable.
	var interp bool
	for _, r := range rules[1:] {
		if r.Access == AccessReadFile|AccessExecute {
			interp = true
		}
		assert.NotEqual(t, AccessReadDir, r.Access&AccessReadDir, "%v", r)
		assert.Zero(t, r.Access&AccessWrite, "%v", r)
	}
	assert.True(t, interp, "no dynamic loader in %v", rules)
	assert.Contains(t, rules, Rule{Path: "/usr/lib", Access: AccessReadFile})

	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	require.NoError(t, os.WriteFile(script, []byte("#!"+cat+" -n\nhello\n"), 0o755))
	got := ExecutableRules(script, nil, "")
	assert.Equal(t, Rule{Path: script, Access: AccessReadFile | AccessExecute}, got[0])
	assert.Equal(t, append([]Rule{got[0]}, rules...), got)

	// A pinned executable is reached through its descriptor.
	f, err := os.Open(cat)
	require.NoError(t, err)
	defer f.Close()
	got = ExecutableRules(cat, f, "/proc/self/fd/5")
	assert.Equal(t, Rule{Path: "/proc/self/fd/5", Access: AccessReadFile | AccessExecute}, got[0])
	assert.Equal(t, rules[1:], got[1:])

	// Data, a self-referencing script, a missing file: only themselves.
	data := filepath.Join(dir, "data")
	require.NoError(t, os.WriteFile(data, []byte("not a program"), 0o755))
	loop := filepath.Join(dir, "loop")
	require.NoError(t, os.WriteFile(loop, []byte("#!"+loop+"\n"), 0o755))
	for _, p := range []string{data, filepath.Join(dir, "missing")} {
		assert.Equal(t, []Rule{{Path: p, Access: AccessReadFile | AccessExecute}}, ExecutableRules(p, nil, ""))
	}
	assert.Len(t, ExecutableRules(loop, nil, ""), maxInterpreterDepth+1)
}

// TestRestrictFilesystemWithoutLandlock pretends the kernel is older than
// it is. These paths return before any ruleset is enforced, so they are
// safe to run in the test process itself.
func TestRestrictFilesystemWithoutLandlock(t *testing.T) {
	defer func(f func() int) { landlockABI = f }(landlockABI)
	for _, abi := range []int{0, 2} {
		landlockABI = func() int { return abi }
		_, err := restrictFilesystem(&Request{})
		assert.ErrorContains(t, err, "Landlock", "ABI %d", abi)
	}
	landlockABI = func() int { return 0 }
	unapplied, err := restrictFilesystem(&Request{BestEffort: true})
	require.NoError(t, err)
	assert.Equal(t, []string{UnappliedFilesystem}, unapplied)
}

func TestLandlockRights(t *testing.T) {
	for _, abi := range []int{1, 7} {
		file := landlockRights(accessAll, abi, false)
		dir := landlockRights(accessAll, abi, true)
		assert.Equal(t, file, file&rightsFile, "a file gets only file rights")
		assert.NotZero(t, dir&^rightsFile)
	}
	assert.Zero(t, landlockRights(AccessWrite, 1, true)&(1<<13), "no refer right below ABI 2")
	assert.NotZero(t, landlockRights(AccessWrite, 2, true)&(1<<13))
	assert.Zero(t, landlockRights(AccessReadFile|AccessReadDir, 7, true)&(rightsWrite|1), "read grants no write or execute")
}
