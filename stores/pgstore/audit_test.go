package pgstore_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/stores/pgstore"
)

// newAuditTable creates an audit table of the test's own, with a random
// name, and drops it and its functions when the test ends.
func newAuditTable(tb testing.TB) string {
	tb.Helper()
	admin := newPool(tb, func(c *pgxpool.Config) { c.MaxConns = 1 })
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "execgate_audit_test_" + hex.EncodeToString(b[:])
	if err := pgstore.MigrateAudit(context.Background(), admin, name); err != nil {
		tb.Fatalf("MigrateAudit(%s): %v", name, err)
	}
	tb.Cleanup(func() {
		for _, stmt := range []string{
			"DROP TABLE IF EXISTS " + pgx.Identifier{name}.Sanitize(),
			"DROP FUNCTION IF EXISTS " + pgx.Identifier{name + "_refuse"}.Sanitize() + "(), " + pgx.Identifier{name + "_append"}.Sanitize() + "()",
		} {
			if _, err := admin.Exec(context.Background(), stmt); err != nil {
				tb.Errorf("dropping %s: %v", name, err)
			}
		}
	})
	return name
}

// newAuditor returns an Auditor on table through pool.
func newAuditor(tb testing.TB, pool *pgxpool.Pool, table string, timeout time.Duration) *pgstore.Auditor {
	tb.Helper()
	a, err := pgstore.NewAuditor(context.Background(), pool, pgstore.AuditOptions{Table: table, Timeout: timeout})
	if err != nil {
		tb.Fatalf("NewAuditor: %v", err)
	}
	return a
}

// auditedExecutor returns an Executor with the tests' allowlist, auditor
// as its Auditor and exec as its ExecFn.
func auditedExecutor(tb testing.TB, auditor execgate.Auditor, exec execgate.ExecFn) *execgate.Executor {
	tb.Helper()
	allow, err := testAllowlist("1")
	if err != nil {
		tb.Fatalf("allowlist: %v", err)
	}
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow, ExecFn: exec, Auditor: auditor})
	if err != nil {
		tb.Fatalf("NewExecutor: %v", err)
	}
	return x
}

// auditEvent is a distinct Event for the tests that audit directly.
func auditEvent(who string, i int) execgate.Event {
	return execgate.Event{
		Op: execgate.OpRun, Phase: execgate.PhaseOutcome, TraceID: fmt.Sprintf("%s-%d", who, i),
		Time: time.Date(2026, 12, 1, 12, 0, 0, i, time.UTC), Principal: who, Name: "deploy",
		Args: []string{"deploy", strconv.Itoa(i)}, Termination: execgate.TerminationExit,
	}
}

