package execgatetest_test

import (
	"testing"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
)

func TestDefaultExecFn_Conformance(t *testing.T) {
	execgatetest.TestExecFn(t, execgate.DefaultExecFn)
}
