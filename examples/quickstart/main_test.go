package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out), "output so far:\n%s", out.String())
	got := out.String()

	// The allowlist, sorted by name.
	assert.Regexp(t, `(?s)allowlisted:\n  date\.utc .*\n  echo\.say .*\n  uname\.kernel `, got)

	// The allowed call ran echo and succeeded.
	assert.Contains(t, got, `"name": "echo.say"`)
	assert.Contains(t, got, `"termination": "exit"`)
	assert.Contains(t, got, `"exitCode": 0`)
	assert.Contains(t, got, `"ok": true`)
	assert.Contains(t, got, `"stdout": "hello from execgate\n"`) // JSON escapes the newline

	// The unknown name and the bad argument were refused with typed errors.
	assert.Contains(t, got, "refused: *execgate.NotFoundError\n  execgate: command \"sh\" is not allowlisted")
	assert.Contains(t, got, "refused: *execgate.ValidationError\n  execgate: invalid input for \"echo.say\": text")
}
