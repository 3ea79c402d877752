package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit"
	"github.com/execgate/execgate/internal/inventory"
)

// call returns the Events of call i: its intent and outcome, as the
// Executor makes them.
func call(i int) (intent, outcome execgate.Event) {
	outcome = event(i)
	outcome.Phase = execgate.PhaseOutcome
	intent = outcome
	intent.Phase = execgate.PhaseIntent
	intent.Termination, intent.ExitCode, intent.Duration = "", 0, 0
	return intent, outcome
}

// refusal returns the outcome Event of a refused call.
func refusal(i int) execgate.Event {
	ev := event(i)
	ev.Phase = execgate.PhaseOutcome
	ev.Termination, ev.ExitCode, ev.Duration = "", 0, 0
	ev.Error = execgate.ErrorKindPolicy
	return ev
}

// trail writes evs to a new chain and returns the file.
func trail(t *testing.T, evs ...execgate.Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	c := audit.NewChain(&buf, audit.ChainOptions{})
	for _, ev := range evs {
		require.NoError(t, c.Audit(context.Background(), ev))
	}
	return buf.Bytes()
}

// Invariant 11 of DESIGN.md.
func TestRecordIsTrue_VerifyReportsUnfinishedIntents(t *testing.T) {
	in1, out1 := call(1)
	in2, out2 := call(2)
	in3, out3 := call(3)
	v1, err := os.ReadFile(filepath.Join("testdata", "chain-v1.jsonl"))
	require.NoError(t, err)
	unfinished := func(seq uint64, ev execgate.Event) audit.Unfinished {
		return audit.Unfinished{Seq: seq, TraceID: ev.TraceID, Op: ev.Op, Name: ev.Name, Principal: ev.Principal, Time: ev.Time}
	}
	tests := []struct {
		name       string
		file       []byte
		intents    uint64
		outcomes   uint64
		unfinished []audit.Unfinished
	}{
		{"a call that ran has its intent closed by its outcome", trail(t, in1, out1), 1, 1, nil},
		{"a refused call has only an outcome, and nothing is open", trail(t, refusal(1)), 0, 1, nil},
		{"an intent with no outcome is the call a crash left unfinished", trail(t, in1), 1, 0, []audit.Unfinished{unfinished(1, in1)}},
		{"calls in flight together are paired by trace ID", trail(t, in1, in2, refusal(9), in3, out2, out1), 3, 3, []audit.Unfinished{unfinished(4, in3)}},
		{"an outcome before its intent does not close it", trail(t, out1, in1), 1, 1, []audit.Unfinished{unfinished(2, in1)}},
		{"unfinished calls are listed in file order", trail(t, in3, in1, out2, in2), 3, 1, []audit.Unfinished{unfinished(1, in3), unfinished(2, in1), unfinished(4, in2)}},
		{"a repeated trace ID is closed once per outcome, oldest first", trail(t, in1, in1, out1), 2, 1, []audit.Unfinished{unfinished(2, in1)}},
		{"every finished call leaves nothing open", trail(t, in1, out1, in2, out2, in3, out3), 3, 3, nil},
		{"a trail written before Events had a phase holds outcomes only", v1, 0, 6, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, audit.Verify(bytes.NewReader(tt.file)), "an unfinished intent is not a broken chain")
			rep, err := audit.VerifyReport(bytes.NewReader(tt.file))
			require.NoError(t, err)
			head, err := audit.VerifyHead(bytes.NewReader(tt.file))
			require.NoError(t, err)
			assert.Equal(t, head, rep.Head)
			assert.Equal(t, tt.intents, rep.Intents)
			assert.Equal(t, tt.outcomes, rep.Outcomes)
			assert.Equal(t, head.Seq, rep.Intents+rep.Outcomes)
			assert.Equal(t, tt.unfinished, rep.Unfinished)
		})
	}

	t.Run("a broken chain is still an error, with what was learned before it", func(t *testing.T) {
		lines := bytes.SplitAfter(trail(t, in1, in2, out2), []byte("\n"))
		file := join(lines[0], lines[2]) // the second line deleted
		rep, err := audit.VerifyReport(bytes.NewReader(file))
		requireBroken(t, err, 2, audit.ProblemSequence)
		assert.Equal(t, uint64(1), rep.Head.Seq)
		assert.Equal(t, []audit.Unfinished{unfinished(1, in1)}, rep.Unfinished)
	})

	t.Run("fields of the wrong type are read as empty, and do not break the chain", func(t *testing.T) {
		e := audit.Entry{Seq: 1, Prev: audit.Genesis, Event: in1}
		line := seal(t, e)
		line = bytes.Replace(line, []byte(`"name":"git.log"`), []byte(`"name":7`), 1)
		line = bytes.Replace(line, []byte(`"time":"2026-11-30T12:00:01Z"`), []byte(`"time":"yesterday"`), 1)
		line = resealRaw(t, line)
		rep, err := audit.VerifyReport(bytes.NewReader(line))
		require.NoError(t, err)
		require.Len(t, rep.Unfinished, 1)
		assert.Empty(t, rep.Unfinished[0].Name)
		assert.True(t, rep.Unfinished[0].Time.IsZero())
	})
}

