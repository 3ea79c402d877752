package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
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

// retryingStore is an ApprovalStore that retries a Save whose outcome is
// unknown, which a pgstore.Store makes safe: its Save is idempotent by ID.
type retryingStore struct{ *pgstore.Store }

func (s retryingStore) Save(ctx context.Context, rec execgate.Record) error {
	err := s.Store.Save(ctx, rec)
	for range 3 {
		var se *pgstore.StateError
		if !errors.As(err, &se) || se.State != pgstore.MaybeApplied {
			return err
		}
		again := s.Store.Save(ctx, rec)
		if !errors.As(again, &se) {
			// nil, ErrDuplicateID or ErrStoreFull: the state is known.
			return again
		}
		// A retry that failed too leaves the first attempt's outcome
		// unknown still: keep saying so, even if the retry itself
		// stored nothing.
	}
	return err
}

// A Save whose connection broke after its COMMIT was sent may or may not
// have stored the record; Save with the same record again finds out.
// Wrapped in an ApprovalStore of its own, a Store can do that for the
// Executor, whose Propose otherwise returns the error. (It needs a
// database, so it is compiled but not run by go test.)
func ExampleStateError() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("EXECGATE_PG_DSN"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	store, err := pgstore.New(ctx, pool, pgstore.Options{})
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
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow, Store: retryingStore{store}})
	if err != nil {
		log.Fatal(err)
	}

	_, err = x.Propose(ctx, "git.status", nil, "look at the work tree")
	var se *pgstore.StateError
	if errors.As(err, &se) {
		// se.Op is pgstore.OpSave; se.State says whether the record
		// may have been stored; the message says what to do.
		log.Printf("proposal failed (%s, %s): %v", se.Op, se.State, err)
	}
}
