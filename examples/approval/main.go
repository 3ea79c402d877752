// Command approval shows the two-phase flow: an agent proposes a call, a
// person (simulated here) reads the approval as JSON and approves it, the
// call runs once, and a second attempt with the same approval is refused.
//
// Run it from the repository root:
//
//	go run ./examples/approval
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/execgate/execgate"
)

// deployArgs is what the agent may send for "echo.deploy".
type deployArgs struct {
	Service string `json:"service" validate:"required,oneof=web api worker"`
	Version string `json:"version" validate:"required,regexp=^v[0-9]+\\.[0-9]+\\.[0-9]+$"`
}

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(w io.Writer) error {
	// "echo" stands in for a real deployment tool.
	allow, err := execgate.NewAllowlist(execgate.CommandSpec{
		Name:        "echo.deploy",
		Command:     "echo",
		Description: "Pretend to deploy a service version",
		Args: execgate.Struct(func(a deployArgs) execgate.Argv {
			return execgate.Argv{Args: []string{"deploying", a.Service, a.Version}}
		}),
	})
	if err != nil {
		return err
	}
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow})
	if err != nil {
		return err
	}
	ctx := context.Background()

	// The approver sees only JSON: it could be a chat message, a web page or
	// a ticket. It answers with the approval it approves, or nothing.
	toApprover := make(chan []byte)
	fromApprover := make(chan []byte)
	go approver(w, toApprover, fromApprover)

	// The agent's side: propose, hand the approval over, wait.
	ap, err := x.Propose(ctx, "echo.deploy", json.RawMessage(`{"service":"api","version":"v1.4.2"}`), "roll out the fix for the login bug")
	if err != nil {
		return err
	}
	envelope, err := json.Marshal(ap)
	if err != nil {
		return err
	}
	toApprover <- envelope
	approved, ok := <-fromApprover
	if !ok {
		fmt.Fprintln(w, "declined; nothing ran")
		return nil
	}

	// The executor's side: only what the approver sent back, checked against
	// the stored record.
	var got execgate.Approval
	if err := json.Unmarshal(approved, &got); err != nil {
		return err
	}
	res, err := x.Execute(ctx, got)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "ran %s %q: exit %d, stdout %q\n", res.Name, res.Args, res.ExitCode, res.Stdout)

	// The same approval cannot run twice.
	_, err = x.Execute(ctx, got)
	var ae *execgate.ApprovalError
	if !errors.As(err, &ae) {
		return fmt.Errorf("second Execute: want an ApprovalError, got %v", err)
	}
	fmt.Fprintf(w, "second execute refused: %s (reason %s)\n", err, ae.Reason)
	return nil
}

// approver prints what it is asked to approve and approves it.
func approver(w io.Writer, in <-chan []byte, out chan<- []byte) {
	envelope := <-in
	var ap execgate.Approval
	if err := json.Unmarshal(envelope, &ap); err != nil {
		close(out)
		return
	}
	pretty, _ := json.MarshalIndent(ap, "", "  ")
	fmt.Fprintf(w, "approval requested:\n%s\n", pretty)
	fmt.Fprintf(w, "approver: approving %s %q\n", ap.Name, ap.Args)
	out <- envelope
}
