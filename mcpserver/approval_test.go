package mcpserver_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/mcpserver"
)

// person answers elicitation requests and remembers the questions.
type person struct {
	answer string // "accept", "decline", "cancel"; "" fails the request
	mu     sync.Mutex
	asked  []string
}

func (p *person) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	p.mu.Lock()
	p.asked = append(p.asked, req.Params.Message)
	p.mu.Unlock()
	if p.answer == "" {
		return nil, errors.New("no one is there")
	}
	return &mcp.ElicitResult{Action: p.answer}, nil
}

func (p *person) questions() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.asked...)
}

// requireGone asserts that approval id is neither pending nor executable.
func requireGone(t *testing.T, x *execgate.Executor, id string) {
	t.Helper()
	ok, err := x.Reject(context.Background(), id)
	require.NoError(t, err)
	assert.False(t, ok, "approval %s is still pending", id)
}

// Both ways of eliciting: an elicitation/create request during the call
// (older protocol versions) and an input-required result answered by a
// client retry (the SDK's default version).
var elicitVersions = []struct{ name, version string }{
	{"request", legacyVersion},
	{"multi-round-trip", ""},
}

func TestElicitation_AcceptRunsOnce(t *testing.T) {
	for _, v := range elicitVersions {
		t.Run(v.name, func(t *testing.T) {
			p := &person{answer: "accept"}
			f := start(t, setup{version: v.version, client: &mcp.ClientOptions{ElicitationHandler: p.handle}})
			f.rec.On("deploy", execgate.Outcome{Stdout: []byte("deployed\n")})

			res := f.call(t, "deploy", `{}`)
			require.False(t, res.IsError, text(t, res))
			r := ran(t, res)
			assert.Equal(t, "deployed\n", r.Stdout)
			assert.NotEmpty(t, r.ApprovalID, "ran through an approval")
			assert.Equal(t, 1, f.rec.Count())

			qs := p.questions()
			require.Len(t, qs, 1)
			assert.Contains(t, qs[0], "Tool call: deploy")
			assert.Contains(t, qs[0], `Executable: "/bin/echo"`)
			assert.Contains(t, qs[0], `Arguments: "deploy" "now"`)
			assert.Contains(t, qs[0], `Reason: requested by "`+testPrincipal+`" via MCP`)
			assert.Equal(t, r.ApprovalID, questionOf(t, qs[0]))
			requireGone(t, f.x, r.ApprovalID)

			for _, req := range f.policy.requests() {
				assert.Equal(t, testPrincipal, req.Principal)
			}
		})
	}
}

func TestElicitation_DeclineRunsNothing(t *testing.T) {
	for _, v := range elicitVersions {
		for _, answer := range []string{"decline", "cancel"} {
			t.Run(v.name+"/"+answer, func(t *testing.T) {
				p := &person{answer: answer}
				f := start(t, setup{version: v.version, client: &mcp.ClientOptions{ElicitationHandler: p.handle}})

				res := f.call(t, "deploy", `{}`)
				st := status(t, res)
				assert.Equal(t, mcpserver.StatusDeclined, st.Status)
				assert.Contains(t, st.Message, "nothing ran")
				require.NotNil(t, st.Approval)
				assert.Zero(t, f.rec.Count())
				assert.Len(t, p.questions(), 1)

				// The approval is gone: executing it later is refused.
				_, err := f.x.Execute(context.Background(), *st.Approval)
				var ae *execgate.ApprovalError
				require.ErrorAs(t, err, &ae)
				assert.Equal(t, execgate.ReasonUnknown, ae.Reason)
				assert.Zero(t, f.rec.Count())
			})
		}
	}
}

func TestElicitation_ErrorRejects(t *testing.T) {
	// Older versions: the server learns of the failure and rejects at once.
	p := &person{}
	f := start(t, setup{version: legacyVersion, client: &mcp.ClientOptions{ElicitationHandler: p.handle}})
	st := status(t, f.call(t, "deploy", `{}`))
	assert.Equal(t, mcpserver.StatusNotApproved, st.Status)
	require.NotNil(t, st.Approval)
	requireGone(t, f.x, st.Approval.ID)
	assert.Zero(t, f.rec.Count())

	// Multi-round-trip: the client gives up and never retries; the
	// approval is rejected when ElicitationTimeout passes.
	p = &person{}
	f = start(t, setup{
		client: &mcp.ClientOptions{ElicitationHandler: p.handle},
		opts:   mcpserver.Options{ElicitationTimeout: 50 * time.Millisecond},
	})
	_, err := f.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "deploy", Arguments: json.RawMessage(`{}`)})
	require.Error(t, err, "the client could not fulfill the input request")
	qs := p.questions()
	require.Len(t, qs, 1)
	id := questionOf(t, qs[0])
	assert.Eventually(t, func() bool {
		ok, err := f.x.Reject(context.Background(), id)
		return err == nil && !ok
	}, 5*time.Second, 10*time.Millisecond)
	assert.Zero(t, f.rec.Count())
}