// TestAudit_SameLinesAsAChainFile: the table's lines, exported, are byte
// for byte what an audit.Chain writes for the same Events, and verify as a
// file.
func TestAudit_SameLinesAsAChainFile(t *testing.T) {
	ctx := context.Background()
	table := newAuditTable(t)
	pool := newPool(t, nil)
	a := newAuditor(t, pool, table, 0)
	var file bytes.Buffer
	chain := audit.NewChain(&file, audit.ChainOptions{})
	for i := range 5 {
		ev := auditEvent("alice", i)
		if err := a.Audit(ctx, ev); err != nil {
			t.Fatalf("Audit %d: %v", i, err)
		}
		if err := chain.Audit(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	var exported bytes.Buffer
	if err := pgstore.ExportAudit(ctx, pool, table, &exported); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(exported.Bytes(), file.Bytes()) {
		t.Errorf("the table's lines differ from a chain file's:\n%s\nwant\n%s", exported.Bytes(), file.Bytes())
	}
	head, err := a.Head(ctx)
	if err != nil || head != chain.Head() {
		t.Errorf("Head = %+v, %v; want the chain file's %+v", head, err, chain.Head())
	}
	if err := audit.VerifyAnchored(bytes.NewReader(exported.Bytes()), head); err != nil {
		t.Errorf("the exported table does not verify against its Head: %v", err)
	}
}

// TestAudit_OneChainAcrossGoroutines: Auditors with pools of their own,
// each appending from several goroutines at once, append one chain that
// holds every entry once and verifies.
func TestAudit_OneChainAcrossGoroutines(t *testing.T) {
	const auditors, goroutines, each = 3, 4, 25
	ctx := context.Background()
	table := newAuditTable(t)
	var wg sync.WaitGroup
	errs := make(chan error, auditors*goroutines*each)
	for i := range auditors {
		a := newAuditor(t, newPool(t, nil), table, 0)
		for g := range goroutines {
			wg.Go(func() {
				who := fmt.Sprintf("a%d-g%d", i, g)
				for n := range each {
					if err := a.Audit(ctx, auditEvent(who, n)); err != nil {
						errs <- err
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Audit: %v", err)
	}
	rep, err := pgstore.VerifyAudit(ctx, newPool(t, nil), table)
	if err != nil {
		t.Fatalf("VerifyAudit: %v", err)
	}
	if want := uint64(auditors * goroutines * each); rep.Head.Seq != want || rep.Outcomes != want {
		t.Errorf("the chain holds %d entries (%d outcomes); want %d", rep.Head.Seq, rep.Outcomes, want)
	}
	assertEachTraceOnce(t, table, auditors*goroutines*each)
}

// assertEachTraceOnce checks that the table holds n entries, no trace ID
// twice for one phase.
func assertEachTraceOnce(t *testing.T, table string, n int) {
	t.Helper()
	var buf bytes.Buffer
	if err := pgstore.ExportAudit(context.Background(), newPool(t, nil), table, &buf); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	lines := bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n"))
	for _, line := range lines {
		var e audit.Entry
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatal(err)
		}
		key := e.Phase + " " + e.TraceID
		if seen[key] {
			t.Errorf("%s is recorded twice", key)
		}
		seen[key] = true
	}
	if len(lines) != n {
		t.Errorf("the table holds %d entries; want %d", len(lines), n)
	}
}

// The variables the audit helper reads.
const (
	auditTableEnv = "EXECGATE_PGSTORE_AUDIT_TABLE"
	auditCallsEnv = "EXECGATE_PGSTORE_AUDIT_CALLS"
)

// helperAudit is one of the processes that append to one audit table: it
// builds an Executor whose Auditor is on the parent's table, with a pool
// of its own, prints "ready", waits for a line on in, runs the number of
// calls it was told to, and prints how many ran.
func helperAudit(in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, os.Getenv(dsnEnv))
	if err != nil {
		return err
	}
	defer pool.Close()
	a, err := pgstore.NewAuditor(ctx, pool, pgstore.AuditOptions{Table: os.Getenv(auditTableEnv)})
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(os.Getenv(auditCallsEnv))
	if err != nil {
		return err
	}
	allow, err := testAllowlist("1")
	if err != nil {
		return err
	}
	rec := execgatetest.NewRecorder()
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow, ExecFn: rec.Exec, Auditor: a})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "ready")
	if _, err := bufio.NewReader(in).ReadString('\n'); err != nil {
		return err
	}
	ran := 0
	for range n {
		res, err := x.Run(ctx, "deploy", deployInput)
		if err != nil {
			return err
		}
		if res.OK {
			ran++
		}
	}
	fmt.Fprintf(out, "ran %d of %d, spawned %d\n", ran, n, rec.Count())
	return nil
}

// TestRecordIsTrue_OneChainAcrossProcesses: invariant 11 of DESIGN.md
// across replicas. Four processes, each an Executor with an Auditor on the
// same table and a pool of its own, released at once, and the test's own
// Executor beside them, run their calls; the table is one chain that
// verifies, with an intent and an outcome for every call and no call
// unfinished.
func TestRecordIsTrue_OneChainAcrossProcesses(t *testing.T) {
	const procs, each = 4, 30
	dsn := testDSN(t)
	table := newAuditTable(t)
	type child struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout *bufio.Reader
		stderr bytes.Buffer
	}
	children := make([]*child, procs)
	for i := range children {
		c := &child{cmd: exec.Command(os.Args[0], "-test.run=^$")}
		c.cmd.Env = append(os.Environ(), helperEnv+"=audit", dsnEnv+"="+dsn,
			auditTableEnv+"="+table, auditCallsEnv+"="+strconv.Itoa(each))
		c.cmd.Stderr = &c.stderr
		var err error
		if c.stdin, err = c.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		stdout, err := c.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		c.stdout = bufio.NewReader(stdout)
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.cmd.Process.Kill(); _ = c.cmd.Wait() })
		children[i] = c
	}
	for i, c := range children {
		if line, err := c.stdout.ReadString('\n'); line != "ready\n" {
			t.Fatalf("child %d did not get ready: %q, %v; stderr: %s", i, line, err, c.stderr.String())
		}
	}
	rec := execgatetest.NewRecorder()
	x := auditedExecutor(t, newAuditor(t, newPool(t, nil), table, 0), rec.Exec)
	for _, c := range children {
		if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	for range each {
		if res, err := x.Run(context.Background(), "deploy", deployInput); err != nil || !res.OK {
			t.Fatalf("Run = %+v, %v", res, err)
		}
	}
	for i, c := range children {
		rest, _ := io.ReadAll(c.stdout)
		if err := c.cmd.Wait(); err != nil || strings.TrimSpace(string(rest)) != fmt.Sprintf("ran %d of %d, spawned %d", each, each, each) {
			t.Errorf("child %d: %v, stdout %q, stderr %q", i, err, rest, c.stderr.String())
		}
	}
	rep, err := pgstore.VerifyAudit(context.Background(), newPool(t, nil), table)
	if err != nil {
		t.Fatalf("VerifyAudit: %v", err)
	}
	calls := uint64((procs + 1) * each)
	if rep.Intents != calls || rep.Outcomes != calls || len(rep.Unfinished) != 0 {
		t.Errorf("the chain holds %d intents, %d outcomes and %d unfinished calls; want %d, %d and 0",
			rep.Intents, rep.Outcomes, len(rep.Unfinished), calls, calls)
	}
	assertEachTraceOnce(t, table, int(2*calls))
}

