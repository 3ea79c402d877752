package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/stores/pgstore"
)

// auditPGDSN returns the test database's connection string, from
// EXECGATE_PG_DSN. Without it the test is skipped: the root module's tests
// run before .ci/run starts PostgreSQL, and .ci/run runs this file's tests
// again once it has (see its PostgreSQL step).
func auditPGDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("EXECGATE_PG_DSN")
	if dsn == "" {
		t.Skip("PostgreSQL tests skipped: set EXECGATE_PG_DSN=postgres://USER@HOST:PORT/DB?sslmode=disable (.ci/run starts a throwaway server and runs them)")
	}
	return dsn
}

// auditPGTable creates an audit table with n entries, the last an intent
// no outcome follows, and returns its name and a pool on its database;
// both are dropped when the test ends.
func auditPGTable(t *testing.T, dsn string, n int) (string, *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	var b [6]byte
	_, _ = rand.Read(b[:])
	table := "execgate_verify_test_" + hex.EncodeToString(b[:])
	require.NoError(t, pgstore.MigrateAudit(ctx, pool, table))
	t.Cleanup(func() {
		_, err := pool.Exec(context.Background(), "DROP TABLE "+pgx.Identifier{table}.Sanitize()+"; DROP FUNCTION "+
			pgx.Identifier{table + "_refuse"}.Sanitize()+"(), "+pgx.Identifier{table + "_append"}.Sanitize()+"()")
		assert.NoError(t, err)
	})
	a, err := pgstore.NewAuditor(ctx, pool, pgstore.AuditOptions{Table: table})
	require.NoError(t, err)
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for i := 1; i <= n; i++ {
		ev := execgate.Event{Op: execgate.OpRun, Phase: execgate.PhaseOutcome, TraceID: fmt.Sprintf("t%d", i), Time: at, Name: "echo.run", Principal: "ci-bot", Termination: execgate.TerminationExit}
		if i == n {
			ev.Phase, ev.Termination = execgate.PhaseIntent, ""
		}
		require.NoError(t, a.Audit(ctx, ev))
	}
	return table, pool
}

// TestAuditVerify_PostgresTable: audit verify --dsn-env checks a
// PostgreSQL audit table as it checks a file: an intact one is ok with its
// head and its unfinished calls, an edited or deleted entry is reported at
// its seq with exit 1, and a database it cannot read, a variable that is
// not set, or a FILE beside --dsn-env is exit 2; the connection string
// comes from the environment only and is never printed.
func TestAuditVerify_PostgresTable(t *testing.T) {
	dsn := auditPGDSN(t)
	const env = "EXECGATE_TEST_AUDIT_DSN"
	// A closed port on loopback, with a password that must not be printed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := fmt.Sprintf("postgres://gate:pw-canary-7f3a@%s/execgate?sslmode=disable&connect_timeout=5", ln.Addr())
	require.NoError(t, ln.Close())

	for _, tc := range []struct {
		name string
		// tamper changes the table with its triggers disabled, if set.
		tamper   string
		envValue string // "" means the test database; "-" leaves the variable unset
		args     func(table string) []string
		code     int
		stdout   []string // lines that must be on stdout
		stderr   string   // what stderr must hold
	}{
		{
			name: "an intact table is ok, with its head and its unfinished intent",
			args: func(table string) []string { return []string{"audit", "verify", "--dsn-env", env, "--table", table} },
			code: exitOK,
			stdout: []string{": ok: 3 entries, head seq 3 sha256 ",
				": unfinished: seq 3: run echo.run by ci-bot at 2026-12-01T12:00:00Z, trace t3: started, no outcome recorded"},
		},
		{
			name: "the flags may come before verify",
			args: func(table string) []string { return []string{"audit", "--dsn-env", env, "--table", table, "verify"} },
			code: exitOK, stdout: []string{": ok: 3 entries"},
		},
		{
			name:   "an edited entry is reported at its seq",
			tamper: `UPDATE %s SET line = replace(line, '"ci-bot"', '"ci-bor"') WHERE seq = 2`,
			args:   func(table string) []string { return []string{"audit", "verify", "--dsn-env", env, "--table", table} },
			code:   exitFailed, stderr: ": broken: pgstore: audit table %q: entry 2: hash_mismatch",
		},
		{
			name:   "a deleted entry is reported at its seq",
			tamper: `DELETE FROM %s WHERE seq = 1`,
			args:   func(table string) []string { return []string{"audit", "verify", "--dsn-env", env, "--table", table} },
			code:   exitFailed, stderr: ": broken: pgstore: audit table %q: entry 1: sequence",
		},
		{
			name: "a table that does not exist cannot be read",
			args: func(string) []string {
				return []string{"audit", "verify", "--dsn-env", env, "--table", "execgate_verify_nowhere"}
			},
			code: exitUsage, stderr: "table execgate_verify_nowhere in the database of " + env + " cannot be read",
		},
		{
			name:     "a database that cannot be reached is exit 2 and its password is not printed",
			envValue: closed,
			args:     func(table string) []string { return []string{"audit", "verify", "--dsn-env", env, "--table", table} },
			code:     exitUsage, stderr: "connecting to the database of " + env + ":",
		},
		{
			name:     "a variable that is not set is named",
			envValue: "-",
			args:     func(table string) []string { return []string{"audit", "verify", "--dsn-env", env, "--table", table} },
			code:     exitUsage, stderr: "the variable " + env + " that --dsn-env names is not set",
		},
		{
			name: "a FILE beside --dsn-env is a usage error",
			args: func(table string) []string { return []string{"audit", "verify", "--dsn-env", env, "trail.jsonl"} },
			code: exitUsage, stderr: "with no FILE",
		},
		{
			name: "--table without --dsn-env is a usage error",
			args: func(table string) []string { return []string{"audit", "verify", "--table", table, "trail.jsonl"} },
			code: exitUsage, stderr: "--table needs --dsn-env",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table, pool := auditPGTable(t, dsn, 3)
			if tc.tamper != "" {
				q := pgx.Identifier{table}.Sanitize()
				_, err := pool.Exec(context.Background(), `ALTER TABLE `+q+` DISABLE TRIGGER USER; `+fmt.Sprintf(tc.tamper, q)+`; ALTER TABLE `+q+` ENABLE TRIGGER USER`)
				require.NoError(t, err)
			}
			switch tc.envValue {
			case "":
				t.Setenv(env, dsn)
			case "-":
				t.Setenv(env, "")
			default:
				t.Setenv(env, tc.envValue)
			}
			code, stdout, stderr := runCLI(t, "", tc.args(table)...)
			assert.Equal(t, tc.code, code, "stdout %s\nstderr %s", stdout, stderr)
			for _, want := range tc.stdout {
				assert.Contains(t, stdout, "table "+table+want)
			}
			if tc.stderr != "" {
				want := tc.stderr
				if strings.Contains(want, "%q") {
					want = "table " + table + fmt.Sprintf(want, table)
				}
				assert.Contains(t, stderr, want)
			}
			for _, secret := range []string{"pw-canary-7f3a", dsn} {
				assert.NotContains(t, stdout+stderr, secret, "the connection string was printed")
			}
		})
	}
}
