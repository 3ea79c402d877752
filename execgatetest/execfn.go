package execgatetest

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/execgate/execgate"
)

// TestExecFn checks an ExecFn that starts real processes against the
// contract documented on execgate.ExecFn and execgate.Termination: the
// argv, environment, working directory and stdin are exactly the
// Invocation's; an exit status is reported as it is; a Timeout, a
// NoOutputTimeout and a done context end the process with the matching
// termination; output is bounded to MaxOutput with the rest counted; and a
// file that cannot be started is an Outcome error, not a panic or a hang.
//
// It runs common Unix tools found on PATH (echo, env, pwd, cat, false,
// sleep, head); a subtest whose tool is missing fails. Use it from a test
// of your own package:
//
//	func TestMyExecFn(t *testing.T) { execgatetest.TestExecFn(t, myExecFn) }
func TestExecFn(t *testing.T, fn execgate.ExecFn) {
	tool := func(t *testing.T, name string) string {
		t.Helper()
		p, err := exec.LookPath(name)
		if err != nil || !filepath.IsAbs(p) {
			t.Fatalf("TestExecFn needs %s on PATH: %v", name, err)
		}
		return p
	}
	inv := func(path string, args ...string) execgate.Invocation {
		return execgate.Invocation{Name: "kit", Path: path, Args: args, Env: []string{}, Dir: "/",
			Timeout: 10 * time.Second, MaxOutput: 1 << 16}
	}
	run := func(t *testing.T, in execgate.Invocation) execgate.Outcome {
		t.Helper()
		return fn(context.Background(), in)
	}
	exited := func(t *testing.T, o execgate.Outcome, code int) {
		t.Helper()
		if o.Err != nil || (o.Termination != "" && o.Termination != execgate.TerminationExit) || o.ExitCode != code {
			t.Fatalf("want an exit with status %d, got termination %q, exit code %d, error %v, stderr %q", code, o.Termination, o.ExitCode, o.Err, o.Stderr)
		}
	}

	t.Run("ArgvIsExact", func(t *testing.T) {
		args := []string{"a b", "$(id)", "*", ";", "", "--x=y"}
		o := run(t, inv(tool(t, "echo"), args...))
		exited(t, o, 0)
		if got, want := string(o.Stdout), strings.Join(args, " ")+"\n"; got != want {
			t.Errorf("echo printed %q, want %q", got, want)
		}
	})
	t.Run("EnvIsExact", func(t *testing.T) {
		t.Setenv("EXECGATE_KIT_CANARY", "inherited")
		in := inv(tool(t, "env"))
		in.Env = []string{"A=1", "B=two words"}
		o := run(t, in)
		exited(t, o, 0)
		got := strings.Split(strings.TrimSpace(string(o.Stdout)), "\n")
		slices.Sort(got)
		if !slices.Equal(got, in.Env) {
			t.Errorf("the child's environment is %q, want exactly %q", got, in.Env)
		}
		in.Env = nil
		if o := run(t, in); strings.TrimSpace(string(o.Stdout)) != "" {
			t.Errorf("a nil Env gave the child %q, want an empty environment", o.Stdout)
		}
	})
	t.Run("DirIsHonoured", func(t *testing.T) {
		in := inv(tool(t, "pwd"))
		in.Dir = t.TempDir()
		o := run(t, in)
		exited(t, o, 0)
		want, _ := filepath.EvalSymlinks(in.Dir)
		if got, _ := filepath.EvalSymlinks(strings.TrimSpace(string(o.Stdout))); got != want {
			t.Errorf("the child ran in %q, want %q", got, want)
		}
	})
	t.Run("StdinIsTheInvocations", func(t *testing.T) {
		in := inv(tool(t, "cat"))
		in.Stdin = []byte("line one\nline two\n")
		o := run(t, in)
		exited(t, o, 0)
		if string(o.Stdout) != string(in.Stdin) {
			t.Errorf("cat printed %q, want %q", o.Stdout, in.Stdin)
		}
		in.Stdin = nil
		if o := run(t, in); len(o.Stdout) != 0 {
			t.Errorf("with no Stdin, cat printed %q, want nothing", o.Stdout)
		}
	})
	t.Run("ExitStatus", func(t *testing.T) {
		exited(t, run(t, inv(tool(t, "false"))), 1)
	})
	t.Run("Timeout", func(t *testing.T) {
		in := inv(tool(t, "sleep"), "30")
		in.Timeout = 200 * time.Millisecond
		if o := run(t, in); o.Termination != execgate.TerminationTimeout {
			t.Errorf("got termination %q, want %q", o.Termination, execgate.TerminationTimeout)
		}
	})
	t.Run("NoOutputTimeout", func(t *testing.T) {
		in := inv(tool(t, "sleep"), "30")
		in.NoOutputTimeout = 200 * time.Millisecond
		if o := run(t, in); o.Termination != execgate.TerminationNoOutputTimeout {
			t.Errorf("got termination %q, want %q", o.Termination, execgate.TerminationNoOutputTimeout)
		}
	})
	t.Run("Canceled", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if o := fn(ctx, inv(tool(t, "sleep"), "30")); o.Termination != execgate.TerminationCanceled {
			t.Errorf("got termination %q, want %q", o.Termination, execgate.TerminationCanceled)
		}
	})
	t.Run("OutputIsBounded", func(t *testing.T) {
		in := inv(tool(t, "head"), "-c", "1000000", "/dev/zero")
		in.MaxOutput = 1000
		o := run(t, in)
		exited(t, o, 0)
		if len(o.Stdout) > in.MaxOutput || int64(len(o.Stdout))+o.StdoutDropped != 1000000 {
			t.Errorf("kept %d bytes and dropped %d of 1000000, want at most %d kept and the rest counted", len(o.Stdout), o.StdoutDropped, in.MaxOutput)
		}
	})
	t.Run("SpawnError", func(t *testing.T) {
		o := run(t, inv(filepath.Join(t.TempDir(), "missing")))
		if o.Err == nil && o.Termination != execgate.TerminationSpawnError {
			t.Errorf("starting a missing file gave termination %q and no error", o.Termination)
		}
	})
}
