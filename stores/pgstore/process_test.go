package pgstore_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/stores/pgstore"
)

// The variables a parent test hands its helper processes.
const (
	tableEnv    = "EXECGATE_PGSTORE_TABLE"
	approvalEnv = "EXECGATE_PGSTORE_APPROVAL"
)

// Exit codes of the execute helper.
const (
	exitRan     = 0
	exitFailed  = 1
	exitRefused = 3
)

// runHelper runs the helper program mode and returns its exit code.
func runHelper(mode string) int {
	switch mode {
	case "execute":
		if err := helperExecute(os.Stdin, os.Stdout); err != nil {
			var ae *execgate.ApprovalError
			if errors.As(err, &ae) {
				fmt.Printf("refused %s\n", ae.Reason)
				return exitRefused
			}
			fmt.Fprintln(os.Stderr, err)
			return exitFailed
		}
		return exitRan
	case "audit":
		if err := helperAudit(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return exitFailed
		}
		return exitRan
	default:
		fmt.Fprintf(os.Stderr, "unknown helper %q\n", mode)
		return exitFailed
	}
}

// helperExecute is one of the racing processes: it builds an Executor on
// the parent's table with a pool of its own, prints "ready", waits for a
// line on in, executes the approval it was given, and prints what ran.
func helperExecute(in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, os.Getenv(dsnEnv))
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil { // connect now, not in the race
		return err
	}
	store, err := pgstore.New(ctx, pool, pgstore.Options{Table: os.Getenv(tableEnv)})
	if err != nil {
		return err
	}
	allow, err := testAllowlist("1")
	if err != nil {
		return err
	}
	rec := execgatetest.NewRecorder()
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow, Store: store, ExecFn: rec.Exec})
	if err != nil {
		return err
	}
	var ap execgate.Approval
	if err := json.Unmarshal([]byte(os.Getenv(approvalEnv)), &ap); err != nil {
		return err
	}
	fmt.Fprintln(out, "ready")
	if _, err := bufio.NewReader(in).ReadString('\n'); err != nil {
		return err
	}
	res, err := x.Execute(ctx, ap)
	if err != nil {
		return err
	}
	calls := rec.Calls()
	if len(calls) != 1 || !res.OK {
		return fmt.Errorf("Execute returned %+v after %d spawns", res, len(calls))
	}
	fmt.Fprintf(out, "ran %s %q\n", res.Name, calls[0].Args)
	return nil
}

// TestExecuteAcrossProcesses: 8 processes, each with its own pool and
// Executor on one table, are handed the same approval and released at
// once; exactly one of them runs it.
func TestExecuteAcrossProcesses(t *testing.T) {
	const n = 8
	dsn := testDSN(t)
	table := newTable(t)
	pool := newPool(t, nil)
	store := newStore(t, pool, table, 0, nil)
	x, _ := newExecutor(t, store, "1", nil)
	ap, err := x.Propose(context.Background(), "deploy", deployInput, "race")
	if err != nil {
		t.Fatal(err)
	}
	envelope, err := json.Marshal(ap)
	if err != nil {
		t.Fatal(err)
	}

	type child struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout *bufio.Reader
		stderr bytes.Buffer
	}
	children := make([]*child, n)
	for i := range children {
		c := &child{cmd: exec.Command(os.Args[0], "-test.run=^$")}
		c.cmd.Env = append(os.Environ(),
			helperEnv+"=execute", dsnEnv+"="+dsn, tableEnv+"="+table, approvalEnv+"="+string(envelope))
		c.cmd.Stderr = &c.stderr
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
	for _, c := range children {
		if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	var ran, refused int
	for i, c := range children {
		rest, _ := io.ReadAll(c.stdout)
		err := c.cmd.Wait()
		code := c.cmd.ProcessState.ExitCode()
		out := strings.TrimSpace(string(rest))
		switch {
		case code == exitRan && out == `ran deploy ["deploy" "api"]`:
			ran++
		case code == exitRefused && out == "refused "+execgate.ReasonUnknown:
			refused++
		default:
			t.Errorf("child %d: %v, exit %d, stdout %q, stderr %q", i, err, code, out, c.stderr.String())
		}
	}
	if ran != 1 || refused != n-1 {
		t.Errorf("%d processes ran the approval and %d were refused as unknown; want 1 and %d", ran, refused, n-1)
	}
	if left, err := store.Len(context.Background()); err != nil || left != 0 {
		t.Errorf("Len = %d, %v; want 0", left, err)
	}
}
