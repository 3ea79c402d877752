package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/execgate/execgate"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	// Confinement helpers kept ready for the next call are not leaks.
	execgate.CloseIdleConfinementHelpers()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}
