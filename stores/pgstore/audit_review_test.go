package pgstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/stores/pgstore"
)

// TestRecordIsTrue_EventStringsWithNULAreRecorded records events whose
// caller-chosen strings hold a NUL (the name of an unknown command, a
// refused tool call's name): each is recorded, as a chain file records
// it, the trail verifies, and the next call runs. Reading the line as JSON
// in the database refused them (PostgreSQL's JSON types refuse an escaped
// NUL), and every call after was refused while the auditor stayed failed.
//
// Invariant 8 of DESIGN.md: the record is always true.
func TestRecordIsTrue_EventStringsWithNULAreRecorded(t *testing.T) {
	ctx := context.Background()
	table := newAuditTable(t)
	pool := newPool(t, nil)
	a := newAuditor(t, pool, table, 0)
	ran := 0
	x := auditedExecutor(t, a, func(context.Context, execgate.Invocation) execgate.Outcome {
		ran++
		return execgate.Outcome{Termination: execgate.TerminationExit}
	})
	noErr(t, x.RecordRefusal(ctx, execgate.Refusal{Route: "mcp tools/call", Name: "x\x00y", Kind: execgate.ErrorKindUnauthenticated, Reason: "no token"}))
	_, err := x.Run(ctx, "nope\x00", nil)
	var nf *execgate.NotFoundError
	errAs(t, err, &nf, "an unknown name is refused as such, not as an audit failure")
	noErr(t, a.Ready(ctx))
	res, err := x.Run(ctx, "deploy", deployInput)
	noErr(t, err)
	truth(t, res.OK, "the call ran")
	truth(t, ran == 1, "the command ran %d times, want once", ran)
	rep, err := pgstore.VerifyAudit(ctx, pool, table)
	noErr(t, err)
	truth(t, rep.Head.Seq >= 4, "the refusals and the call's intent and outcome are all in the table")
}

// gateRole makes a login role with SELECT, INSERT on table (and, with
// schema, a schema of its own it may create in, as "$user" schemas are
// often set up, or as public is on PostgreSQL 14 and older).
func gateRole(t *testing.T, table string, schema bool) *pgxpool.Pool {
	admin := newPool(t, nil)
	var b [6]byte
	_, _ = rand.Read(b[:])
	role := "audit_gate_" + hex.EncodeToString(b[:])
	q, r := pgx.Identifier{table}.Sanitize(), pgx.Identifier{role}.Sanitize()
	mustExec(t, admin, `CREATE ROLE `+r+` LOGIN`)
	mustExec(t, admin, `GRANT SELECT, INSERT ON `+q+` TO `+r)
	if schema {
		mustExec(t, admin, `CREATE SCHEMA `+r+` AUTHORIZATION `+r)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if schema {
			_, _ = admin.Exec(ctx, `DROP SCHEMA `+r+` CASCADE`)
		}
		_, _ = admin.Exec(ctx, `REVOKE ALL ON `+q+` FROM `+r)
		_, _ = admin.Exec(ctx, `DROP ROLE `+r)
	})
	return newPool(t, func(c *pgxpool.Config) {
		c.ConnConfig.User = role
		c.ConnConfig.Password = ""
		c.MaxConns = 1
	})
}

// TestAudit_GateRoleCannotAppendALineWithoutItsOwnHash has a role that
// may only select and insert append a row whose columns agree with each
// other and with the last entry but whose line does not end with its own
// hash: the table refuses it. It took it, every later entry chained onto
// it, and verification stopped at it for good, hiding what came after.
func TestAudit_GateRoleCannotAppendALineWithoutItsOwnHash(t *testing.T) {
	ctx := context.Background()
	table := newAuditTable(t)
	gate := gateRole(t, table, false)
	a := newAuditor(t, gate, table, 0)
	for i := range 3 {
		noErr(t, a.Audit(ctx, auditEvent("alice", i)))
	}
	head, err := a.Head(ctx)
	noErr(t, err)
	q := pgx.Identifier{table}.Sanitize()
	for _, tc := range []struct{ name, line string }{
		{"a hash that is not one", fmt.Sprintf(`{"seq":%d,"prev":"%s","op":"run","hash":"nope"}`, head.Seq+1, head.SHA256)},
		{"a well-formed hash of other bytes", fmt.Sprintf(`{"seq":%d,"prev":"%s","op":"run","hash":"%s"}`, head.Seq+1, head.SHA256, head.SHA256)},
		{"no hash at all", fmt.Sprintf(`{"seq":%d,"prev":"%s","op":"run"}`, head.Seq+1, head.SHA256)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gate.Exec(ctx, `INSERT INTO `+q+` (seq, prev_sha256, line_sha256, line) VALUES ($1, $2, encode(sha256(convert_to($3, 'UTF8')), 'hex'), $3)`,
				int64(head.Seq+1), head.SHA256, tc.line)
			isErr(t, err, "the table took a line that does not carry its own hash")
		})
	}
	noErr(t, a.Audit(ctx, auditEvent("bob", 0)))
	_, err = pgstore.VerifyAudit(ctx, gate, table)
	noErr(t, err)
}