// TestAudit_AppendOnly: the table's triggers refuse every change but an
// insert that continues the chain, even to the table's owner.
func TestAudit_AppendOnly(t *testing.T) {
	ctx := context.Background()
	table := newAuditTable(t)
	pool := newPool(t, nil)
	a := newAuditor(t, pool, table, 0)
	for i := range 3 {
		if err := a.Audit(ctx, auditEvent("alice", i)); err != nil {
			t.Fatal(err)
		}
	}
	head, err := a.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	q := pgx.Identifier{table}.Sanitize()
	next, nextHead, err := audit.NextLine(head, auditEvent("mallory", 9))
	if err != nil {
		t.Fatal(err)
	}
	insert := `INSERT INTO ` + q + ` (seq, prev_sha256, line_sha256, line) VALUES ($1, $2, $3, $4)`
	for _, tc := range []struct {
		name string
		sql  string
		args []any
		code string // the SQLSTATE of the refusal
	}{
		{"an entry cannot be edited", `UPDATE ` + q + ` SET line = line WHERE seq = 2`, nil, "42501"},
		{"an entry cannot be deleted", `DELETE FROM ` + q + ` WHERE seq = 3`, nil, "42501"},
		{"the table cannot be truncated", `TRUNCATE ` + q, nil, "42501"},
		{"an entry cannot take a seq that is not the next", insert, []any{int64(head.Seq + 2), head.SHA256, nextHead.SHA256, string(next)}, "23000"},
		{"an entry cannot fork the chain from an older entry", insert, []any{int64(head.Seq + 1), audit.Genesis, nextHead.SHA256, string(next)}, "23000"},
		{"an entry's hash column must be its line's", insert, []any{int64(head.Seq + 1), head.SHA256, audit.Genesis, string(next)}, "23000"},
		{"an entry's line must name its own seq", insert, []any{int64(head.Seq + 1), head.SHA256, nextHead.SHA256, strings.Replace(string(next), `"seq":4`, `"seq":5`, 1)}, "23000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pool.Exec(ctx, tc.sql, tc.args...)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != tc.code {
				t.Fatalf("got %v; want an error with SQLSTATE %s", err, tc.code)
			}
		})
	}
	if _, err := pool.Exec(ctx, insert, int64(nextHead.Seq), head.SHA256, nextHead.SHA256, string(next)); err != nil {
		t.Errorf("the insert that continues the chain was refused: %v", err)
	}
	if rep, err := pgstore.VerifyAudit(ctx, pool, table); err != nil || rep.Head != nextHead {
		t.Errorf("VerifyAudit = %+v, %v; want the chain to end at %+v", rep.Head, err, nextHead)
	}
}

