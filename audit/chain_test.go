package audit_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// event returns a distinct Event for entry i.
func event(i int) execgate.Event {
	return execgate.Event{
		Op: execgate.OpRun, TraceID: fmt.Sprintf("0197a0b0-0000-7000-8000-%012d", i),
		Time:      time.Date(2026, 11, 30, 12, 0, i, 0, time.UTC),
		Principal: "alice", Name: "git.log", Command: "/usr/bin/git",
		Args: []string{"log", fmt.Sprintf("--max-count=%d", i)}, ArgsSHA256: strings.Repeat("0a", 32),
		EnvKeys: []string{"HOME"}, Decision: execgate.ActionAllow, Rule: "r1",
		Termination: execgate.TerminationExit, ExitCode: i % 3, Duration: time.Duration(i) * time.Millisecond,
	}
}

// chainBytes writes n entries to a new chain and returns its lines.
func chainBytes(t *testing.T, n int) [][]byte {
	t.Helper()
	var buf bytes.Buffer
	c := audit.NewChain(&buf, audit.ChainOptions{})
	for i := 1; i <= n; i++ {
		require.NoError(t, c.Audit(context.Background(), event(i)))
	}
	lines := bytes.SplitAfter(buf.Bytes(), []byte("\n"))
	return lines[:len(lines)-1] // each line keeps its newline
}

func join(lines ...[]byte) []byte {
	var out []byte
	for _, l := range lines {
		out = append(out, l...)
		if !bytes.HasSuffix(l, []byte("\n")) {
			out = append(out, '\n')
		}
	}
	return out
}

func sha(b []byte) string {
	sum := sha256.Sum256(bytes.TrimSuffix(b, []byte("\n")))
	return hex.EncodeToString(sum[:])
}

// seal re-encodes an entry the way the package documents its lines, with
// correct hashes: what someone who can write the file could forge.
func seal(t *testing.T, e audit.Entry) []byte {
	t.Helper()
	e.Hash = ""
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(e))
	prefix := bytes.TrimSuffix(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("}"))
	sum := sha256.Sum256(prefix)
	return fmt.Appendf(nil, "%s,\"hash\":\"%x\"}\n", prefix, sum)
}

func decode(t *testing.T, line []byte) audit.Entry {
	t.Helper()
	var e audit.Entry
	require.NoError(t, json.Unmarshal(line, &e))
	return e
}

// requireBroken checks that err is a *VerifyError at line, with one of
// problems (any, if none given).
func requireBroken(t *testing.T, err error, line int, problems ...audit.Problem) {
	t.Helper()
	var ve *audit.VerifyError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, line, ve.Line, "first broken line; error: %v", err)
	if len(problems) > 0 {
		assert.Contains(t, problems, ve.Problem, "error: %v", err)
	}
}

func TestVerify_Intact(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7} {
		lines := chainBytes(t, n)
		head, err := audit.VerifyHead(bytes.NewReader(join(lines...)))
		require.NoError(t, err)
		assert.Equal(t, uint64(n), head.Seq)
		if n == 0 {
			assert.Equal(t, audit.Genesis, head.SHA256)
		} else {
			assert.Equal(t, sha(lines[n-1]), head.SHA256)
		}
	}
}

// Flipping any single byte of any line is reported at that line.
func TestVerify_EditedByte(t *testing.T) {
	const n = 5
	lines := chainBytes(t, n)
	for i := range lines {
		body := len(lines[i]) - 1 // the newline stays
		positions := map[string]int{
			"first byte": 0, "in seq": len(`{"seq":`), "in prev": len(`{"seq":1,"prev":"`) + 3,
			"middle": body / 2, "in hash": body - 10, "last byte": body - 1,
		}
		for where, pos := range positions {
			t.Run(fmt.Sprintf("line %d %s", i+1, where), func(t *testing.T) {
				edited := make([][]byte, n)
				copy(edited, lines)
				edited[i] = bytes.Clone(lines[i])
				edited[i][pos] ^= 0x01
				err := audit.Verify(bytes.NewReader(join(edited...)))
				requireBroken(t, err, i+1, audit.ProblemBadJSON, audit.ProblemHash)
			})
		}
	}
}

