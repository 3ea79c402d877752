package execgate_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/execgate/execgate"
)

// One principal holding its quota of the approval store is refused, and
// says whose quota it is; another principal still proposes.
func ExampleQuotaError() {
	allow, err := execgate.NewAllowlist(execgate.CommandSpec{
		Name: "deploy.web", Command: "/bin/echo", Args: execgate.Fixed("deploy", "web"), Dir: "/",
	})
	if err != nil {
		panic(err)
	}
	x, err := execgate.NewExecutor(execgate.Config{
		Allowlist: allow,
		Store:     execgate.NewMemoryStore(execgate.MemoryStoreOptions{PerPrincipalCapacity: 1}),
	})
	if err != nil {
		panic(err)
	}
	bot := execgate.WithPrincipal(context.Background(), "ci-bot")
	if _, err := x.Propose(bot, "deploy.web", nil, "release"); err != nil {
		panic(err)
	}
	_, err = x.Propose(bot, "deploy.web", nil, "release again")
	var qe *execgate.QuotaError
	if errors.As(err, &qe) {
		fmt.Println(qe.Principal, qe.Quota, qe.Limit)
		fmt.Println(errors.Is(err, execgate.ErrStoreFull), execgate.KindOf(err))
	}
	_, err = x.Propose(execgate.WithPrincipal(context.Background(), "alice"), "deploy.web", nil, "release")
	fmt.Println(err)
	// Output:
	// ci-bot count 1
	// true store_full
	// <nil>
}
