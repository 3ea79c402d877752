package execgate_test

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/execgate/execgate"
)

// logArgs is what an agent may ask of a git.log-like command.
type logArgs struct {
	MaxCount int    `json:"max_count" validate:"required,min=1,max=500" desc:"How many commits to show."`
	Format   string `json:"format,omitempty" validate:"omitempty,oneof=oneline short medium" desc:"Output format."`
	Path     string `json:"path,omitempty" validate:"omitempty,max=200,regexp=^[^-]" desc:"Limit to this path."`
}

func ExampleStruct() {
	allow, err := execgate.NewAllowlist(execgate.CommandSpec{
		Name:    "git.log",
		Command: "/bin/echo", // stands in for git in this example
		Args: execgate.Struct(func(a logArgs) execgate.Argv {
			args := []string{"log", "--max-count=" + strconv.Itoa(a.MaxCount)}
			if a.Format != "" {
				args = append(args, "--format="+a.Format)
			}
			args = append(args, "--")
			if a.Path != "" {
				args = append(args, a.Path)
			}
			return execgate.Argv{Args: args}
		}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	p := execgate.NewProposer(allow)

	ok, err := p.Check("git.log", json.RawMessage(`{"max_count": 5, "format": "oneline", "path": "README.md"}`))
	fmt.Println(ok.Args, err)

	_, err = p.Check("git.log", json.RawMessage(`{"max_count": 900, "format": "fancy", "Path": "-rf"}`))
	fmt.Println(err)

	spec, _ := allow.Lookup("git.log")
	fmt.Println(string(spec.Args.JSONSchema()))
	// Output:
	// [log --max-count=5 --format=oneline -- README.md] <nil>
	// execgate: invalid input for "git.log": format: must be one of: oneline short medium; max_count: must be at most 500; path: must be spelled exactly path (field names are case-sensitive)
	// {"type":"object","properties":{"max_count":{"type":"integer","description":"How many commits to show.","minimum":1,"maximum":500},"format":{"type":"string","description":"Output format.","enum":["oneline","short","medium"]},"path":{"type":"string","description":"Limit to this path.","pattern":"^[^-]","maxLength":200}},"required":["max_count"],"additionalProperties":false}
}