func TestVerify_Tampering(t *testing.T) {
	const n = 6
	lines := chainBytes(t, n)
	l := func(i int) []byte { return lines[i-1] } // 1-based

	// A perfect forgery: a new line 3 with the right seq, prev and hash.
	forged := decode(t, l(3))
	forged.Args = []string{"push", "--force"}
	forgedLine := seal(t, forged)
	// Line 3 rewritten with matching hashes: caught at line 4.
	rewritten := decode(t, l(3))
	rewritten.ExitCode = 0
	rewritten.Principal = "mallory"
	rewrittenLine := seal(t, rewritten)
	// An out-of-chain line: seq 4 but chained to nothing.
	orphan := decode(t, l(4))
	orphan.Prev = audit.Genesis
	orphanLine := seal(t, orphan)

	tests := []struct {
		name     string
		file     []byte
		line     int // 0: Verify passes
		problems []audit.Problem
	}{
		{"intact", join(lines...), 0, nil},
		{"empty file", nil, 0, nil},
		{"delete first line", join(l(2), l(3), l(4), l(5), l(6)), 1, []audit.Problem{audit.ProblemSequence}},
		{"delete middle line", join(l(1), l(2), l(4), l(5), l(6)), 3, []audit.Problem{audit.ProblemSequence}},
		{"delete two middle lines", join(l(1), l(2), l(5), l(6)), 3, []audit.Problem{audit.ProblemSequence}},
		{"swap middle lines", join(l(1), l(3), l(2), l(4), l(5), l(6)), 2, []audit.Problem{audit.ProblemSequence}},
		{"swap first and last", join(l(6), l(2), l(3), l(4), l(5), l(1)), 1, []audit.Problem{audit.ProblemSequence}},
		{"swap last two", join(l(1), l(2), l(3), l(4), l(6), l(5)), 5, []audit.Problem{audit.ProblemSequence}},
		{"repeat a line", join(l(1), l(2), l(2), l(3), l(4), l(5), l(6)), 3, []audit.Problem{audit.ProblemSequence}},
		{"insert perfectly forged line", join(l(1), l(2), forgedLine, l(3), l(4), l(5), l(6)), 4, []audit.Problem{audit.ProblemSequence}},
		{"rewrite a line with matching hashes", join(l(1), l(2), rewrittenLine, l(4), l(5), l(6)), 4, []audit.Problem{audit.ProblemChain}},
		{"replace a line by one chained elsewhere", join(l(1), l(2), l(3), orphanLine, l(5), l(6)), 4, []audit.Problem{audit.ProblemChain}},
		{"insert empty line", join(l(1), []byte("\n"), l(2), l(3), l(4), l(5), l(6)), 2, []audit.Problem{audit.ProblemBadJSON}},
		{"append garbage", join(append(lines, []byte("{}\n"))...), 7, []audit.Problem{audit.ProblemBadJSON}},
		{"append a line from another chain", join(append(lines, chainBytes(t, 1)[0])...), 7, []audit.Problem{audit.ProblemSequence}},
		{"truncate last line", join(lines...)[:len(join(lines...))-20], 6, []audit.Problem{audit.ProblemTruncated}},
		{"truncate last newline", join(lines...)[:len(join(lines...))-1], 6, []audit.Problem{audit.ProblemTruncated}},
		{"CRLF line ending", append(join(lines[:5]...), append(bytes.TrimSuffix(l(6), []byte("\n")), '\r', '\n')...), 6, []audit.Problem{audit.ProblemHash}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := audit.Verify(bytes.NewReader(tt.file))
			if tt.line == 0 {
				require.NoError(t, err)
				return
			}
			requireBroken(t, err, tt.line, tt.problems...)
		})
	}
}

