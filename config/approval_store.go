package config

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The kinds of approval store of server.approval_store's kind.
const (
	// ApprovalStoreMemory keeps pending approvals, decisions and the
	// Results of approved calls in serve's own memory: a restart loses
	// them, and no other replica sees them. It is the default.
	ApprovalStoreMemory = "memory"
	// ApprovalStorePostgres keeps them in PostgreSQL, shared by every
	// serve on the same database and tables, and kept across restarts.
	ApprovalStorePostgres = "postgres"
)

// DefaultApprovalTable is server.approval_store.table when the file
// does not set it: the table of pending records, beside which serve
// keeps the tables it derives from the name.
const DefaultApprovalTable = "execgate_approvals"

// ApprovalStore is server.approval_store: where serve keeps pending
// approvals, the decisions on them and the Results of approved calls.
// The zero value, what a file without the key gives, is the memory
// store.
type ApprovalStore struct {
	// Kind is ApprovalStoreMemory ("" reads as it) or
	// ApprovalStorePostgres.
	Kind string
	// DSNEnv is, for postgres, the name of the environment variable of
	// serve's process that holds the database's connection string; the
	// file never holds the connection string itself. "" for memory.
	DSNEnv string
	// Table is, for postgres, the table of pending records: a lowercase
	// SQL identifier, optionally qualified by a schema, at most 48
	// bytes; [DefaultApprovalTable] when the file does not set it. ""
	// for memory.
	Table string
	// Line is the line of the approval_store key, 0 when absent.
	Line int
}

// IsPostgres reports whether s keeps approvals in PostgreSQL.
func (s ApprovalStore) IsPostgres() bool { return s.Kind == ApprovalStorePostgres }

// approvalStoreDoc is the raw server.approval_store.
type approvalStoreDoc struct {
	key, node          *yaml.Node
	path               string
	ok                 bool
	keys               map[string]bool
	kind, dsnEnv, tabl val[string]
	dsn                *yaml.Node // a dsn key, which is refused
}

// approvalStore decodes server.approval_store.
func (d *decoder) approvalStore(k, n *yaml.Node, path string) *approvalStoreDoc {
	s := &approvalStoreDoc{key: k, node: n, path: path, ok: n.Kind == yaml.MappingNode}
	s.keys = d.mapping(n, path, fields{handlers: map[string]handler{
		"kind":    d.str(&s.kind),
		"dsn_env": d.str(&s.dsnEnv),
		"table":   d.str(&s.tabl),
		"dsn":     func(k, _ *yaml.Node, _ string) { s.dsn = k },
	}})
	return s
}

// tableRe is what server.approval_store.table must look like: a table
// name stores/pgstore accepts, and checkTable bounds the whole name,
// schema and dot included, to 48 bytes, stricter than pgstore, which
// bounds the table part alone to 48 and the schema to 63.
var tableRe = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$`)

// checkApprovalStore checks server.approval_store and returns it; the
// memory store when doc is nil. No message repeats a dsn_env or a dsn
// value: either may be a connection string, with its password, pasted
// in place of a name.
func (b *builder) checkApprovalStore(doc *approvalStoreDoc) ApprovalStore {
	if doc == nil || !doc.ok {
		return ApprovalStore{}
	}
	out := ApprovalStore{Line: doc.key.Line}
	b.refuseDSN(doc)
	kind := ApprovalStoreMemory
	if doc.kind.set {
		kind = doc.kind.v
	}
	switch kind {
	case ApprovalStoreMemory:
		for _, f := range []val[string]{doc.dsnEnv, doc.tabl} {
			if f.set {
				b.add(f.node, f.path, "is for kind: postgres; the memory store keeps approvals in serve's memory")
			}
		}
		return out
	case ApprovalStorePostgres:
	default:
		b.add(doc.kind.node, doc.kind.path, "must be memory or postgres, not %s", quote(kind))
		return out
	}
	out.Kind = kind
	out.DSNEnv = b.checkDSNEnv(doc)
	out.Table = b.checkTable(doc.tabl, DefaultApprovalTable, "approvals.pending")
	return out
}

// refuseDSN refuses the dsn key of a store's section, if the file has
// one, without repeating its value.
func (b *builder) refuseDSN(doc *approvalStoreDoc) {
	if doc.dsn != nil {
		b.add(doc.dsn, keyPath(doc.path, "dsn"), "the connection string is never written in the file: put it in an environment variable of serve's process and name the variable with dsn_env, such as dsn_env: EXECGATE_PG_DSN")
	}
}

// checkDSNEnv checks the dsn_env of a postgres store's section (the
// approval store's or the audit store's) and returns it, or "" when it
// is missing or refused. No message repeats the value: it may be a
// connection string, with its password, pasted in place of a name.
func (b *builder) checkDSNEnv(doc *approvalStoreDoc) string {
	b.required(doc.node, doc.path, doc.keys, "dsn_env", "the name of the environment variable that holds the PostgreSQL connection string, such as EXECGATE_PG_DSN; never the connection string itself")
	f := doc.dsnEnv
	if !f.set {
		return ""
	}
	switch {
	case strings.Contains(f.v, "://") || strings.Contains(f.v, "="):
		b.add(f.node, f.path, "looks like a connection string, which is never written in the file: put it in an environment variable and name the variable here, such as EXECGATE_PG_DSN")
	case !envNameRe.MatchString(f.v):
		b.add(f.node, f.path, "must be the name of an environment variable, such as EXECGATE_PG_DSN (letters, digits and _, not starting with a digit, at most 128), never the connection string itself")
	default:
		if by, ok := b.inheritedEnv()[f.v]; ok {
			b.add(f.node, f.path, "names a variable that inherit_env at line %d passes to %s: the commands an agent runs would hold the database's connection string; keep it in a variable no tool inherits", by.line, by.what)
			return ""
		}
		return f.v
	}
	return ""
}

// checkTable checks the table of a postgres store's section and returns
// it, or def when the file does not set it or sets one that is refused;
// example is a qualified name the message shows.
func (b *builder) checkTable(f val[string], def, example string) string {
	if !f.set {
		return def
	}
	if len(f.v) > 48 || !tableRe.MatchString(f.v) {
		b.add(f.node, f.path, "must be a lowercase SQL identifier ([a-z_][a-z0-9_]*), optionally qualified by a schema (%s), at most 48 bytes", example)
		return def
	}
	return f.v
}

// String says which store s is, as execgate check reports it; it names
// the variable of the connection string, never its value.
func (s ApprovalStore) String() string {
	if !s.IsPostgres() {
		return "memory (this process only; a restart loses pending approvals)"
	}
	return fmt.Sprintf("postgres (table %s, connection string from $%s)", s.Table, s.DSNEnv)
}
