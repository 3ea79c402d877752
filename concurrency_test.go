package execgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// heldExec is an ExecFn whose calls block until released, counting the
// calls that started.
type heldExec struct {
	mu      sync.Mutex
	started int
	begun   chan struct{} // one value per started call
	release chan struct{} // closing it ends every call
}

func newHeldExec() *heldExec {
	return &heldExec{begun: make(chan struct{}, 100), release: make(chan struct{})}
}

func (h *heldExec) exec(ctx context.Context, _ execgate.Invocation) execgate.Outcome {
	h.mu.Lock()
	h.started++
	h.mu.Unlock()
	h.begun <- struct{}{}
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return execgate.Outcome{}
}

func (h *heldExec) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.started
}

func boundedGate(t *testing.T, cfg execgate.Config) (*execgate.Executor, *heldExec, *eventLog) {
	t.Helper()
	a, err := execgate.NewAllowlist(echoSpec())
	require.NoError(t, err)
	h := newHeldExec()
	log := &eventLog{}
	cfg.Allowlist, cfg.ExecFn, cfg.Auditor = a, h.exec, log
	x, err := execgate.NewExecutor(cfg)
	require.NoError(t, err)
	return x, h, log
}

// runAsync starts a Run as principal and returns where its error arrives.
func runAsync(x *execgate.Executor, principal string) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := x.Run(execgate.WithPrincipal(context.Background(), principal), "echo.say", nil)
		done <- err
	}()
	return done
}

func TestMaxConcurrent_RefusesOverTheBound(t *testing.T) {
	cases := []struct {
		name      string
		cfg       execgate.Config
		running   []string // principals whose calls hold slots
		next      string   // the principal of the call over the bound
		wantScope string   // "" if the next call must start
		wantLimit int
	}{
		{
			name:    "a call over the executor's bound is refused at once with a BusyError",
			cfg:     execgate.Config{MaxConcurrent: 2},
			running: []string{"alice", "bob"}, next: "carol",
			wantScope: execgate.BusyExecutor, wantLimit: 2,
		},
		{
			name:    "a call over its principal's bound is refused while others still run",
			cfg:     execgate.Config{MaxConcurrent: 10, MaxConcurrentPerPrincipal: 1},
			running: []string{"alice"}, next: "alice",
			wantScope: execgate.BusyPrincipal, wantLimit: 1,
		},
		{
			name:    "another principal is not held by one principal's bound",
			cfg:     execgate.Config{MaxConcurrentPerPrincipal: 1},
			running: []string{"alice"}, next: "bob",
		},
		{
			name:    "zero means unbounded, as before",
			cfg:     execgate.Config{},
			running: []string{"alice", "alice", "alice"}, next: "alice",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x, h, log := boundedGate(t, c.cfg)
			var held []<-chan error
			for _, p := range c.running {
				held = append(held, runAsync(x, p))
				<-h.begun
			}
			next := runAsync(x, c.next)
			if c.wantScope == "" {
				<-h.begun
			} else {
				err := <-next
				var be *execgate.BusyError
				require.ErrorAs(t, err, &be)
				assert.Equal(t, c.wantScope, be.Scope)
				assert.Equal(t, c.wantLimit, be.Limit)
				assert.Equal(t, "echo.say", be.Name)
				assert.Contains(t, err.Error(), "retry")
				assert.Equal(t, len(c.running), h.count(), "the refused call started nothing")
			}
			close(h.release)
			for _, d := range held {
				require.NoError(t, <-d)
			}
			if c.wantScope == "" {
				require.NoError(t, <-next)
				return
			}
			// The refusal is in the trail, with no intent.
			var busy int
			for _, ev := range log.take() {
				if ev.Error == execgate.ErrorKindBusy {
					busy++
					assert.Equal(t, execgate.PhaseOutcome, ev.Phase)
					assert.Equal(t, c.wantScope, ev.Reason)
				}
			}
			assert.Equal(t, 1, busy)
		})
	}
}

