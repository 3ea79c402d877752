package config_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
)

// TestServer_ApprovalStore: server.approval_store chooses where serve
// keeps approvals, memory unless the file says postgres, whose
// connection string comes from the variable dsn_env names and never from
// the file; a bad value is a load error at its own line and key, which
// repeats no value that may be a connection string.
func TestServer_ApprovalStore(t *testing.T) {
	for _, tc := range []struct {
		why, section string
		want         config.ApprovalStore
	}{
		{"without the key, the memory store", "server: {principal: p}", config.ApprovalStore{}},
		{"kind memory is the memory store", "server: {approval_store: {kind: memory}}", config.ApprovalStore{Line: 4}},
		{"postgres takes the default table", "server: {approval_store: {kind: postgres, dsn_env: EXECGATE_PG_DSN}}",
			config.ApprovalStore{Kind: config.ApprovalStorePostgres, DSNEnv: "EXECGATE_PG_DSN", Table: config.DefaultApprovalTable, Line: 4}},
		{"postgres with a table in a schema", "server: {approval_store: {kind: postgres, dsn_env: PG, table: gate.approvals}}",
			config.ApprovalStore{Kind: config.ApprovalStorePostgres, DSNEnv: "PG", Table: "gate.approvals", Line: 4}},
	} {
		l := mustLoad(t, "version: 1\ntools: []\n\n"+tc.section+"\n")
		require.NotNil(t, l.Server, tc.why)
		assert.Equal(t, tc.want, l.Server.ApprovalStore, tc.why)
	}

	const secret = "s3cret-pw"
	for _, tc := range []struct {
		why, body, path, message string
		line                     int
	}{
		{"a connection string in dsn_env is refused at its line",
			"kind: postgres\n    dsn_env: postgres://u:" + secret + "@db/x", "server.approval_store.dsn_env", "looks like a connection string", 6},
		{"a keyword connection string in dsn_env is refused",
			"kind: postgres\n    dsn_env: host=db password=" + secret, "server.approval_store.dsn_env", "looks like a connection string", 6},
		{"a dsn key is refused: the file never holds the connection string",
			"kind: postgres\n    dsn_env: PG\n    dsn: postgres://u:" + secret + "@db/x", "server.approval_store.dsn", "never written in the file", 7},
		{"postgres needs dsn_env",
			"kind: postgres", "server.approval_store.dsn_env", "required: the name of the environment variable", 5},
		{"a dsn_env that is no variable name is refused",
			"kind: postgres\n    dsn_env: '" + secret + " x'", "server.approval_store.dsn_env", "must be the name of an environment variable", 6},
		{"an unknown kind is refused",
			"kind: redis", "server.approval_store.kind", "must be memory or postgres", 5},
		{"a table that is no identifier is refused",
			"kind: postgres\n    dsn_env: PG\n    table: Approvals;drop", "server.approval_store.table", "lowercase SQL identifier", 7},
		{"the memory store has no dsn_env",
			"kind: memory\n    dsn_env: PG", "server.approval_store.dsn_env", "is for kind: postgres", 6},
	} {
		list := loadErrors(t, "version: 1\ntools: []\nserver:\n  approval_store:\n    "+tc.body+"\n")
		require.Len(t, list, 1, "%s: %s", tc.why, describe(list))
		assert.Equal(t, tc.path, list[0].Path, tc.why)
		assert.Equal(t, tc.line, list[0].Line, tc.why)
		assert.Contains(t, list[0].Message, tc.message, tc.why)
		assert.False(t, strings.Contains(list[0].Error(), secret), "%s: the error repeats the value: %s", tc.why, list[0].Error())
	}
}

// TestServer_ApprovalStoreInheritedEnv: dsn_env may not name a variable
// a tool inherits, or every command the agent runs would hold the
// database's connection string.
func TestServer_ApprovalStoreInheritedEnv(t *testing.T) {
	list := loadErrors(t, "version: 1\ndefaults:\n  inherit_env: [PG]\ntools: []\nserver:\n  approval_store: {kind: postgres, dsn_env: PG}\n")
	require.Len(t, list, 1, describe(list))
	assert.Equal(t, "server.approval_store.dsn_env", list[0].Path)
	assert.Contains(t, list[0].Message, "inherit_env at line 3")
}
