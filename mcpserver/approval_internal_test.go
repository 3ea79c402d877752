package mcpserver

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// The person asked to approve a call sees the network it may reach: the
// egress lists are part of what the approval digest binds, so they are
// part of what is shown.
func TestQuestion_ShowsTheNetworkTheCallMayReach(t *testing.T) {
	base := execgate.Approval{ID: "a-1", Name: "curl.run", Command: "/usr/bin/curl", Args: []string{"https://example.com/"},
		Reason: "fetch", ExpiresAt: time.Unix(0, 0)}
	for _, tc := range []struct {
		sentence string
		egress   *execgate.Egress
		want     string // "" for no network line
	}{
		{"a spec without an Egress shows no network line", nil, ""},
		{"the allowed hosts are listed", &execgate.Egress{Allow: []string{"api.example.com:443", "example.com:443"}},
			"Network: only through the gate's proxy, to: api.example.com:443 example.com:443\n"},
		{"an empty allowlist says it reaches nothing", &execgate.Egress{},
			"Network: only through the gate's proxy, to: (nothing)\n"},
		{"the deny list follows", &execgate.Egress{Allow: []string{"*:443"}, Deny: []string{"evil.example:*"}},
			"Network: only through the gate's proxy, to: *:443; never to: evil.example:*\n"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			ap := base
			ap.Egress = tc.egress
			q, ok := (&Server{}).question(ap)
			require.True(t, ok)
			if tc.want == "" {
				assert.NotContains(t, q.Message, "Network:")
				return
			}
			assert.Contains(t, q.Message, tc.want)
			assert.Less(t, strings.Index(q.Message, "Arguments:"), strings.Index(q.Message, "Network:"))
		})
	}
}

// The person asked sees what the command will read: stdin's size, hash
// and preview, quoted, or that there is none.
func TestQuestion_ShowsStdin(t *testing.T) {
	base := execgate.Approval{ID: "a-1", Name: "kubectl.apply", Command: "/usr/bin/kubectl", Args: []string{"apply", "-f", "-"},
		Reason: "apply", ExpiresAt: time.Unix(0, 0)}
	for _, tc := range []struct {
		sentence string
		stdin    *execgate.StdinInfo
		want     string
	}{
		{"no stdin", nil, "Standard input: none.\n"},
		{"text is shown quoted", &execgate.StdinInfo{Bytes: 24, SHA256: "ab12", Preview: `kind: ClusterRoleBinding\n`},
			"Standard input: 24 bytes, SHA-256 ab12; it is (control characters escaped): \"kind: ClusterRoleBinding\\n\"\n"},
		{"a cut preview says so", &execgate.StdinInfo{Bytes: 9000, SHA256: "cd34", Preview: "aaa", PreviewCut: true},
			"Standard input: 9000 bytes, SHA-256 cd34; it starts (control characters escaped): \"aaa\"...\n"},
		{"bytes that are not text say so", &execgate.StdinInfo{Bytes: 3, SHA256: "ef56"},
			"Standard input: 3 bytes, SHA-256 ef56 (not text: no preview)\n"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			ap := base
			ap.Stdin = tc.stdin
			q, ok := (&Server{}).question(ap)
			require.True(t, ok)
			assert.Contains(t, q.Message, tc.want)
		})
	}
	ap := base
	ap.Stdin = &execgate.StdinInfo{Bytes: 1 << 20, SHA256: "ff", Preview: strings.Repeat("x", maxQuestionBytes)}
	_, ok := (&Server{}).question(ap)
	assert.False(t, ok, "a question too long to show whole is not asked")
}

// The person asked sees what the command may touch: the confinement's
// paths, Unix sockets, limits and whether every part is required, or
// that there is none, escaped as the rest of the question.
func TestQuestion_ShowsTheConfinement(t *testing.T) {
	base := execgate.Approval{ID: "a-1", Name: "manifest.write", Command: "/usr/bin/tee", Args: []string{"crb.yaml"},
		Reason: "apply", ExpiresAt: time.Unix(0, 0)}
	for _, tc := range []struct {
		sentence string
		confine  *execgate.ConfinementInfo
		want     []string
	}{
		{"an unconfined command says so", nil, []string{"Confinement: none: the command runs with the gate's own rights.\n"}},
		{"a confined one shows its paths, limits and network", &execgate.ConfinementInfo{
			Read: []string{"/etc/ssl"}, Write: []string{"/srv/manifests"}, Limits: execgate.LimitsInfo{CPUSeconds: 10},
		}, []string{
			"Confinement: reads \"/etc/ssl\"; writes \"/srv/manifests\"; executes nothing but its own executable; no Unix sockets; limits: CPU 10 s; every part required.\n",
			"Network: none.\n",
		}},
		{"a path cannot start a line of its own", &execgate.ConfinementInfo{Write: []string{"/srv\nNetwork: none."}, Network: true},
			[]string{`writes "/srv\nNetwork: none."`, "Network: the gate's own, not confined.\n"}},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			ap := base
			ap.Confine = tc.confine
			q, ok := (&Server{}).question(ap)
			require.True(t, ok)
			for _, w := range tc.want {
				assert.Contains(t, q.Message, w)
			}
			lines := 1
			if tc.confine == nil {
				lines = 0
			}
			assert.Equal(t, lines, strings.Count(q.Message, "\nNetwork: "), "one network line for a confined command, none otherwise")
			assert.True(t, strings.HasPrefix(q.Message, questionHead))
			assert.True(t, strings.HasSuffix(q.Message, questionTail))
		})
	}
}