func TestElicitation_TimeoutRejects(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var asked atomic.Int32
	slow := func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-release:
			return &mcp.ElicitResult{Action: "accept"}, nil
		}
	}
	f := start(t, setup{
		version: legacyVersion,
		client:  &mcp.ClientOptions{ElicitationHandler: slow},
		opts:    mcpserver.Options{ElicitationTimeout: 50 * time.Millisecond},
	})
	st := status(t, f.call(t, "deploy", `{}`))
	assert.Equal(t, mcpserver.StatusNotApproved, st.Status)
	assert.Contains(t, st.Message, "no answer within 50ms")
	require.NotNil(t, st.Approval)
	requireGone(t, f.x, st.Approval.ID)
	assert.Equal(t, int32(1), asked.Load())
	assert.Zero(t, f.rec.Count())
}

// manual returns a client that leaves input-required results to the
// caller, to play a client's retries by hand.
func manual(p *person) *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ElicitationHandler: p.handle,
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
	}
}

func (f *fixture) ask(t *testing.T, args string) *mcp.CallToolResult {
	t.Helper()
	res, err := f.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "deploy", Arguments: json.RawMessage(args)})
	require.NoError(t, err)
	require.True(t, res.NeedsInput(), "expected an input-required result")
	require.NotEmpty(t, res.RequestState)
	require.Contains(t, res.InputRequests, "approval")
	require.Empty(t, res.Content)
	return res
}

func (f *fixture) retry(t *testing.T, name, args, state, action string) *mcp.CallToolResult {
	t.Helper()
	res, err := f.cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name:           name,
		Arguments:      json.RawMessage(args),
		RequestState:   state,
		InputResponses: mcp.InputResponseMap{"approval": &mcp.ElicitResult{Action: action}},
	})
	require.NoError(t, err)
	return res
}

func TestMultiRoundTrip_RetryIsBoundAndSingleUse(t *testing.T) {
	p := &person{}
	f := start(t, setup{client: manual(p)})

	// An accepted retry runs the call once; replaying it runs nothing.
	first := f.ask(t, `{}`)
	res := f.retry(t, "deploy", ` { } `, first.RequestState, "accept")
	require.False(t, res.IsError, text(t, res))
	assert.Equal(t, 1, f.rec.Count())
	st := status(t, f.retry(t, "deploy", `{}`, first.RequestState, "accept"))
	assert.Equal(t, mcpserver.StatusNotApproved, st.Status)
	assert.Equal(t, 1, f.rec.Count())

	// A request state this server never issued.
	st = status(t, f.retry(t, "deploy", `{}`, "forged-state", "accept"))
	assert.Equal(t, mcpserver.StatusNotApproved, st.Status)

	// A retry of another tool, or with other arguments, rejects the
	// approval.
	for _, tc := range []struct{ name, args string }{
		{"echo_hello", `{}`},
		{"deploy", `{"x":1}`},
	} {
		q := f.ask(t, `{}`)
		st = status(t, f.retry(t, tc.name, tc.args, q.RequestState, "accept"))
		assert.Equal(t, mcpserver.StatusNotApproved, st.Status)
		require.NotNil(t, st.Approval)
		requireGone(t, f.x, st.Approval.ID)
	}

	// A retry without an answer rejects the approval.
	q := f.ask(t, `{}`)
	res, err := f.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "deploy", Arguments: json.RawMessage(`{}`), RequestState: q.RequestState})
	require.NoError(t, err)
	st = status(t, res)
	assert.Equal(t, mcpserver.StatusNotApproved, st.Status)
	require.NotNil(t, st.Approval)
	requireGone(t, f.x, st.Approval.ID)

	assert.Equal(t, 1, f.rec.Count())
	assert.Empty(t, p.questions(), "the questions were never shown: the test played the client")
}

