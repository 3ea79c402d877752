package execgatetest_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
)

// A Recorder stands in for real processes: the test drives the whole gate
// and then checks exactly what would have been started.
func ExampleRecorder() {
	allow, err := execgate.NewAllowlist(execgate.CommandSpec{
		Name:    "git.status",
		Command: "/bin/echo", // any existing executable: nothing is started
		Args:    execgate.Fixed("status", "--short"),
		Env:     map[string]string{"GIT_PAGER": "cat"},
	})
	if err != nil {
		panic(err)
	}
	rec := execgatetest.NewRecorder().
		On("git.status", execgate.Outcome{Stdout: []byte(" M main.go\n")})
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow, ExecFn: rec.Exec})
	if err != nil {
		panic(err)
	}

	res, err := x.Run(context.Background(), "git.status", json.RawMessage(`{}`))
	if err != nil {
		panic(err)
	}
	fmt.Printf("result: ok=%v stdout=%q\n", res.OK, res.Stdout)

	_, err = x.Run(context.Background(), "git.push", nil)
	fmt.Println("refused:", err)

	for _, call := range rec.Calls() {
		fmt.Println("would run:", call.Path, call.Args, call.Env)
	}
	// Output:
	// result: ok=true stdout=" M main.go\n"
	// refused: execgate: command "git.push" is not allowlisted
	// would run: /bin/echo [status --short] [GIT_PAGER=cat]
}