// Cutting whole lines from the end, or rewriting the last line with
// matching hashes, leaves a valid chain: only an anchor kept elsewhere
// shows it.
func TestVerifyAnchored(t *testing.T) {
	const n = 5
	lines := chainBytes(t, n)
	anchor := audit.Head{Seq: n, SHA256: sha(lines[n-1])}
	last := decode(t, lines[n-1])
	last.ExitCode = 0
	last.Principal = "mallory"

	tests := []struct {
		name    string
		file    []byte
		anchor  audit.Head
		line    int
		problem audit.Problem
	}{
		{"intact", join(lines...), anchor, 0, ""},
		{"intact, earlier anchor", join(lines...), audit.Head{Seq: 2, SHA256: sha(lines[1])}, 0, ""},
		{"intact, more written since", join(append(lines, chainLine(t, lines))...), anchor, 0, ""},
		{"no anchor", join(lines[:2]...), audit.Head{}, 0, ""},
		{"delete last line", join(lines[:n-1]...), anchor, n, audit.ProblemMissing},
		{"delete last two lines", join(lines[:n-2]...), anchor, n, audit.ProblemMissing},
		{"empty the file", nil, anchor, n, audit.ProblemMissing},
		{"rewrite last line", join(append(lines[:n-1:n-1], seal(t, last))...), anchor, n, audit.ProblemAnchor},
		{"broken before the anchor", join(lines[0], lines[2], lines[3], lines[4]), anchor, 2, audit.ProblemSequence},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.line != 0 && tt.problem != audit.ProblemSequence {
				require.NoError(t, audit.Verify(bytes.NewReader(tt.file)), "Verify alone cannot see this")
			}
			err := audit.VerifyAnchored(bytes.NewReader(tt.file), tt.anchor)
			if tt.line == 0 {
				require.NoError(t, err)
				return
			}
			requireBroken(t, err, tt.line, tt.problem)
		})
	}
}

// chainLine returns a correct next line for a chain.
func chainLine(t *testing.T, lines [][]byte) []byte {
	t.Helper()
	prev := decode(t, lines[len(lines)-1])
	e := audit.Entry{Seq: prev.Seq + 1, Prev: sha(lines[len(lines)-1]), Event: event(99)}
	return seal(t, e)
}

func TestVerify_TooLong(t *testing.T) {
	huge := bytes.Repeat([]byte("x"), audit.MaxLineBytes+1)
	file := join(chainBytes(t, 1)[0], huge)
	requireBroken(t, audit.Verify(bytes.NewReader(file)), 2, audit.ProblemTooLong)
}

// A reader that fails is an error of its own, not a broken line.
func TestVerify_ReadError(t *testing.T) {
	boom := errors.New("boom")
	err := audit.Verify(io.MultiReader(bytes.NewReader(chainBytes(t, 1)[0]), iotestErr{boom}))
	require.ErrorIs(t, err, boom)
	var ve *audit.VerifyError
	assert.False(t, errors.As(err, &ve))
}

type iotestErr struct{ err error }

func (r iotestErr) Read([]byte) (int, error) { return 0, r.err }