func TestMultiRoundTrip_LateRetryRunsNothing(t *testing.T) {
	f := start(t, setup{client: manual(&person{}), opts: mcpserver.Options{ElicitationTimeout: 20 * time.Millisecond}})
	q := f.ask(t, `{}`)
	time.Sleep(100 * time.Millisecond)
	st := status(t, f.retry(t, "deploy", `{}`, q.RequestState, "accept"))
	assert.Equal(t, mcpserver.StatusNotApproved, st.Status)
	assert.Zero(t, f.rec.Count())
}

func TestPending_WithoutElicitation(t *testing.T) {
	var (
		mu      sync.Mutex
		pending []execgate.Approval
	)
	onPending := func(ctx context.Context, ap execgate.Approval) error {
		assert.Equal(t, testPrincipal, execgate.PrincipalFrom(ctx))
		mu.Lock()
		pending = append(pending, ap)
		mu.Unlock()
		return nil
	}
	f := start(t, setup{opts: mcpserver.Options{OnPending: onPending}}) // the client cannot elicit
	f.rec.On("deploy", execgate.Outcome{Stdout: []byte("deployed\n")})

	res := f.call(t, "deploy", `{}`)
	st := status(t, res)
	assert.Equal(t, mcpserver.StatusPending, st.Status)
	assert.Contains(t, st.Message, "has NOT run")
	require.NotNil(t, st.Approval)
	ap := *st.Approval
	assert.Equal(t, "deploy", ap.Name)
	assert.Equal(t, []string{"deploy", "now"}, ap.Args)
	assert.Len(t, ap.Digest, 64)
	assert.False(t, ap.ExpiresAt.IsZero())
	assert.Contains(t, st.Message, ap.ID)
	require.Len(t, pending, 1)
	assert.Equal(t, pending[0].ID, ap.ID)
	assert.Equal(t, pending[0].Digest, ap.Digest)
	assert.Zero(t, f.rec.Count())

	// An out-of-band approver executes the envelope from the result once,
	// through the same Executor.
	r, err := f.x.Execute(context.Background(), ap)
	require.NoError(t, err)
	assert.Equal(t, "deployed\n", r.Stdout)
	assert.Equal(t, ap.ID, r.ApprovalID)
	_, err = f.x.Execute(context.Background(), ap)
	var ae *execgate.ApprovalError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, execgate.ReasonUnknown, ae.Reason)
	assert.Equal(t, 1, f.rec.Count())
}

func TestPending_ModeSkipsElicitation(t *testing.T) {
	p := &person{answer: "accept"}
	f := start(t, setup{
		client: &mcp.ClientOptions{ElicitationHandler: p.handle},
		opts:   mcpserver.Options{Approvals: mcpserver.ApprovalsPending},
	})
	st := status(t, f.call(t, "deploy", `{}`))
	assert.Equal(t, mcpserver.StatusPending, st.Status)
	assert.Empty(t, p.questions())
	assert.Zero(t, f.rec.Count())
}

func TestPending_OnPendingFailureRejects(t *testing.T) {
	f := start(t, setup{opts: mcpserver.Options{OnPending: func(context.Context, execgate.Approval) error {
		return errors.New("queue down")
	}}})
	st := status(t, f.call(t, "deploy", `{}`))
	assert.Equal(t, mcpserver.StatusRefused, st.Status)
	assert.Equal(t, mcpserver.KindInternal, st.Kind, "the server failed, and logged it")
	assert.NotContains(t, st.Message, "queue down")
	require.NotNil(t, st.Approval)
	requireGone(t, f.x, st.Approval.ID)
}

func TestApprovalsRefuse(t *testing.T) {
	p := &person{answer: "accept"}
	f := start(t, setup{
		client: &mcp.ClientOptions{ElicitationHandler: p.handle},
		opts:   mcpserver.Options{Approvals: mcpserver.ApprovalsRefuse},
	})
	st := status(t, f.call(t, "deploy", `{}`))
	assert.Equal(t, mcpserver.StatusRefused, st.Status)
	assert.Equal(t, mcpserver.KindPolicy, st.Kind)
	assert.Equal(t, execgate.ActionRequireApproval, st.Action)
	assert.Contains(t, st.Message, "does not take approvals")
	assert.Nil(t, st.Approval)
	assert.Empty(t, p.questions())
	assert.Len(t, f.policy.requests(), 1, "asked once; nothing proposed")
}

