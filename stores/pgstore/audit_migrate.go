package pgstore

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultAuditTable is the table an Auditor appends to, and MigrateAudit
// creates, when none is named.
const DefaultAuditTable = "execgate_audit"

// MigrateAudit creates the audit table that Auditors append to and
// VerifyAudit checks, with the triggers that keep it append-only and
// chained, if they do not exist: table is a name as in
// AuditOptions.Table, "" meaning DefaultAuditTable. It is idempotent and
// safe to run from several processes at once, and changes nothing of a
// table that exists but adds a trigger it lacks. Run it at deployment,
// with the role that is to own the table, and grant the role the gates
// use only SELECT and INSERT on it (see the package documentation: the
// owner of the table can drop the triggers; no other role can). The
// statements are shown in the package documentation.
func MigrateAudit(ctx context.Context, pool *pgxpool.Pool, table string) error {
	if pool == nil {
		return errors.New("pgstore: MigrateAudit needs a pool")
	}
	t, err := parseAuditTable(table)
	if err != nil {
		return err
	}
	return migrateIn(ctx, pool, t.quoted, func(tx pgx.Tx) error {
		if err := execAll(ctx, tx, t.createTable(), t.createRefuse(), t.createAppend()); err != nil {
			return err
		}
		for _, trg := range t.triggers() {
			var has bool
			if err := tx.QueryRow(ctx, hasTriggerSQL, t.quoted, trg.name).Scan(&has); err != nil {
				return err
			}
			if !has {
				if err := execAll(ctx, tx, trg.create); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// hasTriggerSQL reports whether the table $1 (quoted, as text) has the
// trigger named $2 (unquoted).
const hasTriggerSQL = `SELECT EXISTS (SELECT FROM pg_trigger WHERE tgrelid = $1::text::regclass AND tgname = $2)`

// auditTable is a validated audit table name and the names derived from
// it.
type auditTable struct {
	quoted  string // schema-qualified if given, each part quoted
	refuse  string // the function that refuses changes, qualified as quoted is
	append  string // the function that checks each insert, qualified as quoted is
	guardTg string // the unquoted name of the trigger that calls refuse
	truncTg string // the unquoted name of the trigger that refuses TRUNCATE
	chainTg string // the unquoted name of the trigger that calls append
}

// parseAuditTable validates name as parseTable does and derives the
// names of the audit table's functions and triggers.
func parseAuditTable(name string) (auditTable, error) {
	if name == "" {
		name = DefaultAuditTable
	}
	if _, err := parseTable(name); err != nil {
		return auditTable{}, err
	}
	schema, tbl, qualified := strings.Cut(name, ".")
	if !qualified {
		schema, tbl = "", name
	}
	ident := func(n string) string {
		if qualified {
			return pgx.Identifier{schema, n}.Sanitize()
		}
		return pgx.Identifier{n}.Sanitize()
	}
	return auditTable{
		quoted:  ident(tbl),
		refuse:  ident(tbl + "_refuse"),
		append:  ident(tbl + "_append"),
		guardTg: tbl + "_append_only",
		truncTg: tbl + "_no_truncate",
		chainTg: tbl + "_chained",
	}, nil
}

// createTable is the audit table's definition; keep it in step with the
// package documentation.
func (t auditTable) createTable() string {
	return `CREATE TABLE IF NOT EXISTS ` + t.quoted + ` (
	seq         bigint PRIMARY KEY CHECK (seq > 0),
	prev_sha256 text   NOT NULL,
	line_sha256 text   NOT NULL,
	line        text   NOT NULL
)`
}

// createRefuse is the function the append-only triggers call.
func (t auditTable) createRefuse() string {
	return `CREATE OR REPLACE FUNCTION ` + t.refuse + `() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	RAISE EXCEPTION 'execgate audit table %: % refused: the audit trail is append-only', TG_TABLE_NAME, TG_OP
		USING ERRCODE = 'insufficient_privilege',
		HINT = 'entries are only ever appended; to start a new trail, create a new table';
END
$$`
}

// createAppend is the function that checks each insert: the row must
// continue the chain, its columns must agree with its line, and the line
// must carry its own hash (it ends with `,"hash":"<hex>"}`, hex the SHA-256
// of what comes before that comma), as every line of a chain does. The line
// is compared as text, not read as JSON: PostgreSQL's JSON types refuse the
// escaped NUL that an event's strings may hold. Both functions run with a
// fixed search_path, so that no operator or function of the inserting
// role's schemas stands in for the built-in ones.
func (t auditTable) createAppend() string {
	return `CREATE OR REPLACE FUNCTION ` + t.append + `() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	last_seq    bigint;
	last_sha256 text;
	entry       text;
	body        integer;
BEGIN
	EXECUTE format('SELECT seq, line_sha256 FROM %s ORDER BY seq DESC LIMIT 1', TG_RELID::regclass)
		INTO last_seq, last_sha256;
	IF NEW.seq <> coalesce(last_seq, 0) + 1
		OR NEW.prev_sha256 <> coalesce(last_sha256, repeat('0', 64)) THEN
		RAISE EXCEPTION 'execgate audit table %: entry % does not follow the last entry %', TG_TABLE_NAME, NEW.seq, coalesce(last_seq, 0)
			USING ERRCODE = 'integrity_constraint_violation',
			HINT = 'append under the table''s advisory lock, after reading the last entry';
	END IF;
	entry := format('{"seq":%s,"prev":"%s",', NEW.seq, NEW.prev_sha256);
	body := char_length(NEW.line) - 75; -- 75: the length of ,"hash":"<64 hex>"}
	IF NEW.line_sha256 <> encode(sha256(convert_to(NEW.line, 'UTF8')), 'hex')
		OR left(NEW.line, char_length(entry)) <> entry
		OR body < char_length(entry)
		OR substr(NEW.line, body + 1, 9) <> ',"hash":"'
		OR right(NEW.line, 2) <> '"}'
		OR substr(NEW.line, body + 10, 64) <> encode(sha256(convert_to(left(NEW.line, body), 'UTF8')), 'hex') THEN
		RAISE EXCEPTION 'execgate audit table %: entry %: its columns do not match its line', TG_TABLE_NAME, NEW.seq
			USING ERRCODE = 'integrity_constraint_violation';
	END IF;
	RETURN NEW;
END
$$`
}

// trigger is one of the audit table's triggers.
type trigger struct {
	name, create string
}

// triggers are the audit table's triggers; keep them in step with the
// package documentation.
func (t auditTable) triggers() []trigger {
	on := ` ON ` + t.quoted
	return []trigger{
		{t.guardTg, `CREATE TRIGGER ` + pgx.Identifier{t.guardTg}.Sanitize() + ` BEFORE UPDATE OR DELETE` + on +
			` FOR EACH STATEMENT EXECUTE FUNCTION ` + t.refuse + `()`},
		{t.truncTg, `CREATE TRIGGER ` + pgx.Identifier{t.truncTg}.Sanitize() + ` BEFORE TRUNCATE` + on +
			` FOR EACH STATEMENT EXECUTE FUNCTION ` + t.refuse + `()`},
		{t.chainTg, `CREATE TRIGGER ` + pgx.Identifier{t.chainTg}.Sanitize() + ` BEFORE INSERT` + on +
			` FOR EACH ROW EXECUTE FUNCTION ` + t.append + `()`},
	}
}
