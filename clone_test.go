package execgate

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/internal/inventory"
)

// The functions that copy a value the gate keeps or hands out must copy
// every field and share no memory with the original, so that whoever
// holds one copy cannot change another. inventory.CloneProblems fills
// every field by reflection, so a field added later is checked too.
func TestClones_AreWholeAndShareNothing(t *testing.T) {
	for name, problems := range map[string][]string{
		"Confinement.clone": inventory.CloneProblems(digestFiller, func(c *Confinement) *Confinement { return c.clone() }),
		"copyFlagSpec":      inventory.CloneProblems(digestFiller, copyFlagSpec),
		"Allowlist.Lookup's copy of a spec": inventory.CloneProblems(digestFiller, func(s CommandSpec) CommandSpec {
			return (&entry{spec: s}).publicSpec()
		}),
		"MemoryStore's copy of a record": inventory.CloneProblems(digestFiller, func(rec Record) Record {
			s := NewMemoryStore(MemoryStoreOptions{})
			require.NoError(t, s.Save(context.Background(), rec))
			got, err := s.Take(context.Background(), rec.Approval.ID)
			require.NoError(t, err)
			return got
		}),
	} {
		assert.Empty(t, problems, name)
	}
}

// stdinSchema accepts any input and builds a fixed argv with stdin.
type stdinSchema struct{}

func (stdinSchema) Parse(json.RawMessage) (Argv, error) {
	return Argv{Args: []string{"a", "b"}, Stdin: []byte("stdin")}, nil
}
func (stdinSchema) JSONSchema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }

// Each call hands its ExecFn an Invocation of its own: an ExecFn that
// changes everything its Invocation reaches changes nothing the next call
// gets.
func TestExecutor_EachInvocationSharesNothing(t *testing.T) {
	a, err := NewAllowlist(CommandSpec{
		Name: "t", Command: "/bin/echo", Args: stdinSchema{}, Dir: "/",
		Env: map[string]string{"A": "1", "B": "2"},
		Confine: &Confinement{Read: []string{"/etc", "/usr"}, Write: []string{"/tmp"}, Exec: []string{"/bin"}, Limits: Limits{Files: 64},
			Egress: &Egress{Allow: []string{"example.com:443"}, Deny: []string{"10.0.0.0/8:*"}}},
	})
	require.NoError(t, err)
	var seen [][]byte
	x, err := NewExecutor(Config{Allowlist: a, ExecFn: func(_ context.Context, inv Invocation) Outcome {
		b, err := json.Marshal(inv)
		require.NoError(t, err)
		seen = append(seen, b)
		inventory.Filler{}.Mutate(&inv, 7)
		return Outcome{}
	}})
	require.NoError(t, err)
	for range 2 {
		_, err := x.Run(context.Background(), "t", nil)
		require.NoError(t, err)
	}
	require.Len(t, seen, 2)
	assert.JSONEq(t, string(seen[0]), string(seen[1]), "the second call's Invocation changed with what the first ExecFn did to its own")

	// The ExecFn had something to change in every field that can share
	// memory: each slice, and each slice behind the Confine pointer.
	var before, after Invocation
	require.NoError(t, json.Unmarshal(seen[0], &before))
	require.NoError(t, json.Unmarshal(seen[0], &after))
	inventory.Filler{}.Mutate(&after, 7)
	changed := inventory.Diff(before, after)
	for _, leaf := range inventory.Leaves(reflect.TypeFor[Invocation]()) {
		var probe Invocation
		inventory.Fill(&probe, 1)
		if v := leafValue(reflect.ValueOf(probe), leaf); v.Kind() == reflect.Slice {
			assert.Contains(t, changed, leaf, "the test's spec leaves %s empty, so it checks nothing there", leaf)
		}
	}
}

// leafValue returns the value at a path of inventory.Leaves that passes
// through no slice.
func leafValue(v reflect.Value, path string) reflect.Value {
	for _, name := range strings.Split(path, ".") {
		if v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		v = v.FieldByName(name)
	}
	return v
}

// NewAllowlist keeps its own copy of what a spec points to: the caller
// changing its Hints afterwards changes nothing the Allowlist lists.
func TestNewAllowlist_KeepsItsOwnHints(t *testing.T) {
	readOnly := true
	a, err := NewAllowlist(CommandSpec{Name: "t", Command: "/bin/echo", Args: Fixed(), Hints: Hints{ReadOnly: &readOnly}})
	require.NoError(t, err)
	readOnly = false
	s, ok := a.Lookup("t")
	require.True(t, ok)
	require.NotNil(t, s.Hints.ReadOnly)
	assert.True(t, *s.Hints.ReadOnly)
}
