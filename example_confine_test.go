package execgate_test

import (
	"context"
	"fmt"
	"time"

	"github.com/execgate/execgate"
)

// A confined spec: the command may read /usr and /etc/ssl, write only
// beneath /srv/scratch, reach no network, and use at most ten seconds of
// processor time and 4 GiB of address space. On a kernel that cannot
// enforce all of it, the call is a spawn_error; set BestEffort to run
// anyway, and read Result.Unconfined.
func ExampleConfinement() {
	allow, err := execgate.NewAllowlist(execgate.CommandSpec{
		Name:    "sha256sum.ssl",
		Command: "sha256sum",
		Args:    execgate.Fixed("/etc/ssl/openssl.cnf"),
		Dir:     "/srv/scratch",
		Confine: &execgate.Confinement{
			Read:   []string{"/usr", "/etc/ssl"},
			Write:  []string{"/srv/scratch"},
			Limits: execgate.Limits{CPU: 10 * time.Second, AddressSpace: 4 << 30},
		},
	})
	if err != nil {
		panic(err)
	}
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow})
	if err != nil {
		panic(err)
	}
	res, err := x.Run(context.Background(), "sha256sum.ssl", nil)
	if err != nil {
		panic(err) // refused before anything started
	}
	switch {
	case res.Termination == execgate.TerminationSpawnError:
		fmt.Println("not started:", res.SpawnError) // e.g. no Landlock on this kernel
	case len(res.Unconfined) > 0:
		fmt.Println("ran without:", res.Unconfined) // only with BestEffort
	default:
		fmt.Print(res.Stdout)
	}
}
