package execgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/internal/fakeclock"
)

// listSchema is a small test schema: {"args": [...], "stdin": "..."} becomes
// that argv, after an optional prefix; maxArgs, if set, narrows it.
type listSchema struct {
	prefix  []string
	maxArgs int
	stdin   string // appended to the stdin the input asks for
}

func (s listSchema) Parse(in json.RawMessage) (execgate.Argv, error) {
	var v struct {
		Args  []string `json:"args"`
		Stdin string   `json:"stdin"`
	}
	if len(in) > 0 {
		if err := json.Unmarshal(in, &v); err != nil {
			return execgate.Argv{}, &execgate.ValidationError{Issues: []execgate.Issue{{Message: "bad json"}}}
		}
	}
	if s.maxArgs > 0 && len(v.Args) > s.maxArgs {
		return execgate.Argv{}, &execgate.ValidationError{Issues: []execgate.Issue{{Field: "args", Message: "too many"}}}
	}
	argv := execgate.Argv{Args: append(append([]string(nil), s.prefix...), v.Args...)}
	if v.Stdin != "" || s.stdin != "" {
		argv.Stdin = []byte(v.Stdin + s.stdin)
	}
	return argv, nil
}

func (listSchema) JSONSchema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }

// newClock returns a settable clock for Config.Now.
func newClock() *fakeclock.Clock {
	return fakeclock.New(time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC))
}

func echoSpec() execgate.CommandSpec {
	return execgate.CommandSpec{
		Name: "echo.say", Command: "/bin/echo", Args: listSchema{},
		Env: map[string]string{"LANG": "C"}, Dir: "/",
	}
}

