package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/stores/pgstore"
)

// An Executor whose pending approvals live in PostgreSQL, where another
// process with the same table and allowlist can execute them. (It needs a
// database, so it is compiled but not run by go test.)
func ExampleNew() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("EXECGATE_PG_DSN"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	// Once, explicitly: create the table if it does not exist.
	if err := pgstore.Migrate(ctx, pool, pgstore.DefaultTable); err != nil {
		log.Fatal(err)
	}
	store, err := pgstore.New(ctx, pool, pgstore.Options{Capacity: 1000})
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
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow, Store: store})
	if err != nil {
		log.Fatal(err)
	}

	ap, err := x.Propose(ctx, "git.status", nil, "look at the work tree")
	if err != nil {
		log.Fatal(err)
	}
	envelope, _ := json.Marshal(ap) // for the approver, and then for Execute anywhere
	fmt.Println(string(envelope))
}
