package config_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
)

// A configuration declares which commands exist and what their arguments
// may be; the Allowlist it builds refuses everything else before any
// process exists.
func ExampleLoad() {
	const text = `
version: 1
defaults: {timeout: 10s, env: {LANG: C.UTF-8}}
tools:
  - name: greet
    bin: /bin/echo
    bare:
      flags: [{name: n}]
      positionals: {max: 2, pattern: '^[a-z]+$'}
`
	loaded, err := config.Load(strings.NewReader(text))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range loaded.Tools {
		fmt.Println(t.Name, t.Mode, t.Specs)
	}

	p := execgate.NewProposer(loaded.Allowlist)
	for _, call := range []struct{ name, input string }{
		{"greet.run", `{"flags":{"n":true},"args":["hello","world"]}`},
		{"greet.run", `{"args":["$(id)"]}`},
		{"greet.other", `{}`},
	} {
		prop, err := p.Check(call.name, json.RawMessage(call.input))
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(prop.Command, strings.Join(prop.Args, " "))
	}

	// Mistakes are reported together, each with its line and key.
	_, err = config.Load(strings.NewReader(`
version: 1
tools:
  - name: greet
    bin: /bin/echo
    timeout: 10
    bare: {flags: [{name: n, value: number}]}
`))
	fmt.Println(err)
	// Output:
	// greet bare [greet.run]
	// /bin/echo -n hello world
	// execgate: invalid input for "greet.run": args[0]: "$(id)": does not match the pattern for positional arguments
	// execgate: command "greet.other" is not allowlisted
	// <input>:6:14: tools[0].timeout: a duration needs a unit, such as 30s, 2m or 1m30s
	// <input>:7:37: tools[0].bare.flags[0].value: unknown value kind "number" (want none, string, int, enum, pattern or path)
}
