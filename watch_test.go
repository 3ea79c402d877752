package execgate_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
)

// shGate is an Executor with DefaultExecFn serving "sh.run", which runs
// sh -c script.
func shGate(t *testing.T, script string) *execgate.Executor {
	t.Helper()
	a, err := execgate.NewAllowlist(execgate.CommandSpec{Name: "sh.run", Command: "/bin/sh", Args: execgate.Fixed("-c", script),
		Dir: t.TempDir(), Timeout: 20 * time.Second, Env: map[string]string{"PATH": "/usr/bin:/bin"}})
	require.NoError(t, err)
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: a})
	require.NoError(t, err)
	return x
}

// The watcher gets output while the command still runs: the command
// waits for a file that only the watcher's handling of its first line
// creates, so without streaming the call would end only at its timeout.
func TestWatch_OutputArrivesWhileTheCommandRuns(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "seen")
	x := shGate(t, `echo first; echo oops >&2; while [ ! -e "`+flag+`" ]; do sleep 0.01; done; echo second`)
	var mu sync.Mutex
	var chunks []execgate.OutputChunk
	w := execgate.Watch{Output: func(c execgate.OutputChunk) {
		mu.Lock()
		chunks = append(chunks, c)
		mu.Unlock()
		if strings.Contains(string(c.Data), "first") {
			os.WriteFile(flag, nil, 0o644)
		}
	}}
	res, err := x.Run(execgate.WithWatch(context.Background(), w), "sh.run", nil)
	require.NoError(t, err)
	require.True(t, res.OK, "%+v", res)
	assert.Equal(t, "first\nsecond\n", res.Stdout, "the Result is what it would be unwatched")
	assert.Equal(t, "oops\n", res.Stderr)

	mu.Lock()
	defer mu.Unlock()
	var out, errOut string
	for _, c := range chunks {
		switch c.Stream {
		case execgate.StreamStdout:
			assert.Equal(t, int64(len(out)), c.Offset, "stdout chunks come in order")
			out += string(c.Data)
		case execgate.StreamStderr:
			assert.Equal(t, int64(len(errOut)), c.Offset, "stderr chunks come in order")
			errOut += string(c.Data)
		}
	}
	assert.Equal(t, "first\nsecond\n", out)
	assert.Equal(t, "oops\n", errOut)
}

// The heartbeat says how much was written and the latest line, while the
// command runs: the command waits until the heartbeat has shown its
// second line.
func TestWatch_ProgressShowsTheLatestLine(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "seen")
	x := shGate(t, `echo one; printf 'two\r\n'; printf 'a partial'; while [ ! -e "`+flag+`" ]; do sleep 0.01; done`)
	var mu sync.Mutex
	var last execgate.Progress
	w := execgate.Watch{Interval: 10 * time.Millisecond, Progress: func(p execgate.Progress) {
		mu.Lock()
		last = p
		mu.Unlock()
		if p.LastLine == "two" {
			os.WriteFile(flag, nil, 0o644)
		}
	}}
	res, err := x.Run(execgate.WithWatch(context.Background(), w), "sh.run", nil)
	require.NoError(t, err)
	require.True(t, res.OK, "%+v", res)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, "two", last.LastLine)
	assert.Equal(t, int64(len("one\ntwo\r\na partial")), last.StdoutBytes)
	assert.Positive(t, last.Elapsed)
}

// A line with control characters, invalid UTF-8 or more than
// MaxProgressLine bytes is shown safely.
func TestWatch_ProgressLineIsSafeToShow(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "seen")
	long := strings.Repeat("x", 3*execgate.MaxProgressLine)
	x := shGate(t, `printf 'a\033[2Jb\377c\n'; echo `+long+`; while [ ! -e "`+flag+`" ]; do sleep 0.01; done`)
	var mu sync.Mutex
	var lines []string
	w := execgate.Watch{Interval: 10 * time.Millisecond, Progress: func(p execgate.Progress) {
		mu.Lock()
		lines = append(lines, p.LastLine)
		mu.Unlock()
		if strings.HasPrefix(p.LastLine, "xxx") {
			os.WriteFile(flag, nil, 0o644)
		}
	}}
	_, err := x.Run(execgate.WithWatch(context.Background(), w), "sh.run", nil)
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, lines)
	got := lines[len(lines)-1]
	assert.Equal(t, strings.Repeat("x", execgate.MaxProgressLine), got)
	for _, l := range lines {
		assert.NotContains(t, l, "\033")
		assert.True(t, len(l) <= execgate.MaxProgressLine)
	}
}

// The Recorder hands its canned output to a watcher, so code that watches
// a call can be tested without a process.
func TestRecorder_FeedsTheWatch(t *testing.T) {
	rec := execgatetest.NewRecorder()
	rec.On("t.run", execgate.Outcome{Stdout: []byte("out\n"), Stderr: []byte("err\n")})
	a, err := execgate.NewAllowlist(execgate.CommandSpec{Name: "t.run", Command: "/bin/true", Args: execgate.Fixed()})
	require.NoError(t, err)
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: a, ExecFn: rec.Exec})
	require.NoError(t, err)
	var got []execgate.OutputChunk
	var beats []execgate.Progress
	w := execgate.Watch{Output: func(c execgate.OutputChunk) { got = append(got, c) },
		Progress: func(p execgate.Progress) { beats = append(beats, p) }}
	_, err = x.Run(execgate.WithWatch(context.Background(), w), "t.run", nil)
	require.NoError(t, err)
	assert.Equal(t, []execgate.OutputChunk{{Stream: execgate.StreamStdout, Data: []byte("out\n")}, {Stream: execgate.StreamStderr, Data: []byte("err\n")}}, got)
	require.Len(t, beats, 1)
	assert.Equal(t, int64(4), beats[0].StdoutBytes)
}

// A Watch with neither callback is no watch.
func TestWatchFrom_NeedsACallback(t *testing.T) {
	_, ok := execgate.WatchFrom(execgate.WithWatch(context.Background(), execgate.Watch{Interval: time.Second}))
	assert.False(t, ok)
	_, ok = execgate.WatchFrom(context.Background())
	assert.False(t, ok)
	_, ok = execgate.WatchFrom(execgate.WithWatch(context.Background(), execgate.Watch{Progress: func(execgate.Progress) {}}))
	assert.True(t, ok)
}