// TestVerifyAudit_FindsTheFirstBrokenEntry: with its triggers disabled by
// the table's owner, an entry changed in the table is reported at its
// seq, a deleted one at the seq it had, and one rewritten with hashes to
// match at the entry after it.
func TestVerifyAudit_FindsTheFirstBrokenEntry(t *testing.T) {
	const entries = 6
	for _, tc := range []struct {
		name    string
		tamper  func(t *testing.T, pool *pgxpool.Pool, q string)
		seq     uint64
		problem audit.Problem
	}{
		{
			name: "a byte of entry 3's line edited",
			tamper: func(t *testing.T, pool *pgxpool.Pool, q string) {
				mustExec(t, pool, `UPDATE `+q+` SET line = replace(line, '"principal":"alice"', '"principal":"alicf"') WHERE seq = 3`)
			},
			seq: 3, problem: audit.ProblemHash,
		},
		{
			name: "entry 4 deleted",
			tamper: func(t *testing.T, pool *pgxpool.Pool, q string) {
				mustExec(t, pool, `DELETE FROM `+q+` WHERE seq = 4`)
			},
			seq: 4, problem: audit.ProblemSequence,
		},
		{
			name: "entry 2 rewritten with its own hashes recomputed",
			tamper: func(t *testing.T, pool *pgxpool.Pool, q string) {
				var prev string
				if err := pool.QueryRow(context.Background(), `SELECT prev_sha256 FROM `+q+` WHERE seq = 2`).Scan(&prev); err != nil {
					t.Fatal(err)
				}
				line, head, err := audit.NextLine(audit.Head{Seq: 1, SHA256: prev}, auditEvent("mallory", 1))
				if err != nil {
					t.Fatal(err)
				}
				mustExec(t, pool, `UPDATE `+q+` SET line = $1, line_sha256 = $2 WHERE seq = 2`, string(line), head.SHA256)
			},
			seq: 3, problem: audit.ProblemChain,
		},
		{
			name: "entry 5's line_sha256 column changed",
			tamper: func(t *testing.T, pool *pgxpool.Pool, q string) {
				mustExec(t, pool, `UPDATE `+q+` SET line_sha256 = repeat('0', 64) WHERE seq = 5`)
			},
			seq: 5, problem: audit.ProblemHash,
		},
		{
			name: "entry 1's prev_sha256 column changed",
			tamper: func(t *testing.T, pool *pgxpool.Pool, q string) {
				mustExec(t, pool, `UPDATE `+q+` SET prev_sha256 = repeat('1', 64) WHERE seq = 1`)
			},
			seq: 1, problem: audit.ProblemChain,
		},
		{
			name: "entry 6's line replaced by JSON that is not an entry",
			tamper: func(t *testing.T, pool *pgxpool.Pool, q string) {
				mustExec(t, pool, `UPDATE `+q+` SET line = '{}', line_sha256 = encode(sha256('{}'::bytea), 'hex') WHERE seq = 6`)
			},
			seq: 6, problem: audit.ProblemBadJSON,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			table := newAuditTable(t)
			pool := newPool(t, nil)
			a := newAuditor(t, pool, table, 0)
			for i := range entries {
				if err := a.Audit(ctx, auditEvent("alice", i)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := pgstore.VerifyAudit(ctx, pool, table); err != nil {
				t.Fatalf("VerifyAudit before the change: %v", err)
			}
			q := pgx.Identifier{table}.Sanitize()
			mustExec(t, pool, `ALTER TABLE `+q+` DISABLE TRIGGER USER`)
			tc.tamper(t, pool, q)
			mustExec(t, pool, `ALTER TABLE `+q+` ENABLE TRIGGER USER`)

			_, err := pgstore.VerifyAudit(ctx, pool, table)
			var ve *pgstore.AuditVerifyError
			if !errors.As(err, &ve) || ve.Seq != tc.seq || ve.Problem != tc.problem {
				t.Fatalf("VerifyAudit = %v; want %s at entry %d", err, tc.problem, tc.seq)
			}
			var fe *audit.VerifyError
			if !errors.As(err, &fe) || fe.Line != int(tc.seq) || fe.Problem != tc.problem {
				t.Errorf("as an *audit.VerifyError: %+v; want line %d, %s", fe, tc.seq, tc.problem)
			}
			if strings.Contains(err.Error(), "alicf") || strings.Contains(err.Error(), "mallory") {
				t.Errorf("the error quotes the entry: %v", err)
			}
		})
	}
}

// mustExec runs a statement that must succeed.
func mustExec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestVerifyAudit_EmptyTable: an empty table is an empty chain.
func TestVerifyAudit_EmptyTable(t *testing.T) {
	rep, err := pgstore.VerifyAudit(context.Background(), newPool(t, nil), newAuditTable(t))
	if err != nil || rep.Head != (audit.Head{SHA256: audit.Genesis}) {
		t.Errorf("VerifyAudit = %+v, %v; want an empty chain", rep, err)
	}
}

// TestRecordIsTrue_NoRecordInTheDatabaseNoStart: invariant 11 of
// DESIGN.md with the trail in PostgreSQL. While the database cannot
// record the intent (it cannot be reached; the answer to the COMMIT is
// lost; the database does not answer within the Auditor's timeout), the
// Executor refuses the call with an *execgate.AuditError and hands nothing
// to its ExecFn, and Ready refuses the next one before anything is tried;
// once the database answers again, the Executor's record of a refusal
// clears the failure, calls run, and the chain verifies.
func TestRecordIsTrue_NoRecordInTheDatabaseNoStart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state pgstore.State
		// fail breaks the connection; it returns what to wait for, if
		// anything, before the fault is undone.
		fail func(proxy *faultProxy, proxied *pgxpool.Pool) <-chan struct{}
		undo func(proxy *faultProxy)
	}{
		{
			name:  "the database cannot be reached",
			state: pgstore.NotApplied,
			fail: func(proxy *faultProxy, proxied *pgxpool.Pool) <-chan struct{} {
				proxy.refuse(true)
				proxied.Reset() // drop the idle connection, so that Audit must connect
				return nil
			},
			undo: func(proxy *faultProxy) { proxy.refuse(false) },
		},
		{
			name:  "the answer to the intent's COMMIT is lost",
			state: pgstore.MaybeApplied,
			fail: func(proxy *faultProxy, _ *pgxpool.Pool) <-chan struct{} {
				return proxy.arm(loseReply, commit)
			},
		},
		{
			name:  "the database does not answer the intent's insert in time",
			state: pgstore.NotApplied,
			fail: func(proxy *faultProxy, _ *pgxpool.Pool) <-chan struct{} {
				return proxy.arm(stall, func(typ byte, body []byte) bool {
					return typ == 'B' && bytes.Contains(body, []byte(`"phase":"intent"`))
				})
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			table := newAuditTable(t)
			proxy, proxied := newFaultProxy(t)
			a := newAuditor(t, proxied, table, 2*time.Second)
			var started int
			var mu sync.Mutex
			x := auditedExecutor(t, a, func(context.Context, execgate.Invocation) execgate.Outcome {
				mu.Lock()
				defer mu.Unlock()
				started++
				return execgate.Outcome{Termination: execgate.TerminationExit}
			})
			if res, err := x.Run(ctx, "deploy", deployInput); err != nil || !res.OK {
				t.Fatalf("Run before the fault = %+v, %v", res, err)
			}

			answered := tc.fail(proxy, proxied)
			_, err := x.Run(ctx, "deploy", deployInput)
			var ae *execgate.AuditError
			var we *pgstore.AuditWriteError
			if !errors.As(err, &ae) || !errors.As(err, &we) || we.State != tc.state {
				t.Fatalf("Run while the database cannot record = %v; want an *execgate.AuditError holding an *AuditWriteError, %s", err, tc.state)
			}
			if answered != nil {
				<-answered
			}
			if tc.undo != nil {
				// Still down: the record of the refusal failed too, and
				// Ready says so.
				if err := a.Ready(ctx); !errors.As(err, &we) {
					t.Fatalf("Ready while the database is down = %v; want the *AuditWriteError", err)
				}
				tc.undo(proxy)
				// Ready refuses this call before anything is written;
				// the Executor's record of the refusal is the Audit
				// that recovers.
				if _, err := x.Run(ctx, "deploy", deployInput); !errors.As(err, &ae) {
					t.Fatalf("Run right after the database came back = %v; want an *execgate.AuditError from Ready", err)
				}
			}
			// The database answers again: the last recorded refusal
			// cleared the failure.
			if err := a.Ready(ctx); err != nil {
				t.Fatalf("Ready once the database answers = %v; want nil", err)
			}
			if res, err := x.Run(ctx, "deploy", deployInput); err != nil || !res.OK {
				t.Fatalf("Run after recovery = %+v, %v", res, err)
			}
			mu.Lock()
			if started != 2 {
				t.Errorf("the ExecFn was handed %d calls; want 2, the one before the fault and the one after", started)
			}
			mu.Unlock()

			rep, err := pgstore.VerifyAudit(ctx, newPool(t, nil), table)
			if err != nil {
				t.Fatalf("VerifyAudit: %v", err)
			}
			// A lost COMMIT answer leaves the refused call's intent
			// recorded, followed by the outcome of its refusal (kind
			// audit) with its trace ID: a call that never started, never
			// the other way round.
			intents := uint64(2)
			if tc.state == pgstore.MaybeApplied {
				intents++
			}
			if rep.Intents != intents || len(rep.Unfinished) != 0 {
				t.Errorf("the chain holds %d intents and %d unfinished calls; want %d and 0", rep.Intents, len(rep.Unfinished), intents)
			}
		})
	}
}

