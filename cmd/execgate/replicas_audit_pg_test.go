package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit"
)

// withAuditStore adds to a replica configuration the audit table
// table, on the replicas' connection string.
func withAuditStore(config, table string) string {
	return config + "  audit_store: {kind: postgres, dsn_env: " + replicaDSNEnv + ", table: " + table + "}\n"
}

// auditTableOf names an audit table after the test's approval table and
// drops it, with its functions, when the test ends.
func auditTableOf(t *testing.T, dsn, approvals string) string {
	t.Helper()
	name := approvals + "_audit"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Logf("dropping %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		for _, stmt := range []string{
			"DROP TABLE IF EXISTS " + pgx.Identifier{name}.Sanitize(),
			"DROP FUNCTION IF EXISTS " + pgx.Identifier{name + "_refuse"}.Sanitize() + "()",
			"DROP FUNCTION IF EXISTS " + pgx.Identifier{name + "_append"}.Sanitize() + "()",
		} {
			if _, err := conn.Exec(ctx, stmt); err != nil {
				t.Logf("dropping %s: %v", name, err)
			}
		}
	})
	return name
}

// auditSetup is replicaSetup with an audit table of the test's own.
func auditSetup(t *testing.T) (dsn, config, dir, table string) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/tee"); err != nil {
		t.Fatalf("the test runs /usr/bin/tee: %v", err)
	}
	dsn = pgTestDSN(t)
	dir = t.TempDir()
	approvals := replicaTable(t, dsn)
	table = auditTableOf(t, dsn, approvals)
	config = writeFile(t, "tools.yaml", withAuditStore(replicaConfig(dir, approvals), table))
	return dsn, config, dir, table
}

// auditEntries reads the audit table's entries in chain order.
func auditEntries(t *testing.T, dsn, table string) []audit.Entry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT line FROM "+pgx.Identifier{table}.Sanitize()+" ORDER BY seq")
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	out := make([]audit.Entry, len(lines))
	for i, l := range lines {
		require.NoError(t, json.Unmarshal([]byte(l), &out[i]), "entry %d", i+1)
	}
	return out
}

// executeIntents counts, per approval ID, the intents of record.run's
// approved calls in entries: one for each process an Execute handed to
// be started.
func executeIntents(entries []audit.Entry) map[string]int {
	out := make(map[string]int)
	for _, e := range entries {
		if e.Op == execgate.OpExecute && e.Phase == execgate.PhaseIntent && e.Name == "record.run" {
			out[e.ApprovalID]++
		}
	}
	return out
}

// verifyAuditTable runs execgate audit verify --dsn-env on the table and
// requires it to verify, with the number of entries the table holds.
func verifyAuditTable(t *testing.T, dsn, table string, entries int) {
	t.Helper()
	cmd := exec.Command(binary(t), "audit", "verify", "--dsn-env", replicaDSNEnv, "--table", table)
	cmd.Env = append(os.Environ(), replicaDSNEnv+"="+dsn)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "audit verify: %s", out)
	assert.Contains(t, string(out), fmt.Sprintf("table %s: ok: %d entries, head seq %d sha256 ", table, entries, entries))
	assert.NotContains(t, string(out), dsn)
}

// requireIntentForEveryRun requires that every line of runs.log, the
// run of the approval ids[i] with the line prefix-NN, has the intent of
// its call in entries, and that no call ran twice.
func requireIntentForEveryRun(t *testing.T, dir, prefix string, ids []string, entries []audit.Entry) {
	t.Helper()
	lines := runLines(t, dir)
	intents := executeIntents(entries)
	runs := 0
	for i, id := range ids {
		k := lines[fmt.Sprintf("%s-%02d", prefix, i)]
		runs += k
		assert.LessOrEqual(t, k, 1, "call %d ran %d times", i, k)
		if k > 0 {
			assert.Equal(t, 1, intents[id], "call %d ran: the table holds its intent once", i)
		}
	}
	total := 0
	for _, k := range intents {
		total += k
	}
	assert.GreaterOrEqual(t, total, runs, "the table holds an intent for each of the %d runs", runs)
	t.Logf("%d runs, %d intents of record.run, %d entries", runs, total, len(entries))
}