// The line format is pinned by a golden file: the same Events always give
// the same bytes. Refresh it with go test -run TestChain_Golden -update.
func TestChain_Golden(t *testing.T) {
	var buf bytes.Buffer
	c := audit.NewChain(&buf, audit.ChainOptions{})
	intent := func(ev execgate.Event) execgate.Event {
		ev.Phase = execgate.PhaseIntent
		ev.Termination, ev.ExitCode, ev.Signal, ev.PID, ev.Duration = "", 0, "", 0, 0
		ev.StdoutDropped, ev.StderrDropped, ev.Unconfined = 0, 0, nil
		return ev
	}
	outcome := func(ev execgate.Event) execgate.Event {
		ev.Phase = execgate.PhaseOutcome
		return ev
	}
	execute := execgate.Event{Op: execgate.OpExecute, TraceID: "0197a0b0-0000-7000-8000-0000000000dd", Time: time.Date(2026, 11, 30, 12, 3, 0, 0, time.UTC),
		Principal: "agent-7", Approver: "carol", Name: "kubectl.apply", Command: "/usr/bin/kubectl", ArgsSHA256: strings.Repeat("2c", 32), StdinBytes: 512,
		EnvKeys: []string{"KUBECONFIG"}, Decision: execgate.ActionAllow, Rule: "ops", Grant: "oncall", ApprovalID: "0197a0b0-0000-7000-8000-0000000000cc",
		Termination: execgate.TerminationTimeout, ExitCode: -1, Signal: "SIGKILL", PID: 4242, Duration: 30 * time.Second,
		StdoutDropped: 4096, StderrDropped: 12, Unconfined: []string{"network"}}
	echo := execgate.Event{Op: execgate.OpRun, TraceID: "0197a0b0-0000-7000-8000-000000000100", Time: time.Date(2026, 11, 30, 12, 5, 0, 0, time.UTC),
		Name: "echo.say", Command: "/bin/echo", Args: []string{"a<b>&c", "ünï\"code\\"}, ArgsSHA256: strings.Repeat("3d", 32),
		Decision: execgate.ActionAllow, Termination: execgate.TerminationExit, ExitCode: 0, Duration: time.Millisecond}
	// A call that starts a process leaves its intent, then its outcome; a
	// refused, proposed or rejected call leaves its outcome only.
	evs := []execgate.Event{
		intent(event(1)),
		outcome(event(1)),
		outcome(execgate.Event{Op: execgate.OpRun, TraceID: "0197a0b0-0000-7000-8000-0000000000aa", Time: time.Date(2026, 11, 30, 12, 1, 0, 0, time.UTC),
			Principal: "agent-7", Name: "terraform.destroy", Command: "/usr/bin/terraform", Args: []string{"destroy", "-auto-approve"},
			ArgsSHA256: strings.Repeat("1b", 32), Decision: execgate.ActionDeny, Rule: "no-destroy", Error: execgate.ErrorKindPolicy, Reason: execgate.ActionDeny}),
		outcome(execgate.Event{Op: execgate.OpPropose, TraceID: "0197a0b0-0000-7000-8000-0000000000bb", Time: time.Date(2026, 11, 30, 12, 2, 0, 0, time.UTC),
			Name: "kubectl.apply", Command: "/usr/bin/kubectl", ArgsSHA256: strings.Repeat("2c", 32), StdinBytes: 512,
			EnvKeys: []string{"KUBECONFIG"}, Decision: execgate.ActionRequireApproval, Rule: "ops", ApprovalID: "0197a0b0-0000-7000-8000-0000000000cc"}),
		intent(execute),
		outcome(execute),
		outcome(execgate.Event{Op: execgate.OpReject, TraceID: "0197a0b0-0000-7000-8000-0000000000ee", Time: time.Date(2026, 11, 30, 12, 4, 0, 0, time.UTC),
			ApprovalID: "0197a0b0-0000-7000-8000-0000000000ff", Rejected: true}),
		intent(echo),
		outcome(echo),
		outcome(execgate.Event{Op: execgate.OpRequest, TraceID: "0197a0b0-0000-7000-8000-000000000101", Time: time.Date(2026, 11, 30, 12, 6, 0, 0, time.UTC),
			Name: "git.log", Route: "POST /v1/tools/git.log", Error: execgate.ErrorKindUnauthenticated, Reason: "bad token"}),
		// The gate stopped while this one ran: an intent and no outcome.
		intent(execgate.Event{Op: execgate.OpRun, TraceID: "0197a0b0-0000-7000-8000-000000000102", Time: time.Date(2026, 11, 30, 12, 7, 0, 0, time.UTC),
			Principal: "agent-7", Name: "vault.read", Command: "/usr/bin/vault", ArgsWithheld: true, ArgsSHA256: strings.Repeat("4e", 32), Decision: execgate.ActionAllow}),
	}
	for _, ev := range evs {
		require.NoError(t, c.Audit(context.Background(), ev))
	}
	golden := filepath.Join("testdata", "chain.jsonl")
	if *update {
		require.NoError(t, os.WriteFile(golden, buf.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), buf.String())
	require.NoError(t, audit.VerifyFile(golden))

	// Lines decode back into the Events they were made from.
	for i, line := range bytes.Split(bytes.TrimSuffix(want, []byte("\n")), []byte("\n")) {
		e := decode(t, line)
		assert.Equal(t, uint64(i+1), e.Seq)
		assert.True(t, evs[i].Time.Equal(e.Time))
		e.Time = evs[i].Time
		assert.Equal(t, evs[i], e.Event)
	}

	rep, err := audit.VerifyReport(bytes.NewReader(want))
	require.NoError(t, err)
	assert.Equal(t, uint64(4), rep.Intents)
	assert.Equal(t, uint64(7), rep.Outcomes)
	require.Len(t, rep.Unfinished, 1)
	assert.Equal(t, "seq 11: run vault.read by agent-7 at 2026-11-30T12:07:00Z, trace 0197a0b0-0000-7000-8000-000000000102: started, no outcome recorded",
		rep.Unfinished[0].String())
}

// A trail a Chain wrote before Events had a phase still verifies, and
// every entry in it reads as an outcome.
func TestChain_OldTrailsVerify(t *testing.T) {
	path := filepath.Join("testdata", "chain-v1.jsonl")
	require.NoError(t, audit.VerifyFile(path))
	for _, line := range readLines(t, path) {
		assert.NotContains(t, string(line), `"phase"`)
		assert.Empty(t, decode(t, line).Phase)
	}
	rep, err := verifyFile(path)
	require.NoError(t, err)
	assert.Equal(t, audit.Report{Head: rep.Head, Outcomes: 6}, rep)

	// A Chain goes on appending to it, with phases from then on.
	dir := t.TempDir()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	copyPath := filepath.Join(dir, "audit.jsonl")
	require.NoError(t, os.WriteFile(copyPath, data, 0o600))
	c, err := audit.OpenChain(copyPath, audit.ChainOptions{})
	require.NoError(t, err)
	in, out := call(7)
	require.NoError(t, c.Audit(context.Background(), in))
	require.NoError(t, c.Audit(context.Background(), out))
	require.NoError(t, c.Close())
	rep, err = verifyFile(copyPath)
	require.NoError(t, err)
	assert.Equal(t, uint64(8), rep.Head.Seq)
	assert.Equal(t, uint64(1), rep.Intents)
	assert.Empty(t, rep.Unfinished)
}

func TestChain_Resume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	ctx := context.Background()

	c, err := audit.OpenChain(path, audit.ChainOptions{})
	require.NoError(t, err)
	for i := 1; i <= 3; i++ {
		require.NoError(t, c.Audit(ctx, event(i)))
	}
	head := c.Head()
	require.NoError(t, c.Close())
	assert.Equal(t, uint64(3), head.Seq)
	if runtime.GOOS != "windows" {
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "a new chain file is private")
	}

	for _, opts := range []audit.ChainOptions{{}, {TailOnly: true}, {NoSync: true}} {
		c, err = audit.OpenChain(path, opts)
		require.NoError(t, err)
		assert.Equal(t, head, c.Head(), "resumes from the last line")
		for i := 1; i <= 3; i++ {
			require.NoError(t, c.Audit(ctx, event(int(head.Seq)+i)))
		}
		head = c.Head()
		require.NoError(t, c.Close())
	}

	assert.Equal(t, uint64(12), head.Seq)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	got, err := audit.VerifyHead(f)
	require.NoError(t, err)
	assert.Equal(t, head, got)
	for i, line := range readLines(t, path) {
		assert.Equal(t, uint64(i+1), decode(t, line).Seq)
	}
}