// TestAudit_GateRoleSchemasDoNotReplaceTheTriggersOperators has a role
// that may create in a schema of its own define "<>" operators that are
// never true, and put that schema first in its search_path: the table's
// checks still refuse a row that skips ahead with made-up hashes. They ran
// with the inserting role's search_path and took it.
func TestAudit_GateRoleSchemasDoNotReplaceTheTriggersOperators(t *testing.T) {
	ctx := context.Background()
	table := newAuditTable(t)
	gate := gateRole(t, table, true)
	a := newAuditor(t, gate, table, 0)
	for i := range 3 {
		noErr(t, a.Audit(ctx, auditEvent("alice", i)))
	}
	var role string
	noErr(t, gate.QueryRow(ctx, `SELECT current_user`).Scan(&role))
	s := pgx.Identifier{role}.Sanitize()
	conn, err := gate.Acquire(ctx)
	noErr(t, err)
	defer conn.Release()
	for _, stmt := range []string{
		`CREATE FUNCTION ` + s + `.no(bigint, bigint) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT false'`,
		`CREATE FUNCTION ` + s + `.no(text, text) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT false'`,
		`CREATE OPERATOR ` + s + `.<> (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = ` + s + `.no)`,
		`CREATE OPERATOR ` + s + `.<> (LEFTARG = text, RIGHTARG = text, FUNCTION = ` + s + `.no)`,
		`SET search_path = ` + s + `, pg_catalog, public`,
	} {
		_, err := conn.Exec(ctx, stmt)
		noErr(t, err, stmt)
	}
	q := pgx.Identifier{table}.Sanitize()
	_, err = conn.Exec(ctx, `INSERT INTO public.`+q+` (seq, prev_sha256, line_sha256, line) VALUES (100, 'x', 'y', '{"seq":100,"prev":"x"}')`)
	isErr(t, err, "the role's own operators turned the table's checks off")
}

// freezeProxy relays to the database and, once armed, on the first
// client chunk that holds a COMMIT, drops it and every byte after it in
// both directions, and never closes the database side: a network
// partition between a gate and the database mid-transaction.
type freezeProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	armed  bool
	frozen bool
	held   []net.Conn
	wg     sync.WaitGroup
}

func (p *freezeProxy) run() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.held = append(p.held, s, c)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { // client -> server
			defer p.wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					p.mu.Lock()
					if p.armed && bytes.Contains(bytes.ToLower(buf[:n]), []byte("commit\x00")) {
						p.frozen, p.armed = true, false
					}
					fz := p.frozen
					p.mu.Unlock()
					if !fz {
						if _, err := s.Write(buf[:n]); err != nil {
							return
						}
					}
				}
				if err != nil {
					return // the server side stays open: its FIN "never arrives"
				}
			}
		}()
		go func() { // server -> client
			defer p.wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				if n > 0 {
					p.mu.Lock()
					fz := p.frozen
					p.mu.Unlock()
					if !fz {
						if _, err := c.Write(buf[:n]); err != nil {
							return
						}
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

func (p *freezeProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.held {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// TestRecordIsTrue_APartitionedReplicaDoesNotHoldTheChainsLock cuts one
// replica off from the database just as it commits an entry, the server's
// side of its connection left open, as a network partition does: the
// other replica's calls are recorded and run once the cut replica's
// transaction has outlived its timeout. The cut replica's session kept
// the table's lock while the server kept the dead connection (hours, by
// default), and every replica's calls were refused.
//
// Invariant 8 of DESIGN.md: the record is always true, and a gate that
// cannot record refuses only while it cannot.
func TestRecordIsTrue_APartitionedReplicaDoesNotHoldTheChainsLock(t *testing.T) {
	ctx := context.Background()
	table := newAuditTable(t)
	cfg, err := pgxpool.ParseConfig(testDSN(t))
	noErr(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	noErr(t, err)
	p := &freezeProxy{ln: ln, target: net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))}
	go p.run()
	cfg.ConnConfig.Host = "127.0.0.1"
	cfg.ConnConfig.Port = uint16(ln.Addr().(*net.TCPAddr).Port)
	cfg.MaxConns = 1
	proxied, err := pgxpool.NewWithConfig(ctx, cfg)
	noErr(t, err)
	defer func() {
		p.close() // first: the pool's Close would wait on the frozen connection
		proxied.Close()
	}()
	cut := newAuditor(t, proxied, table, time.Second)
	noErr(t, cut.Audit(ctx, auditEvent("a", 0)))
	p.mu.Lock()
	p.armed = true
	p.mu.Unlock()
	var we *pgstore.AuditWriteError
	errAs(t, cut.Audit(ctx, auditEvent("a", 1)), &we, "the cut replica's entry is not recorded")

	other := newAuditor(t, newPool(t, nil), table, 5*time.Second)
	ran := 0
	x := auditedExecutor(t, other, func(context.Context, execgate.Invocation) execgate.Outcome {
		ran++
		return execgate.Outcome{Termination: execgate.TerminationExit}
	})
	var last error
	for range 3 {
		_, last = x.Run(ctx, "deploy", deployInput)
		if last == nil {
			break
		}
		var ae *execgate.AuditError
		truth(t, errors.As(last, &ae), "refused for another reason: %v", last)
	}
	noErr(t, last, "the other replica's calls stay refused while the cut one's session holds the lock")
	truth(t, ran == 1, "the command ran %d times, want once", ran)
}

// noErr fails the test now when err is not nil.
func noErr(t *testing.T, err error, msg ...any) {
	t.Helper()
	if err != nil {
		t.Fatal(append([]any{err}, msg...)...)
	}
}

// isErr fails the test now when err is nil.
func isErr(t *testing.T, err error, msg string) {
	t.Helper()
	if err == nil {
		t.Fatal(msg)
	}
}

// errAs fails the test now when err is not a target.
func errAs[T error](t *testing.T, err error, target *T, msg string) {
	t.Helper()
	if !errors.As(err, target) {
		t.Fatalf("%s: got %v", msg, err)
	}
}

// truth fails the test now when ok is false.
func truth(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf(format, args...)
	}
}