func TestMaxConcurrent_WaitsWithinMaxQueueWaitAndContext(t *testing.T) {
	t.Run("a call over the bound takes the slot that frees up within MaxQueueWait", func(t *testing.T) {
		x, h, _ := boundedGate(t, execgate.Config{MaxConcurrent: 1, MaxQueueWait: time.Minute})
		first := runAsync(x, "alice")
		<-h.begun
		second := runAsync(x, "bob")
		select {
		case err := <-second:
			t.Fatalf("the second call did not wait: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		h.release <- struct{}{} // ends the first call only
		require.NoError(t, <-first)
		<-h.begun
		close(h.release)
		require.NoError(t, <-second)
		assert.Equal(t, 2, h.count())
	})
	t.Run("a waiting call is refused when its context ends, never queued forever", func(t *testing.T) {
		x, h, _ := boundedGate(t, execgate.Config{MaxConcurrent: 1, MaxConcurrentPerPrincipal: 1, MaxQueueWait: time.Hour})
		first := runAsync(x, "alice")
		<-h.begun
		for _, p := range []string{"alice", "bob"} { // the principal's bound, then the executor's
			ctx, cancel := context.WithTimeout(execgate.WithPrincipal(context.Background(), p), 50*time.Millisecond)
			_, err := x.Run(ctx, "echo.say", nil)
			cancel()
			var be *execgate.BusyError
			require.ErrorAs(t, err, &be, p)
		}
		close(h.release)
		require.NoError(t, <-first)
		assert.Equal(t, 1, h.count())
		// Every slot was given back: the bound admits a call again.
		_, err := x.Run(context.Background(), "echo.say", nil)
		require.NoError(t, err)
	})
}

func TestMaxConcurrent_ExecuteOverTheBoundKeepsTheApproval(t *testing.T) {
	x, h, _ := boundedGate(t, execgate.Config{MaxConcurrent: 1})
	ap, err := x.Propose(context.Background(), "echo.say", json.RawMessage(`{}`), "")
	require.NoError(t, err)
	first := runAsync(x, "alice")
	<-h.begun
	_, err = x.Execute(context.Background(), ap)
	var be *execgate.BusyError
	require.ErrorAs(t, err, &be)
	close(h.release)
	require.NoError(t, <-first)
	// The approval was not taken: it still executes, once.
	_, err = x.Execute(context.Background(), ap)
	require.NoError(t, err)
	assert.Equal(t, 2, h.count())
}

func TestNewExecutor_RefusesNegativeBounds(t *testing.T) {
	a, err := execgate.NewAllowlist()
	require.NoError(t, err)
	for _, c := range []struct {
		field string
		cfg   execgate.Config
	}{
		{"MaxConcurrent", execgate.Config{MaxConcurrent: -1}},
		{"MaxConcurrentPerPrincipal", execgate.Config{MaxConcurrentPerPrincipal: -1}},
		{"MaxQueueWait", execgate.Config{MaxQueueWait: -time.Second}},
	} {
		c.cfg.Allowlist = a
		_, err := execgate.NewExecutor(c.cfg)
		var ce *execgate.ConfigError
		require.ErrorAs(t, err, &ce, c.field)
		assert.Equal(t, c.field, ce.Field)
	}
}

func TestMaxConcurrent_ExecuteCountsAgainstTheCallerNotTheEnvelope(t *testing.T) {
	x, h, _ := boundedGate(t, execgate.Config{MaxConcurrentPerPrincipal: 1})
	alice := execgate.WithPrincipal(context.Background(), "alice")
	ap, err := x.Propose(alice, "echo.say", json.RawMessage(`{}`), "")
	require.NoError(t, err)
	held := runAsync(x, "alice") // alice's one slot
	<-h.begun

	// A forged envelope that names alice takes none of her slots: it is
	// refused for what it is, not as busy.
	forged := ap
	forged.ID = "01a23100-0000-7000-8000-000000000000"
	_, err = x.Execute(execgate.WithPrincipal(context.Background(), "mallory"), forged)
	var be *execgate.BusyError
	assert.False(t, errors.As(err, &be), "a forged envelope naming alice is not held by her bound: %v", err)

	// Bob, approving alice's call, runs it in his own slot.
	done := make(chan error, 1)
	go func() {
		_, err := x.Execute(execgate.WithPrincipal(context.Background(), "bob"), ap)
		done <- err
	}()
	<-h.begun
	close(h.release)
	require.NoError(t, <-done)
	require.NoError(t, <-held)
}
