package execgatetest

import (
	"context"
	"slices"
	"sync"

	"github.com/execgate/execgate"
)

// Recorder is a fake ExecFn that records every Invocation it is handed and
// answers with a canned Outcome, chosen by the Invocation's Name. It starts
// no process. The zero Recorder answers every call with a zero Outcome (an
// exit with status 0 and no output). A Recorder is safe for concurrent use.
type Recorder struct {
	mu       sync.Mutex
	calls    []execgate.Invocation
	outcomes map[string]execgate.Outcome
	fallback execgate.Outcome
}

// NewRecorder returns an empty [Recorder].
func NewRecorder() *Recorder {
	return &Recorder{}
}

// On sets the Outcome returned for calls to the named command, replacing
// any earlier one, and returns r so calls can be chained.
func (r *Recorder) On(name string, o execgate.Outcome) *Recorder {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.outcomes == nil {
		r.outcomes = make(map[string]execgate.Outcome)
	}
	r.outcomes[name] = o
	return r
}

// Otherwise sets the Outcome returned for names without their own, and
// returns r.
func (r *Recorder) Otherwise(o execgate.Outcome) *Recorder {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fallback = o
	return r
}

// Exec is the ExecFn: it records inv and returns the canned Outcome.
// Use it as execgate.Config{ExecFn: r.Exec}.
//
// When the call's context carries an execgate.Watch, its Output receives
// the canned Stdout and then the canned Stderr, each as one chunk, and its
// Progress one heartbeat with their sizes, before Exec returns: a test of
// code that watches a call sees what a running command would hand it.
func (r *Recorder) Exec(ctx context.Context, inv execgate.Invocation) execgate.Outcome {
	inv = cloneInvocation(inv)
	r.mu.Lock()
	r.calls = append(r.calls, inv)
	o, ok := r.outcomes[inv.Name]
	if !ok {
		o = r.fallback
	}
	o = cloneOutcome(o)
	r.mu.Unlock()
	if w, ok := execgate.WatchFrom(ctx); ok && o.Err == nil {
		watchOutcome(w, o)
	}
	return o
}

// watchOutcome hands a canned Outcome's output to a Watch.
func watchOutcome(w execgate.Watch, o execgate.Outcome) {
	if w.Output != nil {
		for _, c := range []execgate.OutputChunk{{Stream: execgate.StreamStdout, Data: o.Stdout}, {Stream: execgate.StreamStderr, Data: o.Stderr}} {
			if len(c.Data) > 0 {
				c.Data = append([]byte(nil), c.Data...)
				w.Output(c)
			}
		}
	}
	if w.Progress != nil {
		w.Progress(execgate.Progress{StdoutBytes: int64(len(o.Stdout)), StderrBytes: int64(len(o.Stderr))})
	}
}

// Calls returns a copy of every Invocation recorded so far, in the order
// they arrived.
func (r *Recorder) Calls() []execgate.Invocation {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]execgate.Invocation, len(r.calls))
	for i, c := range r.calls {
		out[i] = cloneInvocation(c)
	}
	return out
}

// Count returns how many Invocations were recorded.
func (r *Recorder) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// Reset forgets the recorded Invocations; canned Outcomes are kept.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = nil
}

// cloneInvocation returns a copy of inv that shares no memory with it.
func cloneInvocation(inv execgate.Invocation) execgate.Invocation {
	inv.Args = append([]string(nil), inv.Args...)
	inv.Env = append([]string(nil), inv.Env...)
	if inv.Stdin != nil {
		inv.Stdin = append([]byte(nil), inv.Stdin...)
	}
	if c := inv.Confine; c != nil {
		cc := *c
		cc.Read = slices.Clone(c.Read)
		cc.Write = slices.Clone(c.Write)
		cc.Exec = slices.Clone(c.Exec)
		if c.Egress != nil {
			cc.Egress = &execgate.Egress{Allow: slices.Clone(c.Egress.Allow), Deny: slices.Clone(c.Egress.Deny)}
		}
		inv.Confine = &cc
	}
	return inv
}

// cloneOutcome returns a copy of o that shares no memory with it, Err
// apart (errors are not changed once made).
func cloneOutcome(o execgate.Outcome) execgate.Outcome {
	o.Stdout = append([]byte(nil), o.Stdout...)
	o.Stderr = append([]byte(nil), o.Stderr...)
	o.Unconfined = slices.Clone(o.Unconfined)
	o.Connections = slices.Clone(o.Connections)
	return o
}