// OpenChain refuses to extend a broken file, and leaves it as it is: only
// a torn last line is what a crash leaves (see
// TestRecordIsTrue_RestartCutsATornLastLine); everything else
// is damage a restart must not hide.
//
// Invariant 11 of DESIGN.md.
func TestRecordIsTrue_RestartRefusesDamage(t *testing.T) {
	lines := chainBytes(t, 4)
	edited := bytes.Clone(lines[1])
	edited[len(edited)/2] ^= 1
	// The last line, edited so that it is still JSON: not a torn write.
	editedLast := bytes.Replace(lines[3], []byte(`"alice"`), []byte(`"alicf"`), 1)
	require.True(t, json.Valid(editedLast))
	huge := bytes.Repeat([]byte("x"), audit.MaxLineBytes+2)
	tests := []struct {
		name     string
		file     []byte
		opts     audit.ChainOptions
		line     int
		problem  audit.Problem
		tailOpen bool // TailOnly does not look at this line
	}{
		{"an edited middle line is refused", join(lines[0], edited, lines[2], lines[3]), audit.ChainOptions{}, 2, "", false},
		{"TailOnly does not read the middle", join(lines[0], edited, lines[2], lines[3]), audit.ChainOptions{TailOnly: true}, 0, "", true},
		{"a torn last line after an edited middle line is not cut either", append(join(lines[0], edited, lines[2]), lines[3][:50]...), audit.ChainOptions{}, 2, "", false},
		{"a deleted line is refused", join(lines[0], lines[2], lines[3]), audit.ChainOptions{}, 2, audit.ProblemSequence, false},
		{"a torn line after a deleted line is not cut", append(join(lines[0], lines[2]), lines[3][:50]...), audit.ChainOptions{}, 2, audit.ProblemSequence, false},
		{"an edited last line that is still JSON is refused", join(lines[0], lines[1], lines[2], editedLast), audit.ChainOptions{}, 4, audit.ProblemHash, false},
		{"an edited last line that is still JSON is refused, tail only", join(lines[0], lines[1], lines[2], editedLast), audit.ChainOptions{TailOnly: true}, 0, audit.ProblemHash, false},
		{"a JSON line that is no entry is refused", join(append(lines, []byte("{}\n"))...), audit.ChainOptions{}, 5, audit.ProblemBadJSON, false},
		{"a torn last line whose line before is broken, tail only", append(join(lines[0], lines[1], edited), lines[3][:50]...), audit.ChainOptions{TailOnly: true}, 0, "", false},
		{"a last line longer than any entry is no torn write", append(join(lines...), huge...), audit.ChainOptions{}, 5, audit.ProblemTooLong, false},
		{"a file that is not a chain is not cut, without a newline", []byte("hello, world"), audit.ChainOptions{}, 1, audit.ProblemTruncated, false},
		{"a file that is not a chain is not cut, with a newline", []byte("not json\n"), audit.ChainOptions{}, 1, audit.ProblemBadJSON, false},
		{"a file that is not a chain is not cut, tail only", []byte("not json\n"), audit.ChainOptions{TailOnly: true}, 0, audit.ProblemBadJSON, false},
		{"a single line chained elsewhere, tail only", join(seal(t, audit.Entry{Seq: 1, Prev: strings.Repeat("f", 64), Event: event(1)})), audit.ChainOptions{TailOnly: true}, 0, audit.ProblemChain, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			require.NoError(t, os.WriteFile(path, tt.file, 0o600))
			c, err := audit.OpenChain(path, tt.opts)
			if tt.tailOpen {
				require.NoError(t, err, "TailOnly checks only the last line")
				require.NoError(t, c.Close())
				return
			}
			require.Nil(t, c)
			var ve *audit.VerifyError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, tt.line, ve.Line)
			if tt.problem != "" {
				assert.Equal(t, tt.problem, ve.Problem)
			}
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tt.file, after, "the file is left as it was")
		})
	}
}

