package execgatetest_test

import (
	"testing"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
)

func TestMemoryStore_Conformance(t *testing.T) {
	execgatetest.TestApprovalStore(t, func(t *testing.T, capacity int) execgate.ApprovalStore {
		return execgate.NewMemoryStore(execgate.MemoryStoreOptions{Capacity: capacity})
	})
}
