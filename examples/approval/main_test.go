package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out))
	s := out.String()
	assert.Contains(t, s, `"name": "echo.deploy"`)
	assert.Contains(t, s, `"reason": "roll out the fix for the login bug"`)
	assert.Contains(t, s, `ran echo.deploy ["deploying" "api" "v1.4.2"]: exit 0, stdout "deploying api v1.4.2\n"`)
	assert.Contains(t, s, "second execute refused")
	assert.Contains(t, s, "reason unknown")
}
