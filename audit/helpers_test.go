package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/internal/fakeclock"
)

// input is what the test commands accept.
type input struct {
	Args  []string `json:"args"`
	Stdin string   `json:"stdin,omitempty"`
}

var schema = execgate.Struct(func(in input) execgate.Argv {
	return execgate.Argv{Args: in.Args, Stdin: []byte(in.Stdin)}
})

// spec returns an allowlist entry served by a Recorder: /bin/echo is never
// started. Its environment holds a canary that must never reach a sink.
func spec(name string) execgate.CommandSpec {
	return execgate.CommandSpec{
		Name: name, Command: "/bin/echo", Args: schema, Dir: "/",
		Env: map[string]string{"TOKEN": "env-canary", "LANG": "C"},
	}
}

// newGate builds an Executor over specs with a Recorder as its ExecFn.
func newGate(t *testing.T, cfg execgate.Config, specs ...execgate.CommandSpec) (*execgate.Executor, *execgatetest.Recorder) {
	t.Helper()
	if len(specs) == 0 {
		specs = []execgate.CommandSpec{spec("echo.say")}
	}
	a, err := execgate.NewAllowlist(specs...)
	require.NoError(t, err)
	rec := execgatetest.NewRecorder()
	cfg.Allowlist = a
	cfg.ExecFn = rec.Exec
	x, err := execgate.NewExecutor(cfg)
	require.NoError(t, err)
	return x, rec
}

// newClock returns a clock for Config.Now that ticks a millisecond at
// every reading, so that every Event of a test has its own time.
func newClock() *fakeclock.Clock {
	return fakeclock.NewTicking(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), time.Millisecond)
}

// capture is a slog.Handler that keeps every record, for assertions.
type capture struct {
	mu      sync.Mutex
	records []slog.Record
	level   slog.Level
	fail    error
}

func (c *capture) Enabled(_ context.Context, l slog.Level) bool { return l >= c.level }

func (c *capture) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return c.fail
	}
	c.records = append(c.records, r.Clone())
	return nil
}

func (c *capture) WithAttrs([]slog.Attr) slog.Handler { panic("not used") }
func (c *capture) WithGroup(string) slog.Handler      { panic("not used") }

func (c *capture) all() []slog.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]slog.Record(nil), c.records...)
}

func (c *capture) setFail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fail = err
}

// attrs returns a record's attributes by key.
func attrs(r slog.Record) map[string]slog.Value {
	m := make(map[string]slog.Value)
	r.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value
		return true
	})
	return m
}

// readLines returns the lines of a file, without their newlines.
func readLines(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b = bytes.TrimSuffix(b, []byte("\n"))
	if len(b) == 0 {
		return nil
	}
	return bytes.Split(b, []byte("\n"))
}

// lastEntry decodes the last line of a chain file.
func lastEntry(t *testing.T, path string) map[string]any {
	t.Helper()
	lines := readLines(t, path)
	require.NotEmpty(t, lines)
	var m map[string]any
	require.NoError(t, json.Unmarshal(lines[len(lines)-1], &m))
	return m
}
