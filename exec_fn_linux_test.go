//go:build linux

package execgate

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Invariant 11 of DESIGN.md: the record is true. Unconfined calls read
// their output through read buffers shared between calls (see chunkPool);
// a call's output is exactly what its command wrote, never bytes a call
// before it or beside it left in a buffer.
func TestRecordIsTrue_ReadBuffersCarryNothingOver(t *testing.T) {
	flood := procSpec(t, "flood", "flood", strconv.Itoa(200<<10), strconv.Itoa(100<<10))
	flood.MaxOutput = 150 << 10
	specs := []CommandSpec{flood}
	for i := range 8 {
		specs = append(specs, procSpec(t, "echo-"+strconv.Itoa(i), "echo", "call", strconv.Itoa(i)))
	}
	x := procExecutor(t, specs...)

	for _, tc := range []struct {
		name       string
		concurrent bool
	}{
		{"a short output after a flood is the short output alone", false},
		{"short outputs beside floods are each their own", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(i int) {
				res, err := x.Run(t.Context(), "flood", nil)
				if !assert.NoError(t, err) {
					return
				}
				assert.Equal(t, strings.Repeat("x", 150<<10), string(res.Stdout))
				assert.Equal(t, int64(50<<10), res.StdoutDropped)
				assert.Equal(t, strings.Repeat("x", 100<<10), withoutCoverageWarning(res.Stderr))

				res, err = x.Run(t.Context(), "echo-"+strconv.Itoa(i), nil)
				if !assert.NoError(t, err) {
					return
				}
				assert.Equal(t, fmt.Sprintf("call\n%d\n", i), string(res.Stdout), "the echo's stdout is its own")
				assert.Zero(t, res.StdoutDropped)
				assert.Empty(t, withoutCoverageWarning(res.Stderr), "the echo wrote nothing to stderr")
				assert.False(t, res.OutputIncomplete)
			}
			if !tc.concurrent {
				for i := range 8 {
					check(i)
				}
				return
			}
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() { check(i) })
			}
			wg.Wait()
		})
	}
}
