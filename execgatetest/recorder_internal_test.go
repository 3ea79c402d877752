package execgatetest

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/execgate/execgate/internal/inventory"
)

// The copies a Recorder keeps and hands out share no memory with what it
// was given, whatever fields Invocation and Outcome gain.
func TestRecorder_CopiesShareNothing(t *testing.T) {
	f := inventory.Filler{Custom: map[reflect.Type]func(int) any{
		reflect.TypeFor[error](): func(seed int) any { return errors.New(fmt.Sprint(seed)) },
	}}
	for name, problems := range map[string][]string{
		"cloneInvocation": inventory.CloneProblems(f, cloneInvocation),
		"cloneOutcome":    inventory.CloneProblems(f, cloneOutcome),
	} {
		if problems != nil {
			t.Errorf("%s: %q", name, problems)
		}
	}
}