// verifyFile reports on the chain file at path.
func verifyFile(path string) (audit.Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return audit.Report{}, err
	}
	defer f.Close()
	return audit.VerifyReport(f)
}

// resealRaw recomputes the hash at the end of a line whose bytes were
// edited.
func resealRaw(t *testing.T, line []byte) []byte {
	t.Helper()
	body := bytes.TrimSuffix(line, []byte("\n"))
	i := bytes.LastIndex(body, []byte(`,"hash":"`))
	require.Positive(t, i)
	return fmt.Appendf(nil, "%s,\"hash\":\"%s\"}\n", body[:i], sha(body[:i]))
}

func TestUnfinished_String(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 7, 0, time.UTC)
	tests := []struct {
		name string
		u    audit.Unfinished
		want string
	}{
		{
			"plain values are written as they are",
			audit.Unfinished{Seq: 7, TraceID: "0197a0b0-0000-7000-8000-000000000007", Op: "run", Name: "git.log", Principal: "alice@example.com", Time: at},
			"seq 7: run git.log by alice@example.com at 2026-11-30T12:00:07Z, trace 0197a0b0-0000-7000-8000-000000000007: started, no outcome recorded",
		},
		{
			"a hostile name cannot forge a line or reach the terminal",
			audit.Unfinished{Seq: 3, TraceID: "t", Op: "execute", Name: "x\nseq 4: ok\x1b[2J", Principal: "bob smith"},
			`seq 3: execute "x\nseq 4: ok\x1b[2J" by "bob smith", trace t: started, no outcome recorded`,
		},
		{
			"empty values are left out, but an empty op or trace is shown",
			audit.Unfinished{Seq: 1},
			`seq 1: "", trace "": started, no outcome recorded`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.u.String()
			assert.Equal(t, tt.want, got)
			assert.NotContains(t, got, "\n")
		})
	}
}

// The Entry documentation lists every field a line can hold, in the
// order they are written: a field added to execgate.Event that the
// documentation does not name fails here.
func TestEntry_DocumentsEveryField(t *testing.T) {
	documented := entryDocFields(t)

	// An Entry with every field set, whatever its type.
	var e audit.Entry
	inventory.Fill(&e, 1)
	b, err := json.Marshal(e)
	require.NoError(t, err)
	assert.Equal(t, documented, jsonKeys(t, b), "the documented order is the written order")

	// The fields written even when empty.
	line := trail(t, execgate.Event{})
	assert.Equal(t, []string{"seq", "prev", "op", "phase", "traceId", "time", "exitCode", "hash"},
		jsonKeys(t, bytes.TrimSuffix(line, []byte("\n"))), "the fields the documentation says are always present")
}

// entryDocFields reads the field list out of the Entry doc comment.
func entryDocFields(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "entry.go", nil, parser.ParseComments)
	require.NoError(t, err)
	var doc string
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE && g.Specs[0].(*ast.TypeSpec).Name.Name == "Entry" {
			doc = g.Doc.Text()
		}
	}
	require.NotEmpty(t, doc)
	// The list is the indented block after "in this order:".
	_, rest, ok := strings.Cut(doc, "in this order:\n\n")
	require.True(t, ok)
	block, _, _ := strings.Cut(rest, "\n\n")
	var fields []string
	for _, f := range strings.FieldsFunc(block, func(r rune) bool { return r == ',' || r == '\n' || r == ' ' || r == '\t' }) {
		fields = append(fields, f)
	}
	return fields
}

// jsonKeys returns the keys of a JSON object in the order they appear.
func jsonKeys(t *testing.T, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok)
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		require.NoError(t, err)
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	_, err = dec.Token()
	require.NoError(t, err)
	_, err = dec.Token()
	require.ErrorIs(t, err, io.EOF)
	return keys
}
