package mcpserver_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/mcpserver"
)

func TestCall_OverTheConcurrencyBoundIsABusyToolError(t *testing.T) {
	a, err := execgate.NewAllowlist(testSpecs()...)
	require.NoError(t, err)
	begun, release := make(chan struct{}), make(chan struct{})
	x, err := execgate.NewExecutor(execgate.Config{
		Allowlist:     a,
		MaxConcurrent: 1,
		ExecFn: func(ctx context.Context, _ execgate.Invocation) execgate.Outcome {
			begun <- struct{}{}
			<-release
			return execgate.Outcome{}
		},
	})
	require.NoError(t, err)
	srv, err := mcpserver.New(x, mcpserver.Options{Allowlist: a, Principal: testPrincipal})
	require.NoError(t, err)
	cs := connect(t, srv, nil, "")
	f := &fixture{x: x, srv: srv, cs: cs}

	first := make(chan bool, 1)
	go func() {
		res := f.call(t, "echo_hello", `{}`)
		first <- res.IsError
	}()
	<-begun
	res := f.call(t, "echo_hello", `{}`)
	assert.True(t, res.IsError)
	st := status(t, res)
	assert.Equal(t, mcpserver.StatusRefused, st.Status)
	assert.Equal(t, mcpserver.KindBusy, st.Kind, "a busy gate is its own kind, so a client knows to retry")
	assert.Equal(t, execgate.BusyExecutor, st.Reason)
	assert.Equal(t, "echo.hello", st.Name)
	assert.Contains(t, text(t, res), "retry")
	assert.Contains(t, text(t, res), "nothing ran")
	close(release)
	assert.False(t, <-first, "the call that held the slot ran")
}

func TestCall_IncompleteOutputIsSaid(t *testing.T) {
	f := start(t, setup{})
	f.rec.On("echo.hello", execgate.Outcome{Stdout: []byte("partial"), OutputIncomplete: true})
	res := f.call(t, "echo_hello", `{}`)
	r := ran(t, res)
	assert.True(t, r.OutputIncomplete)
	assert.Contains(t, text(t, res), "[output may be incomplete")
}
