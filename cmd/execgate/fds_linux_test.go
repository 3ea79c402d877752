package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// fdsConfig serves ls.run: ls of the descriptors of the process it runs
// as, which is the command's own view of what it inherited.
var fdsConfig = `version: 1
defaults: {timeout: 10s}
tools:
  - name: ls
    bin: /bin/ls
    global_args: ["/proc/self/fd"]
    description: List the descriptors a command inherits.
    bare: {}
`

// TestRun_InheritedDescriptorsDoNotReachCommands starts the binary with a
// descriptor open beyond stderr, as a careless parent would leave one,
// and checks that the command it runs does not have it.
func TestRun_InheritedDescriptorsDoNotReachCommands(t *testing.T) {
	path := writeFile(t, "tools.yaml", fdsConfig)
	leak, err := os.Open(path)
	require.NoError(t, err)
	defer leak.Close()
	cmd := exec.Command(binary(t), "run", "--config", path, "ls.run")
	cmd.ExtraFiles = []*os.File{leak, leak, leak} // descriptors 3, 4 and 5
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	var r execgate.Result
	require.NoError(t, json.Unmarshal(out, &r), "%s", out)
	// ls itself opens the directory it lists, as descriptor 3.
	assert.Equal(t, "0\n1\n2\n3\n", r.Stdout, "the descriptors execgate inherited are not the command's")
}
