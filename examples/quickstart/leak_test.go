package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if the example leaves a goroutine
// running (a process supervisor that never returned, say).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
