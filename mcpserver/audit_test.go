package mcpserver_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/mcpserver"
)

// trail is an Auditor that keeps every Event.
type trail struct {
	mu     sync.Mutex
	events []execgate.Event
}

func (tr *trail) Audit(_ context.Context, ev execgate.Event) error {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.events = append(tr.events, ev)
	return nil
}

func (tr *trail) all() []execgate.Event {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]execgate.Event(nil), tr.events...)
}

func TestCall_UnknownToolIsAudited(t *testing.T) {
	tr := &trail{}
	f := start(t, setup{auditor: tr})
	long := "x" + strings.Repeat("y", 10<<10)
	// "git.status" is served by the Executor's dispatcher but is not a
	// listed tool: it is refused and recorded, and still runs nothing.
	names := []string{"nope", "git.status", long}
	for _, name := range names {
		st := status(t, f.call(t, name, `{}`))
		assert.Equal(t, mcpserver.KindNotFound, st.Kind, "the client is answered as before")
		assert.Equal(t, name, st.Name)
	}
	events := tr.all()
	require.Len(t, events, len(names), "one record per refused call: %+v", events)
	for i, ev := range events {
		assert.Equal(t, execgate.ErrorKindNotFound, ev.Error, "event %d", i)
		assert.Equal(t, execgate.OpRequest, ev.Op)
		assert.Equal(t, "mcp tools/call", ev.Route)
		assert.Equal(t, testPrincipal, ev.Principal, "the server's principal made the call")
		assert.NotEmpty(t, ev.TraceID)
		assert.Empty(t, ev.Command, "nothing was looked up")
	}
	assert.Equal(t, "nope", events[0].Name)
	assert.Equal(t, "git.status", events[1].Name)
	assert.Less(t, len(events[2].Name), 300, "a hostile name is cut in the trail")
	assert.True(t, strings.HasPrefix(events[2].Name, "xyyy"))
	assert.Zero(t, f.rec.Count())
	assert.Empty(t, f.policy.requests(), "the policy was never asked")
}
