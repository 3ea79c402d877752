package config_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/execgatetest"
)

// A policies section says which principal may run what. Here agents may
// read the git log and plan with terraform, need an approval for any
// other terraform subcommand, may never destroy, and one agent holds a
// grant that waives the approval for an hour.
func Example_policies() {
	const text = `
version: 1
tools:
  - {name: git, bin: /bin/echo, strict: true, commands: {log: {}}}
  - {name: terraform, bin: /bin/echo, default_action: allow}
policies:
  - name: agents
    principal: "agent-*"
    rules:
      - {name: no-destroy, tools: [terraform.destroy], action: deny}
      - {tools: [git.log, terraform.plan], action: allow}
      - {name: changes, tools: ["terraform.*"], action: require_approval}
grants:
  - {id: incident-4711, principal: agent-7, tool: "terraform.*", expires: 2030-01-02T16:00:00Z}
`
	now := func() time.Time { return time.Date(2030, 1, 2, 15, 0, 0, 0, time.UTC) }
	loaded, err := config.LoadOptions{Now: now}.Load(strings.NewReader(text))
	if err != nil {
		fmt.Println(err)
		return
	}
	x, err := execgate.NewExecutor(execgate.Config{
		Allowlist: loaded.Allowlist,
		Policy:    loaded.Policy,
		ExecFn:    execgatetest.NewRecorder().Exec, // starts nothing
		Now:       now,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, call := range []struct{ principal, name string }{
		{"agent-3", "git.log"},
		{"agent-3", "terraform.apply"},
		{"agent-7", "terraform.apply"},
		{"agent-7", "terraform.destroy"},
		{"bob", "git.log"},
	} {
		ctx := execgate.WithPrincipal(context.Background(), call.principal)
		if _, err := x.Run(ctx, call.name, nil); err != nil {
			fmt.Println(call.principal, err)
			continue
		}
		fmt.Println(call.principal, call.name, "ran")
	}

	// A typo never becomes an allow: the file does not load.
	_, err = config.Load(strings.NewReader(`
version: 1
tools: []
policies:
  - name: agents
    principal: "agent-*"
    rules:
      - {tools: ["git.*"], action: alow}
`))
	fmt.Println(err)
	// Output:
	// agent-3 git.log ran
	// agent-3 execgate: policy refused "terraform.apply": require_approval (use Propose and Execute) by rule "agents/changes"
	// agent-7 terraform.apply ran
	// agent-7 execgate: policy refused "terraform.destroy": deny by rule "agents/no-destroy"
	// bob execgate: policy refused "git.log": deny by rule "default"
	// <input>:8:36: policies[0].rules[0].action: unknown action "alow"; want allow, deny or require_approval
}

// Reload applies a changed file to the running Engine: the next decision
// uses the new rules, and the Executor takes the new allowlist.
func ExampleLoaded_ReloadBytes() {
	const before = `
version: 1
tools: [{name: git, bin: /bin/echo, strict: true, commands: {log: {}, push: {}}}]
policies:
  - {name: agents, principal: "agent-*", rules: [{tools: ["git.*"], action: allow}]}
`
	loaded, err := config.LoadBytes("execgate.yaml", []byte(before))
	if err != nil {
		fmt.Println(err)
		return
	}
	x, err := execgate.NewExecutor(execgate.Config{
		Allowlist: loaded.Allowlist,
		Policy:    loaded.Policy,
		ExecFn:    execgatetest.NewRecorder().Exec,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := execgate.WithPrincipal(context.Background(), "agent-1")
	_, err = x.Run(ctx, "git.push", nil)
	fmt.Println("before:", err)

	after := strings.Replace(before, `rules: [`, `rules: [{name: freeze, tools: [git.push], action: deny}, `, 1)
	next, err := loaded.ReloadBytes("execgate.yaml", []byte(after))
	if err != nil {
		fmt.Println(err) // nothing changed
		return
	}
	x.SetAllowlist(next.Allowlist)
	_, err = x.Run(ctx, "git.push", nil)
	fmt.Println("after:", err)
	// Output:
	// before: <nil>
	// after: execgate: policy refused "git.push": deny by rule "agents/freeze"
}
