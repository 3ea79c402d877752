package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The bearer tokens of the test configurations.
const (
	callerToken   = "caller-token-for-tests"
	approverToken = "approver-token-for-tests"
)

func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// testConfig is a configuration on executables every Debian machine has:
//
//   - echo.run runs /bin/echo with up to four checked arguments;
//   - forbidden.run is allowlisted and denied by the policy;
//   - deploy.<anything> goes to a dispatcher that always needs an
//     approval (default_action: human_approval);
//   - ci-bot calls over HTTP, alice approves, and calls over stdio are
//     made as local-agent.
var testConfig = `version: 1
defaults: {timeout: 10s, env: {PATH: /usr/bin:/bin}}
tools:
  - name: echo
    bin: /bin/echo
    description: Print the arguments.
    bare:
      positionals: {max: 4, pattern: '^[A-Za-z0-9 ._-]{1,100}$'}
      annotations: {read_only: true}
  - name: forbidden
    bin: /bin/echo
    description: Allowlisted, and denied by every policy.
    bare: {}
  - name: deploy
    bin: /bin/echo
    description: Deploy a service; every call needs an approval.
    default_action: human_approval
policies:
  - name: everyone
    principal: "*"
    rules:
      - {name: never, tools: [forbidden.run], action: deny}
      - {name: echo, tools: [echo.run], action: allow}
      - {name: deploys, tools: ["deploy.*"], action: require_approval}
server:
  principal: local-agent
  tokens:
    - {principal: ci-bot, sha256: "` + tokenHash(callerToken) + `"}
  approvers:
    - {principal: alice, sha256: "` + tokenHash(approverToken) + `"}
`

// writeFile writes text to a new file in a temporary directory and
// returns its path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

// runCLI runs the binary's code in this process and returns its exit
// code and output.
func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	c := &cli{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errOut}
	code = c.run(context.Background(), args)
	return code, out.String(), errOut.String()
}

// standIns copies /bin/echo into a new directory under each of names and
// returns the directory, to put on PATH in place of the real programs: a
// stand-in prints the argv it was given.
func standIns(t *testing.T, names ...string) string {
	t.Helper()
	src, err := os.ReadFile("/bin/echo")
	require.NoError(t, err)
	dir := t.TempDir()
	for _, n := range names {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), src, 0o755))
	}
	return dir
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
	buildOut  []byte
)

// binary builds the execgate binary once per test run and returns its
// path. The directory is removed when the tests end (see TestMain).
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "execgate-bin-")
		if buildErr != nil {
			return
		}
		goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goTool); err != nil {
			goTool = "go"
		}
		cmd := exec.Command(goTool, "build", "-o", filepath.Join(buildDir, "execgate"), ".")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	require.NoError(t, buildErr, "go build: %s", buildOut)
	return filepath.Join(buildDir, "execgate")
}
