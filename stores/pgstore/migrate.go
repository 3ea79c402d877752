package pgstore

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultTable is the table a Store uses, and Migrate creates, when none
// is named.
const DefaultTable = "execgate_approvals"

// migrateLock is the second key of the advisory lock Migrate holds, under
// lockClass, so that processes migrating at once do not race inside
// CREATE TABLE IF NOT EXISTS.
const migrateLock = 0

// Migrate creates the table for a Store, the table of its consumed
// records' markers (the same name with "_spent" appended) and their
// indexes, if they do not exist: table is a name as in Options.Table, ""
// meaning DefaultTable. A table made by an earlier version of this
// package gets the columns it lacks (content_sha256, and principal and
// record_bytes, which the quotas per principal count, filled in from each
// row's approval and sizes), the index on principal, and its marker
// table; nothing else of a table that exists is changed. Migrate is idempotent
// and safe to run from several processes at once. Nothing in this package
// migrates on its own: call Migrate at deployment or at startup, with a
// role allowed to create tables. The statements are shown in the package
// documentation.
func Migrate(ctx context.Context, pool *pgxpool.Pool, table string) error {
	if pool == nil {
		return errors.New("pgstore: Migrate needs a pool")
	}
	t, err := parseTable(table)
	if err != nil {
		return err
	}
	return migrateIn(ctx, pool, t.quoted, func(tx pgx.Tx) error {
		if err := execAll(ctx, tx, t.createTable(), t.createIndex(), t.createSpent(), t.createSpentIndex()); err != nil {
			return err
		}
		// ALTER TABLE locks the table even when it has nothing to add, so
		// it runs only for a table that lacks a column.
		var has bool
		if err := tx.QueryRow(ctx, hasColumnSQL, t.quoted).Scan(&has); err != nil {
			return err
		}
		if !has {
			if err := execAll(ctx, tx, t.upgrade()...); err != nil {
				return err
			}
		}
		return execAll(ctx, tx, t.createPrincipalIndex())
	})
}

// migrateIn runs steps in one transaction that holds the migrations'
// advisory lock (lockClass, migrateLock), so that processes migrating at
// once take turns inside CREATE ... IF NOT EXISTS, and commits it. Its
// errors say that what (a quoted table name) was being migrated.
func migrateIn(ctx context.Context, pool *pgxpool.Pool, what string, steps func(pgx.Tx) error) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: migrating %s: %w", what, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // a no-op after Commit
	if _, err := tx.Exec(ctx, fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d, %d)`, lockClass, migrateLock)); err != nil {
		return fmt.Errorf("pgstore: migrating %s: %w", what, err)
	}
	if err := steps(tx); err != nil {
		return fmt.Errorf("pgstore: migrating %s: %w", what, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgstore: migrating %s: %w", what, err)
	}
	return nil
}

// execAll executes stmts in tx, in order, up to the first that fails.
func execAll(ctx context.Context, tx pgx.Tx, stmts ...string) error {
	for _, stmt := range stmts {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// laterColumns are the columns of the table that its first versions
// lacked.
var laterColumns = []string{"content_sha256", "principal", "record_bytes"}

// hasColumnSQL reports whether the table $1 (quoted, as text) has every
// one of laterColumns.
var hasColumnSQL = hasColumnsSQL(laterColumns)

// hasColumnsSQL returns a query that reports whether the table $1
// (quoted, as text) has every one of columns: ALTER TABLE locks a table
// even when it has nothing to add, so migrations ask first.
func hasColumnsSQL(columns []string) string {
	return `SELECT count(*) = ` + fmt.Sprint(len(columns)) + ` FROM pg_attribute
	WHERE attrelid = $1::text::regclass AND attname IN ('` + strings.Join(columns, "', '") + `') AND attnum > 0 AND NOT attisdropped`
}

// table is a validated table name.
type table struct {
	quoted     string // schema-qualified if given, each part quoted
	index      string // the quoted, unqualified name of the expiry index
	principal  string // the quoted, unqualified name of the principal index
	spent      string // the marker table, qualified and quoted as quoted is
	spentIndex string // the quoted, unqualified name of its expiry index
}

var (
	tablePart  = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,47}$`)
	schemaPart = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)
)

