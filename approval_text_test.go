package execgate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// describeBase is a held call as a person would be asked about it.
func describeBase() execgate.Approval {
	return execgate.Approval{
		ID: "0190a4c8-0000-7000-8000-000000000001", Principal: "ci-bot", Name: "kubectl.apply", Command: "/usr/bin/kubectl",
		Args: []string{"apply", "-f", "-"}, Reason: "apply the binding", ExpiresAt: time.Date(2026, 11, 30, 12, 15, 0, 0, time.UTC),
	}
}

func describe(t *testing.T, ap execgate.Approval, opts execgate.DescribeOptions) string {
	t.Helper()
	text, ok := ap.Describe(opts)
	require.True(t, ok)
	return text
}

// Describe shows each part of what runs, on a line of its own.
func TestApproval_DescribeShowsWhatRuns(t *testing.T) {
	confined := &execgate.ConfinementInfo{
		Read: []string{"/etc/ssl", "/usr/share"}, Write: []string{"/srv/manifests"}, Exec: []string{},
		Limits: execgate.LimitsInfo{CPUSeconds: 10, AddressSpace: 1 << 30, Files: 64, FileSize: 1 << 20, Processes: 16},
	}
	for _, tc := range []struct {
		sentence string
		change   func(*execgate.Approval)
		opts     execgate.DescribeOptions
		want     []string
	}{
		{"the call, who proposed it, the executable and each argument, quoted", nil, execgate.DescribeOptions{}, []string{
			"Tool call: kubectl.apply\n", "Proposed by: \"ci-bot\"\n", "Executable: \"/usr/bin/kubectl\"\n",
			"Arguments: \"apply\" \"-f\" \"-\"\n", "Reason: apply the binding\n",
			"Approval 0190a4c8-0000-7000-8000-000000000001, valid until 2026-11-30T12:15:00Z.\n"}},
		{"a call without arguments says so", func(a *execgate.Approval) { a.Args = nil }, execgate.DescribeOptions{}, []string{"Arguments: (none)\n"}},
		{"a call without stdin says so", nil, execgate.DescribeOptions{}, []string{"Standard input: none.\n"}},
		{"stdin text is shown quoted, with its size and SHA-256",
			func(a *execgate.Approval) {
				a.Stdin = &execgate.StdinInfo{Bytes: 24, SHA256: "ab12", Preview: `kind: ClusterRoleBinding\n`}
			}, execgate.DescribeOptions{},
			[]string{"Standard input: 24 bytes, SHA-256 ab12; it is (control characters escaped): \"kind: ClusterRoleBinding\\n\"\n"}},
		{"a cut preview says so",
			func(a *execgate.Approval) {
				a.Stdin = &execgate.StdinInfo{Bytes: 9000, SHA256: "cd34", Preview: "aaa", PreviewCut: true}
			}, execgate.DescribeOptions{},
			[]string{"Standard input: 9000 bytes, SHA-256 cd34; it starts (control characters escaped): \"aaa\"...\n"}},
		{"stdin that is not text shows only its size and SHA-256",
			func(a *execgate.Approval) { a.Stdin = &execgate.StdinInfo{Bytes: 3, SHA256: "ef56"} }, execgate.DescribeOptions{},
			[]string{"Standard input: 3 bytes, SHA-256 ef56 (not text: no preview)\n"}},
		{"NoStdinPreview shows only the size and SHA-256 of text too",
			func(a *execgate.Approval) {
				a.Stdin = &execgate.StdinInfo{Bytes: 24, SHA256: "ab12", Preview: `kind: ClusterRoleBinding\n`}
			}, execgate.DescribeOptions{NoStdinPreview: true},
			[]string{"Standard input: 24 bytes, SHA-256 ab12 (its content is not shown here)\n"}},
		{"an unconfined command says it has the gate's rights, and no network line is needed", nil, execgate.DescribeOptions{},
			[]string{"Confinement: none: the command runs with the gate's own rights.\nReason:"}},
		{"a confinement shows its paths, quoted, what an empty list means, its limits and that every part is required",
			func(a *execgate.Approval) { a.Confine = confined }, execgate.DescribeOptions{},
			[]string{"Confinement: reads \"/etc/ssl\" \"/usr/share\"; writes \"/srv/manifests\"; executes nothing but its own executable; no Unix sockets; " +
				"limits: CPU 10 s, address space 1073741824 bytes, files 64, file size 1048576 bytes, processes 16; every part required.\n"}},
		{"the strictest confinement says what each empty part means",
			func(a *execgate.Approval) { a.Confine = &execgate.ConfinementInfo{} }, execgate.DescribeOptions{},
			[]string{"Confinement: reads nothing but what it needs to start; writes no file; executes nothing but its own executable; no Unix sockets; no resource limits; every part required.\n",
				"Network: none.\n"}},
		{"a best-effort confinement with Unix sockets says so",
			func(a *execgate.Approval) { a.Confine = &execgate.ConfinementInfo{UnixSockets: true, BestEffort: true} }, execgate.DescribeOptions{},
			[]string{"; may create Unix sockets; no resource limits; best effort: it runs even where the kernel lacks a part of this.\n"}},
		{"a confined command on the gate's network says so",
			func(a *execgate.Approval) { a.Confine = &execgate.ConfinementInfo{Network: true} }, execgate.DescribeOptions{},
			[]string{"Network: the gate's own, not confined.\n"}},
		{"the egress allowlist is shown with its deny list",
			func(a *execgate.Approval) {
				a.Confine = &execgate.ConfinementInfo{}
				a.Egress = &execgate.Egress{Allow: []string{"api.example.com:443", "*.example.org:443"}, Deny: []string{"evil.example.org:*"}}
			}, execgate.DescribeOptions{},
			[]string{"Network: only through the gate's proxy, to: api.example.com:443 *.example.org:443; never to: evil.example.org:*\n"}},
		{"an empty egress allowlist says it reaches nothing",
			func(a *execgate.Approval) { a.Confine, a.Egress = &execgate.ConfinementInfo{}, &execgate.Egress{} }, execgate.DescribeOptions{},
			[]string{"Network: only through the gate's proxy, to: (nothing)\n"}},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			ap := describeBase()
			if tc.change != nil {
				tc.change(&ap)
			}
			text := describe(t, ap, tc.opts)
			for _, w := range tc.want {
				assert.Contains(t, text, w)
			}
		})
	}
}