func TestChain_OneWriterPerFile(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" && !strings.HasSuffix(runtime.GOOS, "bsd") {
		t.Skip("no advisory file lock on " + runtime.GOOS)
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	c, err := audit.OpenChain(path, audit.ChainOptions{})
	require.NoError(t, err)
	_, err = audit.OpenChain(path, audit.ChainOptions{})
	require.Error(t, err, "a second Chain on the same file would fork the chain")
	require.NoError(t, c.Close())
	c, err = audit.OpenChain(path, audit.ChainOptions{})
	require.NoError(t, err, "Close releases the lock")
	require.NoError(t, c.Close())
}

// Concurrent calls through an Executor give a chain with no gap.
func TestChain_Concurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	c, err := audit.OpenChain(path, audit.ChainOptions{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	x, rec := newGate(t, execgate.Config{Auditor: c})
	const workers, calls = 8, 25
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				_, err := x.Run(context.Background(), "echo.say", fmt.Appendf(nil, `{"args":["%d-%d"]}`, w, i))
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, workers*calls, rec.Count())
	assert.Equal(t, uint64(2*workers*calls), c.Head().Seq, "an intent and an outcome per call")
	require.NoError(t, audit.VerifyFile(path))
	phases := map[string]int{}
	for _, line := range readLines(t, path) {
		phases[decode(t, line).Phase]++
	}
	assert.Equal(t, map[string]int{execgate.PhaseIntent: workers * calls, execgate.PhaseOutcome: workers * calls}, phases)
}

