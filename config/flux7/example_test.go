package flux7_test

import (
	"fmt"
	"log"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config/flux7"
)

// A strict kubectl from flux7's documentation: -n is declared because
// its kind is given, --output is not, and positionals never are, so
// kubectl.get is held for approval by a floor rule.
func ExampleConvert() {
	in := []byte(`cli_tools:
  - name: kubectl
    bin: /bin/echo
    strict: true
    commands:
      get:
        allowed_args: ["-n", "--output"]
policies:
  - name: agents
    agent: claude
    rules:
      - tools: ["kubectl.*"]
        action: allow
`)
	res, err := flux7.Convert("flux7.yaml", in, flux7.Options{
		Kinds: []flux7.Kind{{Tool: "kubectl", Flag: "-n", Value: execgate.ValueString}},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, n := range res.Notes {
		fmt.Printf("%s:%d: TODO %v\n", n.Path, n.Line, n.TODO)
	}
	fmt.Println(res.Floored)
	// Output:
	// cli_tools[0].commands.get:6: TODO true
	// cli_tools[0].commands.get.allowed_args[1]:7: TODO true
	// [kubectl.get]
}

// Kinds are given on the command line as [TOOL[.COMMAND]:]FLAG=VALUE.
func ExampleParseKind() {
	k, err := flux7.ParseKind("terraform.apply:-parallelism=int")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s %s %s %s\n", k.Tool, k.Command, k.Flag, k.Value)
	// Output: terraform apply -parallelism int
}