// labels are the beginnings of the lines Describe writes, in order.
var labels = []string{"Tool call: ", "Proposed by: ", "Executable: ", "Arguments: ", "Standard input: ", "Confinement: ", "Network: ", "Reason: ", "Approval "}

// No value a call or a spec holds can break a line of what an approver
// reads, start a line that passes for one of the gate's, end a quoted
// value early or hide a character: each is escaped.
func TestApproversSeeWhatRuns_NoValueForgesALine(t *testing.T) {
	forged := "x\nStandard input: none.\n"
	ap := execgate.Approval{
		ID: "id\nApproval", Principal: "p\"\r\n", Name: "n\u2028Reason: ok", Command: "/bin/\x1b[2Jsh\n",
		Args:    []string{"a\" \"b", forged, "\u202eevil", "caf\xe9", "a\u0301"},
		Reason:  "fine\nConfinement: none.\u2029\u200b",
		Confine: &execgate.ConfinementInfo{Read: []string{"/tmp/" + forged}, Write: []string{"/srv\u2066"}, Exec: []string{"/a\"b"}},
		Egress:  &execgate.Egress{Allow: []string{"h\n:1"}, Deny: []string{"d\x00:2"}},
		Stdin:   &execgate.StdinInfo{Bytes: 1, SHA256: "ab\ncd", Preview: `a\nb`},
	}
	text := describe(t, ap, execgate.DescribeOptions{})
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	require.Len(t, lines, len(labels), "%s", text)
	for i, l := range lines {
		assert.True(t, strings.HasPrefix(l, labels[i]), "line %d is %q", i, l)
	}
	for _, r := range []string{"\r", "\x1b", "\x00", "\u2028", "\u2029", "\u202e", "\u2066", "\u200b", "\u0301", "\xe9"} {
		assert.NotContains(t, text, r, "%q is escaped", r)
	}
	assert.Contains(t, text, `Arguments: "a\" \"b" "x\nStandard input: none.\n" "\u202eevil" "caf\xe9" "a\u0301"`)
	assert.Contains(t, text, `Executable: "/bin/\x1b[2Jsh\n"`)
	assert.Contains(t, text, `reads "/tmp/x\nStandard input: none.\n"; writes "/srv\u2066"; executes "/a\"b"`)
	assert.Contains(t, text, `Reason: fine\nConfinement: none.\u2029\u200b`)
}

