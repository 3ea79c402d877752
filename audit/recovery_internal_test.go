package audit

import (
	"testing"

	"github.com/execgate/execgate/internal/inventory"
)

// Recovery hands out a copy that shares nothing with what the Chain
// keeps, whatever fields Recovery and Unfinished gain.
func TestChain_RecoveryIsACopy(t *testing.T) {
	problems := inventory.CloneProblems(inventory.Filler{}, func(r Recovery) Recovery {
		c := &Chain{recovery: r}
		return c.Recovery()
	})
	if problems != nil {
		t.Errorf("Recovery: %q", problems)
	}
}
