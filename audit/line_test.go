package audit_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit"
)

// TestNextLine_SameLinesAsChain: lines made one after the other with
// NextLine are byte for byte the lines a Chain writes for the same Events,
// an entry too long for its argv included, and they verify as a file.
func TestNextLine_SameLinesAsChain(t *testing.T) {
	events := []execgate.Event{event(1), event(2), event(3)}
	huge := event(4)
	huge.Args = []string{strings.Repeat("x", audit.MaxLineBytes)}
	events = append(events, huge, event(5))

	var file bytes.Buffer
	c := audit.NewChain(&file, audit.ChainOptions{})
	var made bytes.Buffer
	head := audit.Head{SHA256: audit.Genesis}
	for i, ev := range events {
		require.NoError(t, c.Audit(context.Background(), ev))
		line, next, err := audit.NextLine(head, ev)
		require.NoError(t, err)
		require.Equal(t, uint64(i+1), next.Seq)
		require.Equal(t, sha(line), next.SHA256, "the Head after a line is its SHA-256")
		made.Write(line)
		made.WriteByte('\n')
		head = next
	}
	require.True(t, bytes.Equal(file.Bytes(), made.Bytes()), "NextLine's lines differ from the Chain's")
	require.Equal(t, c.Head(), head)
	require.True(t, decode(t, bytes.Split(made.Bytes(), []byte("\n"))[3]).ArgsOmitted, "the long entry keeps its argv")
	got, err := audit.VerifyHead(bytes.NewReader(made.Bytes()))
	require.NoError(t, err)
	require.Equal(t, head, got)
}
