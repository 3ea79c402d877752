package execgate

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// helperEnv switches the test binary into a helper program: when a test
// runs the test binary itself as a command with helperEnv=<mode> in the
// spec's Env, TestMain runs helper <mode> with the rest of argv instead of
// the tests. See helper_test.go.
const helperEnv = "EXECGATE_TEST_HELPER"

// emptyEnvHelperArg, as the only argument, makes the test binary print its
// environment between markers: the helper for a child whose environment is
// empty, where helperEnv cannot reach it.
const emptyEnvHelperArg = "-execgate-helper-print-env"

func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == emptyEnvHelperArg {
		fmt.Println("BEGIN ENV")
		for _, kv := range os.Environ() {
			fmt.Println("ENV " + kv)
		}
		fmt.Println("END ENV")
		os.Exit(0)
	}
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode, os.Args[1:]))
	}
	code := m.Run()
	// The confinement helpers kept ready for the next call are not
	// leaks; ending them ends the goroutines that keep them.
	CloseIdleConfinementHelpers()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
