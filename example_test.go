package execgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/execgate/execgate"
)

// Run is the single-phase path: lookup, validation, policy, then the
// process, with every outcome reported in the Result.
func ExampleExecutor_Run() {
	allow, err := execgate.NewAllowlist(execgate.CommandSpec{
		Name:    "echo.hello",
		Command: "echo", // resolved on PATH once, here
		Args:    execgate.Fixed("hello,", "world"),
	})
	if err != nil {
		panic(err)
	}
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow})
	if err != nil {
		panic(err)
	}

	res, err := x.Run(context.Background(), "echo.hello", nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s exit=%d ok=%v stdout=%q\n", res.Termination, res.ExitCode, res.OK, res.Stdout)

	// Anything not allowlisted is refused before anything else happens.
	_, err = x.Run(context.Background(), "rm.rf", json.RawMessage(`{"path":"/"}`))
	var nf *execgate.NotFoundError
	fmt.Println(errors.As(err, &nf), err)
	// Output:
	// exit exit=0 ok=true stdout="hello, world\n"
	// true execgate: command "rm.rf" is not allowlisted
}

// Propose and Execute hold a call for a person's approval. The Approval is
// what the person sees; Execute runs it at most once.
func ExampleExecutor_Propose() {
	allow, err := execgate.NewAllowlist(execgate.CommandSpec{
		Name:    "echo.deploy",
		Command: "echo",
		Args:    execgate.Fixed("deploying"),
	})
	if err != nil {
		panic(err)
	}
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	ap, err := x.Propose(ctx, "echo.deploy", nil, "ship release 1.4")
	if err != nil {
		panic(err)
	}
	fmt.Println("approve?", ap.Name, ap.Args, ap.Reason)

	// ... the approval travels as JSON to a person and back ...

	res, err := x.Execute(ctx, ap)
	if err != nil {
		panic(err)
	}
	fmt.Printf("ran: %q\n", res.Stdout)

	_, err = x.Execute(ctx, ap)
	var ae *execgate.ApprovalError
	if errors.As(err, &ae) {
		fmt.Println("again: refused,", ae.Reason)
	}
	// Output:
	// approve? echo.deploy [deploying] ship release 1.4
	// ran: "deploying\n"
	// again: refused, unknown
}
