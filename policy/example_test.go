package policy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/policy"
)

// An Engine decides who may run what; the Executor asks it on every call.
// Here agents may read freely, must get approval for terraform, may never
// destroy, and a grant waives the approval for one agent for an hour.
func ExampleEngine() {
	now := time.Date(2030, 1, 2, 15, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }

	eng, err := policy.New([]policy.Policy{{
		Name:      "agents",
		Principal: "agent-*",
		Rules: []policy.Rule{
			{Name: "no-destroy", Tools: []string{"terraform.destroy"}, Action: execgate.ActionDeny},
			{Tools: []string{"terraform.*"}, Action: execgate.ActionRequireApproval},
			{Tools: []string{"git.*"}, Action: execgate.ActionAllow},
		},
		RateLimit: policy.RateLimit{PerMinute: 30},
	}}, policy.Options{Now: clock})
	if err != nil {
		panic(err)
	}

	allow, err := execgate.NewAllowlist(
		execgate.CommandSpec{Name: "git.status", Command: "/bin/echo", Args: execgate.Fixed("status")},
		execgate.CommandSpec{Name: "terraform", Command: "/bin/echo", Dispatch: true, Floor: execgate.ActionAllow,
			Args: execgate.Subcommands(execgate.SubcommandSpec{})},
	)
	if err != nil {
		panic(err)
	}
	rec := execgatetest.NewRecorder() // starts nothing
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow, Policy: eng, ExecFn: rec.Exec, Now: clock})
	if err != nil {
		panic(err)
	}
	ctx := execgate.WithPrincipal(context.Background(), "agent-7")

	try := func(name string) {
		if _, err := x.Run(ctx, name, json.RawMessage(`{}`)); err != nil {
			fmt.Println(name, "->", err)
			return
		}
		fmt.Println(name, "-> ran")
	}
	try("git.status")
	try("terraform.plan")
	try("terraform.destroy")

	id, err := eng.Grant(policy.Grant{ID: "incident-4711", Principal: "agent-7", Tool: "terraform.*", Expires: now.Add(time.Hour)})
	if err != nil {
		panic(err)
	}
	fmt.Println("granted", id)
	try("terraform.plan")
	try("terraform.destroy")

	d, _ := eng.Decide(ctx, execgate.Request{Principal: "agent-7", Name: "terraform.apply"})
	fmt.Printf("%s by rule %s, grant %s\n", d.Action, d.Rule, d.Grant)
	// Output:
	// git.status -> ran
	// terraform.plan -> execgate: policy refused "terraform.plan": require_approval (use Propose and Execute) by rule "agents/2"
	// terraform.destroy -> execgate: policy refused "terraform.destroy": deny by rule "agents/no-destroy"
	// granted incident-4711
	// terraform.plan -> ran
	// terraform.destroy -> execgate: policy refused "terraform.destroy": deny by rule "agents/no-destroy"
	// allow by rule agents/2, grant incident-4711
}

// A typo in an action is an error when the Engine is built, never an
// allow.
func ExampleNew_typo() {
	_, err := policy.New([]policy.Policy{{
		Name:      "ops",
		Principal: "*",
		Rules:     []policy.Rule{{Tools: []string{"kubectl.delete*"}, Action: "alow"}},
	}}, policy.Options{})
	fmt.Println(err)
	// Output:
	// policy: policies[0].rules[0].action: unknown action "alow"; want allow, deny or require_approval
}
