package execgatetest_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
)

func TestRecorder(t *testing.T) {
	r := execgatetest.NewRecorder().
		On("a", execgate.Outcome{ExitCode: 3}).
		Otherwise(execgate.Outcome{Stdout: []byte("default")})

	assert.Equal(t, 3, r.Exec(context.Background(), execgate.Invocation{Name: "a"}).ExitCode)
	assert.Equal(t, "default", string(r.Exec(context.Background(), execgate.Invocation{Name: "b"}).Stdout))

	args := []string{"x"}
	r.Exec(context.Background(), execgate.Invocation{Name: "c", Args: args})
	args[0] = "mutated"
	calls := r.Calls()
	assert.Len(t, calls, 3)
	assert.Equal(t, []string{"x"}, calls[2].Args, "the Recorder keeps its own copy")
	calls[2].Args[0] = "mutated too"
	assert.Equal(t, []string{"x"}, r.Calls()[2].Args, "Calls returns copies")

	r.Reset()
	assert.Zero(t, r.Count())
	assert.Equal(t, 3, r.Exec(context.Background(), execgate.Invocation{Name: "a"}).ExitCode, "Reset keeps outcomes")
}

func TestRecorder_Concurrent(t *testing.T) {
	var r execgatetest.Recorder // the zero value works
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := r.Exec(context.Background(), execgate.Invocation{Name: "n"})
			assert.Zero(t, o.ExitCode)
		}()
	}
	wg.Wait()
	assert.Equal(t, 50, r.Count())
}
