package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pgDSNEnv names the variable that gives the PostgreSQL tests their
// database, as for stores/pgstore's tests.
const pgDSNEnv = "EXECGATE_PG_DSN"

// replicaDSNEnv is the variable the replicas' configuration names in
// dsn_env.
const replicaDSNEnv = "EXECGATE_REPLICA_DSN"

// pgTestDSN returns the test database's connection string. Without one
// the test is skipped, except under CI=true, where it fails: CI must run
// these tests (.ci/run starts a server and sets it).
func pgTestDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv(pgDSNEnv)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set, and CI=true: CI must run the PostgreSQL tests (.ci/run starts a server and sets it)", pgDSNEnv)
		}
		t.Skipf("PostgreSQL tests skipped: set %s=postgres://USER@HOST:PORT/DB?sslmode=disable (.ci/run shows how to start a throwaway server)", pgDSNEnv)
	}
	return dsn
}

// replicaTable returns a table name of the test's own and drops the
// tables serve makes from it when the test ends.
func replicaTable(t *testing.T, dsn string) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "execgate_replicas_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Logf("dropping %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		for _, tbl := range []string{name, name + "_spent", name + "_states"} {
			if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{tbl}.Sanitize()); err != nil {
				t.Logf("dropping %s: %v", tbl, err)
			}
		}
	})
	return name
}

// replicaConfig serves record.run: the real tee appending its stdin to
// runs.log in dir, every call held for an approval, so that each line of
// runs.log is one run. Approvals are kept in PostgreSQL, in table.
func replicaConfig(dir, table string) string {
	return `version: 1
defaults: {timeout: 10s, env: {PATH: /usr/bin:/bin}}
tools:
  - name: record
    bin: /usr/bin/tee
    description: Append stdin to the run log.
    global_args: [-a, ` + filepath.Join(dir, "runs.log") + `]
    bare:
      stdin: {max: 1KiB}
      human_approval: true
server:
  tokens:
    - {principal: ci-bot, sha256: "` + tokenHash(callerToken) + `"}
  approvers:
    - {principal: alice, sha256: "` + tokenHash(approverToken) + `"}
  approval_store: {kind: postgres, dsn_env: ` + replicaDSNEnv + `, table: ` + table + `}
`
}

// replica is one serve --http process.
type replica struct {
	t      *testing.T
	cmd    *exec.Cmd
	base   string
	stderr *syncBuffer
	exited chan struct{}
}

// startReplica starts serve --http on config with the replicas'
// connection string dsn, and waits until it serves.
func startReplica(t *testing.T, config, dsn string) *replica {
	t.Helper()
	cmd := exec.Command(binary(t), "serve", "--config", config, "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), replicaDSNEnv+"="+dsn)
	r := &replica{t: t, cmd: cmd, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = r.stderr
	require.NoError(t, cmd.Start())
	go func() { _ = cmd.Wait(); close(r.exited) }()
	t.Cleanup(r.kill)
	r.base = r.stderr.waitFor(t, regexp.MustCompile(`serving the HTTP API on (http://127\.0\.0\.1:\d+)`))
	return r
}

// kill ends the replica with SIGKILL and waits for it.
func (r *replica) kill() {
	select {
	case <-r.exited:
	default:
		_ = r.cmd.Process.Signal(syscall.SIGKILL)
		<-r.exited
	}
}

// stop ends the replica with SIGTERM and waits for it.
func (r *replica) stop() {
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		r.kill()
	}
}

var replicaClient = &http.Client{Timeout: 60 * time.Second}

// do sends a request to the replica with token and a JSON body (none
// when body is ""), and returns the status and the decoded response.
func (r *replica) do(method, path, token, body string) (int, response, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, r.base+path, rd)
	if err != nil {
		return 0, response{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := replicaClient.Do(req)
	if err != nil {
		return 0, response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, response{}, err
	}
	var out response
	if err := json.Unmarshal(b, &out); err != nil {
		return resp.StatusCode, response{}, fmt.Errorf("%s %s: %d %q: %w", method, path, resp.StatusCode, b, err)
	}
	return resp.StatusCode, out, nil
}

// propose asks for record.run with the line as stdin and returns the
// approval's ID.
func (r *replica) propose(t *testing.T, line string) string {
	t.Helper()
	b, err := json.Marshal(map[string]string{"stdin": line + "\n"})
	require.NoError(t, err)
	code, resp, err := r.do("POST", "/v1/tools/record.run", callerToken, string(b))
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, code, "%+v", resp.Error)
	require.NotNil(t, resp.Approval)
	return resp.Approval.ID
}

// approve approves the approval through the replica.
func (r *replica) approve(id string) (int, response, error) {
	return r.do("POST", approvalPath(id), approverToken, `{"action": "approve"}`)
}

// pendingIDs lists the pending approvals through the replica.
func (r *replica) pendingIDs(t *testing.T) map[string]bool {
	t.Helper()
	code, resp, err := r.do("GET", "/v1/approvals", approverToken, "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, "%+v", resp.Error)
	out := make(map[string]bool)
	for _, ap := range resp.Approvals {
		out[ap.ID] = true
	}
	return out
}

// runLines returns how many times each line is in runs.log.
func runLines(t *testing.T, dir string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "runs.log"))
	if os.IsNotExist(err) {
		return map[string]int{}
	}
	require.NoError(t, err)
	out := make(map[string]int)
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l != "" {
			out[l]++
		}
	}
	return out
}

