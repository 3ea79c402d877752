package mcpserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execgate/execgate"
)

// progressSendTimeout bounds how long one progress notification may take
// to send: a client that does not read it does not hold up the call's
// watcher for longer.
const progressSendTimeout = time.Second

// withProgress returns ctx with an execgate.Watch when the client asked
// for progress (its request carries a progress token): each heartbeat of
// the running command (every execgate.DefaultWatchInterval, so at most one
// a second) becomes a notifications/progress with the seconds the command
// has run as its progress, which always increases, and a message with the
// bytes of output so far and the latest line. Without a token, ctx is
// returned as it is.
func withProgress(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	if req == nil || req.Params == nil || req.Session == nil {
		return ctx
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return ctx
	}
	var mu sync.Mutex
	sent, last := false, 0.0
	return execgate.WithWatch(ctx, execgate.Watch{Progress: func(p execgate.Progress) {
		v := p.Elapsed.Seconds()
		mu.Lock()
		if sent && v <= last {
			mu.Unlock()
			return
		}
		sent, last = true, v
		mu.Unlock()
		msg := fmt.Sprintf("running for %s, %d bytes of output so far", p.Elapsed.Round(time.Second), p.StdoutBytes+p.StderrBytes)
		if p.LastLine != "" {
			msg += "; latest line: " + p.LastLine
		}
		nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), progressSendTimeout)
		defer cancel()
		_ = req.Session.NotifyProgress(nctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: v, Message: msg})
	}})
}