// An entry that would exceed MaxLineBytes is written without its argv.
func TestChain_HugeArgv(t *testing.T) {
	var buf bytes.Buffer
	c := audit.NewChain(&buf, audit.ChainOptions{})
	ev := event(1)
	ev.Args = []string{strings.Repeat("\x01", audit.MaxLineBytes/5)} // escaped as \u0001: 6 bytes each
	require.NoError(t, c.Audit(context.Background(), ev))
	require.NoError(t, c.Audit(context.Background(), event(2)))
	require.NoError(t, audit.Verify(bytes.NewReader(buf.Bytes())))
	first := decode(t, bytes.SplitN(buf.Bytes(), []byte("\n"), 2)[0])
	assert.True(t, first.ArgsOmitted)
	assert.Nil(t, first.Args)
	assert.Equal(t, ev.ArgsSHA256, first.ArgsSHA256)
}

// failWriter accepts ok writes, then fails every write.
type failWriter struct {
	mu     sync.Mutex
	ok     int
	writes int
	buf    bytes.Buffer
}

var errDiskFull = errors.New("no space left on device")

func (w *failWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	if w.writes > w.ok {
		// A short write, as a full disk gives.
		n := len(p) / 2
		w.buf.Write(p[:n])
		return n, errDiskFull
	}
	return w.buf.Write(p)
}

// failSyncer writes but fails to sync.
type failSyncer struct{ bytes.Buffer }

var errSync = errors.New("input/output error")

func (*failSyncer) Sync() error { return errSync }

