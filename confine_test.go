package execgate

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// confineTestCommand is an executable that exists on every platform the
// tests run on: the test binary itself.
func confineTestCommand(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return exe
}

func TestConfinement_Normalized(t *testing.T) {
	exe := confineTestCommand(t)
	a, err := NewAllowlist(CommandSpec{Name: "c", Command: exe, Args: Fixed(), Confine: &Confinement{
		Read:   []string{"/usr/", "/etc/ssl", "/usr", "/a/../etc/ssl/."},
		Write:  []string{"/srv/scratch"},
		Limits: Limits{CPU: 1500 * time.Millisecond, AddressSpace: 1 << 30},
	}})
	require.NoError(t, err)
	s, ok := a.Lookup("c")
	require.True(t, ok)
	require.NotNil(t, s.Confine)
	assert.Equal(t, []string{"/etc/ssl", "/usr"}, s.Confine.Read)
	assert.Equal(t, []string{"/srv/scratch"}, s.Confine.Write)
	assert.Nil(t, s.Confine.Exec)
	assert.Equal(t, 2*time.Second, s.Confine.Limits.CPU)
	assert.False(t, s.Confine.Network)
	assert.False(t, s.Confine.BestEffort, "the zero value is required")

	// Lookup returns a copy.
	s.Confine.Read[0] = "/"
	s.Confine.Network = true
	again, _ := a.Lookup("c")
	assert.Equal(t, []string{"/etc/ssl", "/usr"}, again.Confine.Read)
	assert.False(t, again.Confine.Network)

	// No confinement stays nil.
	b, err := NewAllowlist(CommandSpec{Name: "c", Command: exe, Args: Fixed()})
	require.NoError(t, err)
	s, _ = b.Lookup("c")
	assert.Nil(t, s.Confine)
}

func TestConfinement_Refused(t *testing.T) {
	exe := confineTestCommand(t)
	for field, c := range map[string]*Confinement{
		"Confine.Read":                {Read: []string{"relative/path"}},
		"Confine.Write":               {Write: []string{""}},
		"Confine.Exec":                {Exec: []string{"/bin\x00/sh"}},
		"Confine.Limits.CPU":          {Limits: Limits{CPU: -time.Second}},
		"Confine.Limits.AddressSpace": {Limits: Limits{AddressSpace: -1}},
		"Confine.Limits.Files":        {Limits: Limits{Files: -1}},
		"Confine.Limits.FileSize":     {Limits: Limits{FileSize: -1}},
		"Confine.Limits.Processes":    {Limits: Limits{Processes: -1}},
	} {
		_, err := NewAllowlist(CommandSpec{Name: "c", Command: exe, Args: Fixed(), Confine: c})
		var ce *ConfigError
		if assert.ErrorAs(t, err, &ce, field) {
			assert.Equal(t, field, ce.Field)
		}
	}
}

// TestConfinement_InTheFingerprint checks that the confinement is bound
// into the spec fingerprint, field by field, and that a spec without one
// keeps the fingerprint of the encoding before confinement existed.
func TestConfinement_InTheFingerprint(t *testing.T) {
	plain := goldenEntry()
	base := goldenEntry()
	base.spec.Confine = &Confinement{}
	assert.NotEqual(t, specFingerprint(plain), specFingerprint(base), "zero Confinement vs none")

	changes := map[string]func(*Confinement){
		"read":          func(c *Confinement) { c.Read = []string{"/usr"} },
		"write":         func(c *Confinement) { c.Write = []string{"/usr"} },
		"exec":          func(c *Confinement) { c.Exec = []string{"/usr"} },
		"network":       func(c *Confinement) { c.Network = true },
		"cpu":           func(c *Confinement) { c.Limits.CPU = time.Second },
		"address space": func(c *Confinement) { c.Limits.AddressSpace = 1 },
		"files":         func(c *Confinement) { c.Limits.Files = 1 },
		"file size":     func(c *Confinement) { c.Limits.FileSize = 1 },
		"processes":     func(c *Confinement) { c.Limits.Processes = 1 },
		"best effort":   func(c *Confinement) { c.BestEffort = true },
	}
	seen := map[string]string{specFingerprint(base): "base"}
	for name, change := range changes {
		e := goldenEntry()
		e.spec.Confine = &Confinement{}
		change(e.spec.Confine)
		fp := specFingerprint(e)
		assert.Empty(t, seen[fp], "%s collides with %s", name, seen[fp])
		seen[fp] = name
	}
	// The same path in another list.
	r, w := goldenEntry(), goldenEntry()
	r.spec.Confine = &Confinement{Read: []string{"/usr"}}
	w.spec.Confine = &Confinement{Write: []string{"/usr"}}
	assert.NotEqual(t, specFingerprint(r), specFingerprint(w))
}

// confineExecutor returns an Executor whose ExecFn records Invocations
// and reports out.
func confineExecutor(t *testing.T, a *Allowlist, out Outcome) (*Executor, func() []Invocation) {
	t.Helper()
	var mu sync.Mutex
	var calls []Invocation
	x, err := NewExecutor(Config{Allowlist: a, ExecFn: func(ctx context.Context, inv Invocation) Outcome {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, inv)
		return out
	}})
	require.NoError(t, err)
	return x, func() []Invocation {
		mu.Lock()
		defer mu.Unlock()
		return append([]Invocation(nil), calls...)
	}
}