// roundTrip serializes an approval the way it would travel to an approver
// and back.
func roundTrip(t *testing.T, ap execgate.Approval) execgate.Approval {
	t.Helper()
	b, err := json.Marshal(ap)
	require.NoError(t, err)
	var out execgate.Approval
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

func propose(t *testing.T, x *execgate.Executor, input string) execgate.Approval {
	t.Helper()
	ap, err := x.Propose(context.Background(), "echo.say", json.RawMessage(input), "deploy fix")
	require.NoError(t, err)
	return ap
}

func requireApprovalError(t *testing.T, err error, reason string) {
	t.Helper()
	var ae *execgate.ApprovalError
	require.ErrorAs(t, err, &ae, "want ApprovalError %s", reason)
	assert.Equal(t, reason, ae.Reason)
}

func TestPropose_ReturnsAShowableApproval(t *testing.T) {
	clk := newClock()
	x, rec := newGate(t, execgate.Config{Now: clk.Now, ApprovalTTL: time.Minute}, echoSpec())
	ap, err := x.Propose(context.Background(), "echo.say", json.RawMessage(`{"args":["hello"],"stdin":"stdin-canary"}`), "because")
	require.NoError(t, err)
	assert.Zero(t, rec.Count(), "Propose spawns nothing")

	u, err := uuid.Parse(ap.ID)
	require.NoError(t, err)
	assert.Equal(t, uuid.Version(7), u.Version())
	assert.Equal(t, "echo.say", ap.Name)
	assert.Equal(t, "/bin/echo", ap.Command)
	assert.Equal(t, []string{"hello"}, ap.Args)
	assert.Equal(t, "because", ap.Reason)
	assert.Equal(t, "1", ap.PolicyVersion)
	assert.True(t, ap.CreatedAt.Equal(clk.Now()))
	assert.True(t, ap.ExpiresAt.Equal(clk.Now().Add(time.Minute)))
	assert.Len(t, ap.Digest, 64)

	b, err := json.Marshal(ap)
	require.NoError(t, err)
	var fields map[string]any
	require.NoError(t, json.Unmarshal(b, &fields))
	assert.ElementsMatch(t, []string{"id", "principal", "name", "command", "args", "digest", "reason", "policyVersion", "stdin", "createdAt", "expiresAt"}, keys(fields))
	// The approver sees what the command will read: its size, its hash
	// and a preview of its start; never the environment.
	require.NotNil(t, ap.Stdin)
	assert.Equal(t, execgate.StdinInfo{Bytes: 12, SHA256: "e1ddd43dafafd2b72b1e67694eeab7dce4914bd2ff747b2c7312e41b53dbfd6b", Preview: "stdin-canary"}, *ap.Stdin)
	assert.NotContains(t, string(b), "LANG")
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestExecute_RunsOnceWithTheStoredCall(t *testing.T) {
	x, rec := newGate(t, execgate.Config{}, echoSpec())
	ap := propose(t, x, `{"args":["hello"],"stdin":"in"}`)
	res, err := x.Execute(context.Background(), roundTrip(t, ap))
	require.NoError(t, err)
	assert.Equal(t, ap.ID, res.ApprovalID)
	assert.NotEqual(t, ap.ID, res.ID)
	assert.Equal(t, execgate.TerminationExit, res.Termination)
	calls := rec.Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, []string{"hello"}, calls[0].Args)
	assert.Equal(t, []byte("in"), calls[0].Stdin)
	assert.Equal(t, []string{"LANG=C"}, calls[0].Env)

	_, err = x.Execute(context.Background(), ap)
	requireApprovalError(t, err, execgate.ReasonUnknown)
	assert.Equal(t, 1, rec.Count())
}

// Invariant 8 of DESIGN.md.
func TestSingleUse_UnderConcurrentExecute(t *testing.T) {
	x, rec := newGate(t, execgate.Config{}, echoSpec())
	ap := roundTrip(t, propose(t, x, `{"args":["once"]}`))

	const n = 100
	var ran, refused atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := x.Execute(context.Background(), ap)
			var ae *execgate.ApprovalError
			switch {
			case err == nil:
				ran.Add(1)
			case errors.As(err, &ae) && ae.Reason == execgate.ReasonUnknown:
				refused.Add(1)
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	assert.EqualValues(t, 1, ran.Load())
	assert.EqualValues(t, n-1, refused.Load())
	assert.Equal(t, 1, rec.Count(), "exactly one spawn")
}

// Invariant 8 of DESIGN.md.
func TestSingleUse_RejectRacesExecute(t *testing.T) {
	x, rec := newGate(t, execgate.Config{}, echoSpec())
	for i := range 200 {
		ap := propose(t, x, `{"args":["race"]}`)
		var executed, rejected bool
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := x.Execute(context.Background(), ap)
			executed = err == nil
		}()
		go func() {
			defer wg.Done()
			ok, err := x.Reject(context.Background(), ap.ID)
			assert.NoError(t, err)
			rejected = ok
		}()
		wg.Wait()
		require.True(t, executed != rejected, "round %d: executed=%v rejected=%v", i, executed, rejected)
	}
	assert.LessOrEqual(t, rec.Count(), 200)
}

func TestReject(t *testing.T) {
	x, rec := newGate(t, execgate.Config{}, echoSpec())
	ap := propose(t, x, `{}`)

	_, err := x.Reject(context.Background(), "not-a-uuid")
	var ve *execgate.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "id", ve.Issues[0].Field)
	_, err = x.Reject(context.Background(), strings.ToUpper(ap.ID))
	require.ErrorAs(t, err, &ve, "only the canonical form is accepted")

	ok, err := x.Reject(context.Background(), uuid.NewString())
	require.NoError(t, err)
	assert.False(t, ok, "unknown id")

	ok, err = x.Reject(context.Background(), ap.ID)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = x.Reject(context.Background(), ap.ID)
	require.NoError(t, err)
	assert.False(t, ok, "already rejected")

	_, err = x.Execute(context.Background(), ap)
	requireApprovalError(t, err, execgate.ReasonUnknown)
	assert.Zero(t, rec.Count())

	// After Execute, Reject finds nothing.
	ap2 := propose(t, x, `{}`)
	_, err = x.Execute(context.Background(), ap2)
	require.NoError(t, err)
	ok, err = x.Reject(context.Background(), ap2.ID)
	require.NoError(t, err)
	assert.False(t, ok)
}

