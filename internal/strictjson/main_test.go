package strictjson_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine is left running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