func TestConfinement_ReachesTheExecFnAndTheResult(t *testing.T) {
	exe := confineTestCommand(t)
	a, err := NewAllowlist(CommandSpec{Name: "c", Command: exe, Args: Fixed(),
		Confine: &Confinement{Read: []string{"/usr"}, BestEffort: true}})
	require.NoError(t, err)
	x, calls := confineExecutor(t, a, Outcome{Unconfined: []string{"network"}})
	res, err := x.Run(context.Background(), "c", nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"network"}, res.Unconfined)
	got := calls()
	require.Len(t, got, 1)
	require.NotNil(t, got[0].Confine)
	assert.Equal(t, []string{"/usr"}, got[0].Confine.Read)
	assert.True(t, got[0].Confine.BestEffort)

	// Each call gets its own copy: an ExecFn that changes it changes
	// nothing for the next call.
	got[0].Confine.Read[0] = "/"
	_, err = x.Run(context.Background(), "c", nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"/usr"}, calls()[1].Confine.Read)

	// A spawn error carries no Unconfined: nothing ran.
	x, _ = confineExecutor(t, a, Outcome{Unconfined: []string{"network"}, Err: errors.New("no")})
	res, err = x.Run(context.Background(), "c", nil)
	require.NoError(t, err)
	assert.Equal(t, TerminationSpawnError, res.Termination)
	assert.Empty(t, res.Unconfined)
}

// TestConfinement_ChangeBetweenProposeAndExecuteRefuses pins that the
// confinement is bound into approvals: any change to it, including adding
// or removing one, makes Execute refuse with policy_changed and run
// nothing; an unchanged one executes.
func TestConfinement_ChangeBetweenProposeAndExecuteRefuses(t *testing.T) {
	exe := confineTestCommand(t)
	spec := func(c *Confinement) CommandSpec {
		return CommandSpec{Name: "c", Command: exe, Args: Fixed(), Floor: ActionRequireApproval, Confine: c}
	}
	orig := &Confinement{Read: []string{"/usr"}, Limits: Limits{CPU: time.Second}}
	for name, next := range map[string]*Confinement{
		"removed":          nil,
		"read path added":  {Read: []string{"/usr", "/home"}, Limits: Limits{CPU: time.Second}},
		"network on":       {Read: []string{"/usr"}, Network: true, Limits: Limits{CPU: time.Second}},
		"cpu raised":       {Read: []string{"/usr"}, Limits: Limits{CPU: 2 * time.Second}},
		"best effort":      {Read: []string{"/usr"}, Limits: Limits{CPU: time.Second}, BestEffort: true},
		"read moved write": {Write: []string{"/usr"}, Limits: Limits{CPU: time.Second}},
	} {
		a, err := NewAllowlist(spec(orig))
		require.NoError(t, err)
		x, calls := confineExecutor(t, a, Outcome{})
		ap, err := x.Propose(context.Background(), "c", nil, "")
		require.NoError(t, err, name)
		b, err := NewAllowlist(spec(next))
		require.NoError(t, err, name)
		x.SetAllowlist(b)
		_, err = x.Execute(context.Background(), ap)
		var ae *ApprovalError
		if assert.ErrorAs(t, err, &ae, name) {
			assert.Equal(t, ReasonPolicyChanged, ae.Reason, name)
		}
		assert.Empty(t, calls(), name)
	}

	// Unchanged (built again from an equal spec, in another order): runs.
	a, err := NewAllowlist(spec(orig))
	require.NoError(t, err)
	x, calls := confineExecutor(t, a, Outcome{})
	ap, err := x.Propose(context.Background(), "c", nil, "")
	require.NoError(t, err)
	b, err := NewAllowlist(spec(&Confinement{Read: []string{"/usr/", "/usr"}, Limits: Limits{CPU: 900 * time.Millisecond}}))
	require.NoError(t, err)
	x.SetAllowlist(b)
	res, err := x.Execute(context.Background(), ap)
	require.NoError(t, err)
	assert.True(t, res.OK)
	assert.Len(t, calls(), 1)
}

func TestConfinement_UnconfinedReachesTheAuditTrail(t *testing.T) {
	exe := confineTestCommand(t)
	a, err := NewAllowlist(CommandSpec{Name: "c", Command: exe, Args: Fixed(),
		Confine: &Confinement{BestEffort: true}})
	require.NoError(t, err)
	var events []Event
	x, err := NewExecutor(Config{Allowlist: a,
		ExecFn: func(context.Context, Invocation) Outcome {
			return Outcome{Unconfined: []string{"filesystem", "network"}}
		},
		Auditor: eventList{&events}})
	require.NoError(t, err)
	_, err = x.Run(context.Background(), "c", nil)
	require.NoError(t, err)
	require.Len(t, events, 2, "the intent and the outcome")
	assert.Empty(t, events[0].Unconfined, "the intent comes before anything is known")
	assert.Equal(t, []string{"filesystem", "network"}, events[1].Unconfined)
}

// eventList is an Auditor that appends to a slice; not for concurrent use.
type eventList struct{ events *[]Event }

func (l eventList) Audit(_ context.Context, ev Event) error {
	*l.events = append(*l.events, ev)
	return nil
}
