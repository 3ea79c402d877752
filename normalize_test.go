package execgate_test

import (
	"context"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/internal/fakeclock"
)

// TestAlwaysARecord_ExecutorNormalizesOutcomes feeds the Executor every kind
// of Outcome an ExecFn might return and checks the Result's rules hold.
//
// Invariant 7 of DESIGN.md.
func TestAlwaysARecord_ExecutorNormalizesOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  execgate.Outcome
		want execgate.Result // only the fields checked below
	}{
		{"empty termination is exit", execgate.Outcome{ExitCode: 0, PID: 7},
			execgate.Result{Termination: execgate.TerminationExit, ExitCode: 0, OK: true, PID: 7}},
		{"non-zero exit", execgate.Outcome{ExitCode: 3, Termination: execgate.TerminationExit, PID: 7},
			execgate.Result{Termination: execgate.TerminationExit, ExitCode: 3, PID: 7}},
		{"signal", execgate.Outcome{ExitCode: 0, Termination: execgate.TerminationSignal, Signal: "SIGTERM", PID: 7},
			execgate.Result{Termination: execgate.TerminationSignal, ExitCode: -1, Signal: "SIGTERM", PID: 7}},
		{"timeout", execgate.Outcome{ExitCode: 0, Termination: execgate.TerminationTimeout, Signal: "SIGKILL", PID: 7},
			execgate.Result{Termination: execgate.TerminationTimeout, ExitCode: -1, Signal: "SIGKILL", PID: 7}},
		{"no-output timeout", execgate.Outcome{ExitCode: 5, Termination: execgate.TerminationNoOutputTimeout},
			execgate.Result{Termination: execgate.TerminationNoOutputTimeout, ExitCode: -1}},
		{"canceled", execgate.Outcome{Termination: execgate.TerminationCanceled},
			execgate.Result{Termination: execgate.TerminationCanceled, ExitCode: -1}},
		{"err wins over exit 0", execgate.Outcome{ExitCode: 0, Err: errors.New("fork failed"), Signal: "SIGKILL"},
			execgate.Result{Termination: execgate.TerminationSpawnError, ExitCode: -1, SpawnError: "fork failed"}},
		{"err wins over timeout", execgate.Outcome{Termination: execgate.TerminationTimeout, Err: errors.New("x")},
			execgate.Result{Termination: execgate.TerminationSpawnError, ExitCode: -1, SpawnError: "x"}},
		{"spawn_error without err", execgate.Outcome{Termination: execgate.TerminationSpawnError, ExitCode: 0},
			execgate.Result{Termination: execgate.TerminationSpawnError, ExitCode: -1, SpawnError: "the process could not be started"}},
		{"unknown termination", execgate.Outcome{Termination: "weird", ExitCode: 0},
			execgate.Result{Termination: execgate.TerminationSpawnError, ExitCode: -1, SpawnError: "the ExecFn reported an unknown termination"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := execgatetest.NewRecorder().On("true", tc.out)
			x, err := execgate.NewExecutor(execgate.Config{Allowlist: mustAllowlist(t,
				execgate.CommandSpec{Name: "true", Command: "/bin/true", Args: execgate.Fixed()}), ExecFn: rec.Exec})
			require.NoError(t, err)
			res, err := x.Run(context.Background(), "true", nil)
			require.NoError(t, err, "every outcome after validation is a Result")
			assert.Equal(t, tc.want.Termination, res.Termination)
			assert.Equal(t, tc.want.ExitCode, res.ExitCode)
			assert.Equal(t, tc.want.OK, res.OK)
			assert.Equal(t, tc.want.Signal, res.Signal)
			assert.Equal(t, tc.want.SpawnError, res.SpawnError)
			assert.Equal(t, tc.want.PID, res.PID)
			assert.NotEmpty(t, res.Termination)
		})
	}
}