// TestRecordIsTrue_ReplicasWriteOneAuditChain (invariant 11): three serve
// replicas with server.audit_store append to one audit table as one
// chain, while approvers approve through two of them and one is killed
// with SIGKILL: execgate audit verify --dsn-env verifies the table, and
// every call that ran has its intent in it, recorded before its process
// started.
func TestRecordIsTrue_ReplicasWriteOneAuditChain(t *testing.T) {
	dsn, config, dir, table := auditSetup(t)
	a, b, c := startReplica(t, config, dsn), startReplica(t, config, dsn), startReplica(t, config, dsn)
	const n = 30
	ids := proposeAcross(t, []*replica{a, b, c}, "audit", n)
	approveThroughEach(ids, []*replica{a, b}, b.kill)
	for id := range c.pendingIDs(t) {
		code, resp, err := c.approve(id)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, "%+v", resp.Error)
	}

	entries := auditEntries(t, dsn, table)
	verifyAuditTable(t, dsn, table, len(entries))
	proposed := make(map[string]bool)
	for _, e := range entries {
		if e.Op == execgate.OpPropose && e.Phase == execgate.PhaseOutcome {
			proposed[e.ApprovalID] = true
		}
	}
	for i, id := range ids {
		assert.True(t, proposed[id], "the proposal %d, made through replica %d, is in the one table", i, i%3)
	}
	requireIntentForEveryRun(t, dir, "audit", ids, entries)
	assert.NotEmpty(t, runLines(t, dir), "calls ran")
}

// TestRecordIsTrue_AuditTableKilledDuringLoad (invariant 11): PostgreSQL,
// holding the approvals and the audit table, killed with SIGKILL while
// approvers approve through two replicas, and started again: once every
// approval is decided, the table verifies, and every call that ran has
// its intent in it. A call whose intent could not be recorded did not
// run.
func TestRecordIsTrue_AuditTableKilledDuringLoad(t *testing.T) {
	if _, err := os.Stat("/usr/bin/tee"); err != nil {
		t.Fatalf("the test runs /usr/bin/tee: %v", err)
	}
	cl := startOwnCluster(t)
	dir := t.TempDir()
	const table = "execgate_audit"
	config := writeFile(t, "tools.yaml", withAuditStore(replicaConfig(dir, "execgate_approvals"), table))
	a, b := startReplica(t, config, cl.dsn()), startReplica(t, config, cl.dsn())
	const n = 30
	ids := proposeAcross(t, []*replica{a, b}, "auditkill", n)
	approveThroughEach(ids, []*replica{a, b}, cl.kill)
	cl.start()

	// Once the database is back, the replicas record again (a refused
	// call's record is what clears the trail's error), and every
	// approval is decided: most at once, and one whose take the
	// database committed as it was killed, so that its replica never
	// heard, once the lease it was taken under lapses (pgLeaseFor), when
	// it reads failed.
	require.Eventually(t, func() bool {
		code, resp, err := a.do("GET", "/v1/approvals", approverToken, "")
		if err != nil || code != http.StatusOK {
			return false
		}
		for _, ap := range resp.Approvals {
			if code, _, err := b.approve(ap.ID); err != nil || code == http.StatusServiceUnavailable {
				return false
			}
		}
		for _, id := range ids {
			_, st, err := a.do("GET", approvalPath(id), approverToken, "")
			if err != nil || st.Status == "running" || st.Status == "pending" {
				return false
			}
		}
		return true
	}, pgLeaseFor+time.Minute, 200*time.Millisecond, "every approval is decided once the database is back")

	entries := auditEntries(t, cl.dsn(), table)
	verifyAuditTable(t, cl.dsn(), table, len(entries))
	requireIntentForEveryRun(t, dir, "auditkill", ids, entries)
}

// auditOnlyConfig serves record.run, run at once (no approval), with
// approvals in memory and the audit trail in table.
func auditOnlyConfig(dir, table string) string {
	return `version: 1
defaults: {timeout: 10s, env: {PATH: /usr/bin:/bin}}
tools:
  - name: record
    bin: /usr/bin/tee
    description: Append stdin to the run log.
    global_args: [-a, ` + filepath.Join(dir, "runs.log") + `]
    bare:
      stdin: {max: 1KiB}
server:
  tokens:
    - {principal: ci-bot, sha256: "` + tokenHash(callerToken) + `"}
  audit_store: {kind: postgres, dsn_env: ` + replicaDSNEnv + `, table: ` + table + `}
`
}

