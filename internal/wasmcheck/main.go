// Command wasmcheck proves that the spawn-free subset of execgate builds for
// GOOS=js GOARCH=wasm. It uses only NewAllowlist, a Struct schema and
// Proposer.Check: it validates a call and reports what would run, and it
// has no way to start a process. The CI script builds it with
//
//	GOOS=js GOARCH=wasm go build ./internal/wasmcheck
//
// so that a change which ties validation to process code fails the build.
// Run natively, it prints the Proposal for `ls -l -- <dir>` as JSON.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/execgate/execgate"
)

// listInput is the input of the "ls.long" command.
type listInput struct {
	Dir string `json:"dir" validate:"required,max=200,startsnotwith=-"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	allow, err := execgate.NewAllowlist(execgate.CommandSpec{
		Name:    "ls.long",
		Command: "ls",
		Args: execgate.Struct(func(in listInput) execgate.Argv {
			return execgate.Argv{Args: []string{"-l", "--", in.Dir}}
		}),
	})
	if err != nil {
		return err
	}
	p, err := execgate.NewProposer(allow).Check("ls.long", json.RawMessage(`{"dir": "."}`))
	if err != nil {
		return err
	}
	out, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}
