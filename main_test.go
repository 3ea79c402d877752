package execgate

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// helperEnv switches the test binary into a helper program: when a test
// runs the test binary itself as a command with helperEnv=<mode> in the
// spec's Env, TestMain runs helper <mode> with the rest of argv instead of
// the tests. See helper_test.go.
const helperEnv = "EXECGATE_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode, os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}
