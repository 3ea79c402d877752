package execgate_test

import (
	"context"
	"fmt"

	"github.com/execgate/execgate"
)

// A call's output can be watched while the command runs: the Watch goes
// on the call's context, and the Result is what it would be without it.
func ExampleWithWatch() {
	a, err := execgate.NewAllowlist(execgate.CommandSpec{Name: "greet.run", Command: "/bin/echo", Args: execgate.Fixed("hello")})
	if err != nil {
		panic(err)
	}
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: a})
	if err != nil {
		panic(err)
	}
	ctx := execgate.WithWatch(context.Background(), execgate.Watch{
		Output: func(c execgate.OutputChunk) { fmt.Printf("%s at %d: %q\n", c.Stream, c.Offset, c.Data) },
	})
	res, err := x.Run(ctx, "greet.run", nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("result: %q\n", res.Stdout)
	// Output:
	// stdout at 0: "hello\n"
	// result: "hello\n"
}
