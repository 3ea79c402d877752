package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ownCluster is a PostgreSQL cluster a test started itself, so that it
// knows the postmaster's PID and may kill it.
type ownCluster struct {
	t          *testing.T
	bin, dir   string
	port       int
	asPostgres bool
}

// startOwnCluster starts a throwaway cluster from the PostgreSQL
// binaries on this machine, as .ci/run does. Without them the test is
// skipped, except under CI=true, where it fails: .ci/run installs them.
func startOwnCluster(t *testing.T) *ownCluster {
	t.Helper()
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(matches) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("no PostgreSQL binaries under /usr/lib/postgresql, and CI=true: .ci/run installs them")
		}
		t.Skip("PostgreSQL's binaries are not installed (Debian's postgresql package)")
	}
	c := &ownCluster{t: t, bin: filepath.Dir(matches[0]), asPostgres: os.Getuid() == 0}
	var err error
	c.dir, err = os.MkdirTemp("", "execgate-pgkill-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(c.dir) })
	if c.asPostgres {
		out, err := exec.Command("chown", "postgres", c.dir).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	c.run("initdb", "-D", filepath.Join(c.dir, "data"), "-U", "execgate", "-A", "trust", "-E", "UTF8", "--no-instructions")
	c.start()
	t.Cleanup(func() { c.pgctl("-m", "immediate", "stop") })
	c.run("createdb", "-h", "127.0.0.1", "-p", strconv.Itoa(c.port), "-U", "execgate", "execgate")
	return c
}

func (c *ownCluster) run(tool string, args ...string) {
	c.t.Helper()
	name := filepath.Join(c.bin, tool)
	cmd := exec.Command(name, args...)
	if c.asPostgres {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
	}
	cmd.Dir = c.dir
	out, err := cmd.CombinedOutput()
	require.NoError(c.t, err, "%s: %s", tool, out)
}

func (c *ownCluster) pgctl(args ...string) {
	name := filepath.Join(c.bin, "pg_ctl")
	all := append([]string{"-D", filepath.Join(c.dir, "data")}, args...)
	cmd := exec.Command(name, all...)
	if c.asPostgres {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, all...)...)
	}
	cmd.Dir = c.dir
	_ = cmd.Run()
}

func (c *ownCluster) start() {
	c.t.Helper()
	defer func() {
		if c.t.Failed() {
			b, _ := os.ReadFile(filepath.Join(c.dir, "log"))
			c.t.Logf("the cluster's log:\n%s", b)
		}
	}()
	c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-l", filepath.Join(c.dir, "log"), "-w", "-t", "60",
		"-o", fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off", c.port, c.dir), "start")
}

func (c *ownCluster) dsn() string {
	return fmt.Sprintf("postgres://execgate@127.0.0.1:%d/execgate?sslmode=disable", c.port)
}

// kill sends SIGKILL to the postmaster and to every process it started,
// as a crash of the database's machine would end them.
func (c *ownCluster) kill() {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, "data", "postmaster.pid"))
	require.NoError(c.t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	require.NoError(c.t, err)
	children := childrenOf(pid)
	require.NoError(c.t, syscall.Kill(pid, syscall.SIGKILL))
	for _, p := range children {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	for alive(pid) {
		time.Sleep(10 * time.Millisecond)
	}
	for _, p := range children {
		for alive(p) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	// The killed postmaster may linger as a zombie its new parent has not
	// reaped, which a new postmaster would take for a running one: the
	// lock files go, as after a crash of the machine.
	require.NoError(c.t, os.Remove(filepath.Join(c.dir, "data", "postmaster.pid")))
	sock := filepath.Join(c.dir, fmt.Sprintf(".s.PGSQL.%d", c.port))
	_ = os.Remove(sock + ".lock")
	_ = os.Remove(sock)
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// TestSingleUse_PostgresKilledDuringLoad (invariant 8): PostgreSQL
// killed with SIGKILL while approvers approve through two replicas, and
// started again: no call runs twice, and no approval is lost. Each one
// still pending, or put back for the approvers because its record could
// not be taken, runs once when approved after the restart; each decision
// made while the database died is recorded once it is back, approved
// (it ran once, its Result kept for its proposer) or failed (its record
// could not be taken: it did not run). The test starts a cluster of its
// own, since it must know the postmaster's PID to kill it.
func TestSingleUse_PostgresKilledDuringLoad(t *testing.T) {
	if _, err := os.Stat("/usr/bin/tee"); err != nil {
		t.Fatalf("the test runs /usr/bin/tee: %v", err)
	}
	c := startOwnCluster(t)
	dir := t.TempDir()
	config := writeFile(t, "tools.yaml", replicaConfig(dir, "execgate_approvals"))
	a, b := startReplica(t, config, c.dsn()), startReplica(t, config, c.dsn())
	const n = 30
	ids := proposeAcross(t, []*replica{a, b}, "pgkill", n)
	approveThroughEach(ids, []*replica{a, b}, c.kill)
	c.start()

	// The replicas reach the database again. What is pending is approved,
	// including approvals put back for the approvers when their record
	// could not be taken; decisions that could not be recorded while the
	// database was down are recorded once it is back: in the end no
	// approval is pending or running.
	approvedAfter := 0
	require.Eventually(t, func() bool {
		code, resp, err := a.do("GET", "/v1/approvals", approverToken, "")
		if err != nil || code != http.StatusOK {
			return false
		}
		for _, ap := range resp.Approvals {
			code, _, err := b.approve(ap.ID)
			if err != nil || code == http.StatusServiceUnavailable {
				return false
			}
			approvedAfter++
		}
		for _, id := range ids {
			_, st, err := a.do("GET", approvalPath(id), approverToken, "")
			if err != nil || st.Status == "running" || st.Status == "pending" {
				return false
			}
		}
		return true
	}, 2*time.Minute, 200*time.Millisecond, "every approval is decided, and every decision recorded, once the database is back")
	lines := runLines(t, dir)
	for l, k := range lines {
		assert.Equal(t, 1, k, "%s ran %d times", l, k)
	}
	states := make(map[string]int)
	defer func() {
		t.Logf("after the kill: %d approved afterwards; states %v; %d runs", approvedAfter, states, len(lines))
	}()
	for i, id := range ids {
		line := fmt.Sprintf("pgkill-%02d", i)
		_, st, err := a.do("GET", approvalPath(id), approverToken, "")
		require.NoError(t, err)
		states[st.Status]++
		switch st.Status {
		case "approved", "claimed":
			assert.Equal(t, 1, lines[line], "approval %d reads %s: it ran once", i, st.Status)
		case "failed":
			// Its record could not be taken when the database died: it
			// did not run.
			assert.Equal(t, 0, lines[line], "approval %d reads failed: it did not run", i)
		default:
			t.Errorf("approval %d reads %q: an approval was lost", i, st.Status)
		}
	}
}
