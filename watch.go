package execgate

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// Watch receives a call's output while its command runs, and a heartbeat
// for callers that only want to know it is alive. Put it on the context of
// Run, Execute or Submit with [WithWatch]; the [ExecFn] finds it there with
// [WatchFrom]. [DefaultExecFn] and execgatetest.Recorder honour it.
//
// Watching changes nothing about the call: the command is never slowed
// down for a watcher, and the [Result] is exactly what it would have been
// without one. DefaultExecFn hands each chunk it reads to a bounded queue
// (at most [WatchQueue] chunks) that one goroutine of its own delivers
// from; when the queue is full, the chunk is dropped for the watcher and
// counted in [Progress.Dropped] (it is still in the Result, within
// MaxOutput, or in its dropped counts), and the next chunk's Offset shows
// the gap. Output and Progress are called from that one goroutine, one
// call at a time, in order, and must return promptly: once the command
// has ended, the call waits at most [WatchGrace] for the watcher to take
// what is queued, then drops the rest and returns (a callback still
// running then is left to finish on its own).
type Watch struct {
	// Output, if not nil, receives the output as it is read, in chunks
	// of at most 32 KiB, in order for each stream. Its Data is the
	// watcher's to keep.
	Output func(OutputChunk)
	// Progress, if not nil, is called every Interval while the command
	// runs.
	Progress func(Progress)
	// Interval is how often Progress is called; zero means
	// [DefaultWatchInterval]. It is at least [MinWatchInterval].
	Interval time.Duration
}

// The bounds of a [Watch].
const (
	// WatchQueue is the most chunks that wait for a watcher's Output.
	WatchQueue = 64
	// WatchGrace is how long a call that has ended waits for its watcher.
	WatchGrace = time.Second
	// DefaultWatchInterval is the interval of Progress when Watch sets
	// none.
	DefaultWatchInterval = time.Second
	// MinWatchInterval is the shortest interval of Progress.
	MinWatchInterval = 10 * time.Millisecond
	// MaxProgressLine bounds [Progress.LastLine], in bytes.
	MaxProgressLine = 200
)

// Stream names an output stream of a command.
type Stream string

// The streams of a command's output.
const (
	StreamStdout Stream = "stdout"
	StreamStderr Stream = "stderr"
)

// OutputChunk is a piece of a command's output, as [Watch.Output] receives
// it.
type OutputChunk struct {
	// Stream is the stream it was read from.
	Stream Stream `json:"stream"`
	// Offset counts the bytes of the stream before Data: a chunk whose
	// Offset is past the end of the one before it follows chunks the
	// watcher did not get.
	Offset int64 `json:"offset"`
	// Data are the bytes, as the command wrote them (not always UTF-8,
	// and a chunk may end inside a character or a line).
	Data []byte `json:"data"`
}

// Progress is the heartbeat of a running command, as [Watch.Progress]
// receives it.
type Progress struct {
	// Elapsed is how long the command has been running.
	Elapsed time.Duration `json:"elapsed"`
	// StdoutBytes and StderrBytes count what the command wrote so far.
	StdoutBytes int64 `json:"stdoutBytes"`
	StderrBytes int64 `json:"stderrBytes"`
	// LastLine is the latest line the command ended on either stream,
	// without its line break, valid UTF-8 with control characters made
	// spaces, and cut to [MaxProgressLine] bytes; "" before the first.
	LastLine string `json:"lastLine"`
	// Dropped counts the output chunks the watcher did not get because
	// it was too slow.
	Dropped int64 `json:"dropped"`
}

type watchKey struct{}

// WithWatch returns a copy of ctx that carries w, for the call made with
// it.
func WithWatch(ctx context.Context, w Watch) context.Context {
	return context.WithValue(ctx, watchKey{}, w)
}

// WatchFrom returns the [Watch] that ctx carries, if any: how an [ExecFn]
// finds the watcher of the call it runs.
func WatchFrom(ctx context.Context) (Watch, bool) {
	w, ok := ctx.Value(watchKey{}).(Watch)
	return w, ok && (w.Output != nil || w.Progress != nil)
}