// readyz returns the status of the replica's GET /readyz.
func (r *replica) readyz(t *testing.T) int {
	t.Helper()
	resp, err := replicaClient.Get(r.base + readyzPath)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// TestRecordIsTrue_AuditTableUnreachable (invariant 11): while the
// database of the audit table cannot be reached, a call is refused with
// 503, kind audit, nothing runs unrecorded, and /readyz says the replica
// is not ready; once the database is back, /readyz says ready again and
// a call runs, with its intent and outcome in the table.
func TestRecordIsTrue_AuditTableUnreachable(t *testing.T) {
	if _, err := os.Stat("/usr/bin/tee"); err != nil {
		t.Fatalf("the test runs /usr/bin/tee: %v", err)
	}
	dsn := pgTestDSN(t)
	dir := t.TempDir()
	table := auditTableOf(t, dsn, replicaTable(t, dsn))
	config := writeFile(t, "tools.yaml", auditOnlyConfig(dir, table))
	proxy, proxied := newDBProxy(t, dsn)
	a := startReplica(t, config, proxied)

	call := func(line string) (int, response) {
		code, resp, err := a.do("POST", "/v1/tools/record.run", callerToken, `{"stdin": "`+line+`\n"}`)
		require.NoError(t, err)
		return code, resp
	}
	code, resp := call("before-the-cut")
	require.Equal(t, http.StatusOK, code, "%+v", resp.Error)
	assert.Equal(t, http.StatusOK, a.readyz(t))

	proxy.cut()
	for i := range 3 {
		code, resp := call(fmt.Sprintf("during-the-cut-%d", i))
		assert.Equal(t, http.StatusServiceUnavailable, code, "call %d", i)
		if assert.NotNil(t, resp.Error, "call %d", i) {
			assert.Equal(t, execgate.ErrorKindAudit, resp.Error.Kind, "call %d", i)
			assert.NotContains(t, resp.Error.Message, dsn)
		}
	}
	assert.Equal(t, http.StatusServiceUnavailable, a.readyz(t), "not ready while the table refuses records")
	assert.Equal(t, map[string]int{"before-the-cut": 1}, runLines(t, dir), "nothing ran unrecorded")

	proxy.mend()
	require.Eventually(t, func() bool { return a.readyz(t) == http.StatusOK }, 60*time.Second, 200*time.Millisecond,
		"/readyz records again and says ready once the database is back")
	code, resp = call("after-the-cut")
	require.Equal(t, http.StatusOK, code, "%+v", resp.Error)
	assert.Equal(t, map[string]int{"before-the-cut": 1, "after-the-cut": 1}, runLines(t, dir))

	entries := auditEntries(t, dsn, table)
	verifyAuditTable(t, dsn, table, len(entries))
	intents := 0
	for _, e := range entries {
		if e.Op == execgate.OpRun && e.Phase == execgate.PhaseIntent && e.Name == "record.run" {
			intents++
		}
	}
	assert.Equal(t, 2, intents, "the two calls that ran have their intents in the table, and no other")
	assert.NotContains(t, a.stderr.String(), dsn, "serve's log never holds the connection string")
}

// TestServe_RefusesWithoutTheAuditDSN: serve does not start when the
// variable server.audit_store's dsn_env names is not set, and says which
// variable and which line; nothing is served unrecorded.
func TestServe_RefusesWithoutTheAuditDSN(t *testing.T) {
	config := writeFile(t, "tools.yaml", auditOnlyConfig(t.TempDir(), "execgate_audit"))
	cmd := exec.Command(binary(t), "serve", "--config", config, "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), replicaDSNEnv+"=")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", out)
	assert.Contains(t, string(out), "server.audit_store (line 13): the variable "+replicaDSNEnv+" that dsn_env names is not set or empty")
	assert.NotContains(t, string(out), "serving the HTTP API")
}

// startReplicaWith starts serve --http on config with the replicas' connection
// string dsn and the further flags, and waits until it serves.
func startReplicaWith(t *testing.T, config, dsn string, flags ...string) *replica {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"serve", "--config", config, "--http", "127.0.0.1:0"}, flags...)...)
	cmd.Env = append(os.Environ(), replicaDSNEnv+"="+dsn)
	r := &replica{t: t, cmd: cmd, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = r.stderr
	require.NoError(t, cmd.Start())
	go func() { _ = cmd.Wait(); close(r.exited) }()
	t.Cleanup(r.kill)
	r.base = r.stderr.waitFor(t, regexp.MustCompile(`serving the HTTP API on (http://127\.0\.0\.1:\d+)`))
	return r
}

// fileEntries reads the entries of the audit file at path.
func fileEntries(t *testing.T, path string) []audit.Entry {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []audit.Entry
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var e audit.Entry
		require.NoError(t, json.Unmarshal([]byte(l), &e))
		out = append(out, e)
	}
	return out
}