// Invariant 8 of DESIGN.md.
func TestSingleUse_MalformedApprovalBurnsNothing(t *testing.T) {
	x, rec := newGate(t, execgate.Config{}, echoSpec())
	ap := propose(t, x, `{"args":["keep"]}`)

	for _, tc := range []struct {
		field  string
		mutate func(*execgate.Approval)
	}{
		{"id", func(a *execgate.Approval) { a.ID = "not-a-uuid" }},
		{"id", func(a *execgate.Approval) { a.ID = strings.ToUpper(a.ID) }},
		{"id", func(a *execgate.Approval) { a.ID = "{" + a.ID + "}" }},
		{"id", func(a *execgate.Approval) { a.ID = "" }},
		{"digest", func(a *execgate.Approval) { a.Digest = "" }},
		{"digest", func(a *execgate.Approval) { a.Digest = strings.ToUpper(a.Digest) }},
		{"digest", func(a *execgate.Approval) { a.Digest = a.Digest[:63] }},
		{"digest", func(a *execgate.Approval) { a.Digest = a.Digest[:63] + "g" }},
		{"args", func(a *execgate.Approval) { a.Args = make([]string, execgate.MaxApprovalArgs+1) }},
		{"args[0]", func(a *execgate.Approval) { a.Args = []string{strings.Repeat("a", execgate.MaxApprovalArgBytes+1)} }},
		{"reason", func(a *execgate.Approval) { a.Reason = strings.Repeat("r", execgate.MaxReasonBytes+1) }},
		{"reason", func(a *execgate.Approval) { a.Reason = "\xff" }},
		{"name", func(a *execgate.Approval) { a.Name = "" }},
		{"command", func(a *execgate.Approval) { a.Command = "" }},
		{"policyVersion", func(a *execgate.Approval) { a.PolicyVersion = strings.Repeat("v", 257) }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			bad := ap
			bad.Args = append([]string(nil), ap.Args...)
			tc.mutate(&bad)
			_, err := x.Execute(context.Background(), bad)
			var ve *execgate.ValidationError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, "approval", ve.Name)
			fields := make([]string, len(ve.Issues))
			for i, is := range ve.Issues {
				fields[i] = is.Field
			}
			assert.Contains(t, fields, tc.field)
		})
	}
	assert.Zero(t, rec.Count())
	_, err := x.Execute(context.Background(), ap)
	require.NoError(t, err, "malformed envelopes burned the record")
	assert.Equal(t, 1, rec.Count())
}

// Invariant 9 of DESIGN.md.
func TestDigestBinding_TamperedEnvelopeSpawnsNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*execgate.Approval)
	}{
		{"id of another approval", nil}, // filled in below
		{"digest", func(a *execgate.Approval) { a.Digest = flipHex(a.Digest) }},
		{"args changed", func(a *execgate.Approval) { a.Args[0] = "rm" }},
		{"args added", func(a *execgate.Approval) { a.Args = append(a.Args, "--force") }},
		{"args removed", func(a *execgate.Approval) { a.Args = nil }},
		{"reason", func(a *execgate.Approval) { a.Reason = "something else" }},
		{"policy version", func(a *execgate.Approval) { a.PolicyVersion = "2" }},
		{"expiry extended", func(a *execgate.Approval) { a.ExpiresAt = a.ExpiresAt.Add(time.Hour) }},
		{"expiry by a nanosecond", func(a *execgate.Approval) { a.ExpiresAt = a.ExpiresAt.Add(time.Nanosecond) }},
		{"creation time", func(a *execgate.Approval) { a.CreatedAt = a.CreatedAt.Add(-time.Second) }},
		{"command", func(a *execgate.Approval) { a.Command = "/bin/rm" }},
		{"name", func(a *execgate.Approval) { a.Name = "echo.other" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := echoSpec()
			other.Name = "echo.other"
			x, rec := newGate(t, execgate.Config{}, echoSpec(), other)
			ap := propose(t, x, `{"args":["safe"]}`)
			mutate := tc.mutate
			if mutate == nil {
				second := propose(t, x, `{"args":["safe"]}`)
				mutate = func(a *execgate.Approval) { a.ID = second.ID }
			}
			bad := roundTrip(t, ap)
			mutate(&bad)
			_, err := x.Execute(context.Background(), bad)
			requireApprovalError(t, err, execgate.ReasonDigestMismatch)
			assert.Zero(t, rec.Count())

			// Once taken, the record stays consumed.
			_, err = x.Execute(context.Background(), ap)
			if tc.mutate == nil {
				require.NoError(t, err, "a tampered ID takes the other record, not this one")
				return
			}
			requireApprovalError(t, err, execgate.ReasonUnknown)
			assert.Zero(t, rec.Count())
		})
	}
}

