package execgate

import (
	"fmt"
	"os"
	"strings"
)

// runHelper is the body of the test binary when it runs as a child process.
// Each mode is a small program used by the process tests.
func runHelper(mode string, args []string) int {
	switch mode {
	case "echo": // print the arguments, one per line
		fmt.Println(strings.Join(args, "\n"))
		return 0
	case "env": // print the environment, one entry per line
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
		return 0
	default:
		fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
		return 2
	}
}
