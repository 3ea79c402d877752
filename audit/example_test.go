package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit"
	"github.com/execgate/execgate/execgatetest"
)

// A hash-chained audit file: a call through the Executor that starts a
// process appends its intent, before the process starts, and its outcome;
// a refused call appends its outcome. Verify finds the first line that was
// edited, deleted or moved.
func ExampleOpenChain() {
	dir, err := os.MkdirTemp("", "execgate-audit")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "audit.jsonl")

	chain, err := audit.OpenChain(path, audit.ChainOptions{})
	if err != nil {
		panic(err)
	}
	allow, err := execgate.NewAllowlist(execgate.CommandSpec{
		Name:    "git.status",
		Command: "/bin/echo", // stands in for git: the Recorder starts nothing
		Args:    execgate.Fixed("status", "--short"),
	})
	if err != nil {
		panic(err)
	}
	x, err := execgate.NewExecutor(execgate.Config{
		Allowlist: allow,
		ExecFn:    execgatetest.NewRecorder().Exec,
		Auditor:   chain, // fails closed: no record, no run
	})
	if err != nil {
		panic(err)
	}

	ctx := execgate.WithPrincipal(context.Background(), "agent-7")
	_, _ = x.Run(ctx, "git.status", json.RawMessage(`{}`)) // intent, outcome
	_, _ = x.Run(ctx, "git.push", json.RawMessage(`{}`))   // refused, and recorded
	_, _ = x.Run(ctx, "git.status", json.RawMessage(`{}`)) // intent, outcome
	fmt.Println("entries:", chain.Head().Seq)
	if err := chain.Close(); err != nil {
		panic(err)
	}

	fmt.Println("verify:", audit.VerifyFile(path))

	// Delete the second line (the first call's outcome), as someone
	// covering their tracks might.
	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	if err := os.WriteFile(path, slices.Concat(lines[0], lines[2]), 0o600); err != nil {
		panic(err)
	}
	fmt.Println("verify:", audit.VerifyFile(path))

	// Output:
	// entries: 5
	// verify: <nil>
	// verify: audit: line 2: sequence: seq 3, want 2: a line is missing or out of order
}

// After a crash: the gate died while a process ran, so the trail holds
// that call's intent and no outcome. The file still verifies, and
// VerifyReport names the call.
func ExampleVerifyReport() {
	var trail bytes.Buffer
	chain := audit.NewChain(&trail, audit.ChainOptions{})
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, ev := range []execgate.Event{
		{Op: execgate.OpRun, Phase: execgate.PhaseIntent, TraceID: "0197a0b0-0000-7000-8000-000000000001", Time: at, Principal: "alice", Name: "git.log"},
		{Op: execgate.OpRun, Phase: execgate.PhaseOutcome, TraceID: "0197a0b0-0000-7000-8000-000000000001", Time: at, Principal: "alice", Name: "git.log", Termination: execgate.TerminationExit},
		{Op: execgate.OpRun, Phase: execgate.PhaseIntent, TraceID: "0197a0b0-0000-7000-8000-000000000002", Time: at.Add(time.Second), Principal: "alice", Name: "make.test"},
		// ... and here the gate was killed.
	} {
		if err := chain.Audit(context.Background(), ev); err != nil {
			panic(err)
		}
	}

	rep, err := audit.VerifyReport(bytes.NewReader(trail.Bytes()))
	fmt.Println("verify:", err)
	fmt.Println("entries:", rep.Head.Seq, "intents:", rep.Intents)
	for _, u := range rep.Unfinished {
		fmt.Println(u)
	}

	// Output:
	// verify: <nil>
	// entries: 3 intents: 2
	// seq 3: run make.test by alice at 2026-11-30T12:00:01Z, trace 0197a0b0-0000-7000-8000-000000000002: started, no outcome recorded
}