// TestNewAuditor_RefusesWhatIsNotAnAuditTable: NewAuditor refuses a table
// that does not exist, one whose triggers are gone, and a bad name, each
// saying what to do.
func TestNewAuditor_RefusesWhatIsNotAnAuditTable(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, nil)
	table := newAuditTable(t)
	mustExec(t, pool, `DROP TRIGGER `+pgx.Identifier{table + "_append_only"}.Sanitize()+` ON `+pgx.Identifier{table}.Sanitize())
	for _, tc := range []struct {
		name, table, want string
	}{
		{"a table that does not exist", "execgate_audit_nowhere", "create it with MigrateAudit"},
		{"a table without its append-only trigger", table, "run MigrateAudit as the table's owner"},
		{"a name that is not an identifier", "Audit; DROP", "not a lowercase SQL identifier"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pgstore.NewAuditor(ctx, pool, pgstore.AuditOptions{Table: tc.table})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewAuditor = %v; want an error saying %q", err, tc.want)
			}
		})
	}
	if err := pgstore.MigrateAudit(ctx, pool, table); err != nil {
		t.Fatal(err)
	}
	if _, err := pgstore.NewAuditor(ctx, pool, pgstore.AuditOptions{Table: table}); err != nil {
		t.Errorf("NewAuditor after MigrateAudit put the trigger back = %v", err)
	}
}