// parseTable validates name ("table" or "schema.table") and quotes it. The
// table part is at most 48 bytes so that the names PostgreSQL and this
// package derive from it (the primary keys', the indexes', the marker
// table's) fit its 63-byte limit.
func parseTable(name string) (table, error) {
	if name == "" {
		name = DefaultTable
	}
	schema, tbl, qualified := strings.Cut(name, ".")
	if !qualified {
		schema, tbl = "", name
	}
	if !tablePart.MatchString(tbl) || (qualified && !schemaPart.MatchString(schema)) {
		return table{}, fmt.Errorf("pgstore: table name %q is not a lowercase SQL identifier ([a-z_][a-z0-9_]*, at most 48 bytes), optionally after a schema and a dot", name)
	}
	id := pgx.Identifier{tbl}
	spent := pgx.Identifier{tbl + "_spent"}
	if qualified {
		id = pgx.Identifier{schema, tbl}
		spent = pgx.Identifier{schema, tbl + "_spent"}
	}
	return table{
		quoted:     id.Sanitize(),
		index:      pgx.Identifier{tbl + "_expires_at_idx"}.Sanitize(),
		principal:  pgx.Identifier{tbl + "_principal_idx"}.Sanitize(),
		spent:      spent.Sanitize(),
		spentIndex: pgx.Identifier{tbl + "_spent_exp_idx"}.Sanitize(),
	}, nil
}

// createTable is the table's definition; keep it in step with the package
// documentation.
func (t table) createTable() string {
	return `CREATE TABLE IF NOT EXISTS ` + t.quoted + ` (
	id             text        PRIMARY KEY,
	approval       json        NOT NULL,
	input          bytea       NOT NULL,
	salt           bytea       NOT NULL,
	fingerprint    text        NOT NULL,
	stdin_sha256   text        NOT NULL,
	digest         text        NOT NULL,
	expires_at     timestamptz NOT NULL,
	content_sha256 bytea,
	principal      text,
	record_bytes   bigint
)`
}

// upgrade adds the columns an earlier version's table lacks and fills in
// principal and record_bytes of the rows it holds, as Save would have:
// the approval's principal, and the bytes of the input, salt, reason and
// arguments (execgate.Record.Bytes). Rows that a Store of an earlier
// version inserts later have neither, and count against no principal's
// quota; they still count against Capacity.
func (t table) upgrade() []string {
	return []string{
		`ALTER TABLE ` + t.quoted + ` ADD COLUMN IF NOT EXISTS content_sha256 bytea,
	ADD COLUMN IF NOT EXISTS principal text, ADD COLUMN IF NOT EXISTS record_bytes bigint`,
		`UPDATE ` + t.quoted + ` SET principal = coalesce(approval->>'principal', ''),
	record_bytes = octet_length(input) + octet_length(salt) + coalesce(octet_length(approval->>'reason'), 0)
		+ CASE json_typeof(approval->'args') WHEN 'array' THEN
			(SELECT coalesce(sum(octet_length(a)), 0) FROM json_array_elements_text(approval->'args') AS a) ELSE 0 END
	WHERE principal IS NULL OR record_bytes IS NULL`,
	}
}

// createPrincipalIndex is the index the quotas per principal use.
func (t table) createPrincipalIndex() string {
	return `CREATE INDEX IF NOT EXISTS ` + t.principal + ` ON ` + t.quoted + ` (principal)`
}

func (t table) createIndex() string {
	return `CREATE INDEX IF NOT EXISTS ` + t.index + ` ON ` + t.quoted + ` (expires_at)`
}

// createSpent is the marker table's definition; keep it in step with the
// package documentation.
func (t table) createSpent() string {
	return `CREATE TABLE IF NOT EXISTS ` + t.spent + ` (
	id             text        PRIMARY KEY,
	content_sha256 bytea,
	expires_at     timestamptz NOT NULL
)`
}

func (t table) createSpentIndex() string {
	return `CREATE INDEX IF NOT EXISTS ` + t.spentIndex + ` ON ` + t.spent + ` (expires_at)`
}
