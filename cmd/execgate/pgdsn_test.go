package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The pieces of a password that appear in no other part of the
// connection strings below, so that an error holding either of them
// holds the password.
const (
	pwHead = "S3cq"
	pwTail = "retPW9x"
)

// TestDSN_PasswordNeverInAHost: a URL whose password holds an unescaped
// "@" or "/" is read by the driver, as by libpq, with the rest of the
// password in the host (or the database name), where a connect error
// would print it; such a connection string is refused, naming the
// variable and saying to percent-encode the password, without repeating
// any of it. Connection strings whose hosts are hosts are taken.
func TestDSN_PasswordNeverInAHost(t *testing.T) {
	const name = "EXECGATE_TEST_DSN"
	for _, tc := range []struct {
		why, dsn string
		refused  bool
		password string // the password a taken one reads as
	}{
		{"an @ in the password puts its rest in the host",
			"postgres://u:" + pwHead + "@" + pwTail + "@127.0.0.1/db", true, ""},
		{"an @ in the password of a URL with several hosts puts its rest in a fallback host",
			"postgres://u:" + pwHead + "@h1," + pwTail + "@127.0.0.1/db", true, ""},
		{"a / in the password ends the host early and puts its rest in the database name",
			"postgres://u:1234/" + pwTail + "@127.0.0.1/db", true, ""},
		{"a / and an @ in the password put its rest in the database name",
			"postgres://u:" + pwHead + "@x/" + pwTail + "@127.0.0.1/db", true, ""},
		{"a host with a space is no host",
			"host='db " + pwTail + "' user=u password=" + pwHead, true, ""},
		{"a percent-encoded @ is the password's",
			"postgres://u:" + pwHead + "%40" + pwTail + "@127.0.0.1/db", false, pwHead + "@" + pwTail},
		{"the key=value form holds any password",
			"host=127.0.0.1 user=u password='" + pwHead + "@" + pwTail + "/x' dbname=db", false, pwHead + "@" + pwTail + "/x"},
		{"an IPv6 address is a host",
			"postgres://u:" + pwHead + "@[::1]:5432/db", false, pwHead},
		{"several hosts are hosts",
			"postgres://u:" + pwHead + "@db-1.example.com:5432,db_2:5433/db", false, pwHead},
		{"a socket directory is a host",
			"postgres:///db?host=/var/run/postgresql", false, ""},
	} {
		cfg, err := pgPoolConfig(func(string) string { return tc.dsn }, name, "dsn_env", "in serve's environment")
		if !tc.refused {
			require.NoError(t, err, tc.why)
			assert.Equal(t, tc.password, cfg.ConnConfig.Password, tc.why)
			continue
		}
		var de *dsnError
		require.True(t, errors.As(err, &de), "%s: %v", tc.why, err)
		assert.Equal(t, name, de.Var, tc.why)
		assert.Contains(t, err.Error(), "the value of "+name, tc.why)
		assert.Contains(t, err.Error(), "percent-encode the password", tc.why)
		assert.NotContains(t, err.Error(), pwHead, tc.why)
		assert.NotContains(t, err.Error(), pwTail, tc.why)
	}
}

// TestDSN_ScrubPassword: an error of the database or the driver that
// quotes the password is printed with the password cut out, and still
// unwraps to the driver's error.
func TestDSN_ScrubPassword(t *testing.T) {
	cfg, err := pgxpool.ParseConfig("postgres://u:" + pwHead + pwTail + "@127.0.0.1/db")
	require.NoError(t, err)
	inner := fmt.Errorf("server said: bad password %q", pwHead+pwTail)
	got := scrubPassword(inner, cfg)
	assert.NotContains(t, got.Error(), pwHead+pwTail)
	assert.Contains(t, got.Error(), "bad password")
	assert.ErrorIs(t, got, inner)
	assert.NoError(t, scrubPassword(nil, cfg))
}

// TestDSN_ConnectErrorsHoldNoPassword: serve (with an approval store or
// an audit table in PostgreSQL) and audit verify --dsn-env, run as
// processes, print no piece of the password when the connection string
// reads with a bad host, when its host does not resolve, and when the
// database refuses the login; each names the variable.
func TestDSN_ConnectErrorsHoldNoPassword(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())
	dsns := []struct{ why, dsn string }{
		{"the password's rest read as the host", "postgres://gate:" + pwHead + "@" + pwTail + "@127.0.0.1/execgate?sslmode=disable&connect_timeout=5"},
		{"a host that does not resolve", "postgres://gate:" + pwHead + pwTail + "@no-such-host.invalid/execgate?sslmode=disable&connect_timeout=5"},
		{"a closed port", "postgres://gate:" + pwHead + pwTail + "@" + closed + "/execgate?sslmode=disable&connect_timeout=5"},
	}
	if dsn := os.Getenv(pgDSNEnv); dsn != "" {
		cfg, err := pgxpool.ParseConfig(dsn)
		require.NoError(t, err)
		dsns = append(dsns, struct{ why, dsn string }{"a login the database refuses (no such role)",
			fmt.Sprintf("postgres://no_such_role_h21:%s%s@%s:%d/%s?sslmode=disable&connect_timeout=5", pwHead, pwTail, cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)})
	} else {
		t.Logf("%s is not set: the refused login is not tried", pgDSNEnv)
	}
	dir := t.TempDir()
	approvals := writeFile(t, "approvals.yaml", "version: 1\ntools: []\nserver:\n  approval_store: {kind: postgres, dsn_env: "+replicaDSNEnv+"}\n")
	audits := writeFile(t, "audit.yaml", auditOnlyConfig(dir, "execgate_audit"))
	commands := []struct {
		why  string
		args []string
	}{
		{"serve with the approval store", []string{"serve", "--config", approvals, "--http", "127.0.0.1:0"}},
		{"serve with the audit table", []string{"serve", "--config", audits, "--http", "127.0.0.1:0"}},
		{"audit verify", []string{"audit", "verify", "--dsn-env", replicaDSNEnv}},
	}
	for _, d := range dsns {
		for _, c := range commands {
			why := c.why + ", " + d.why
			cmd := exec.Command(binary(t), c.args...)
			cmd.Env = append(os.Environ(), replicaDSNEnv+"="+d.dsn)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "%s: %s", why, out)
			assert.Contains(t, string(out), replicaDSNEnv, "%s: the error names the variable", why)
			assert.NotContains(t, string(out), pwHead, "%s: %s", why, out)
			assert.NotContains(t, string(out), pwTail, "%s: %s", why, out)
			if strings.Contains(d.dsn, "@"+pwTail) {
				assert.Contains(t, string(out), "percent-encode the password", why)
			}
		}
	}
}