// TestAudit_GateRoleCanOnlyAppend: a role granted only SELECT and INSERT
// on the audit table, as the package documentation says to grant the
// gates' role, appends entries and cannot change, delete or truncate them,
// nor disable the triggers that keep the table append-only.
func TestAudit_GateRoleCanOnlyAppend(t *testing.T) {
	ctx := context.Background()
	table := newAuditTable(t)
	admin := newPool(t, nil)
	var b [6]byte
	_, _ = rand.Read(b[:])
	role := "execgate_gate_" + hex.EncodeToString(b[:])
	q, r := pgx.Identifier{table}.Sanitize(), pgx.Identifier{role}.Sanitize()
	mustExec(t, admin, `CREATE ROLE `+r+` LOGIN`)
	t.Cleanup(func() {
		for _, stmt := range []string{`REVOKE ALL ON ` + q + ` FROM ` + r, `DROP ROLE ` + r} {
			if _, err := admin.Exec(context.Background(), stmt); err != nil {
				t.Errorf("%s: %v", stmt, err)
			}
		}
	})
	mustExec(t, admin, `GRANT SELECT, INSERT ON `+q+` TO `+r)
	gate := newPool(t, func(c *pgxpool.Config) { c.ConnConfig.User = role; c.ConnConfig.Password = "" })
	a := newAuditor(t, gate, table, 0)
	for i := range 3 {
		if err := a.Audit(ctx, auditEvent("gate", i)); err != nil {
			t.Fatalf("the gate's role cannot append: %v", err)
		}
	}
	for _, tc := range []struct{ name, sql string }{
		{"it cannot edit an entry", `UPDATE ` + q + ` SET line = line`},
		{"it cannot delete an entry", `DELETE FROM ` + q + ` WHERE seq = 3`},
		{"it cannot truncate the table", `TRUNCATE ` + q},
		{"it cannot disable the triggers", `ALTER TABLE ` + q + ` DISABLE TRIGGER USER`},
		{"it cannot drop the table", `DROP TABLE ` + q},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gate.Exec(ctx, tc.sql)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "42501" {
				t.Fatalf("got %v; want permission denied (SQLSTATE 42501)", err)
			}
		})
	}
	if rep, err := pgstore.VerifyAudit(ctx, gate, table); err != nil || rep.Head.Seq != 3 {
		t.Errorf("VerifyAudit through the gate's role = %+v, %v; want 3 entries", rep.Head, err)
	}
}
