package config

import "fmt"

// AuditStorePostgres is the kind of server.audit_store, the only one:
// the audit trail in a PostgreSQL table that every serve on the same
// database and table appends to as one hash-chained trail.
const AuditStorePostgres = "postgres"

// DefaultAuditTable is server.audit_store.table when the file does not
// set it: the table stores/pgstore's Auditor appends to by default.
const DefaultAuditTable = "execgate_audit"

// AuditStore is server.audit_store: a PostgreSQL table serve appends
// every call's audit entries to, beside the file of serve's --audit, if
// any. The zero value, what a file without the key gives, is no table.
type AuditStore struct {
	// Kind is AuditStorePostgres, or "" when the file has no
	// audit_store.
	Kind string
	// DSNEnv is the name of the environment variable of serve's process
	// that holds the database's connection string; the file never holds
	// the connection string itself. It may be the approval store's.
	DSNEnv string
	// Table is the audit table: a lowercase SQL identifier, optionally
	// qualified by a schema, at most 48 bytes; [DefaultAuditTable] when
	// the file does not set it.
	Table string
	// Line is the line of the audit_store key, 0 when absent.
	Line int
}

// IsPostgres reports whether s appends the audit trail to a PostgreSQL
// table.
func (s AuditStore) IsPostgres() bool { return s.Kind == AuditStorePostgres }

// String says where s keeps the audit trail, as execgate check reports
// it; it names the variable of the connection string, never its value.
func (s AuditStore) String() string {
	if !s.IsPostgres() {
		return "none (the file of --audit only, if given)"
	}
	return fmt.Sprintf("postgres (table %s, connection string from $%s)", s.Table, s.DSNEnv)
}

// checkAuditStore checks server.audit_store and returns it; no table
// when doc is nil. Its keys are the approval store's, decoded alike, and
// its dsn_env and table are checked by the same code: no message repeats
// a dsn_env or a dsn value.
func (b *builder) checkAuditStore(doc *approvalStoreDoc) AuditStore {
	if doc == nil || !doc.ok {
		return AuditStore{}
	}
	b.refuseDSN(doc)
	b.required(doc.node, doc.path, doc.keys, "kind", "postgres, the only kind of audit store (serve's --audit FILE keeps the trail in a file)")
	switch f := doc.kind; {
	case !f.set:
		return AuditStore{}
	case f.v != AuditStorePostgres:
		b.add(f.node, f.path, "must be postgres, not %s: serve's --audit FILE keeps the trail in a file", quote(f.v))
		return AuditStore{}
	}
	return AuditStore{
		Kind:   AuditStorePostgres,
		DSNEnv: b.checkDSNEnv(doc),
		Table:  b.checkTable(doc.tabl, DefaultAuditTable, "audit.trail"),
		Line:   doc.key.Line,
	}
}