// replicaSetup is a configuration on a table of the test's own.
func replicaSetup(t *testing.T) (dsn, config, dir string) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/tee"); err != nil {
		t.Fatalf("the test runs /usr/bin/tee: %v", err)
	}
	dsn = pgTestDSN(t)
	dir = t.TempDir()
	config = writeFile(t, "tools.yaml", replicaConfig(dir, replicaTable(t, dsn)))
	return dsn, config, dir
}

// TestSingleUse_ReplicasShareApprovals (invariant 8): three serve
// replicas on one PostgreSQL database are one approval service. An
// approval proposed through A is listed and decided through B, and its
// Result is fetched through C, once; calls spread across the three, each
// approved through two replicas at once, each run exactly once.
func TestSingleUse_ReplicasShareApprovals(t *testing.T) {
	dsn, config, dir := replicaSetup(t)
	rs := []*replica{startReplica(t, config, dsn), startReplica(t, config, dsn), startReplica(t, config, dsn)}
	a, b, c := rs[0], rs[1], rs[2]

	id := a.propose(t, "proposed-through-a")
	assert.True(t, b.pendingIDs(t)[id], "B lists the approval A issued")
	code, resp, err := b.approve(id)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, "%+v", resp.Error)
	require.NotNil(t, resp.Result)
	assert.True(t, resp.Result.OK)
	code, got, err := c.do("GET", approvalPath(id), callerToken, "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, "%+v", got.Error)
	assert.Equal(t, "approved", got.Status, "C answers with the Result B's run left")
	require.NotNil(t, got.Result, "the proposer gets the Result through C")
	assert.Equal(t, resp.Result.ID, got.Result.ID)
	assert.Equal(t, "proposed-through-a\n", got.Result.Stdout)
	_, again, err := a.do("GET", approvalPath(id), callerToken, "")
	require.NoError(t, err)
	assert.Equal(t, "claimed", again.Status, "a Result is handed out once, whichever replica is asked")
	assert.Nil(t, again.Result)
	assert.False(t, c.pendingIDs(t)[id], "a decided approval is listed nowhere")

	// A client spreads its calls across the replicas; each approval is
	// approved through two replicas at once.
	const n = 30
	ids := make([]string, n)
	for i := range ids {
		ids[i] = rs[i%3].propose(t, fmt.Sprintf("spread-%02d", i))
	}
	var wins atomic.Int64
	var wg sync.WaitGroup
	for i, id := range ids {
		for _, r := range []*replica{rs[(i+1)%3], rs[(i+2)%3]} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, _, err := r.approve(id)
				if err == nil && code == http.StatusOK {
					wins.Add(1)
				}
			}()
		}
	}
	wg.Wait()
	assert.Equal(t, int64(n), wins.Load(), "of two approvals of one call, exactly one runs it")
	lines := runLines(t, dir)
	assert.Equal(t, 1, lines["proposed-through-a"])
	for i := range ids {
		assert.Equal(t, 1, lines[fmt.Sprintf("spread-%02d", i)], "call %d ran once", i)
	}
	assert.Len(t, lines, n+1, "nothing else ran")
}

