package execgate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

type manyItems struct {
	Items []struct {
		S string `json:"s" validate:"required"`
	} `json:"items" validate:"dive"`
}

// TestInvariant6_LargeFailingInputIsRefusedQuickly sends the largest input
// the gate accepts, made of as many failing fields as fit. Refusing it must
// take time linear in its size: this bound is generous (a quadratic
// implementation took minutes), so it is a correctness check, not a
// benchmark.
func TestInvariant6_LargeFailingInputIsRefusedQuickly(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"items":[{}`)
	for b.Len() < execgate.MaxInputSize-8 {
		b.WriteString(`,{}`)
	}
	b.WriteString(`]}`)
	require.LessOrEqual(t, b.Len(), execgate.MaxInputSize)

	x, rec := newGate(t, execgate.Config{}, execgate.CommandSpec{
		Name: "many", Command: "/bin/echo",
		Args: execgate.Struct(func(manyItems) execgate.Argv { return execgate.Argv{} }),
	})
	start := time.Now()
	_, err := x.Run(context.Background(), "many", json.RawMessage(b.Bytes()))
	elapsed := time.Since(start)
	var ve *execgate.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.LessOrEqual(t, len(ve.Issues), 33, "issues are capped")
	assert.Less(t, elapsed, 20*time.Second, "refusing a 1 MiB input must not take minutes")
	assert.Zero(t, rec.Count())
}
