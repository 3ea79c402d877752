// Command two-process runs the two halves of an approval in two processes
// that share nothing but a PostgreSQL database: "propose" stores a pending
// approval and prints it as JSON; "execute", run later, perhaps on another
// machine, reads that JSON and runs the call, once.
//
// From stores/pgstore, with EXECGATE_PG_DSN naming a database where the
// table may be created:
//
//	export EXECGATE_PG_DSN='postgres://user@localhost:5432/db?sslmode=disable'
//	go run ./examples/two-process propose > approval.json
//	go run ./examples/two-process execute < approval.json
//	go run ./examples/two-process execute < approval.json   # refused: already used
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/stores/pgstore"
)

// deployArgs is what the agent may send for "echo.deploy".
type deployArgs struct {
	Service string `json:"service" validate:"required,oneof=web api worker"`
	Version string `json:"version" validate:"required,regexp=^v[0-9]+\\.[0-9]+\\.[0-9]+$"`
}

func main() {
	if len(os.Args) != 2 || (os.Args[1] != "propose" && os.Args[1] != "execute") {
		fmt.Fprintln(os.Stderr, "usage: two-process propose > approval.json | two-process execute < approval.json")
		os.Exit(2)
	}
	dsn := os.Getenv("EXECGATE_PG_DSN")
	if dsn == "" {
		fmt.Fprintln(os.Stderr, "two-process: set EXECGATE_PG_DSN to a PostgreSQL connection string")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, os.Args[1], dsn, pgstore.DefaultTable, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "two-process:", err)
		os.Exit(1)
	}
}

// run is one process: mode "propose" or "execute", on table in the
// database dsn names.
func run(ctx context.Context, mode, dsn, table string, in io.Reader, out, log io.Writer) error {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	// Both processes must build the same allowlist: Execute re-checks the
	// stored record against its own.
	allow, err := execgate.NewAllowlist(execgate.CommandSpec{
		Name:        "echo.deploy",
		Command:     "echo", // stands in for a real deployment tool
		Description: "Pretend to deploy a service version",
		Args: execgate.Struct(func(a deployArgs) execgate.Argv {
			return execgate.Argv{Args: []string{"deploying", a.Service, a.Version}}
		}),
	})
	if err != nil {
		return err
	}
	if mode == "propose" {
		// Explicit and idempotent; a real deployment would migrate once.
		if err := pgstore.Migrate(ctx, pool, table); err != nil {
			return err
		}
	}
	store, err := pgstore.New(ctx, pool, pgstore.Options{Table: table})
	if err != nil {
		return err
	}
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow, Store: store})
	if err != nil {
		return err
	}

	switch mode {
	case "propose":
		ap, err := x.Propose(ctx, "echo.deploy", json.RawMessage(`{"service":"api","version":"v1.4.2"}`), "roll out the fix for the login bug")
		if err != nil {
			return err
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(ap); err != nil {
			return err
		}
		fmt.Fprintf(log, "proposed %s, pending until %s; hand this JSON to the execute step\n", ap.ID, ap.ExpiresAt.Format(time.RFC3339))
		return nil
	case "execute":
		data, err := io.ReadAll(io.LimitReader(in, 1<<20))
		if err != nil {
			return err
		}
		var ap execgate.Approval // decoded strictly: a reshaped envelope is refused
		if err := json.Unmarshal(data, &ap); err != nil {
			return err
		}
		res, err := x.Execute(ctx, ap)
		var ae *execgate.ApprovalError
		if errors.As(err, &ae) {
			return fmt.Errorf("approval %s refused: %s", ae.ID, ae.Reason)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "ran %s %q: exit %d, stdout %q\n", res.Name, res.Args, res.ExitCode, res.Stdout)
		return nil
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
}