// A Chain that cannot write stays failed and says so from Ready: an
// Executor with it refuses the next call with an *AuditError and spawns
// nothing, and nothing more is written after the failed line. A call whose
// intent cannot be recorded is refused and starts nothing; a call whose
// outcome cannot be recorded has already run and keeps its Result.
func TestChain_FailsClosed(t *testing.T) {
	closedFile := func(t *testing.T) (*audit.Chain, error) {
		f, err := os.Create(filepath.Join(t.TempDir(), "audit.jsonl"))
		require.NoError(t, err)
		c := audit.NewChain(f, audit.ChainOptions{})
		require.NoError(t, c.Audit(context.Background(), event(0))) // one good entry
		require.NoError(t, f.Close())                               // the file becomes unwritable
		return c, os.ErrClosed
	}
	tests := []struct {
		name        string
		chain       func(t *testing.T) (*audit.Chain, error)
		intentFails bool // the first call's intent is the entry that fails
	}{
		{"outcome write fails", func(*testing.T) (*audit.Chain, error) {
			return audit.NewChain(&failWriter{ok: 1}, audit.ChainOptions{}), errDiskFull
		}, false},
		{"intent sync fails", func(*testing.T) (*audit.Chain, error) {
			return audit.NewChain(&failSyncer{}, audit.ChainOptions{}), errSync
		}, true},
		{"file closed underneath", closedFile, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, cause := tt.chain(t)
			store := execgate.NewMemoryStore(execgate.MemoryStoreOptions{})
			x, rec := newGate(t, execgate.Config{Auditor: c, Store: store})
			healthy, _ := newGate(t, execgate.Config{Store: store})
			ctx := context.Background()
			ap, err := healthy.Propose(ctx, "echo.say", json.RawMessage(`{"args":["later"]}`), "")
			require.NoError(t, err)

			res, err := x.Run(ctx, "echo.say", nil)
			var ae *execgate.AuditError
			if tt.intentFails {
				// No record, no start.
				require.ErrorAs(t, err, &ae)
				require.ErrorIs(t, err, cause)
				assert.Zero(t, rec.Count(), "a call whose intent was not recorded starts nothing")
			} else {
				// The intent was recorded and the process ran; only its
				// outcome was lost, and the Result is still returned.
				require.NoError(t, err)
				assert.True(t, res.OK)
				assert.Equal(t, 1, rec.Count())
			}
			ran := rec.Count()
			require.ErrorIs(t, c.Ready(ctx), cause)

			// Fail closed: nothing more runs, is proposed or is taken.
			_, err = x.Run(ctx, "echo.say", nil)
			require.ErrorAs(t, err, &ae)
			require.ErrorIs(t, err, cause)
			_, err = x.Propose(ctx, "echo.say", nil, "")
			require.ErrorAs(t, err, &ae)
			_, err = x.Execute(ctx, ap)
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, ran, rec.Count(), "nothing spawned after the failure")
			_, err = healthy.Execute(ctx, ap)
			require.NoError(t, err, "the refused Execute did not burn the approval")

			// Still failing: Audit reports the cause again.
			require.ErrorIs(t, c.Audit(ctx, event(9)), cause)
		})
	}

	// A NewChain writer cannot be cut back: once part of an entry reached
	// it, nothing more is written.
	t.Run("no write after a torn one on a writer that cannot be cut", func(t *testing.T) {
		w := &failWriter{ok: 2}
		c := audit.NewChain(w, audit.ChainOptions{})
		for i := range 5 {
			err := c.Audit(context.Background(), event(i))
			assert.Equal(t, i >= 2, err != nil)
		}
		assert.Equal(t, 3, w.writes)
		// What reached the "disk" is two good lines and a cut one, which
		// Verify reports.
		requireBroken(t, audit.Verify(bytes.NewReader(w.buf.Bytes())), 3, audit.ProblemTruncated)
	})

	t.Run("unencodable event", func(t *testing.T) {
		var buf bytes.Buffer
		c := audit.NewChain(&buf, audit.ChainOptions{})
		ev := event(1)
		ev.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) // outside RFC 3339
		require.Error(t, c.Audit(context.Background(), ev))
		require.Error(t, c.Ready(context.Background()), "a lost record stops further calls")
		assert.Zero(t, buf.Len())
	})

	t.Run("closed", func(t *testing.T) {
		var buf bytes.Buffer
		c := audit.NewChain(&buf, audit.ChainOptions{})
		require.NoError(t, c.Close())
		require.NoError(t, c.Close())
		require.ErrorIs(t, c.Ready(context.Background()), audit.ErrClosed)
		require.ErrorIs(t, c.Audit(context.Background(), event(1)), audit.ErrClosed)
		x, rec := newGate(t, execgate.Config{Auditor: c})
		_, err := x.Run(context.Background(), "echo.say", nil)
		require.ErrorIs(t, err, audit.ErrClosed)
		assert.Zero(t, rec.Count())
	})
}
