package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/stores/pgstore"
)

// dsnEnv names the variable that gives the tests their database.
const dsnEnv = "EXECGATE_PG_DSN"

// helperEnv switches the test binary into a helper program: a test runs
// the binary itself with helperEnv=<mode>, and TestMain runs that helper
// instead of the tests. See process_test.go.
const helperEnv = "EXECGATE_PGSTORE_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	goleak.VerifyTestMain(m)
}

// testDSN returns the DSN the tests use. Without one the test is skipped,
// except under CI=true, where it fails: CI must run these tests.
func testDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(dsnEnv)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("%s is not set, and CI=true: CI must run the PostgreSQL tests (.ci/run starts a server and sets it)", dsnEnv)
		}
		tb.Skipf("PostgreSQL tests skipped: set %s=postgres://USER@HOST:PORT/DB?sslmode=disable to a database where tables may be created and dropped (.ci/run shows how to start a throwaway server)", dsnEnv)
	}
	return dsn
}

// newPool returns a pool on the test database, closed when the test ends.
// configure, if not nil, adjusts its configuration first.
func newPool(tb testing.TB, configure func(*pgxpool.Config)) *pgxpool.Pool {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(testDSN(tb))
	if err != nil {
		tb.Fatalf("parsing %s: %v", dsnEnv, err)
	}
	if configure != nil {
		configure(cfg)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("connecting: %v", err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// newTable creates a table of its own for the test, with a random name,
// and drops it and its marker table when the test ends. It uses a pool of
// its own, so that a test may close its pools and open others.
func newTable(tb testing.TB) string {
	tb.Helper()
	admin := newPool(tb, func(c *pgxpool.Config) { c.MaxConns = 1 })
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "execgate_test_" + hex.EncodeToString(b[:])
	if err := pgstore.Migrate(context.Background(), admin, name); err != nil {
		tb.Fatalf("Migrate(%s): %v", name, err)
	}
	tb.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{name}.Sanitize()+", "+pgx.Identifier{name + "_spent"}.Sanitize()); err != nil {
			tb.Errorf("dropping %s: %v", name, err)
		}
	})
	return name
}

// newStore returns a Store on table through pool.
func newStore(tb testing.TB, pool *pgxpool.Pool, table string, capacity int, now func() time.Time) *pgstore.Store {
	tb.Helper()
	s, err := pgstore.New(context.Background(), pool, pgstore.Options{Table: table, Capacity: capacity, Now: now})
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return s
}

// deployArgs is the input of the tests' one command.
type deployArgs struct {
	Service string `json:"service" validate:"required,oneof=web api worker"`
}

var deployInput = json.RawMessage(`{"service": "api"}`)

// testAllowlist is the tests' allowlist: one command, "deploy", served by
// the test binary itself (it only has to exist; the tests' ExecFn is a
// Recorder and starts nothing). policyVersion distinguishes allowlists.
// Every process of a test builds the same allowlist, so it is a function
// of its argument and the binary alone.
func testAllowlist(policyVersion string) (*execgate.Allowlist, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return execgate.NewAllowlist(execgate.CommandSpec{
		Name:    "deploy",
		Command: exe,
		Args: execgate.Struct(func(a deployArgs) execgate.Argv {
			return execgate.Argv{Args: []string{"deploy", a.Service}}
		}),
		PolicyVersion: policyVersion,
	})
}

// newExecutor returns an Executor on store with the tests' allowlist at
// policyVersion, a Recorder as its ExecFn, and clock (nil: time.Now).
func newExecutor(tb testing.TB, store execgate.ApprovalStore, policyVersion string, clock func() time.Time) (*execgate.Executor, *execgatetest.Recorder) {
	tb.Helper()
	allow, err := testAllowlist(policyVersion)
	if err != nil {
		tb.Fatalf("allowlist: %v", err)
	}
	rec := execgatetest.NewRecorder().Otherwise(execgate.Outcome{Stdout: []byte("deployed\n")})
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow, ExecFn: rec.Exec, Store: store, Now: clock})
	if err != nil {
		tb.Fatalf("NewExecutor: %v", err)
	}
	return x, rec
}
