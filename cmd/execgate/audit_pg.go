package main

import (
	"context"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/stores/pgstore"
)

// pgAudit is the audit table of a gate whose server section has an
// audit_store: the pool and the Auditor that appends to the table, one
// chain with every other replica's.
type pgAudit struct {
	pool    *pgxpool.Pool
	auditor *scrubbedAuditor
}

// scrubbedAuditor is a pgstore.Auditor whose errors, which the Executor
// hands to callers inside an *execgate.AuditError and serve logs, have
// the connection string's password cut out (scrubPassword), should the
// driver or the server ever quote it.
type scrubbedAuditor struct {
	a   *pgstore.Auditor
	cfg *pgxpool.Config
}

var _ execgate.ReadyAuditor = (*scrubbedAuditor)(nil)

// Audit implements execgate.Auditor.
func (s *scrubbedAuditor) Audit(ctx context.Context, ev execgate.Event) error {
	return scrubPassword(s.a.Audit(ctx, ev), s.cfg)
}

// Ready implements execgate.ReadyAuditor.
func (s *scrubbedAuditor) Ready(ctx context.Context) error {
	return scrubPassword(s.a.Ready(ctx), s.cfg)
}

// openPGAudit connects to the database whose connection string is in the
// variable srv.AuditStore names and returns an Auditor on its table. A
// table that is missing, or lacks one of its triggers, is created or
// completed first (pgstore.MigrateAudit); a table that is whole is used
// as it is, so that serve's role needs only SELECT and INSERT on a table
// its owner migrated. getenv reads the variable; its value is never
// repeated in an error.
func openPGAudit(srv *config.Server, getenv func(string) string) (*pgAudit, error) {
	s := srv.AuditStore
	where := fmt.Sprintf("server.audit_store (line %d)", s.Line)
	ctx, cancel := context.WithTimeout(context.Background(), pgOpenTimeout)
	defer cancel()
	pool, cfg, err := openPGPool(ctx, where, getenv, s.DSNEnv)
	if err != nil {
		return nil, err
	}
	a, err := newPGAuditor(ctx, pool, s.Table)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("%s: %w", where, scrubPassword(err, cfg))
	}
	return &pgAudit{pool: pool, auditor: &scrubbedAuditor{a: a, cfg: cfg}}, nil
}

// newPGAuditor returns an Auditor on table, migrating the table first
// when it is not whole.
func newPGAuditor(ctx context.Context, pool *pgxpool.Pool, table string) (*pgstore.Auditor, error) {
	opts := pgstore.AuditOptions{Table: table}
	a, err := pgstore.NewAuditor(ctx, pool, opts)
	if err == nil {
		return a, nil
	}
	if merr := pgstore.MigrateAudit(ctx, pool, table); merr != nil {
		return nil, fmt.Errorf("the audit table %s is not ready (%v), and creating it failed: %w; run the migration once as the role that is to own the table (start serve with its connection string), and give serve's role SELECT and INSERT on it", table, err, merr)
	}
	return pgstore.NewAuditor(ctx, pool, opts)
}

// Close closes the pool.
func (p *pgAudit) Close() { p.pool.Close() }

// auditStoreOf opens srv's audit table, or returns nil when the server
// section has no audit_store.
func auditStoreOf(srv *config.Server) (*pgAudit, error) {
	if !srv.AuditStore.IsPostgres() {
		return nil, nil
	}
	return openPGAudit(srv, os.Getenv)
}
