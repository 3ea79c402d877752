// Command quickstart is the smallest complete use of execgate: it
// allowlists three harmless commands, runs one and prints its Result, then
// shows the gate refusing a name that is not allowlisted and an argument
// that its schema does not accept.
//
// Run it from the repository root:
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/execgate/execgate"
)

// sayInput is the input of "echo.say". Struct decodes the caller's JSON
// strictly into it (unknown fields, wrong types and duplicate keys are
// refused) and checks the validate tags before build ever sees a value.
// The pattern admits a short line of letters, digits, spaces and simple
// punctuation that starts with a letter or digit, so the text can never
// reach echo as an option.
type sayInput struct {
	Text string `json:"text" desc:"the line to print" validate:"required,max=64,regexp=^[A-Za-z0-9][A-Za-z0-9 .!?']*$"`
}

// newAllowlist returns everything this program may ever run. Bare command
// names are resolved on PATH once, here, to absolute paths.
func newAllowlist() (*execgate.Allowlist, error) {
	return execgate.NewAllowlist(
		execgate.CommandSpec{
			Name:        "echo.say",
			Command:     "echo",
			Description: "Print one line of plain text.",
			Args: execgate.Struct(func(in sayInput) execgate.Argv {
				return execgate.Argv{Args: []string{in.Text}}
			}),
			Timeout:   5 * time.Second,
			MaxOutput: 4 << 10,
		},
		execgate.CommandSpec{
			Name:        "date.utc",
			Command:     "date",
			Description: "Print the current time in UTC.",
			Args:        execgate.Fixed("-u"),
		},
		execgate.CommandSpec{
			Name:        "uname.kernel",
			Command:     "uname",
			Description: "Print the kernel's name.",
			Args:        execgate.Fixed("-s"),
		},
	)
}

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// run builds the gate, makes one allowed call and two refused ones, and
// writes what happened to w. It returns an error if any call does not end
// as expected.
func run(w io.Writer) error {
	allow, err := newAllowlist()
	if err != nil {
		return err
	}
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	fmt.Fprintln(w, "allowlisted:")
	for _, s := range allow.Specs() {
		fmt.Fprintf(w, "  %-13s %s\n", s.Name, s.Description)
	}

	// An allowed call: the gate validates the input, builds the argv
	// ["hello from execgate"], and starts the resolved echo directly, with
	// an empty environment and a 5 s timeout.
	input := `{"text": "hello from execgate"}`
	fmt.Fprintf(w, "\nrun echo.say %s\n", input)
	res, err := x.Run(ctx, "echo.say", json.RawMessage(input))
	if err != nil {
		return fmt.Errorf("echo.say was refused: %w", err)
	}
	out, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintln(w, string(out))
	if !res.OK {
		return fmt.Errorf("echo.say did not succeed: termination %s, exit code %d %s", res.Termination, res.ExitCode, res.SpawnError)
	}

	// A name that is not allowlisted: refused before the input is even
	// decoded.
	if err := refused[*execgate.NotFoundError](ctx, w, x, "sh", `{"c": "echo pwned"}`); err != nil {
		return err
	}

	// An allowlisted name with an argument its schema refuses. No shell
	// would ever see the text, but the field's rule admits nothing beyond
	// plain words, and the refusal names the field without repeating it.
	return refused[*execgate.ValidationError](ctx, w, x, "echo.say", `{"text": "hello; rm -rf ~"}`)
}

// refused makes a call that must be refused with an error of type E, and
// writes the error's type and message to w.
func refused[E error](ctx context.Context, w io.Writer, x *execgate.Executor, name, input string) error {
	fmt.Fprintf(w, "\nrun %s %s\n", name, input)
	res, err := x.Run(ctx, name, json.RawMessage(input))
	if err == nil {
		return fmt.Errorf("%s ran (termination %s), want a refusal", name, res.Termination)
	}
	var want E
	if !errors.As(err, &want) {
		return fmt.Errorf("%s refused with %T, want %T: %w", name, err, want, err)
	}
	fmt.Fprintf(w, "refused: %T\n  %v\n", want, want)
	return nil
}