// teeSpecs serves "deploy" as a tee-like tool: it writes its stdin to the
// file it is given, confined to one write path with an egress allowlist,
// and with a secret in its environment.
func teeSpecs() []execgate.CommandSpec {
	return []execgate.CommandSpec{{
		Name: "deploy", Command: "/bin/echo", Env: map[string]string{"KUBE_TOKEN": "env-canary-7391"},
		Args: execgate.Flags(execgate.FlagSpec{Positionals: execgate.Positionals{Max: 1}, Stdin: &execgate.StdinSpec{}}),
		Confine: &execgate.Confinement{
			Write:  []string{"/srv/manifests"},
			Egress: &execgate.Egress{Allow: []string{"kubernetes.default.svc:443"}},
			Limits: execgate.Limits{CPU: 10 * time.Second},
		},
	}}
}

const crbYAML = "kind: ClusterRoleBinding\nroleRef:\n  kind: ClusterRole\n  name: cluster-admin\n"

// The person asked to approve a tee-like call reads what it will write
// (stdin's size, SHA-256 and escaped preview) and what it may touch (its
// confinement and network), and never an environment value; so does an
// agent left pending, in the approval it is handed.
func TestApproversSeeWhatRuns_TheQuestionShowsStdinAndTheConfinement(t *testing.T) {
	input, err := json.Marshal(map[string]any{"args": []string{"crb.yaml"}, "stdin": crbYAML})
	require.NoError(t, err)
	sum := sha256.Sum256([]byte(crbYAML))
	for _, v := range elicitVersions {
		t.Run(v.name, func(t *testing.T) {
			p := &person{answer: "accept"}
			f := start(t, setup{specs: teeSpecs(), version: v.version, client: &mcp.ClientOptions{ElicitationHandler: p.handle}})
			res := f.call(t, "deploy", string(input))
			require.False(t, res.IsError, text(t, res))
			qs := p.questions()
			require.Len(t, qs, 1)
			q := qs[0]
			assert.Contains(t, q, fmt.Sprintf("Standard input: %d bytes, SHA-256 %s; it is (control characters escaped): ", len(crbYAML), hex.EncodeToString(sum[:])))
			assert.Contains(t, q, `"kind: ClusterRoleBinding\nroleRef:\n  kind: ClusterRole\n  name: cluster-admin\n"`)
			assert.Contains(t, q, `Confinement: reads nothing but what it needs to start; writes "/srv/manifests"; `)
			assert.Contains(t, q, "limits: CPU 10 s; every part required.\n")
			assert.Contains(t, q, "Network: only through the gate's proxy, to: kubernetes.default.svc:443\n")
			assert.NotContains(t, q, "env-canary-7391")
			assert.NotContains(t, q, "KUBE_TOKEN")
			require.Equal(t, 1, f.rec.Count())
			assert.Equal(t, []byte(crbYAML), f.rec.Calls()[0].Stdin, "what was shown is what ran")
		})
	}
	t.Run("pending", func(t *testing.T) {
		f := start(t, setup{specs: teeSpecs(), opts: mcpserver.Options{Approvals: mcpserver.ApprovalsPending}})
		res := f.call(t, "deploy", string(input))
		st := status(t, res)
		require.Equal(t, mcpserver.StatusPending, st.Status)
		require.NotNil(t, st.Approval)
		require.NotNil(t, st.Approval.Stdin)
		assert.Equal(t, hex.EncodeToString(sum[:]), st.Approval.Stdin.SHA256)
		assert.Contains(t, st.Approval.Stdin.Preview, `kind: ClusterRoleBinding\n`)
		require.NotNil(t, st.Approval.Confine)
		assert.Equal(t, []string{"/srv/manifests"}, st.Approval.Confine.Write)
		assert.Equal(t, int64(10), st.Approval.Confine.Limits.CPUSeconds)
		require.NotNil(t, st.Approval.Egress)
		assert.Equal(t, []string{"kubernetes.default.svc:443"}, st.Approval.Egress.Allow)
		b, err := json.Marshal(res)
		require.NoError(t, err)
		assert.NotContains(t, string(b), "env-canary-7391")
		assert.Zero(t, f.rec.Count())
	})
}
