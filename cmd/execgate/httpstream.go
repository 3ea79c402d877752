package main

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/execgate/execgate"
)

// A call of POST /v1/tools/{name} that accepts text/event-stream gets its
// command's output as it comes, as server-sent events:
//
//	event: output    data: an execgate.OutputChunk (its data base64, as JSON encodes bytes)
//	event: progress  data: an execgate.Progress, every second while the command runs
//	event: result    data: the body the call would have had without streaming, then the stream ends
//
// The stream starts with the command's first output or heartbeat, with
// status 200. A call refused before its command ran, or held for
// approval, starts none: it gets the JSON response and status it would
// have had. A client that goes away cancels the call, as for any request.

// wantsEventStream reports whether r accepts text/event-stream.
func wantsEventStream(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/event-stream" {
			return true
		}
	}
	return false
}

// eventStream writes a call's events to w. Its methods may be called from
// the call's watcher and from the handler, one at a time: after end, the
// watcher's late calls write nothing.
type eventStream struct {
	w       http.ResponseWriter
	mu      sync.Mutex
	started bool
	ended   bool
}

// watch is the Watch that feeds the stream.
func (s *eventStream) watch() execgate.Watch {
	return execgate.Watch{
		Output:   func(c execgate.OutputChunk) { s.event("output", c) },
		Progress: func(p execgate.Progress) { s.event("progress", p) },
	}
}

// event writes one event, starting the stream first if need be.
func (s *eventStream) event(name string, v any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.writeLocked(name, v)
}

func (s *eventStream) writeLocked(name string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	if !s.started {
		s.started = true
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Accel-Buffering", "no")
		s.w.WriteHeader(http.StatusOK)
	}
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b)
	http.NewResponseController(s.w).Flush()
}

// end finishes the call: with a result event when the stream has started,
// and reports whether it had; otherwise the caller writes the response as
// it would without streaming.
func (s *eventStream) end(body callResponse) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	if !s.started {
		return false
	}
	s.writeLocked("result", body)
	return true
}
