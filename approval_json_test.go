package execgate_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// The tests in this file are about the Approval as it travels: what
// survives its JSON form, and what a changed or empty encoding does.

// Invariant 8 of DESIGN.md.
func TestSingleUse_ApprovalsCarryOnlyWhatSurvivesJSON(t *testing.T) {
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

// Invariant 9 of DESIGN.md.
func TestDigestBinding_ReZonedEnvelopeIsRefused(t *testing.T) {
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

// crbYAML is a manifest a tee-like tool might be handed on stdin: the
// kind of content an approver must see before it is written anywhere.
const crbYAML = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: agent-admin
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
  - kind: ServiceAccount
    name: agent
    namespace: default
`

// confinedTeeSpec is a tee-like tool: it writes its stdin to a file under
// a write path, with every part of a confinement set, an egress
// allowlist, and a secret in its environment.
func confinedTeeSpec() execgate.CommandSpec {
	return execgate.CommandSpec{
		Name: "manifest.write", Command: "/bin/echo", Args: listSchema{prefix: []string{"-a"}},
		Env: map[string]string{"KUBE_TOKEN": "env-canary-7391"}, Dir: "/",
		Confine: &execgate.Confinement{
			Read:        []string{"/usr/share", "/etc/ssl"},
			Write:       []string{"/srv/manifests"},
			Exec:        []string{"/usr/bin"},
			Egress:      &execgate.Egress{Allow: []string{"api.example.com:443"}, Deny: []string{"evil.example.com:*"}},
			UnixSockets: true,
			Limits:      execgate.Limits{CPU: 1500 * time.Millisecond, AddressSpace: 1 << 30, Files: 64, FileSize: 1 << 20, Processes: 16},
			BestEffort:  true,
		},
	}
}

// The envelope a person approves carries stdin's size, SHA-256 and
// preview, and the whole confinement with the egress allowlist, in
// camelCase; never the environment. It comes back from JSON whole and
// executes.
func TestApproversSeeWhatRuns_TheEnvelopeCarriesStdinAndTheConfinement(t *testing.T) {
	x, rec := newGate(t, execgate.Config{}, confinedTeeSpec())
	input, err := json.Marshal(map[string]any{"args": []string{"crb.yaml"}, "stdin": crbYAML})
	require.NoError(t, err)
	ap, err := x.Propose(context.Background(), "manifest.write", input, "write the binding")
	require.NoError(t, err)

	b, err := json.Marshal(ap)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "env-canary-7391", "an envelope never carries an environment value")
	assert.NotContains(t, string(b), "KUBE_TOKEN")
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &fields))
	assert.JSONEq(t, `{"read":["/etc/ssl","/usr/share"],"write":["/srv/manifests"],"exec":["/usr/bin"],"network":false,"unixSockets":true,
		"limits":{"cpuSeconds":2,"addressSpace":1073741824,"files":64,"fileSize":1048576,"processes":16},"bestEffort":true}`, string(fields["confine"]),
		"the confinement as NewAllowlist normalized it: paths sorted, CPU rounded up to a whole second")
	assert.JSONEq(t, `{"Allow":["api.example.com:443"],"Deny":["evil.example.com:*"]}`, string(fields["egress"]))
	var stdin execgate.StdinInfo
	require.NoError(t, json.Unmarshal(fields["stdin"], &stdin))
	assert.Equal(t, len(crbYAML), stdin.Bytes)
	assert.Len(t, stdin.SHA256, 64)
	assert.Contains(t, stdin.Preview, `kind: ClusterRoleBinding\n`)
	assert.Contains(t, stdin.Preview, `name: cluster-admin\n`)
	assert.False(t, stdin.PreviewCut)

	_, err = x.Execute(context.Background(), roundTrip(t, ap))
	require.NoError(t, err)
	require.Equal(t, 1, rec.Count())
	assert.Equal(t, []byte(crbYAML), rec.Calls()[0].Stdin)

	// A spec without a confinement shows none, and no empty lists.
	x, _ = newGate(t, execgate.Config{}, echoSpec())
	b, err = json.Marshal(propose(t, x, `{}`))
	require.NoError(t, err)
	assert.NotContains(t, string(b), `"confine"`)
}

// What the approver is shown of the confinement and of stdin is bound
// into the approval digest: an envelope changed on its way to the
// approver, to show a tamer confinement or other stdin, refuses and runs
// nothing.
//
// Invariant 9 of DESIGN.md.
func TestDigestBinding_TheShownConfinementAndStdinAreBound(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		change   func(*execgate.Approval)
	}{
		{"a write path taken out", func(a *execgate.Approval) { a.Confine.Write = nil }},
		{"a read path added", func(a *execgate.Approval) { a.Confine.Read = append(a.Confine.Read, "/home") }},
		{"an exec path changed", func(a *execgate.Approval) { a.Confine.Exec[0] = "/usr/local/bin" }},
		{"the network said to be on", func(a *execgate.Approval) { a.Confine.Network = true }},
		{"Unix sockets said to be refused", func(a *execgate.Approval) { a.Confine.UnixSockets = false }},
		{"a limit changed", func(a *execgate.Approval) { a.Confine.Limits.Processes = 1 }},
		{"best effort said to be required", func(a *execgate.Approval) { a.Confine.BestEffort = false }},
		{"the confinement left out", func(a *execgate.Approval) { a.Confine = nil }},
		{"an egress host taken out", func(a *execgate.Approval) { a.Egress.Allow = nil }},
		{"the egress left out", func(a *execgate.Approval) { a.Egress = nil }},
		{"another preview of stdin", func(a *execgate.Approval) { a.Stdin.Preview = `kind: ConfigMap\n` }},
		{"the preview said to be cut", func(a *execgate.Approval) { a.Stdin.PreviewCut = true }},
		{"stdin left out", func(a *execgate.Approval) { a.Stdin = nil }},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			x, rec := newGate(t, execgate.Config{}, confinedTeeSpec())
			ap, err := x.Propose(context.Background(), "manifest.write", json.RawMessage(`{"args":["crb.yaml"],"stdin":"kind: ClusterRoleBinding\n"}`), "")
			require.NoError(t, err)
			bad := roundTrip(t, ap)
			tc.change(&bad)
			_, err = x.Execute(context.Background(), bad)
			requireApprovalError(t, err, execgate.ReasonDigestMismatch)
			assert.Zero(t, rec.Count())
		})
	}
}
