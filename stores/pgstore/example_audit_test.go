package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/stores/pgstore"
)

// An Executor whose audit trail is a table that every replica appends to
// as one chain, and a check of that chain. (It needs a database, so it is
// compiled but not run by go test.)
func ExampleNewAuditor() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("EXECGATE_PG_DSN"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	// Once, at deployment, as the role that is to own the table; grant
	// the gates' role only SELECT and INSERT on it.
	if err := pgstore.MigrateAudit(ctx, pool, pgstore.DefaultAuditTable); err != nil {
		log.Fatal(err)
	}
	auditor, err := pgstore.NewAuditor(ctx, pool, pgstore.AuditOptions{})
	if err != nil {
		log.Fatal(err)
	}
	allow, err := execgate.NewAllowlist(execgate.CommandSpec{
		Name:    "git.status",
		Command: "git",
		Args:    execgate.Fixed("status", "--short"),
	})
	if err != nil {
		log.Fatal(err)
	}
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow, Auditor: auditor})
	if err != nil {
		log.Fatal(err)
	}
	// Nothing starts unless its intent is in the table: while the
	// database cannot record, the call is refused.
	var ae *execgate.AuditError
	if _, err := x.Run(ctx, "git.status", nil); errors.As(err, &ae) {
		log.Printf("refused, not recorded: %v", err)
	}

	rep, err := pgstore.VerifyAudit(ctx, pool, pgstore.DefaultAuditTable)
	var broken *pgstore.AuditVerifyError
	switch {
	case errors.As(err, &broken):
		fmt.Printf("entry %d: %s\n", broken.Seq, broken.Problem)
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Printf("%d entries, head %s\n", rep.Head.Seq, rep.Head.SHA256)
	}
	for _, u := range rep.Unfinished {
		fmt.Println(u) // started, no outcome recorded
	}
}
