package execgate_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
)

func TestInvariant8_MemoryStoreBoundsBytes(t *testing.T) {
	store := execgate.NewMemoryStore(execgate.MemoryStoreOptions{MaxBytes: 3 << 10})
	x, _ := newGate(t, execgate.Config{Store: store}, echoSpec())
	big, err := json.Marshal(map[string]any{"args": []string{strings.Repeat("a", 1000)}})
	require.NoError(t, err)
	_, err = x.Propose(context.Background(), "echo.say", big, "")
	require.NoError(t, err) // about 2 KiB: input and argument
	_, err = x.Propose(context.Background(), "echo.say", big, "")
	assert.ErrorIs(t, err, execgate.ErrStoreFull, "a second record would pass the byte budget")
	_, err = x.Propose(context.Background(), "echo.say", json.RawMessage(`{}`), "")
	assert.NoError(t, err, "a small record still fits")
	assert.Equal(t, 2, store.Len())
}

func TestInvariant8_ApprovalsCarryOnlyWhatSurvivesJSON(t *testing.T) {
	// A Fixed argument that is not UTF-8 could never come back intact
	// from an approver: Propose refuses it rather than issue an approval
	// that would burn itself.
	x, rec := newGate(t, execgate.Config{}, execgate.CommandSpec{Name: "latin1", Command: "/bin/echo", Args: execgate.Fixed("caf\xe9")})
	_, err := x.Propose(context.Background(), "latin1", nil, "")
	var ve *execgate.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "args[0]", ve.Issues[0].Field)
	_, err = x.Run(context.Background(), "latin1", nil)
	assert.NoError(t, err, "Run needs no JSON round trip")
	assert.Equal(t, 1, rec.Count())

	for _, spec := range []execgate.CommandSpec{
		{Name: "long.pv", Command: "/bin/echo", Args: execgate.Fixed(), PolicyVersion: strings.Repeat("v", 257)},
		{Name: "bad.pv", Command: "/bin/echo", Args: execgate.Fixed(), PolicyVersion: "\xff"},
	} {
		_, err := execgate.NewAllowlist(spec)
		var ce *execgate.ConfigError
		require.ErrorAs(t, err, &ce, spec.Name)
		assert.Equal(t, "PolicyVersion", ce.Field)
	}
}

func TestInvariant9_ReZonedEnvelopeIsRefused(t *testing.T) {
	x, rec := newGate(t, execgate.Config{}, echoSpec())
	ap := propose(t, x, `{}`)
	b, err := json.Marshal(ap)
	require.NoError(t, err)
	z := ap.ExpiresAt.UTC().Format(time.RFC3339Nano)
	plus5 := ap.ExpiresAt.In(time.FixedZone("", 5*3600)).Format(time.RFC3339Nano)
	require.Contains(t, string(b), z)
	var moved execgate.Approval
	require.NoError(t, json.Unmarshal([]byte(strings.Replace(string(b), z, plus5, 1)), &moved))
	require.True(t, moved.ExpiresAt.Equal(ap.ExpiresAt), "the same instant")
	_, err = x.Execute(context.Background(), moved)
	var ve *execgate.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "expiresAt", ve.Issues[0].Field)
	_, err = x.Execute(context.Background(), ap)
	require.NoError(t, err, "a refused envelope burns nothing")
	assert.Equal(t, 1, rec.Count())
}

func TestApproval_UnmarshalNullIsANoOp(t *testing.T) {
	var w struct {
		A execgate.Approval  `json:"a"`
		P *execgate.Approval `json:"p"`
	}
	w.A.ID = "kept"
	require.NoError(t, json.Unmarshal([]byte(`{"a":null,"p":null}`), &w))
	assert.Equal(t, "kept", w.A.ID)
	assert.Nil(t, w.P)
}

func TestInvariant7_NormalisationClearsWhatATerminationCannotHave(t *testing.T) {
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

func TestInvariant3_ExecutableResolvedOnce(t *testing.T) {
	dir := t.TempDir()
	tool := filepath.Join(dir, "execgate-test-tool")
	require.NoError(t, os.WriteFile(tool, []byte("#!/bin/true\n"), 0o755))
	link := filepath.Join(dir, "execgate-test-link")
	require.NoError(t, os.Symlink(tool, link))

	t.Run("a bare name is looked up on PATH, once", func(t *testing.T) {
		t.Setenv("PATH", dir)
		a := mustAllowlist(t, execgate.CommandSpec{Name: "tool", Command: "execgate-test-tool", Args: execgate.Fixed()})
		s, _ := a.Lookup("tool")
		assert.Equal(t, tool, s.Command)
		t.Setenv("PATH", "/nonexistent")
		s, _ = a.Lookup("tool")
		assert.Equal(t, tool, s.Command, "a later PATH change changes nothing")
	})
	t.Run("an absolute path is cleaned, not symlink-resolved", func(t *testing.T) {
		a := mustAllowlist(t, execgate.CommandSpec{Name: "link", Command: dir + "/./sub/../execgate-test-link", Args: execgate.Fixed()})
		s, _ := a.Lookup("link")
		assert.Equal(t, link, s.Command)
	})
	t.Run("a match through a relative PATH entry is refused", func(t *testing.T) {
		t.Chdir(dir)
		for _, path := range []string{".", "", "./", "sub/.."} {
			t.Setenv("PATH", path)
			_, err := execgate.NewAllowlist(execgate.CommandSpec{Name: "tool", Command: "execgate-test-tool", Args: execgate.Fixed()})
			var ce *execgate.ConfigError
			require.ErrorAs(t, err, &ce, "PATH=%q", path)
			assert.Equal(t, "Command", ce.Field)
		}
	})
}