// TestSingleUse_ReplicaRestartLosesNothing (invariant 8): a replica
// stopped, or killed, and started again lists the approvals pending
// before, and approving one runs it once.
func TestSingleUse_ReplicaRestartLosesNothing(t *testing.T) {
	dsn, config, dir := replicaSetup(t)
	for _, how := range []string{"SIGTERM", "SIGKILL"} {
		t.Run(how, func(t *testing.T) {
			a := startReplica(t, config, dsn)
			id := a.propose(t, "before-"+how)
			if how == "SIGKILL" {
				a.kill()
			} else {
				a.stop()
			}
			a2 := startReplica(t, config, dsn)
			require.True(t, a2.pendingIDs(t)[id], "the restarted replica lists the approval issued before")
			code, resp, err := a2.approve(id)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, code, "%+v", resp.Error)
			assert.Equal(t, 1, runLines(t, dir)["before-"+how])
		})
	}
}

// TestSingleUse_ReplicaKilledDuringLoad (invariant 8): a replica killed
// with SIGKILL while approvers approve through it and through another
// leaves no call run twice and loses no approval: every approval not
// decided is still listed and runs once when approved through a
// replica that lives, and every approval decided ran once, or, if the
// killed replica had taken it, at most once.
func TestSingleUse_ReplicaKilledDuringLoad(t *testing.T) {
	dsn, config, dir := replicaSetup(t)
	a, b, c := startReplica(t, config, dsn), startReplica(t, config, dsn), startReplica(t, config, dsn)
	const n = 40
	ids := proposeAcross(t, []*replica{a, c}, "load", n)
	approveThroughEach(ids, []*replica{a, b}, b.kill)

	// What is still pending is decided through C.
	for id := range c.pendingIDs(t) {
		code, resp, err := c.approve(id)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, "%+v", resp.Error)
	}
	lines := runLines(t, dir)
	for l, k := range lines {
		assert.Equal(t, 1, k, "%s ran %d times", l, k)
	}
	for i, id := range ids {
		line := fmt.Sprintf("load-%02d", i)
		_, st, err := c.do("GET", approvalPath(id), approverToken, "")
		require.NoError(t, err)
		switch st.Status {
		case "approved", "claimed":
			assert.Equal(t, 1, lines[line], "approval %d reads %s: it ran once", i, st.Status)
		case "running":
			// Taken by the killed replica: it ran at most once.
			assert.LessOrEqual(t, lines[line], 1, "approval %d", i)
		default:
			t.Errorf("approval %d reads %s: an approval was lost", i, st.Status)
		}
	}
	assert.Len(t, c.pendingIDs(t), 0, "nothing is left pending")
}

// dbProxy forwards TCP connections to the database until it is cut:
// then it closes every connection it forwards, and each new one at once,
// so that the database is unreachable, until it is mended.
type dbProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  map[net.Conn]bool
}

func newDBProxy(t *testing.T, dsn string) (*dbProxy, string) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &dbProxy{ln: ln, target: net.JoinHostPort(cfg.ConnConfig.Host, fmt.Sprint(cfg.ConnConfig.Port)), conns: make(map[net.Conn]bool)}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go p.serve()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	proxied := strings.Replace(dsn, cfg.ConnConfig.Host+":"+fmt.Sprint(cfg.ConnConfig.Port), "127.0.0.1:"+port, 1)
	require.NotEqual(t, dsn, proxied, "the test expects a URL connection string with host:port")
	return p, proxied
}

func (p *dbProxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			in.Close()
			continue
		}
		p.conns[in], p.conns[out] = true, true
		p.mu.Unlock()
		go func() { _, _ = io.Copy(out, in); out.Close(); in.Close() }()
		go func() { _, _ = io.Copy(in, out); out.Close(); in.Close() }()
	}
}