// runIntents counts the intents of record.run's calls run at once.
func runIntents(entries []audit.Entry) int {
	n := 0
	for _, e := range entries {
		if e.Op == execgate.OpRun && e.Phase == execgate.PhaseIntent && e.Name == "record.run" {
			n++
		}
	}
	return n
}

// TestRecordIsTrue_AuditFileAndTable (invariant 11): with --audit FILE
// and server.audit_store, every call is recorded in both, each of which
// verifies.
func TestRecordIsTrue_AuditFileAndTable(t *testing.T) {
	dsn := pgTestDSN(t)
	dir := t.TempDir()
	table := auditTableOf(t, dsn, replicaTable(t, dsn))
	config := writeFile(t, "tools.yaml", auditOnlyConfig(dir, table))
	file := filepath.Join(dir, "audit.jsonl")
	a := startReplicaWith(t, config, dsn, "--audit", file)
	for i := range 3 {
		code, resp, err := a.do("POST", "/v1/tools/record.run", callerToken, fmt.Sprintf(`{"stdin": "both-%d\n"}`, i))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, "%+v", resp.Error)
	}
	a.stop()

	out, err := exec.Command(binary(t), "audit", "verify", file).CombinedOutput()
	require.NoError(t, err, "%s", out)
	entries := auditEntries(t, dsn, table)
	verifyAuditTable(t, dsn, table, len(entries))
	assert.Equal(t, 3, runIntents(fileEntries(t, file)), "the file holds the three intents")
	assert.Equal(t, 3, runIntents(entries), "the table holds the three intents")
}

// TestServe_AuditTableWithAnAppendOnlyRole: serve connects as a role
// that may only SELECT and INSERT on an audit table its owner created,
// and records every call in it without changing the table; on a table
// that does not exist yet, the same role cannot create it, and serve
// does not start, saying to create it as its owner.
func TestServe_AuditTableWithAnAppendOnlyRole(t *testing.T) {
	dsn := pgTestDSN(t)
	dir := t.TempDir()
	table := auditTableOf(t, dsn, replicaTable(t, dsn))
	missing := auditTableOf(t, dsn, replicaTable(t, dsn))
	ctx := context.Background()
	owner, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer owner.Close(ctx)
	role := table + "_gate"
	_, err = owner.Exec(ctx, "CREATE ROLE "+pgx.Identifier{role}.Sanitize()+" LOGIN")
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Logf("dropping the role %s: %v", role, err)
			return
		}
		defer conn.Close(ctx)
		for _, stmt := range []string{"DROP OWNED BY " + pgx.Identifier{role}.Sanitize(), "DROP ROLE IF EXISTS " + pgx.Identifier{role}.Sanitize()} {
			if _, err := conn.Exec(ctx, stmt); err != nil {
				t.Logf("%s: %v", stmt, err)
			}
		}
	})
	// As at deployment: serve, started once with the owner's connection
	// string, creates the table; the gate's role may then only append.
	startReplicaWith(t, writeFile(t, "owner.yaml", auditOnlyConfig(dir, table)), dsn).stop()
	_, err = owner.Exec(ctx, "GRANT SELECT, INSERT ON "+pgx.Identifier{table}.Sanitize()+" TO "+pgx.Identifier{role}.Sanitize())
	require.NoError(t, err)

	cfg, err := pgx.ParseConfig(dsn)
	require.NoError(t, err)
	roleDSN := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", role, cfg.Host, cfg.Port, cfg.Database)
	a := startReplicaWith(t, writeFile(t, "tools.yaml", auditOnlyConfig(dir, table)), roleDSN)
	code, resp, err := a.do("POST", "/v1/tools/record.run", callerToken, `{"stdin": "as-the-gate-role\n"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, "%+v", resp.Error)
	a.stop()
	entries := auditEntries(t, dsn, table)
	verifyAuditTable(t, dsn, table, len(entries))
	assert.Equal(t, 1, runIntents(entries))

	cmd := exec.Command(binary(t), "serve", "--config", writeFile(t, "missing.yaml", auditOnlyConfig(dir, missing)), "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), replicaDSNEnv+"="+roleDSN)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", out)
	assert.Contains(t, string(out), "server.audit_store (line 13): the audit table "+missing+" is not ready")
	assert.Contains(t, string(out), "run the migration once as the role that is to own the table")
}
