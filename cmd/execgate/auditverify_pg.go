package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

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
	cfg, err := pgPoolConfig(os.Getenv, dsnEnv, "--dsn-env", "of the audit table's database")
	if err != nil {
		return c.fail(exitUsage, err)
	}
	cfg.MaxConns = 1
	cfg.ConnConfig.ConnectTimeout = pgConnectTimeout
	pool, err := pgConnect(ctx, cfg)
	if err != nil {
		return c.fail(exitUsage, fmt.Errorf("connecting to the database of %s: %w", dsnEnv, err))
	}
	defer pool.Close()
	rep, err := pgstore.VerifyAudit(ctx, pool, table)
	var ve *pgstore.AuditVerifyError
	switch {
	case errors.As(err, &ve):
		fmt.Fprintf(c.stderr, "%s: broken: %v\n", label, scrubPassword(ve, cfg))
		printUnfinished(c.stdout, label, rep)
		return exitFailed
	case err != nil:
		return c.fail(exitUsage, fmt.Errorf("%s in the database of %s cannot be read: %w", label, dsnEnv, scrubPassword(err, cfg)))
	}
	head := rep.Head
	fmt.Fprintf(c.stdout, "%s: ok: %d entries, head seq %d sha256 %s\n", label, head.Seq, head.Seq, head.SHA256)
	printUnfinished(c.stdout, label, rep)
	return exitOK
}
