package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execgate/execgate/stores/pgstore"
)

// pgConnectTimeout bounds each attempt of audit verify to connect to the
// database.
const pgConnectTimeout = 30 * time.Second

// verifyPGAudit is audit verify --dsn-env NAME [--table T]: it checks the
// audit table T (pgstore.DefaultAuditTable if empty) in the database whose
// connection string is in the environment variable NAME, as audit verify
// FILE checks a file, and prints the same lines, labeled "table T". The
// connection string is never printed.
func verifyPGAudit(c *cli, ctx context.Context, dsnEnv, table string) int {
	if table == "" {
		table = pgstore.DefaultAuditTable
	}
	label := "table " + table
	dsn := os.Getenv(dsnEnv)
	if dsn == "" {
		return c.fail(exitUsage, fmt.Errorf("the variable %s that --dsn-env names is not set or empty: set it to the PostgreSQL connection string of the audit table's database", dsnEnv))
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return c.fail(exitUsage, fmt.Errorf("the value of %s is not a PostgreSQL connection string (URL or key=value form)", dsnEnv))
	}
	cfg.MaxConns = 1
	cfg.ConnConfig.ConnectTimeout = pgConnectTimeout
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return c.fail(exitUsage, fmt.Errorf("connecting to the database of %s: %w", dsnEnv, err))
	}
	defer pool.Close()
	rep, err := pgstore.VerifyAudit(ctx, pool, table)
	var ve *pgstore.AuditVerifyError
	switch {
	case errors.As(err, &ve):
		fmt.Fprintf(c.stderr, "%s: broken: %v\n", label, ve)
		printUnfinished(c.stdout, label, rep)
		return exitFailed
	case err != nil:
		return c.fail(exitUsage, fmt.Errorf("%s in the database of %s cannot be read: %w", label, dsnEnv, err))
	}
	head := rep.Head
	fmt.Fprintf(c.stdout, "%s: ok: %d entries, head seq %d sha256 %s\n", label, head.Seq, head.Seq, head.SHA256)
	printUnfinished(c.stdout, label, rep)
	return exitOK
}