// cut makes the database unreachable through the proxy.
func (p *dbProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// mend makes it reachable again.
func (p *dbProxy) mend() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// TestRecordIsTrue_DatabaseUnreachable (invariant 11): while the
// database that holds the approvals cannot be reached, a call that
// needs an approval, an approval and the list of pending approvals are
// refused with 503 and a message that says the approval store cannot be
// reached and what is true meanwhile (nothing ran, or, for a read, that
// the state cannot be read now), and nothing runs; once the database is back,
// the approval pending before runs once.
func TestRecordIsTrue_DatabaseUnreachable(t *testing.T) {
	dsn, config, dir := replicaSetup(t)
	proxy, proxied := newDBProxy(t, dsn)
	a := startReplica(t, config, proxied)
	id := a.propose(t, "before-the-cut")
	proxy.cut()

	for _, tc := range []struct {
		why, method, path, token, body string
		// say is what the message says is true meanwhile.
		say string
	}{
		{"a held call is refused: it cannot be kept for the approvers", "POST", "/v1/tools/record.run", callerToken, `{"stdin": "during-the-cut\n"}`, "nothing ran"},
		{"an approval is refused: the record cannot be taken", "POST", approvalPath(id), approverToken, `{"action": "approve"}`, "nothing ran"},
		{"the list is refused", "GET", "/v1/approvals", approverToken, "", "cannot be read now"},
		{"the proposer's poll is refused", "GET", approvalPath(id), callerToken, "", "the approval's state cannot be read now"},
	} {
		code, resp, err := a.do(tc.method, tc.path, tc.token, tc.body)
		require.NoError(t, err, tc.why)
		assert.Equal(t, http.StatusServiceUnavailable, code, tc.why)
		if assert.NotNil(t, resp.Error, tc.why) {
			assert.Contains(t, resp.Error.Message, "approval store (PostgreSQL) cannot be reached", tc.why)
			assert.Contains(t, resp.Error.Message, tc.say, tc.why)
			assert.NotContains(t, resp.Error.Message, dsn, tc.why)
		}
	}
	assert.Empty(t, runLines(t, dir), "nothing ran while the database was unreachable")

	proxy.mend()
	var code int
	var resp response
	require.Eventually(t, func() bool {
		var err error
		code, resp, err = a.approve(id)
		return err == nil && code != http.StatusServiceUnavailable
	}, 30*time.Second, 100*time.Millisecond, "the replica reaches the database again")
	require.Equal(t, http.StatusOK, code, "%+v", resp.Error)
	assert.Equal(t, map[string]int{"before-the-cut": 1}, runLines(t, dir))
	assert.False(t, bytes.Contains([]byte(a.stderr.String()), []byte(dsn)), "serve's log never holds the connection string")
}

// TestServe_RefusesWithoutTheDSN: serve does not start when the variable
// dsn_env names is not set, and says which variable.
func TestServe_RefusesWithoutTheDSN(t *testing.T) {
	_, config, _ := replicaSetup(t)
	cmd := exec.Command(binary(t), "serve", "--config", config, "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), replicaDSNEnv+"=")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", out)
	assert.Contains(t, string(out), "server.approval_store (line 16): the variable "+replicaDSNEnv+" that dsn_env names is not set or empty")
}

// TestServe_PostgresQuotaPerPrincipal: the quotas per principal of the
// server section hold in the PostgreSQL store, across replicas: a
// principal at its quota through one replica is refused through another,
// with a refusal that names it.
func TestServe_PostgresQuotaPerPrincipal(t *testing.T) {
	dsn, config, _ := replicaSetup(t)
	text, err := os.ReadFile(config)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(config, []byte(strings.Replace(string(text), "  approval_store:", "  max_pending_per_principal: 1\n  approval_store:", 1)), 0o600))
	a, b := startReplica(t, config, dsn), startReplica(t, config, dsn)
	a.propose(t, "first")
	code, resp, err := b.do("POST", "/v1/tools/record.run", callerToken, `{"stdin": "second\n"}`)
	require.NoError(t, err)
	assert.Contains(t, []int{http.StatusTooManyRequests, http.StatusServiceUnavailable}, code)
	if assert.NotNil(t, resp.Error) {
		assert.Equal(t, "store_full", resp.Error.Kind)
		assert.Contains(t, resp.Error.Message, "ci-bot", "the refusal says whose quota is full")
	}
}

// proposeAcross proposes n calls, each through the next of rs in turn,
// named prefix and a number, and returns their approvals' IDs.
func proposeAcross(t *testing.T, rs []*replica, prefix string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = rs[i%len(rs)].propose(t, fmt.Sprintf("%s-%02d", prefix, i))
	}
	return ids
}

// approveThroughEach approves every approval of ids through each of rs at
// once, the i-th after 5i ms, runs during once half of them have been
// sent, and returns when every answer is in (or failed: a replica killed
// by during answers none).
func approveThroughEach(ids []string, rs []*replica, during func()) {
	var wg sync.WaitGroup
	half := make(chan struct{})
	var once sync.Once
	for i, id := range ids {
		for _, r := range rs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(i) * 5 * time.Millisecond)
				if i == len(ids)/2 {
					once.Do(func() { close(half) })
				}
				_, _, _ = r.approve(id)
			}()
		}
	}
	<-half
	during()
	wg.Wait()
}
