package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheck_SaysWhichApprovalStore: execgate check says where serve
// would keep approvals and its audit table, naming the variable of a connection string and
// never its value.
func TestCheck_SaysWhichApprovalStore(t *testing.T) {
	t.Setenv("EXECGATE_TEST_CHECK_DSN", "postgres://u:pw-not-shown@db/x")
	for _, tc := range []struct {
		name, text, want string
	}{
		{"a file without a server section keeps them in memory",
			"version: 1\ntools: []\n",
			"approval store: memory (this process only; a restart loses pending approvals)"},
		{"postgres names its table and the variable of its connection string",
			"version: 1\ntools: []\nserver: {approval_store: {kind: postgres, dsn_env: EXECGATE_TEST_CHECK_DSN, table: gate_approvals}}\n",
			"approval store: postgres (table gate_approvals, connection string from $EXECGATE_TEST_CHECK_DSN)"},
		{"a file without audit_store keeps no audit table",
			"version: 1\ntools: []\n",
			"audit store: none (the file of --audit only, if given)"},
		{"an audit table is named with the variable of its connection string",
			"version: 1\ntools: []\nserver: {audit_store: {kind: postgres, dsn_env: EXECGATE_TEST_CHECK_DSN, table: gate_audit}}\n",
			"audit store: postgres (table gate_audit, connection string from $EXECGATE_TEST_CHECK_DSN)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", "check", "--config", writeFile(t, "tools.yaml", tc.text))
			require.Equal(t, exitOK, code, errOut)
			assert.Contains(t, out, tc.want+"\n")
			assert.NotContains(t, out+errOut, "pw-not-shown")
		})
	}
}
