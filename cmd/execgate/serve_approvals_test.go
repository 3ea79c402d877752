package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestServe_ApproverHTTPRefusesElicitation checks that with out-of-band
// approvers the MCP client cannot be the one that approves.
func TestServe_ApproverHTTPRefusesElicitation(t *testing.T) {
	code, out, errOut := runCLI(t, "", "serve", "--config", "x.yaml", "--approvals", "elicit", "--approver-http", "127.0.0.1:0")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "--approvals elicit cannot go with --approver-http")
}
