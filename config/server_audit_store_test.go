package config_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
)

// TestServer_AuditStore: server.audit_store names the PostgreSQL table
// serve appends its audit trail to, with the variable that holds the
// connection string; without the key there is no table.
func TestServer_AuditStore(t *testing.T) {
	for _, tc := range []struct {
		why, server string
		want        config.AuditStore
	}{
		{"without the key, no table", "server: {principal: p}", config.AuditStore{}},
		{"postgres takes the default table", "server: {audit_store: {kind: postgres, dsn_env: EXECGATE_PG_DSN}}",
			config.AuditStore{Kind: config.AuditStorePostgres, DSNEnv: "EXECGATE_PG_DSN", Table: config.DefaultAuditTable, Line: 4}},
		{"postgres with a table in a schema", "server: {audit_store: {kind: postgres, dsn_env: PG, table: audit.trail}}",
			config.AuditStore{Kind: config.AuditStorePostgres, DSNEnv: "PG", Table: "audit.trail", Line: 4}},
		{"the approval store's variable may be shared", "server:\n  approval_store: {kind: postgres, dsn_env: PG}\n  audit_store: {kind: postgres, dsn_env: PG}",
			config.AuditStore{Kind: config.AuditStorePostgres, DSNEnv: "PG", Table: config.DefaultAuditTable, Line: 6}},
	} {
		l := mustLoad(t, "version: 1\ntools: []\n\n"+tc.server+"\n")
		require.NotNil(t, l.Server, tc.why)
		assert.Equal(t, tc.want, l.Server.AuditStore, tc.why)
	}
}

// TestServer_AuditStoreRefused: what server.audit_store refuses, at its
// line, and never by repeating a value that may be a connection string.
func TestServer_AuditStoreRefused(t *testing.T) {
	const secret = "s3cret-pw"
	for _, tc := range []struct {
		why, body, path, message string
		line                     int
	}{
		{"a connection string in dsn_env is refused at its line",
			"kind: postgres\n    dsn_env: postgres://u:" + secret + "@db/x", "server.audit_store.dsn_env", "looks like a connection string", 6},
		{"a keyword connection string in dsn_env is refused",
			"kind: postgres\n    dsn_env: host=db password=" + secret, "server.audit_store.dsn_env", "looks like a connection string", 6},
		{"a dsn key is refused: the file never holds the connection string",
			"kind: postgres\n    dsn_env: PG\n    dsn: postgres://u:" + secret + "@db/x", "server.audit_store.dsn", "never written in the file", 7},
		{"postgres needs dsn_env",
			"kind: postgres", "server.audit_store.dsn_env", "required: the name of the environment variable", 5},
		{"the kind is required: there is one, and the section says it",
			"dsn_env: PG", "server.audit_store.kind", "required: postgres", 5},
		{"a dsn_env that is no variable name is refused",
			"kind: postgres\n    dsn_env: '" + secret + " x'", "server.audit_store.dsn_env", "must be the name of an environment variable", 6},
		{"another kind is refused",
			"kind: file", "server.audit_store.kind", "must be postgres", 5},
		{"a table that is no identifier is refused",
			"kind: postgres\n    dsn_env: PG\n    table: Audit;drop", "server.audit_store.table", "lowercase SQL identifier", 7},
	} {
		list := loadErrors(t, "version: 1\ntools: []\nserver:\n  audit_store:\n    "+tc.body+"\n")
		require.Len(t, list, 1, "%s: %s", tc.why, describe(list))
		assert.Equal(t, tc.path, list[0].Path, tc.why)
		assert.Equal(t, tc.line, list[0].Line, tc.why)
		assert.Contains(t, list[0].Message, tc.message, tc.why)
		assert.False(t, strings.Contains(list[0].Error(), secret), "%s: the error repeats the value: %s", tc.why, list[0].Error())
	}
}

// TestServer_AuditStoreInheritedEnv: dsn_env may not name a variable a
// tool inherits, as for the approval store.
func TestServer_AuditStoreInheritedEnv(t *testing.T) {
	list := loadErrors(t, "version: 1\ndefaults:\n  inherit_env: [PG]\ntools: []\nserver:\n  audit_store: {kind: postgres, dsn_env: PG}\n")
	require.Len(t, list, 1, describe(list))
	assert.Equal(t, "server.audit_store.dsn_env", list[0].Path)
	assert.Contains(t, list[0].Message, "inherit_env at line 3")
}