func flipHex(s string) string {
	b := []byte(s)
	if b[0] == '0' {
		b[0] = '1'
	} else {
		b[0] = '0'
	}
	return string(b)
}

// Invariant 10 of DESIGN.md.
func TestSpawnFree_ProposalCannotExecute(t *testing.T) {
	x, rec := newGate(t, execgate.Config{}, echoSpec())
	p, err := x.Proposer().Check("echo.say", json.RawMessage(`{"args":["x"]}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"x"}, p.Args)
	assert.Zero(t, rec.Count())

	// The closest a caller can get: an envelope built from the Proposal.
	now := time.Now().UTC()
	forged := execgate.Approval{
		ID: uuid.Must(uuid.NewV7()).String(), Name: p.Name, Command: p.Command, Args: p.Args,
		Digest: p.Digest, PolicyVersion: "1", CreatedAt: now, ExpiresAt: now.Add(time.Hour),
	}
	_, err = x.Execute(context.Background(), forged)
	requireApprovalError(t, err, execgate.ReasonUnknown)

	// A real approval's ID with a digest of the forger's choosing.
	ap := propose(t, x, `{"args":["x"]}`)
	forged.ID = ap.ID
	_, err = x.Execute(context.Background(), forged)
	requireApprovalError(t, err, execgate.ReasonDigestMismatch)
	assert.Zero(t, rec.Count())
}

// Invariant 9 of DESIGN.md.
func TestDigestBinding_SpecChangeBetweenProposeAndExecute(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*execgate.CommandSpec) // nil: remove the spec
		want   string                      // reason, or "validation", or "" for runs
	}{
		{"unchanged rebuild", func(*execgate.CommandSpec) {}, ""},
		{"description only", func(s *execgate.CommandSpec) { s.Description = "new words" }, ""},
		{"removed", nil, execgate.ReasonPolicyChanged},
		{"path", func(s *execgate.CommandSpec) { s.Command = "/usr/bin/echo" }, execgate.ReasonPolicyChanged},
		{"pinned hash", func(s *execgate.CommandSpec) { s.SHA256 = sha256File(t, "/bin/echo") }, execgate.ReasonPolicyChanged},
		{"env value", func(s *execgate.CommandSpec) { s.Env = map[string]string{"LANG": "en_US.UTF-8"} }, execgate.ReasonPolicyChanged},
		{"env added", func(s *execgate.CommandSpec) { s.Env = map[string]string{"LANG": "C", "X": "1"} }, execgate.ReasonPolicyChanged},
		{"dir", func(s *execgate.CommandSpec) { s.Dir = "/tmp" }, execgate.ReasonPolicyChanged},
		{"timeout", func(s *execgate.CommandSpec) { s.Timeout = time.Minute }, execgate.ReasonPolicyChanged},
		{"no-output timeout", func(s *execgate.CommandSpec) { s.NoOutputTimeout = time.Second }, execgate.ReasonPolicyChanged},
		{"max output", func(s *execgate.CommandSpec) { s.MaxOutput = 10 }, execgate.ReasonPolicyChanged},
		{"policy version", func(s *execgate.CommandSpec) { s.PolicyVersion = "2" }, execgate.ReasonPolicyChanged},
		{"schema narrows", func(s *execgate.CommandSpec) { s.Args = listSchema{maxArgs: 1} }, "validation"},
		{"schema builds other args", func(s *execgate.CommandSpec) { s.Args = listSchema{prefix: []string{"-n"}} }, execgate.ReasonPolicyChanged},
		{"schema builds other stdin", func(s *execgate.CommandSpec) { s.Args = listSchema{stdin: "more"} }, execgate.ReasonPolicyChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, rec := newGate(t, execgate.Config{}, echoSpec())
			ap := propose(t, x, `{"args":["a","b"]}`)

			var specs []execgate.CommandSpec
			if tc.change != nil {
				s := echoSpec()
				tc.change(&s)
				specs = append(specs, s)
			}
			a, err := execgate.NewAllowlist(specs...)
			require.NoError(t, err)
			x.SetAllowlist(a)

			_, err = x.Execute(context.Background(), roundTrip(t, ap))
			switch tc.want {
			case "":
				require.NoError(t, err)
				assert.Equal(t, 1, rec.Count())
				return
			case "validation":
				var ve *execgate.ValidationError
				require.ErrorAs(t, err, &ve)
			default:
				requireApprovalError(t, err, tc.want)
			}
			assert.Zero(t, rec.Count())
			// Every refusal after the take leaves the record consumed.
			x.SetAllowlist(mustAllowlist(t, echoSpec()))
			_, err = x.Execute(context.Background(), ap)
			requireApprovalError(t, err, execgate.ReasonUnknown)
		})
	}
}

func mustAllowlist(t *testing.T, specs ...execgate.CommandSpec) *execgate.Allowlist {
	t.Helper()
	a, err := execgate.NewAllowlist(specs...)
	require.NoError(t, err)
	return a
}

// Invariant 9 of DESIGN.md.
func TestDigestBinding_CallerBufferMutationAfterPropose(t *testing.T) {
	x, rec := newGate(t, execgate.Config{}, echoSpec())
	input := []byte(`{"args":["good"]}`)
	ap, err := x.Propose(context.Background(), "echo.say", input, "")
	require.NoError(t, err)
	copy(input, `{"args":["evil"]}`)
	ap.Args[0] = "evil" // the caller's copy of the envelope is theirs

	_, err = x.Execute(context.Background(), roundTrip(t, ap))
	requireApprovalError(t, err, execgate.ReasonDigestMismatch)
	assert.Zero(t, rec.Count())

	ap2, err := x.Propose(context.Background(), "echo.say", input, "")
	require.NoError(t, err)
	copy(input, `{"args":["good"]}`)
	_, err = x.Execute(context.Background(), ap2)
	require.NoError(t, err)
	require.Equal(t, 1, rec.Count())
	assert.Equal(t, []string{"evil"}, rec.Calls()[0].Args)
}

// Invariant 8 of DESIGN.md.
func TestSingleUse_ExpiryBoundary(t *testing.T) {
	clk := newClock()
	x, rec := newGate(t, execgate.Config{Now: clk.Now, ApprovalTTL: time.Minute}, echoSpec())

	ap := propose(t, x, `{}`)
	clk.Set(ap.ExpiresAt.Add(-time.Nanosecond))
	_, err := x.Execute(context.Background(), ap)
	require.NoError(t, err, "one nanosecond before expiry runs")

	clk.Set(clk.Now().Add(-time.Minute))
	ap = propose(t, x, `{}`)
	clk.Set(ap.ExpiresAt)
	_, err = x.Execute(context.Background(), ap)
	requireApprovalError(t, err, execgate.ReasonExpired)
	assert.Equal(t, 1, rec.Count())

	// Rejecting an expired approval reports false.
	clk.Set(clk.Now().Add(-time.Minute))
	ap = propose(t, x, `{}`)
	clk.Set(ap.ExpiresAt.Add(time.Hour))
	ok, err := x.Reject(context.Background(), ap.ID)
	require.NoError(t, err)
	assert.False(t, ok)
}

// staleStore hands back records whatever their expiry, like a durable store
// whose clock disagrees with the Executor's.
type staleStore struct{ execgate.ApprovalStore }

func (s staleStore) Take(ctx context.Context, id string) (execgate.Record, error) {
	return s.ApprovalStore.Take(ctx, id)
}

// Invariant 8 of DESIGN.md.
func TestSingleUse_StaleStoreRecordIsRefused(t *testing.T) {
	clk := newClock()
	// The store's own clock is stuck in the past.
	past := func() time.Time { return time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC) }
	store := staleStore{execgate.NewMemoryStore(execgate.MemoryStoreOptions{Now: past})}
	x, rec := newGate(t, execgate.Config{Now: clk.Now, Store: store, ApprovalTTL: time.Minute}, echoSpec())
	ap := propose(t, x, `{}`)
	clk.Set(ap.ExpiresAt.Add(time.Second))
	_, err := x.Execute(context.Background(), ap)
	requireApprovalError(t, err, execgate.ReasonExpired)
	assert.Zero(t, rec.Count())
}

func TestApprovals_PolicyAtProposeAndExecute(t *testing.T) {
	var action atomic.Value
	action.Store(execgate.ActionRequireApproval)
	pol := execgate.PolicyFunc(func(context.Context, execgate.Request) (execgate.Decision, error) {
		return execgate.Decision{Action: action.Load().(string), Rule: "r"}, nil
	})
	x, rec := newGate(t, execgate.Config{Policy: pol}, echoSpec())

	_, err := x.Run(context.Background(), "echo.say", nil)
	var pe *execgate.PolicyError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, execgate.ActionRequireApproval, pe.Action)

	ap := propose(t, x, `{}`)
	_, err = x.Execute(context.Background(), ap)
	require.NoError(t, err, "require_approval is satisfied by the approval")

	ap = propose(t, x, `{}`)
	action.Store(execgate.ActionDeny)
	_, err = x.Execute(context.Background(), ap)
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, execgate.ActionDeny, pe.Action)
	action.Store(execgate.ActionAllow)
	_, err = x.Execute(context.Background(), ap)
	requireApprovalError(t, err, execgate.ReasonUnknown)
	assert.Equal(t, 1, rec.Count())

	action.Store(execgate.ActionDeny)
	_, err = x.Propose(context.Background(), "echo.say", nil, "")
	require.ErrorAs(t, err, &pe)
}

func TestPropose_Refusals(t *testing.T) {
	store := execgate.NewMemoryStore(execgate.MemoryStoreOptions{Capacity: 2, PerPrincipalCapacity: -1})
	x, _ := newGate(t, execgate.Config{Store: store}, echoSpec())
	var ve *execgate.ValidationError

	_, err := x.Propose(context.Background(), "echo.say", nil, strings.Repeat("r", execgate.MaxReasonBytes+1))
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "reason", ve.Issues[0].Field)

	many, _ := json.Marshal(map[string]any{"args": make([]string, execgate.MaxApprovalArgs+1)})
	_, err = x.Propose(context.Background(), "echo.say", many, "")
	require.ErrorAs(t, err, &ve)

	propose(t, x, `{}`)
	propose(t, x, `{}`)
	_, err = x.Propose(context.Background(), "echo.say", nil, "")
	assert.ErrorIs(t, err, execgate.ErrStoreFull)
}

func TestMemoryStore_Conformance(t *testing.T) {
	execgatetest.TestApprovalStore(t, func(t *testing.T, capacity int) execgate.ApprovalStore {
		return execgate.NewMemoryStore(execgate.MemoryStoreOptions{Capacity: capacity})
	})
}

func TestMemoryStore_SharedByExecutors(t *testing.T) {
	store := execgate.NewMemoryStore(execgate.MemoryStoreOptions{})
	x1, rec1 := newGate(t, execgate.Config{Store: store}, echoSpec())
	x2, rec2 := newGate(t, execgate.Config{Store: store}, echoSpec())
	ap := propose(t, x1, `{"args":["shared"]}`)
	_, err := x2.Execute(context.Background(), ap)
	require.NoError(t, err)
	_, err = x1.Execute(context.Background(), ap)
	requireApprovalError(t, err, execgate.ReasonUnknown)
	assert.Zero(t, rec1.Count())
	assert.Equal(t, 1, rec2.Count())
}

// Invariant 9 of DESIGN.md.
func TestDigestBinding_TamperedEnvelopeJSONIsRefused(t *testing.T) {
	x, rec := newGate(t, execgate.Config{}, echoSpec())
	ap := propose(t, x, `{"args":["safe"]}`)
	b, err := json.Marshal(ap)
	require.NoError(t, err)
	orig := string(b)
	inner := orig[1 : len(orig)-1]

	for _, tc := range []struct {
		name, json, field string
	}{
		{"extra env field", `{` + inner + `,"env":{"LD_PRELOAD":"/tmp/x.so"}}`, "env"},
		{"extra stdin field", `{` + inner + `,"stdin":"rm -rf /"}`, "stdin"},
		{"duplicate args", `{` + inner + `,"args":["evil"]}`, "args"},
		{"case-folded key", strings.Replace(orig, `"args"`, `"Args"`, 1), "args"},
		{"trailing data", orig + `{}`, ""},
		{"wrong type", strings.Replace(orig, `"reason":"deploy fix"`, `"reason":7`, 1), "reason"},
		{"NUL in reason", strings.Replace(orig, `"reason":"deploy fix"`, `"reason":"a\u0000b"`, 1), "reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got execgate.Approval
			err := json.Unmarshal([]byte(tc.json), &got)
			if tc.name == "trailing data" {
				// encoding/json itself refuses trailing data before the
				// method runs; decoding through a stream would not.
				require.Error(t, err)
			} else {
				var ve *execgate.ValidationError
				require.ErrorAs(t, err, &ve, "%s", tc.json)
				assert.Equal(t, "approval", ve.Name)
				if tc.field != "" {
					assert.Contains(t, ve.Error(), tc.field)
				}
			}
			assert.NotContains(t, err.Error(), "/tmp/x.so")
			assert.NotContains(t, err.Error(), "rm -rf")
		})
	}
	assert.Zero(t, rec.Count())
	var good execgate.Approval
	require.NoError(t, json.Unmarshal(b, &good))
	_, err = x.Execute(context.Background(), good)
	require.NoError(t, err, "refused decodes never reached the store")
}

// TestDigestBinding_ExecuteJudgesTheProposersCall proposes as one principal
// and executes as another: the policy is asked about the proposer's call,
// with the approver named beside it, and a principal is bound into the
// digest.
//
// Invariant 9 of DESIGN.md.
func TestDigestBinding_ExecuteJudgesTheProposersCall(t *testing.T) {
	var denied atomic.Value
	denied.Store("")
	var seen []execgate.Request
	var mu sync.Mutex
	pol := execgate.PolicyFunc(func(_ context.Context, req execgate.Request) (execgate.Decision, error) {
		mu.Lock()
		seen = append(seen, req)
		mu.Unlock()
		if req.Principal == denied.Load().(string) {
			return execgate.Decision{Action: execgate.ActionDeny, Rule: "banned"}, nil
		}
		return execgate.Decision{Action: execgate.ActionRequireApproval}, nil
	})
	x, rec := newGate(t, execgate.Config{Policy: pol}, echoSpec())
	mallory := execgate.WithPrincipal(context.Background(), "mallory")
	approver := execgate.WithPrincipal(context.Background(), "approver-ui")

	ap, err := x.Propose(mallory, "echo.say", json.RawMessage(`{"args":["x"]}`), "")
	require.NoError(t, err)
	assert.Equal(t, "mallory", ap.Principal)
	denied.Store("mallory")
	_, err = x.Execute(approver, roundTrip(t, ap))
	var pe *execgate.PolicyError
	require.ErrorAs(t, err, &pe, "mallory is denied now, whoever executes")
	assert.Zero(t, rec.Count())
	last := seen[len(seen)-1]
	assert.Equal(t, execgate.OpExecute, last.Op)
	assert.Equal(t, "mallory", last.Principal)
	assert.Equal(t, "approver-ui", last.Approver)

	// A denied approver does not block a call the policy allows.
	denied.Store("approver-ui")
	ap, err = x.Propose(mallory, "echo.say", json.RawMessage(`{"args":["x"]}`), "")
	require.NoError(t, err)
	_, err = x.Execute(approver, ap)
	require.NoError(t, err)
	assert.Equal(t, 1, rec.Count())

	// The proposer is part of the envelope: changing it is tampering.
	ap, err = x.Propose(mallory, "echo.say", nil, "")
	require.NoError(t, err)
	ap.Principal = "alice"
	_, err = x.Execute(approver, ap)
	requireApprovalError(t, err, execgate.ReasonDigestMismatch)
}

func TestPrincipal_Bounded(t *testing.T) {
	x, rec := newGate(t, execgate.Config{}, echoSpec())
	for _, p := range []string{strings.Repeat("p", execgate.MaxPrincipalBytes+1), "a\x00b", "a\nb", "\xff"} {
		ctx := execgate.WithPrincipal(context.Background(), p)
		_, err := x.Run(ctx, "echo.say", nil)
		var ve *execgate.ValidationError
		require.ErrorAs(t, err, &ve)
		assert.Equal(t, "principal", ve.Issues[0].Field)
		_, err = x.Propose(ctx, "echo.say", nil, "")
		require.ErrorAs(t, err, &ve)
	}
	assert.Zero(t, rec.Count())
}