// A call is never shown shortened to someone asked to approve it: a text
// over the bound is not written. Only the confinement's lists, which are
// the operator's, are cut, saying how many entries are left out.
func TestApproval_DescribeIsBounded(t *testing.T) {
	ap := describeBase()
	ap.Args = []string{strings.Repeat("a", 3000)}
	_, ok := ap.Describe(execgate.DescribeOptions{MaxBytes: 2000})
	assert.False(t, ok, "an argv over the bound is not shown shortened")
	_, ok = ap.Describe(execgate.DescribeOptions{MaxBytes: 4000})
	assert.True(t, ok)
	ap.Args = make([]string, 300)
	for i := range ap.Args {
		ap.Args[i] = strings.Repeat("b", 60)
	}
	_, ok = ap.Describe(execgate.DescribeOptions{})
	assert.False(t, ok, "over DefaultDescribeBytes when no bound is given")

	ap = describeBase()
	var paths, hosts []string
	for i := range 500 {
		paths = append(paths, fmt.Sprintf("/srv/data/%03d", i))
		hosts = append(hosts, fmt.Sprintf("h%03d.example.com:443", i))
	}
	ap.Confine = &execgate.ConfinementInfo{Read: paths, Write: paths, Exec: paths}
	ap.Egress = &execgate.Egress{Allow: hosts, Deny: hosts}
	text := describe(t, ap, execgate.DescribeOptions{})
	assert.Less(t, len(text), 8<<10, "five lists of 500 entries are shown in a few KiB")
	assert.Contains(t, text, `"/srv/data/000" "/srv/data/001"`)
	assert.Regexp(t, `reads ("/srv/data/\d{3}" )+and \d+ more \(the approval lists them all\); writes`, text)
	assert.Regexp(t, `to: (h\d{3}\.example\.com:443 )+and \d+ more \(the approval lists them all\); never to: `, text)
}

// What an approver reads of a proposed call shows its stdin and its
// confinement, and never an environment value, which an Approval does not
// carry.
func TestApproversSeeWhatRuns_DescribeNeverShowsTheEnvironment(t *testing.T) {
	x, _ := newGate(t, execgate.Config{}, confinedTeeSpec())
	input, err := json.Marshal(map[string]any{"args": []string{"crb.yaml"}, "stdin": crbYAML})
	require.NoError(t, err)
	ap, err := x.Propose(context.Background(), "manifest.write", input, "write the binding")
	require.NoError(t, err)
	for _, opts := range []execgate.DescribeOptions{{}, {NoStdinPreview: true}} {
		text := describe(t, ap, opts)
		assert.NotContains(t, text, "env-canary-7391")
		assert.NotContains(t, text, "KUBE_TOKEN")
		assert.Contains(t, text, fmt.Sprintf("Standard input: %d bytes, SHA-256 %s", len(crbYAML), ap.Stdin.SHA256))
		assert.Contains(t, text, `writes "/srv/manifests"`)
		assert.Contains(t, text, "Network: only through the gate's proxy, to: api.example.com:443; never to: evil.example.com:*\n")
		if opts.NoStdinPreview {
			assert.NotContains(t, text, "ClusterRoleBinding", "the preview is left out")
		} else {
			assert.Contains(t, text, `kind: ClusterRoleBinding\nmetadata:\n  name: agent-admin\n`)
		}
	}
}

// A tee-like tool is held for approval: the person asked reads what it
// will write (stdin's preview), where it may write, and that it reaches
// no network.
func ExampleApproval_Describe() {
	allow, err := execgate.NewAllowlist(execgate.CommandSpec{
		Name: "manifest.write", Command: "/usr/bin/tee", Dir: "/",
		Args:    execgate.Flags(execgate.FlagSpec{Positionals: execgate.Positionals{Max: 1}, Stdin: &execgate.StdinSpec{}}),
		Confine: &execgate.Confinement{Write: []string{"/srv/manifests"}},
	})
	if err != nil {
		panic(err)
	}
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow})
	if err != nil {
		panic(err)
	}
	ap, err := x.Propose(context.Background(), "manifest.write",
		json.RawMessage(`{"args":["crb.yaml"],"stdin":"kind: ClusterRoleBinding\nroleRef: {name: cluster-admin}\n"}`), "bind the agent")
	if err != nil {
		panic(err)
	}
	text, _ := ap.Describe(execgate.DescribeOptions{})
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "Approval ") { // its ID and expiry change with each run
			fmt.Println(line)
		}
	}
	// Output:
	// Tool call: manifest.write
	// Executable: "/usr/bin/tee"
	// Arguments: "crb.yaml"
	// Standard input: 56 bytes, SHA-256 17d42bfc257734121cc36977335a9463e6fd378ffae0c6e3dd09762755a1fff1; it is (control characters escaped): "kind: ClusterRoleBinding\nroleRef: {name: cluster-admin}\n"
	// Confinement: reads nothing but what it needs to start; writes "/srv/manifests"; executes nothing but its own executable; no Unix sockets; no resource limits; every part required.
	// Network: none.
	// Reason: bind the agent
}