// watcher delivers one call's output and progress to its Watch, from a
// goroutine of its own, without ever making the readers wait.
type watcher struct {
	w     Watch
	start time.Time
	q     chan OutputChunk
	quit  chan struct{} // closed when the watcher is given up on
	done  chan struct{} // closed when the delivering goroutine returns

	written [2]atomic.Int64 // per stream, by its reader only
	dropped atomic.Int64
	mu      sync.Mutex
	partial [2][]byte // the line each stream is in, at most MaxProgressLine
	last    string
	once    sync.Once
}

// startWatch starts delivering to the Watch ctx carries, or returns nil
// when there is none.
func startWatch(ctx context.Context, start time.Time) *watcher {
	w, ok := WatchFrom(ctx)
	if !ok {
		return nil
	}
	if w.Interval <= 0 {
		w.Interval = DefaultWatchInterval
	}
	w.Interval = max(w.Interval, MinWatchInterval)
	x := &watcher{w: w, start: start, q: make(chan OutputChunk, WatchQueue),
		quit: make(chan struct{}), done: make(chan struct{})}
	go x.deliver()
	return x
}

// deliver calls the Watch until the queue is closed and empty, or the
// watcher is given up on.
func (x *watcher) deliver() {
	defer close(x.done)
	var tick <-chan time.Time
	if x.w.Progress != nil {
		t := time.NewTicker(x.w.Interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-x.quit:
			return
		default:
		}
		select {
		case <-x.quit:
			return
		case c, ok := <-x.q:
			if !ok {
				return
			}
			if x.w.Output != nil {
				x.w.Output(c)
			}
		case <-tick:
			x.w.Progress(x.progress())
		}
	}
}

// progress is the heartbeat as of now.
func (x *watcher) progress() Progress {
	x.mu.Lock()
	last := x.last
	x.mu.Unlock()
	return Progress{Elapsed: time.Since(x.start), StdoutBytes: x.written[0].Load(), StderrBytes: x.written[1].Load(),
		LastLine: last, Dropped: x.dropped.Load()}
}

// offer hands a chunk just read from stream s (0 stdout, 1 stderr) to
// the watcher, without waiting: a full queue drops it. It is called by
// that stream's reader only.
func (x *watcher) offer(s int, p []byte) {
	if x == nil || len(p) == 0 {
		return
	}
	off := x.written[s].Add(int64(len(p))) - int64(len(p))
	if x.w.Progress != nil {
		x.noteLines(s, p)
	}
	if x.w.Output == nil {
		return
	}
	stream := StreamStdout
	if s == 1 {
		stream = StreamStderr
	}
	select {
	case x.q <- OutputChunk{Stream: stream, Offset: off, Data: bytes.Clone(p)}:
	default:
		x.dropped.Add(1)
	}
}

// noteLines keeps the latest line ended in p, and the start of the line
// p leaves open.
func (x *watcher) noteLines(s int, p []byte) {
	x.mu.Lock()
	defer x.mu.Unlock()
	i := bytes.LastIndexByte(p, '\n')
	if i < 0 {
		x.partial[s] = appendBounded(x.partial[s], p)
		return
	}
	before := p[:i]
	if j := bytes.LastIndexByte(before, '\n'); j >= 0 {
		x.last = progressLine(before[j+1:])
	} else {
		x.last = progressLine(appendBounded(x.partial[s], before))
	}
	x.partial[s] = appendBounded(x.partial[s][:0], p[i+1:])
}

// appendBounded appends p to b, keeping at most MaxProgressLine bytes.
func appendBounded(b, p []byte) []byte {
	return append(b, p[:min(len(p), max(MaxProgressLine-len(b), 0))]...)
}

// progressLine is a line as Progress shows it.
func progressLine(b []byte) string {
	b = bytes.TrimSuffix(b, []byte("\r"))
	if len(b) > MaxProgressLine {
		b = b[:MaxProgressLine]
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return ' '
		}
		return r
	}, s)
	for len(s) > MaxProgressLine {
		_, n := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-n]
	}
	return s
}

// stop ends the watch once the readers are done: what is queued is
// delivered within WatchGrace, and the rest dropped.
func (x *watcher) stop() {
	if x == nil {
		return
	}
	x.once.Do(func() {
		close(x.q)
		t := time.NewTimer(WatchGrace)
		defer t.Stop()
		select {
		case <-x.done:
		case <-t.C:
			close(x.quit)
		}
	})
}
