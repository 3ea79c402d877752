package mcpserver_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/mcpserver"
)

// A client that sends a progress token hears from a command while it
// runs: notifications/progress with the seconds it has run and its latest
// line; one that sends none hears nothing.
func TestProgress_FlowsWhileTheCommandRuns(t *testing.T) {
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	f := start(t, setup{
		specs: []execgate.CommandSpec{{Name: "slow.run", Command: "/bin/sh", Description: "Work a while.",
			Args: execgate.Fixed("-c", "echo step one; sleep 1.5; echo step two")}},
		execFn: execgate.DefaultExecFn,
		client: &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, req.Params)
			mu.Unlock()
		}},
	})
	for _, withToken := range []bool{false, true} {
		mu.Lock()
		got = nil
		mu.Unlock()
		params := &mcp.CallToolParams{Name: "slow_run", Arguments: map[string]any{}}
		if withToken {
			params.SetProgressToken("tok-1")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		res, err := f.cs.CallTool(ctx, params)
		cancel()
		require.NoError(t, err)
		require.False(t, res.IsError, text(t, res))
		mu.Lock()
		notes := append([]*mcp.ProgressNotificationParams(nil), got...)
		mu.Unlock()
		if !withToken {
			assert.Empty(t, notes, "no token, no progress")
			continue
		}
		require.NotEmpty(t, notes, "a command that ran 1.5s with a progress token gave no progress")
		last := -1.0
		for _, n := range notes {
			assert.Equal(t, "tok-1", n.ProgressToken)
			assert.Greater(t, n.Progress, last, "progress always increases")
			last = n.Progress
			assert.Contains(t, n.Message, "bytes of output so far")
		}
		assert.Contains(t, notes[len(notes)-1].Message, "latest line: step one")
	}
}

// A client that gives up on a call (notifications/cancelled, which the
// SDK's client sends when the call's context is done) has its command
// killed promptly, and the call recorded as canceled.
func TestCancelled_KillsTheCommand(t *testing.T) {
	outcomes := make(chan execgate.Outcome, 1)
	heard := make(chan struct{}, 1)
	f := start(t, setup{
		specs: []execgate.CommandSpec{{Name: "slow.run", Command: "/bin/sh", Description: "Work a long while.",
			Args: execgate.Fixed("-c", "echo started; exec sleep 60")}},
		execFn: func(ctx context.Context, inv execgate.Invocation) execgate.Outcome {
			o := execgate.DefaultExecFn(ctx, inv)
			outcomes <- o
			return o
		},
		client: &mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			select {
			case heard <- struct{}{}:
			default:
			}
		}},
	})
	ctx, cancel := context.WithCancel(context.Background())
	params := &mcp.CallToolParams{Name: "slow_run", Arguments: map[string]any{}}
	params.SetProgressToken("tok-2")
	done := make(chan error, 1)
	go func() {
		_, err := f.cs.CallTool(ctx, params)
		done <- err
	}()
	select {
	case <-heard:
	case <-time.After(20 * time.Second):
		t.Fatal("no progress from a running command")
	}
	cancel()
	select {
	case o := <-outcomes:
		assert.Equal(t, execgate.TerminationCanceled, o.Termination, "%+v", o)
		assert.Equal(t, "started\n", string(o.Stdout))
	case <-time.After(20 * time.Second):
		t.Fatal("the command still runs after its client cancelled the call")
	}
	<-done
}

// A dispatcher's subcommand whose own tool is hidden from the caller is
// never named: the call through the dispatcher and the call of either of
// its spellings get the words a subcommand the caller may not call gets,
// one without a spec of its own that Visible reports false for.
func TestVisible_AHiddenSubcommandToolIsNeverNamed(t *testing.T) {
	specs := testSpecs()
	specs = append(specs, execgate.CommandSpec{Name: "git.secretpush", Command: "/bin/echo", Args: execgate.Fixed("push"), Description: "Push."})
	f := start(t, setup{specs: specs, opts: mcpserver.Options{
		Visible: func(_ context.Context, _ string, spec execgate.CommandSpec) bool {
			return spec.Name != "git.secretpush" && spec.Name != "git.nosuch"
		},
	}})
	res := f.call(t, "git", `{"subcommand":"secretpush"}`)
	require.True(t, res.IsError)
	assert.NotContains(t, text(t, res), "git_secretpush")
	assert.Contains(t, text(t, res), `the tool "git" has no subcommand "secretpush" that you can call`)
	assert.Equal(t, strings.ReplaceAll(text(t, f.call(t, "git", `{"subcommand":"nosuch"}`)), "nosuch", "secretpush"), text(t, res))

	for _, spell := range []string{"git.%s", "git_%s"} {
		hidden := text(t, f.call(t, fmt.Sprintf(spell, "secretpush"), `{}`))
		plain := text(t, f.call(t, fmt.Sprintf(spell, "nosuch"), `{}`))
		assert.NotContains(t, hidden, "git_secretpush")
		assert.Equal(t, strings.ReplaceAll(plain, "nosuch", "secretpush"), hidden, "the same answer as for a subcommand the caller may not call")
	}
	assert.Zero(t, f.rec.Count())
	ran(t, f.call(t, "git", `{"subcommand":"status"}`))
}
