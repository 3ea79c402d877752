// Package pgstore keeps execgate's pending approvals in PostgreSQL, so
// that the process that proposes a call, the approver and the process that
// executes it can be different processes on different machines.
//
// It is a module of its own, github.com/execgate/execgate/stores/pgstore,
// so that the core module does not depend on a database driver. It uses
// pgx (github.com/jackc/pgx/v5) and its pgxpool.
//
// # Setup
//
// Create the table once, explicitly, with Migrate: at deployment, or at
// startup with a role allowed to create tables. Nothing in this package
// touches the database when it is imported. Then give every Executor that
// shares approvals a Store on the same table (with Options.Now set to the
// Executor's clock, if it has one of its own):
//
//	pool, err := pgxpool.New(ctx, dsn)
//	...
//	if err := pgstore.Migrate(ctx, pool, ""); err != nil { ... }
//	store, err := pgstore.New(ctx, pool, pgstore.Options{Capacity: 1000})
//	...
//	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow, Store: store})
//
// An Executor that proposes and one that executes need only the same
// table and the same allowlist: Execute re-checks the stored record
// against its own current allowlist, so an Executor whose allowlist
// changed the command refuses it (execgate.ReasonPolicyChanged). Pending
// approvals are rows: they survive restarts of the processes, and of the
// database as far as its durability settings go.
//
// # The table
//
// Migrate runs, in one transaction (for the default table):
//
//	CREATE TABLE IF NOT EXISTS "execgate_approvals" (
//		id           text        PRIMARY KEY,
//		approval     json        NOT NULL,
//		input        bytea       NOT NULL,
//		salt         bytea       NOT NULL,
//		fingerprint  text        NOT NULL,
//		stdin_sha256 text        NOT NULL,
//		digest       text        NOT NULL,
//		expires_at   timestamptz NOT NULL
//	);
//	CREATE INDEX IF NOT EXISTS "execgate_approvals_expires_at_idx"
//		ON "execgate_approvals" (expires_at);
//
// A row is an execgate.Record as it is: approval is the Approval as
// encoding/json writes it, and is what Take reads back, through Approval's
// strict decoder; input holds the caller's input byte for byte; salt,
// fingerprint and stdin_sha256 are the record's. digest repeats the
// approval's digest and expires_at its ExpiresAt, for queries only. A row
// holds no environment values: a Record has none. It does hold the
// record's secret salt and the raw input, so the table belongs to the
// trusted side: grant access to it only to the roles the executing and
// proposing processes use, never to the approver's or the agent's. The
// database should use the UTF8 encoding, as most do.
//
// # The contract
//
// Store implements execgate.ApprovalStore for any number of processes:
//
//   - Single use. Take is one statement,
//     DELETE FROM t WHERE id = $1 RETURNING ..., and so is Delete: of any
//     number of concurrent Takes and Deletes of one ID, in any number of
//     processes, at most one gets the row (exactly one, if it was there). An Execute whose Take reached
//     the database has consumed the approval, even if the answer was lost
//     on the way back.
//   - Capacity. Save runs in one READ COMMITTED transaction: it takes a
//     transaction-scoped advisory lock on the table (keys 1702389095 and the
//     table's OID), deletes the expired rows, and inserts the record only
//     if fewer than Capacity rows remain; otherwise it returns
//     execgate.ErrStoreFull and evicts nothing. The lock serializes Saves
//     on the table across processes, so they never overshoot; Take and
//     Delete do not wait for it. There is no background goroutine: Save
//     prunes, and Prune is there for callers who want to prune on a
//     schedule of their own.
//   - Expiry. Expiry is judged with the store's clock (Options.Now), never
//     the database's, so pass the Executor's clock. Take deletes an expired
//     row like any other and returns it, with its exact ExpiresAt, so that
//     the Executor, which checks expiry again, reports
//     execgate.ReasonExpired rather than ReasonUnknown. Delete reports
//     false for it.
//   - Precision. PostgreSQL keeps microseconds; an ExpiresAt has
//     nanoseconds and is part of the approval's digest. The approval
//     column keeps it exactly. The expires_at column rounds it up to the
//     microsecond and queries compare it with the clock rounded down, so a
//     pending record is never pruned before its ExpiresAt; it may count
//     against Capacity for less than a microsecond after it. Delete judges
//     the exact ExpiresAt.
//   - Isolation. The store works whatever the database's default isolation
//     level: Save sets READ COMMITTED for its transaction, and Take and
//     Delete run again when REPEATABLE READ or SERIALIZABLE makes the loser
//     of a race fail with a serialization failure instead of deleting
//     nothing.
//
// Several Stores share a table only if they agree on its Capacity: each
// enforces its own.
//
// # Testing
//
// The package's tests, and execgatetest.TestApprovalStore through them,
// run against the database named by EXECGATE_PG_DSN, creating and dropping
// tables of their own; without it they are skipped, and under CI=true they
// fail. The repository's .ci/run shows how to start a throwaway PostgreSQL
// for them.
package pgstore
