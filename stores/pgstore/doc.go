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
// Create the tables once, explicitly, with Migrate: at deployment, or at
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
// # The tables
//
// Migrate runs, in one transaction (for the default table):
//
//	CREATE TABLE IF NOT EXISTS "execgate_approvals" (
//		id             text        PRIMARY KEY,
//		approval       json        NOT NULL,
//		input          bytea       NOT NULL,
//		salt           bytea       NOT NULL,
//		fingerprint    text        NOT NULL,
//		stdin_sha256   text        NOT NULL,
//		digest         text        NOT NULL,
//		expires_at     timestamptz NOT NULL,
//		content_sha256 bytea,
//		principal      text,
//		record_bytes   bigint
//	);
//	CREATE INDEX IF NOT EXISTS "execgate_approvals_expires_at_idx"
//		ON "execgate_approvals" (expires_at);
//	CREATE INDEX IF NOT EXISTS "execgate_approvals_principal_idx"
//		ON "execgate_approvals" (principal);
//	CREATE TABLE IF NOT EXISTS "execgate_approvals_spent" (
//		id             text        PRIMARY KEY,
//		content_sha256 bytea,
//		expires_at     timestamptz NOT NULL
//	);
//	CREATE INDEX IF NOT EXISTS "execgate_approvals_spent_exp_idx"
//		ON "execgate_approvals_spent" (expires_at);
//
// and, for a table made by an earlier version of this package, which
// had no content_sha256, or no principal and record_bytes (New refuses
// such a table and says to run Migrate), before the index on principal:
//
//	ALTER TABLE "execgate_approvals" ADD COLUMN IF NOT EXISTS content_sha256 bytea,
//		ADD COLUMN IF NOT EXISTS principal text, ADD COLUMN IF NOT EXISTS record_bytes bigint;
//	UPDATE "execgate_approvals" SET principal = ..., record_bytes = ...
//		WHERE principal IS NULL OR record_bytes IS NULL;
//
// which fills in the principal and size of the rows already pending, from
// their approval, input and salt.
//
// A row of the first table is a pending execgate.Record as it is:
// approval is the Approval as encoding/json writes it, and is what Take
// reads back, through Approval's strict decoder; input holds the caller's
// input byte for byte; salt, fingerprint and stdin_sha256 are the
// record's. digest repeats the approval's digest and expires_at its
// ExpiresAt, for queries only. content_sha256 is the SHA-256 of the
// record as Save stored it (ID, approval, input, salt, fingerprint and
// stdin hash, each prefixed with its length), which a retried Save
// compares; rows saved before the column existed have none, and no Save
// takes them for its own. principal repeats the approval's principal and
// record_bytes the record's size as execgate.Record.Bytes counts it, for
// the quotas per principal.
//
// A row of the second table, "_spent" appended to the first's name, is
// the marker of a record that Take or Delete consumed: its ID, its
// content_sha256 and its expiry, nothing else. Markers keep "executes at
// most once" true when a Save is retried (see below).
//
// A row holds no environment values: a Record has none. The first table
// does hold the record's secret salt and the raw input, so the tables
// belong to the trusted side: grant access to them only to the roles the
// executing and proposing processes use, never to the approver's or the
// agent's. The database should use the UTF8 encoding, as most do.
//
// # The contract
//
// Store implements execgate.ApprovalStore for any number of processes:
//
//   - Single use. Take is one statement, DELETE FROM t WHERE id = $1
//     RETURNING ..., which in the same statement inserts the record's
//     marker, and so is Delete: of any number of concurrent Takes and
//     Deletes of one ID, in any number of processes, at most one gets
//     the row (exactly one, if it was there). An Execute whose Take
//     reached the database has consumed the approval, even if the answer
//     was lost on the way back.
//   - Idempotent Save. Save stores a record only if its ID is neither
//     pending nor marked as consumed. Finding the same ID, it compares
//     content hashes: the very same record gives nil (the retry of a
//     Save that did store it), any other execgate.ErrDuplicateID. So a
//     Save whose outcome is unknown can be retried with the same record,
//     and the retry never makes a record pending again once an Execute
//     took it or a Reject deleted it: it finds the marker and returns
//     nil, and the record stays consumed. A marker is kept until
//     ConsumedRetention (an hour) after the record's expiry, judged with
//     the store's clock; a Save after that may store the record again,
//     but it has been expired for that long, so an Executor refuses it
//     as expired unless its clock is that far behind the store's.
//   - Capacity. Save runs in one READ COMMITTED transaction: it takes a
//     transaction-scoped advisory lock on the table (keys 1702389095 and the
//     table's OID), deletes the expired rows (and the markers past their
//     retention), and inserts the record only if fewer than Capacity rows
//     remain; otherwise it returns execgate.ErrStoreFull and evicts
//     nothing. Markers do not count. The lock serializes Saves on the
//     table across processes, so they never overshoot and no two of them
//     add one ID; Take and Delete do not wait for it. There is no
//     background goroutine: Save prunes, and Prune is there for callers
//     who want to prune on a schedule of their own.
//   - Quotas per principal. In the same statement as the insert, under
//     the same lock, Save counts the rows and record_bytes of the
//     record's principal (Approval.Principal; all records without one
//     share the principal "") and inserts only if the principal holds
//     fewer than Options.PerPrincipalCapacity rows (a quarter of Capacity
//     by default) and, with the record, no more than
//     Options.PerPrincipalMaxBytes (16 MiB by default); otherwise it
//     returns an *execgate.QuotaError naming the principal and the quota,
//     which unwraps to execgate.ErrStoreFull. The table lock serializes
//     every Save on the table, and so every Save of one principal, in any
//     number of processes, so racing Saves never take a principal past
//     its quota. Expired rows were deleted just before, so they free the
//     quota, as Take and Delete do.
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
// Several Stores share a table only if they agree on its Capacity and
// quotas: each enforces its own. A Store of an earlier version on a
// migrated table inserts rows without principal or record_bytes, which
// count against Capacity and no principal's quota. Every process on a table should run the same version
// of this package: one of the first version deletes records without
// leaving markers.
//
// # Errors: what is known after a failure
//
// Save, Take and Delete return execgate.ErrDuplicateID,
// execgate.ErrStoreFull (or an *execgate.QuotaError that unwraps to it)
// and execgate.ErrNoRecord as the ApprovalStore
// contract says, and every other error as a *StateError (match it with
// errors.As; it unwraps to the pgx or context error). Its State says what
// is known:
//
//   - NotApplied: nothing changed. No connection could be had, the
//     context was done before the request was sent, the database
//     answered with an ERROR (the statement or the COMMIT rolled back),
//     or, for Save, the connection failed before its COMMIT was sent: its
//     transaction can then never commit.
//   - MaybeApplied: the request was sent, or may have been, and its answer
//     was lost: a connection cut or a timeout while waiting for the
//     reply, a FATAL error. For Save this happens only at the COMMIT;
//     retry Save with the same record, which stores it, or finds it, or
//     finds its marker. For Take the approval may be consumed without
//     having been returned (it will then never run); Execute it again: it
//     runs if the first Take did not reach the database, and is refused
//     as unknown if it did. For Delete, retry Reject.
//   - Applied: Take consumed the record but its stored envelope was
//     unreadable, or Delete removed it but could not read its expiry. It
//     can never run.
//
// The messages say the same in words ("may have been stored", "not
// taken"), with what failed and what to do; they name the approval's ID
// and never hold its input, salt or hashes.
//
// execgate.Executor.Propose returns the store's error and no Approval, so
// after a MaybeApplied Save through Propose the record, if it was stored,
// stays pending, unreachable, until it expires, counting against
// Capacity. To retry instead, wrap the Store in an ApprovalStore of your
// own whose Save retries on MaybeApplied (see the StateError example).
//
// # The audit trail
//
// An Auditor keeps execgate's audit trail in a table that every gate on
// the database appends to, as one hash-chained trail: the replicas of a
// server share one chain, ordered by the database, instead of a file each.
// MigrateAudit creates it (for the default table):
//
//	CREATE TABLE IF NOT EXISTS "execgate_audit" (
//		seq         bigint PRIMARY KEY CHECK (seq > 0),
//		prev_sha256 text   NOT NULL,
//		line_sha256 text   NOT NULL,
//		line        text   NOT NULL
//	);
//	CREATE OR REPLACE FUNCTION "execgate_audit_refuse"() RETURNS trigger ...
//	CREATE OR REPLACE FUNCTION "execgate_audit_append"() RETURNS trigger ...
//	CREATE TRIGGER "execgate_audit_append_only" BEFORE UPDATE OR DELETE
//		ON "execgate_audit" FOR EACH STATEMENT EXECUTE FUNCTION "execgate_audit_refuse"();
//	CREATE TRIGGER "execgate_audit_no_truncate" BEFORE TRUNCATE
//		ON "execgate_audit" FOR EACH STATEMENT EXECUTE FUNCTION "execgate_audit_refuse"();
//	CREATE TRIGGER "execgate_audit_chained" BEFORE INSERT
//		ON "execgate_audit" FOR EACH ROW EXECUTE FUNCTION "execgate_audit_append"();
//
// A row is one entry: line is the very line an audit.Chain writes to a
// file for the same Event (see audit.Entry: seq, prev, the Event's fields
// and the line's own hash), without its newline; seq repeats the line's
// seq, prev_sha256 its prev (the SHA-256 of the previous row's line, or
// audit.Genesis), and line_sha256 is the SHA-256 of the line, the next
// row's prev_sha256. So the table, read in seq order, is a chain file
// (ExportAudit writes it out), and VerifyAudit checks it as
// audit.VerifyReport checks a file, reporting the first broken or missing
// entry at its seq as an *AuditVerifyError; `execgate audit verify` checks
// the exported file as any other. Wire it as a chain file is wired:
//
//	if err := pgstore.MigrateAudit(ctx, ownerPool, ""); err != nil { ... } // at deployment
//	auditor, err := pgstore.NewAuditor(ctx, pool, pgstore.AuditOptions{})
//	...
//	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow, Store: store, Auditor: auditor})
//
// # One chain from many writers: the lock
//
// Audit runs one READ COMMITTED transaction: it takes the
// transaction-scoped advisory lock pg_advisory_xact_lock(1702389095,
// the table's OID), reads the last row (SELECT seq, line_sha256 ...
// ORDER BY seq DESC LIMIT 1) in a statement of its own, makes the next
// line from it (audit.NextLine), inserts it and commits, which releases
// the lock. The lock is what makes the writers of every process one
// chain with no gap and no fork: while one Audit holds it, no other reads
// the head, and the next holder's read, a new statement with a new
// snapshot, sees the row the last one committed. An advisory lock, and
// not SELECT ... FOR UPDATE on a head row or LOCK TABLE, because it needs
// no privilege but INSERT and SELECT on the table (a head row would have
// to be updatable, and LOCK TABLE in a mode that excludes other writers
// needs UPDATE or DELETE), works on an empty table, and leaves readers
// (VerifyAudit, queries) unblocked. Entries are ordered by when their
// writer got the lock, which is the order the database committed them in.
//
// The lock is cooperative, so the table does not rely on it: its insert
// trigger refuses a row whose seq is not one more than the last row's,
// whose prev_sha256 is not the last row's line_sha256, or whose
// line_sha256, seq or prev do not match its line (SQLSTATE 23000); the
// primary key refuses a second row for a seq. A writer that skipped the
// lock is refused, and no chain can fork.
//
// # What is recorded, and when the database cannot record
//
// An entry is recorded when Audit returns nil: its COMMIT was
// acknowledged (durable as the database's synchronous_commit setting
// makes it). As with a file, the Executor hands a call's intent to Audit
// before it starts the call's process, and starts nothing when Audit fails:
// the table holds an intent for every process that started. When the
// database cannot be reached, refuses the entry or does not answer within
// AuditOptions.Timeout (DefaultAuditTimeout), Audit returns an
// *AuditWriteError and the call is refused with an *execgate.AuditError;
// from then on Ready returns the same error, so that the Executor refuses
// every call that needs a record (a process to start, an approval to
// store or take) before it tries anything. Each refusal is itself handed
// to Audit, and the first that the database takes clears the failure: no
// restart is needed. An AuditWriteError whose State is MaybeApplied (the
// answer to its COMMIT was lost) may have left its entry in the table: an
// intent for a call that did not start, which the refusal's own outcome,
// with the same trace ID, follows once the database answers. Nothing runs
// unrecorded.
//
// Audit does not use the call's context for its deadline or cancellation,
// so that the outcome of a call whose context ended is recorded still; it
// is bounded by AuditOptions.Timeout.
//
// # Append-only: who can change the table
//
// The triggers refuse UPDATE, DELETE and TRUNCATE to every role,
// owner included (SQLSTATE 42501). They are not a wall against the
// table's owner or a superuser: the owner can disable or drop a trigger,
// or the table, and a superuser can also write with
// session_replication_role = replica, which skips triggers. So run
// MigrateAudit as a role that owns the table and that no gate uses, and
// give the gates' role only
//
//	GRANT SELECT, INSERT ON "execgate_audit" TO gate_role;
//
// (and USAGE on the schema). That role can append, and can change nothing
// it appended. The insert trigger also refuses a line that does not
// start with its own seq and prev or does not end with its own hash, so
// that no row the gates' role appends stops verification short of the
// entries after it. The chain has no secret key: a writer that may append
// can append entries that are well formed and false (an outcome for an
// intent, say), as it can to a file. Against the owner, the chain is the
// guard, as for a file: an entry edited, deleted or moved is reported by
// VerifyAudit, one rewritten with hashes to match at the entry after it,
// but whoever can rewrite rows can rewrite every entry from the first
// change to the end, renumbering them, and VerifyAudit cannot tell. Only
// the entries up to a Head kept outside the owner's reach are protected:
// keep Auditor.Head somewhere the owner cannot change, often, and check
// the table against it with ExportAudit and audit.VerifyAnchored.
//
// Each Audit transaction sets its own idle_in_transaction_session_timeout
// and lock_timeout to AuditOptions.Timeout, so that a replica cut off from
// the database while it holds the table's lock (its COMMIT lost, the
// server's side of the connection left open) holds it for that long and
// not for as long as the server keeps a dead connection; set the server's
// tcp_keepalives_* as well, for sessions outside an Audit.
//
// The audit table holds what a chain file holds: never stdin or
// environment values, only their size and the variables' names. The
// database must keep text as UTF8 (NewAuditor checks), so that each line
// is kept byte for byte.
//
// # What a server shows: States
//
// [States] keeps, in the table named after the Store's with "_states"
// appended (made by [MigrateStates], idempotent), what a server shows of
// its approvals: the pending ones for approvers, and what became of each,
// with an approved call's Result until its proposer claims it. The
// execgate binary uses it so that several serve replicas on one database
// share approvals. Each transaction runs at READ COMMITTED, whatever the
// database's default, a single statement that loses a race where the
// default is stricter is run again, and its one-winner guarantees rest on
// row locks:
//
//   - [States.Add] holds the table's advisory lock (as Save does) while it
//     counts the open approvals and inserts.
//   - [States.Take] locks the approval's row with SELECT ... FOR UPDATE
//     and marks it taken; a concurrent Take waits for the lock, then
//     evaluates its condition again on the committed row and finds it
//     taken.
//   - [States.Settle] and [States.Unclaim] hold the table's advisory
//     lock too while they update an open, or claimed, row and, when it
//     has a Result, keep the Results within the table's [ResultBounds]
//     in the same transaction: a principal past its share of the bytes
//     (a quarter of [DefaultResultBytes], 16 MiB, by default) drops its
//     own oldest Results, and past the total the principal holding the
//     most drops its oldest, so that one principal's Results never push
//     out another's. A dropped Result's approval reads [StateDropped];
//     the settle of a call that ran is never refused for a bound.
//     [States.Bound] keeps the outcomes and Results within the bounds it
//     is given the same way, each principal to a quarter of each, under
//     the same lock.
//   - [States.Claim] is one UPDATE ... FROM (SELECT ... FOR UPDATE) that
//     reads and clears the Result, so one claim gets it.
//
// Whether the call runs is never decided here: the Executor takes the
// record from the Store (one DELETE) before it starts the process. An
// approval is taken under a [Lease] of its taker's: only the owner
// settles, releases or renews it, and while the lease runs no reader
// marks it failed, however long its call runs. An approval taken and
// never settled, because its server's process ended, reads
// [StateFailed] once its lease has lapsed by the database's clock.
//
// # Testing
//
// The package's tests, and execgatetest.TestApprovalStore through them,
// run against the database named by EXECGATE_PG_DSN, creating and dropping
// tables of their own; without it they are skipped, and under CI=true they
// fail. The repository's .ci/run shows how to start a throwaway PostgreSQL
// for them. The tests of failures relay their connections through a proxy
// on 127.0.0.1 that reads the protocol to cut or stall a connection at an
// exact message, so they need a database that accepts connections without
// TLS, as .ci/run's does; with a DSN that requires TLS they are skipped.
package pgstore
