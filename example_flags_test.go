package execgate_test

import (
	"encoding/json"
	"fmt"

	"github.com/execgate/execgate"
)

// Flags allows exactly the grammar an operator declares. Every flag comes
// out in one canonical spelling with its value as its own argument;
// anything undeclared, abbreviated or glued is refused before any process
// exists.
func ExampleFlags() {
	gitLog := execgate.Flags(execgate.FlagSpec{
		Leading: []string{"log"},
		Flags: []execgate.Flag{
			{Name: "max-count", Short: "n", Value: execgate.ValueInt, Min: new(int64(1)), Max: new(int64(500))},
			{Name: "oneline"},
			{Name: "format", Value: execgate.ValueEnum, Enum: []string{"oneline", "short", "medium"}},
			{Name: "author", Value: execgate.ValuePattern, Pattern: `^[A-Za-z .@-]{1,64}$`},
		},
		Positionals:  execgate.Positionals{Max: 1, Pattern: `^[A-Za-z0-9._/-]{1,100}$`},
		EndOfOptions: true,
	})
	a, err := execgate.NewAllowlist(execgate.CommandSpec{
		Name:    "git.log",
		Command: "echo", // stands in for git here
		Args:    gitLog,
	})
	if err != nil {
		panic(err)
	}
	p := execgate.NewProposer(a)

	for _, input := range []string{
		`{"flags":{"max-count":5,"oneline":true},"args":["main"]}`,
		`{"args":["-n","5","--author=Ann Lee","main"]}`,
		`{"args":["--max","5"]}`,
		`{"args":["-n5","--exec=sh","$(id)"]}`,
	} {
		prop, err := p.Check("git.log", json.RawMessage(input))
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%q\n", prop.Args)
	}
	// Output:
	// ["log" "--max-count=5" "--oneline" "--" "main"]
	// ["log" "--max-count=5" "--author=Ann Lee" "--" "main"]
	// execgate: invalid input for "git.log": args[0]: "--max": abbreviation of --max-count is not accepted; spell the flag out
	// execgate: invalid input for "git.log": args[0]: "-n5": a value glued to -n is not accepted; give it as the next token; args[1]: "--exec=sh": undeclared flag; args[2]: "$(id)": does not match the pattern for positional arguments
}
