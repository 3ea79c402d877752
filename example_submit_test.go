package execgate_test

import (
	"context"
	"fmt"

	"github.com/execgate/execgate"
)

// Submit is the path of a server that takes approvals: the call runs
// when the Policy allows it and is proposed when the Policy holds it,
// validated once and decided once.
func ExampleExecutor_Submit() {
	allow, err := execgate.NewAllowlist(
		execgate.CommandSpec{Name: "echo.status", Command: "echo", Args: execgate.Fixed("all green")},
		execgate.CommandSpec{Name: "echo.deploy", Command: "echo", Args: execgate.Fixed("deploying")},
	)
	if err != nil {
		panic(err)
	}
	deploysNeedApproval := execgate.PolicyFunc(func(_ context.Context, req execgate.Request) (execgate.Decision, error) {
		if req.Name == "echo.deploy" {
			return execgate.Decision{Action: execgate.ActionRequireApproval, Rule: "deploys"}, nil
		}
		return execgate.Decision{Action: execgate.ActionAllow}, nil
	})
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow, Policy: deploysNeedApproval})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	for _, name := range []string{"echo.status", "echo.deploy"} {
		sub, err := x.Submit(ctx, name, nil, execgate.SubmitOptions{Reason: "asked by the agent"})
		if err != nil {
			panic(err)
		}
		switch sub.Op {
		case execgate.OpRun:
			fmt.Printf("%s ran: %q\n", name, sub.Result.Stdout)
		case execgate.OpPropose:
			fmt.Printf("%s waits for a person: %v, %q\n", name, sub.Approval.Args, sub.Approval.Reason)
		}
	}

	// A server that takes no approvals refuses the held call instead, and
	// stores nothing.
	_, err = x.Submit(ctx, "echo.deploy", nil, execgate.SubmitOptions{NoPropose: true})
	fmt.Println(execgate.KindOf(err), err)
	// Output:
	// echo.status ran: "all green\n"
	// echo.deploy waits for a person: [deploying], "asked by the agent"
	// policy execgate: policy refused "echo.deploy": require_approval (use Propose and Execute) by rule "deploys"
}

// Decide says what Submit would do with a call, and does none of it.
func ExampleExecutor_Decide() {
	allow, err := execgate.NewAllowlist(execgate.CommandSpec{
		Name:    "echo.deploy",
		Command: "/bin/echo",
		Args:    execgate.Fixed("deploying"),
		Floor:   execgate.ActionRequireApproval, // whatever the Policy says
	})
	if err != nil {
		panic(err)
	}
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow})
	if err != nil {
		panic(err)
	}

	v, err := x.Decide(context.Background(), "echo.deploy", nil, execgate.SubmitOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(v.Op, v.Spec.Command, v.Argv.Args, v.Decision.Action, v.Decision.Rule)

	_, err = x.Decide(context.Background(), "rm.rf", nil, execgate.SubmitOptions{})
	fmt.Println(execgate.KindOf(err))
	// Output:
	// propose /bin/echo [deploying] require_approval floor
	// not_found
}

// KindOf names a refusal in the one vocabulary every surface uses, also
// for an error wrapped on its way up.
func ExampleKindOf() {
	allow, err := execgate.NewAllowlist(execgate.CommandSpec{Name: "echo.hi", Command: "echo", Args: execgate.Fixed("hi")})
	if err != nil {
		panic(err)
	}
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	_, err = x.Run(ctx, "rm.rf", nil)
	fmt.Println(execgate.KindOf(err))
	_, err = x.Run(ctx, "echo.hi", []byte(`{"unexpected": true}`))
	fmt.Println(execgate.KindOf(fmt.Errorf("serving the call: %w", err)))
	_, err = x.Reject(ctx, "not-an-id")
	fmt.Println(execgate.KindOf(err))
	// Output:
	// not_found
	// validation
	// validation
}
