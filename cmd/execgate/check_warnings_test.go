package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheck_PrintsWarnings checks that check prints each warning of a
// configuration that loads on stderr, as FILE:LINE:COLUMN: KEY.PATH:
// MESSAGE, with a count after them, and still exits 0.
func TestCheck_PrintsWarnings(t *testing.T) {
	path := writeFile(t, "tools.yaml", `version: 1
tools:
  - name: kubectl
    bin: /bin/echo
    strict: true
    commands:
      get: {description: Show resources}
      logs: {}
policies:
  - name: agents
    principal: "*"
    rules:
      - tools: [kubectl.get, "kubctl.*"]
        action: allow
`)
	code, out, errOut := runCLI(t, "", "check", "--config", path)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, path+": ok: 1 tools, 2 commands")
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	require.GreaterOrEqual(t, len(lines), 3, errOut)
	assert.Equal(t, path+`:8:7: tools[0].commands.logs: "kubectl.logs" is served without a description, so the model sees none; add description to this command (it does not take the tool's)`, lines[0])
	assert.Equal(t, path+`:13:30: policies[0].rules[0].tools[1]: "kubctl.*" matches no command this file serves, so this rule never applies; did you mean "kubectl.get"?`, lines[1])
	assert.Equal(t, "execgate check: the configuration loads, with 2 warnings", lines[2])
	for _, l := range lines[3:] {
		assert.Contains(t, l, "confinement", "only the kernel's warnings follow")
	}
}