func TestRun_ResultRecord(t *testing.T) {
	start := newClock().Now()
	clk := fakeclock.NewTicking(start, time.Second)
	rec := execgatetest.NewRecorder().On("echo.hi", execgate.Outcome{Stdout: []byte("hi\n"), Stderr: []byte("warn"), PID: 42})
	x, err := execgate.NewExecutor(execgate.Config{Now: clk.Now, ExecFn: rec.Exec, Allowlist: mustAllowlist(t,
		execgate.CommandSpec{Name: "echo.hi", Command: "/bin/echo", Args: execgate.Fixed("hi")})})
	require.NoError(t, err)

	res, err := x.Run(context.Background(), "echo.hi", nil)
	require.NoError(t, err)
	u, err := uuid.Parse(res.ID)
	require.NoError(t, err)
	assert.Equal(t, uuid.Version(7), u.Version())
	assert.Equal(t, "echo.hi", res.Name)
	assert.Equal(t, "/bin/echo", res.Command)
	assert.Equal(t, []string{"hi"}, res.Args)
	assert.Equal(t, "hi\n", res.Stdout)
	assert.Equal(t, "warn", res.Stderr)
	assert.Equal(t, start.Add(time.Second), res.At, "At comes from Config.Now")
	assert.Equal(t, time.Second, res.Duration)

	res2, err := x.Run(context.Background(), "echo.hi", nil)
	require.NoError(t, err)
	assert.Less(t, res.ID, res2.ID, "IDs are time-ordered")
}

// TestBoundedEverything_ExecutorBoundsAnyExecFn checks that output from a custom
// ExecFn that ignores MaxOutput is cut, at a character boundary, and the cut
// is counted.
//
// Invariant 6 of DESIGN.md.
func TestBoundedEverything_ExecutorBoundsAnyExecFn(t *testing.T) {
	big := strings.Repeat("€", 100) // 300 bytes
	rec := execgatetest.NewRecorder().On("flood", execgate.Outcome{
		Stdout: []byte(big), Stderr: []byte(big), StdoutDropped: 1000, StderrDropped: -5,
	})
	x, err := execgate.NewExecutor(execgate.Config{ExecFn: rec.Exec, Allowlist: mustAllowlist(t,
		execgate.CommandSpec{Name: "flood", Command: "/bin/true", Args: execgate.Fixed(), MaxOutput: 100})})
	require.NoError(t, err)
	res, err := x.Run(context.Background(), "flood", nil)
	require.NoError(t, err)
	assert.Len(t, res.Stdout, 99, "cut at the last whole character within 100 bytes")
	assert.True(t, utf8.ValidString(res.Stdout))
	assert.EqualValues(t, 1000+201, res.StdoutDropped)
	assert.Len(t, res.Stderr, 99)
	assert.EqualValues(t, 201, res.StderrDropped, "a negative count from the ExecFn is ignored")
}

// Invariant 7 of DESIGN.md.
func TestAlwaysARecord_NormalizationClearsWhatATerminationCannotHave(t *testing.T) {
	for _, tc := range []struct {
		name       string
		out        execgate.Outcome
		wantSignal string
		wantPID    int
		wantOut    int64
	}{
		{"exit keeps no signal", execgate.Outcome{Termination: execgate.TerminationExit, Signal: "SIGTERM", PID: 7}, "", 7, 0},
		{"spawn_error keeps no signal or pid", execgate.Outcome{Termination: execgate.TerminationSpawnError, Signal: "SIGKILL", PID: 7}, "", 0, 0},
		{"err keeps no pid", execgate.Outcome{Err: os.ErrNotExist, PID: 4242}, "", 0, 0},
		{"timeout keeps its signal", execgate.Outcome{Termination: execgate.TerminationTimeout, Signal: "SIGKILL", PID: 7}, "SIGKILL", 7, 0},
		{"dropped counts saturate", execgate.Outcome{Stdout: []byte(strings.Repeat("x", 20)), StdoutDropped: math.MaxInt64 - 1}, "", 0, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := execgatetest.NewRecorder().Otherwise(tc.out)
			x, err := execgate.NewExecutor(execgate.Config{ExecFn: rec.Exec, Allowlist: mustAllowlist(t,
				execgate.CommandSpec{Name: "t", Command: "/bin/true", Args: execgate.Fixed(), MaxOutput: 10})})
			require.NoError(t, err)
			res, err := x.Run(context.Background(), "t", nil)
			require.NoError(t, err)
			assert.Equal(t, tc.wantSignal, res.Signal)
			assert.Equal(t, tc.wantPID, res.PID)
			if tc.wantOut != 0 {
				assert.Equal(t, tc.wantOut, res.StdoutDropped)
			}
		})
	}
}
