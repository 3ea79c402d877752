package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/mcpserver"
)

// This file tells the webhooks of server.notify of approvals: a signed
// JSON message when one is pending and when it is decided. Delivery is
// asynchronous and never holds up a call or a decision: each webhook
// has a bounded queue, drained by one goroutine that posts its messages
// in order, retrying with backoff what failed for a reason that may
// pass.

// Bounds and pace of delivery, the same for every webhook.
const (
	// notifyQueueSize bounds the messages waiting for one webhook;
	// beyond it the oldest is dropped, counted and logged.
	notifyQueueSize = 256
	// notifyMaxAttempts bounds the attempts to deliver one message.
	notifyMaxAttempts = 5
	// notifyMaxElapsed bounds the time from a message's first attempt
	// to the start of its last: no retry starts later.
	notifyMaxElapsed = 2 * time.Minute
	// notifyFirstBackoff is the wait before the second attempt; it
	// doubles after each failure up to notifyMaxBackoff, and each wait
	// is jittered to between half of it and all of it.
	notifyFirstBackoff = time.Second
	notifyMaxBackoff   = 30 * time.Second
	// notifyMaxAnswer bounds the bytes of a receiver's answer read (and
	// discarded); the headers are bounded too.
	notifyMaxAnswer = 64 << 10
	// notifyFlushGrace is how long a stopping serve lets the webhooks
	// take what their queues hold.
	notifyFlushGrace = 5 * time.Second
	// notifyMinKeyBytes is the shortest signing key accepted.
	notifyMinKeyBytes = 16
)

// The headers of a message.
const (
	// headerDelivery is the message's delivery ID, also its body's
	// delivery_id: the same on every attempt, for receivers to drop a
	// message they already took.
	headerDelivery = "Execgate-Delivery"
	// headerEvent is the message's type, also its body's type.
	headerEvent = "Execgate-Event"
	// headerTimestamp is the Unix time in seconds when the attempt was
	// signed, decimal.
	headerTimestamp = "Execgate-Timestamp"
	// headerSignature is "sha256=" and the lowercase hex of
	// HMAC-SHA256(key, timestamp + "." + body).
	headerSignature = "Execgate-Signature"
)

// The types of message (the body's type and the Execgate-Event header).
const (
	notifyTypePending = "approval.pending"
	notifyTypeDecided = "approval.decided"
)

// notifyEventOf maps a message type to the server.notify event that
// sends it.
var notifyEventOf = map[string]string{
	notifyTypePending: config.NotifyPending,
	notifyTypeDecided: config.NotifyDecided,
}

// notifySentKeys are the members of an Approval's JSON a message carries
// as they are. Stdin is carried as its size and SHA-256 only: its preview
// is stdin's content, which a webhook is never sent. Every other member
// is left out; notify_test.go checks that each member of the Approval is
// one or the other, so that a new one is decided, not let through.
var notifySentKeys = []string{
	"id", "principal", "name", "command", "args", "digest", "reason",
	"policyVersion", "confine", "egress", "createdAt", "expiresAt",
}

// notifyWithheldKeys are the members of an Approval's JSON a message does
// not carry as they are, and why.
var notifyWithheldKeys = map[string]string{
	"stdin": "only its bytes and sha256: the preview is stdin's content",
}

// notifyMessage is the body of a message.
type notifyMessage struct {
	// DeliveryID names the message (a UUIDv7), the same at every webhook
	// and on every attempt.
	DeliveryID string `json:"delivery_id"`
	// Type is approval.pending or approval.decided.
	Type string `json:"type"`
	// OccurredAt is when the approval was proposed (pending) or decided.
	OccurredAt time.Time `json:"occurred_at"`
	// Approval is the approval as GET /v1/approvals shows it, but for
	// stdin, of which only its size and SHA-256 are sent.
	Approval json.RawMessage `json:"approval"`
	// Decision is the decision (approval.decided only).
	Decision *notifyDecision `json:"decision,omitempty"`
}

// notifyDecision is what an approver decided, and what came of it.
type notifyDecision struct {
	// Action is approve or reject.
	Action string `json:"action"`
	// Approver is the principal of the approver.
	Approver string `json:"approver"`
	// State is what became of the approval: approved (the call ran),
	// rejected, expired (it expired before it could run) or failed (the
	// gate refused to run it; Error says why).
	State string `json:"state"`
	// Result is how the approved call ended, never its output, which may
	// hold what an approver's systems must not keep (approved only).
	Result *notifyResult `json:"result,omitempty"`
	// Error is the refusal of an approved call that did not run (failed).
	Error *notifyRefusal `json:"error,omitempty"`
}

// notifyResult is the part of an execgate.Result a message carries, under
// the Result's own JSON names: how the process ended, not what it wrote.
type notifyResult struct {
	// ID is the Result's ID, the call's trace ID in the audit trail.
	ID          string               `json:"id"`
	ExitCode    int                  `json:"exitCode"`
	OK          bool                 `json:"ok"`
	Termination execgate.Termination `json:"termination"`
	Signal      string               `json:"signal,omitempty"`
	// Duration is how long the call ran, in nanoseconds.
	Duration time.Duration `json:"duration"`
}

// notifyRefusal is the refusal of a call that did not run: its kind and
// reason in the gate's vocabulary, never its message.
type notifyRefusal struct {
	Kind   string `json:"kind"`
	Reason string `json:"reason,omitempty"`
}

// decisionNote is a decision as pendingSet.settleBy reports it.
type decisionNote struct {
	approver string
	approve  bool
	state    mcpserver.ApprovalState
	at       time.Time
	res      *execgate.Result
	err      error
}

// outgoing is a message ready to post.
type outgoing struct {
	id, typ, approval string
	body              []byte
}

// notifyTarget is a webhook of server.notify with its key.
type notifyTarget struct {
	cfg config.Notify
	key []byte
}

// receiverName is the url of a webhook as logs show it: its scheme and
// host only, since the path of many webhooks holds a secret.
func receiverName(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable url)"
	}
	return u.Scheme + "://" + u.Host
}

// sameTarget reports whether a and b are the same webhook, configured
// alike.
func sameTarget(a, b notifyTarget) bool {
	return a.cfg.URL == b.cfg.URL && a.cfg.SecretEnv == b.cfg.SecretEnv && a.cfg.Timeout == b.cfg.Timeout &&
		slices.Equal(a.cfg.Events, b.cfg.Events) && hmac.Equal(a.key, b.key)
}

// notifyTargets returns the webhooks of srv with their keys, read from
// the environment with getenv, or the problems of those whose key is
// missing or too short, as load errors of file at each entry's line. No
// problem repeats a key.
func notifyTargets(file string, srv *config.Server, getenv func(string) string) ([]notifyTarget, error) {
	var out []notifyTarget
	var list config.ErrorList
	for i, n := range srv.Notify {
		key := getenv(n.SecretEnv)
		problem := ""
		switch {
		case key == "":
			problem = fmt.Sprintf("the environment variable %s is not set in serve's environment, or is empty: set it to the webhook's signing key (at least %d bytes, such as a token execgate token prints) before serve starts", n.SecretEnv, notifyMinKeyBytes)
		case len(key) < notifyMinKeyBytes:
			problem = fmt.Sprintf("the environment variable %s holds fewer than %d bytes, too short a signing key: set it to a random one, such as a token execgate token prints", n.SecretEnv, notifyMinKeyBytes)
		}
		if problem != "" {
			list = append(list, &config.Error{File: file, Line: n.Line, Path: fmt.Sprintf("server.notify[%d].secret_env", i), Message: problem})
			continue
		}
		out = append(out, notifyTarget{cfg: n, key: []byte(key)})
	}
	if len(list) > 0 {
		return nil, list
	}
	return out, nil
}

// notifyOptions configure a notifier; the zero value of each field means
// the default.
type notifyOptions struct {
	// Client posts the messages; nil means one that follows no redirect
	// (see newNotifyClient).
	Client *http.Client
	// Now is the clock of the signatures and of notifyMaxElapsed.
	Now func() time.Time
	// Sleep waits d, or until ctx is done, which it returns.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a wait between d/2 and d.
	Jitter func(d time.Duration) time.Duration
	// QueueSize, MaxAttempts and MaxElapsed are notifyQueueSize,
	// notifyMaxAttempts and notifyMaxElapsed, but in tests.
	QueueSize   int
	MaxAttempts int
	MaxElapsed  time.Duration
}

// notifier tells the webhooks of server.notify of approvals. Its methods
// may be called concurrently, and a nil *notifier tells no one. pending
// and decided never block on a webhook.
type notifier struct {
	log  *slog.Logger
	opts notifyOptions
	// getenv reads the webhooks' keys, at start and on reload.
	getenv func(string) string

	mu        sync.Mutex
	receivers []*receiver // guarded by mu
	closed    bool        // guarded by mu
}

// newNotifier returns a notifier of no webhook yet; configure gives it
// some. log gets a record of every delivery, retry, drop and failure.
func newNotifier(log *slog.Logger, opts notifyOptions) *notifier {
	if opts.Client == nil {
		opts.Client = newNotifyClient()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = sleepCtx
	}
	if opts.Jitter == nil {
		opts.Jitter = func(d time.Duration) time.Duration { return d/2 + rand.N(d/2+1) }
	}
	opts.QueueSize = cmp.Or(opts.QueueSize, notifyQueueSize)
	opts.MaxAttempts = cmp.Or(opts.MaxAttempts, notifyMaxAttempts)
	opts.MaxElapsed = cmp.Or(opts.MaxElapsed, notifyMaxElapsed)
	return &notifier{log: log, opts: opts}
}

// newNotifyClient returns the HTTP client of the webhooks: a redirect is
// answered as it is, not followed (a message goes where the file says,
// and nowhere else), TLS is 1.2 at least, and a receiver's headers are
// bounded. Proxies are taken from the standard variables (HTTPS_PROXY,
// NO_PROXY), as other HTTP clients do.
func newNotifyClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	tr.MaxResponseHeaderBytes = notifyMaxAnswer
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// sleepCtx waits d, or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startNotifier returns the notifier of the server section srv of file,
// its webhooks started; or the problems of their keys, read with getenv.
func startNotifier(file string, srv *config.Server, getenv func(string) string, log *slog.Logger) (*notifier, error) {
	targets, err := notifyTargets(file, srv, getenv)
	if err != nil {
		return nil, err
	}
	n := newNotifier(log, notifyOptions{})
	n.getenv = getenv
	n.configure(targets)
	return n, nil
}

// configure makes targets the webhooks told from now on. A webhook
// configured as before keeps its queue; one that is no longer listed, or
// whose settings or key changed, is sent nothing more: what its queue
// held is dropped and logged, and a delivery under way is abandoned.
func (n *notifier) configure(targets []notifyTarget) {
	if n == nil {
		return
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	next := make([]*receiver, 0, len(targets))
	kept := make(map[*receiver]bool)
	for _, t := range targets {
		i := slices.IndexFunc(n.receivers, func(r *receiver) bool { return !kept[r] && sameTarget(r.t, t) })
		if i >= 0 {
			kept[n.receivers[i]] = true
			next = append(next, n.receivers[i])
			continue
		}
		r := newReceiver(n, t)
		next = append(next, r)
		go r.run()
	}
	var retired []*receiver
	for _, r := range n.receivers {
		if !kept[r] {
			retired = append(retired, r)
		}
	}
	n.receivers = next
	n.mu.Unlock()
	// Outside the lock: a delivery under way ends first.
	for _, r := range retired {
		if left := r.retire(); left > 0 {
			n.log.Warn("execgate: notify: a webhook the configuration no longer lists, as it was, is sent nothing more; the messages it was still to be sent are dropped",
				"receiver", r.name, "dropped", left)
		}
	}
}

// pending tells the webhooks that ap waits for the approvers.
func (n *notifier) pending(ap execgate.Approval) {
	if n == nil {
		return
	}
	n.send(notifyTypePending, ap, ap.CreatedAt, nil)
}

// decided tells the webhooks of an approver's decision on ap and of what
// came of it.
func (n *notifier) decided(ap execgate.Approval, d decisionNote) {
	if n == nil {
		return
	}
	n.send(notifyTypeDecided, ap, d.at, decisionOf(d))
}

// decisionOf returns the decision of a message.
func decisionOf(d decisionNote) *notifyDecision {
	out := &notifyDecision{Action: "reject", Approver: d.approver, State: string(d.state)}
	if d.approve {
		out.Action = "approve"
	}
	if d.state == mcpserver.ApprovalApproved && d.res != nil {
		out.Result = &notifyResult{ID: d.res.ID, ExitCode: d.res.ExitCode, OK: d.res.OK, Termination: d.res.Termination, Signal: d.res.Signal, Duration: d.res.Duration}
	}
	if d.state == mcpserver.ApprovalFailed && d.err != nil {
		out.Error = &notifyRefusal{Kind: string(execgate.KindOf(d.err)), Reason: refusalReason(d.err)}
	}
	return out
}

// refusalReason is the reason of an approval error, or the action of a
// policy error; "" for other refusals.
func refusalReason(err error) string {
	var ae *execgate.ApprovalError
	var pe *execgate.PolicyError
	switch {
	case errors.As(err, &ae):
		return ae.Reason
	case errors.As(err, &pe):
		return pe.Action
	}
	return ""
}

// send builds one message and queues it for each webhook sent its type.
func (n *notifier) send(typ string, ap execgate.Approval, at time.Time, d *notifyDecision) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var to []*receiver
	for _, r := range n.receivers {
		if slices.Contains(r.t.cfg.Events, notifyEventOf[typ]) {
			to = append(to, r)
		}
	}
	if len(to) == 0 || n.closed {
		return
	}
	m, err := buildMessage(typ, ap, at, d)
	if err != nil {
		n.log.Error("execgate: notify: a message could not be made; no webhook is told of this approval", "event", typ, "approval", ap.ID, "error", err)
		return
	}
	for _, r := range to {
		r.enqueue(m)
	}
}

// buildMessage returns the message of typ about ap.
func buildMessage(typ string, ap execgate.Approval, at time.Time, d *notifyDecision) (*outgoing, error) {
	shown, err := approvalShown(ap)
	if err != nil {
		return nil, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(notifyMessage{DeliveryID: id.String(), Type: typ, OccurredAt: at.UTC(), Approval: shown, Decision: d})
	if err != nil {
		return nil, err
	}
	return &outgoing{id: id.String(), typ: typ, approval: ap.ID, body: body}, nil
}

// approvalShown returns the JSON of ap as a message carries it: the
// members of notifySentKeys as the Approval's JSON has them, and of
// stdin its size and SHA-256 only.
func approvalShown(ap execgate.Approval) (json.RawMessage, error) {
	b, err := json.Marshal(ap)
	if err != nil {
		return nil, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(notifySentKeys)+1)
	for _, k := range notifySentKeys {
		if v, ok := all[k]; ok {
			out[k] = v
		}
	}
	if ap.Stdin != nil {
		out["stdin"] = struct {
			Bytes  int    `json:"bytes"`
			SHA256 string `json:"sha256"`
		}{ap.Stdin.Bytes, ap.Stdin.SHA256}
	}
	return json.Marshal(out)
}

// close stops taking messages and lets the webhooks take what their
// queues hold, for up to grace; then it abandons the rest and logs, for
// each webhook, how many messages it was never sent. Later calls do
// nothing.
func (n *notifier) close(grace time.Duration) {
	if n == nil {
		return
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	rs := n.receivers
	n.mu.Unlock()
	for _, r := range rs {
		r.finish()
	}
	all := make(chan struct{})
	go func() {
		for _, r := range rs {
			<-r.done
		}
		close(all)
	}()
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	select {
	case <-all:
	case <-deadline.C:
		for _, r := range rs {
			r.cancel()
		}
		<-all
	}
	for _, r := range rs {
		r.cancel()
		if left := r.undelivered(); left > 0 {
			n.log.Warn("execgate: notify: serve stopped before a webhook was sent every message",
				"receiver", r.name, "undelivered", left)
		}
	}
	n.opts.Client.CloseIdleConnections()
}

// receiver is one webhook: its queue, and the goroutine that delivers it
// (run).
type receiver struct {
	n    *notifier
	t    notifyTarget
	name string // receiverName of its url

	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{} // a message was queued, or finish was called
	done   chan struct{} // closed when run returns

	mu        sync.Mutex
	queue     []*outgoing // guarded by mu
	finishing bool        // guarded by mu: run returns once queue is empty
	dropped   int64       // guarded by mu: dropped as the queue was full
	lost      int64       // guarded by mu: abandoned, as serve stopped
}

func newReceiver(n *notifier, t notifyTarget) *receiver {
	ctx, cancel := context.WithCancel(context.Background())
	return &receiver{n: n, t: t, name: receiverName(t.cfg.URL), ctx: ctx, cancel: cancel,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// enqueue queues m, dropping the oldest message when the queue is full.
func (r *receiver) enqueue(m *outgoing) {
	r.mu.Lock()
	var old *outgoing
	if len(r.queue) >= r.n.opts.QueueSize {
		old = r.queue[0]
		r.queue = slices.Delete(r.queue, 0, 1)
		r.dropped++
	}
	r.queue = append(r.queue, m)
	dropped := r.dropped
	r.mu.Unlock()
	if old != nil {
		r.n.log.Warn("execgate: notify: a webhook's queue is full; its oldest message is dropped",
			"receiver", r.name, "delivery", old.id, "event", old.typ, "approval", old.approval, "dropped_total", dropped)
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// next returns the next message to deliver, waiting for one; false when
// run must return.
func (r *receiver) next() (*outgoing, bool) {
	for {
		r.mu.Lock()
		switch {
		case r.ctx.Err() != nil:
			r.mu.Unlock()
			return nil, false
		case len(r.queue) > 0:
			m := r.queue[0]
			r.queue = slices.Delete(r.queue, 0, 1)
			r.mu.Unlock()
			return m, true
		case r.finishing:
			r.mu.Unlock()
			return nil, false
		}
		r.mu.Unlock()
		select {
		case <-r.wake:
		case <-r.ctx.Done():
		}
	}
}

// run delivers the queued messages in order until finish or retire.
func (r *receiver) run() {
	defer close(r.done)
	for {
		m, ok := r.next()
		if !ok {
			return
		}
		r.deliver(m)
	}
}

// finish makes run return once the queue is empty.
func (r *receiver) finish() {
	r.mu.Lock()
	r.finishing = true
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// retire stops the webhook at once and returns how many messages it was
// still to be sent.
func (r *receiver) retire() int64 {
	r.cancel()
	<-r.done
	return r.undelivered()
}

// undelivered is how many messages run abandoned or left queued.
func (r *receiver) undelivered() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lost + int64(len(r.queue))
}

// attemptError is why an attempt failed, and whether to try again.
type attemptError struct {
	msg        string
	retry      bool
	retryAfter time.Duration // the receiver's Retry-After, or 0
}

func (e *attemptError) Error() string { return e.msg }

// deliver posts m until an attempt succeeds, an answer says not to try
// again, or notifyMaxAttempts or notifyMaxElapsed is reached, waiting
// between attempts with exponential backoff and jitter (or the
// receiver's Retry-After, when longer, up to notifyMaxBackoff).
func (r *receiver) deliver(m *outgoing) {
	o := r.n.opts
	first := o.Now()
	wait := notifyFirstBackoff
	for attempt := 1; ; attempt++ {
		err := r.attempt(m)
		log := r.n.log.With("receiver", r.name, "delivery", m.id, "event", m.typ, "approval", m.approval, "attempt", attempt)
		if err == nil {
			log.Info("execgate: notify: a webhook took a message")
			return
		}
		if r.ctx.Err() != nil {
			r.abandon()
			return
		}
		pause := o.Jitter(wait)
		if err.retryAfter > pause {
			pause = min(err.retryAfter, notifyMaxBackoff)
		}
		switch {
		case !err.retry:
			log.Error("execgate: notify: a webhook refused a message; it is not sent again", "error", err.msg)
			return
		case attempt >= o.MaxAttempts:
			log.Error(fmt.Sprintf("execgate: notify: a message could not be delivered in %d attempts; it is not sent again", attempt), "error", err.msg)
			return
		case o.Now().Add(pause).Sub(first) > o.MaxElapsed:
			log.Error(fmt.Sprintf("execgate: notify: a message could not be delivered within %s; it is not sent again", o.MaxElapsed), "error", err.msg)
			return
		}
		log.Warn("execgate: notify: a message could not be delivered; it will be sent again", "error", err.msg, "retry_in", pause.String())
		if o.Sleep(r.ctx, pause) != nil {
			r.abandon()
			return
		}
		wait = min(2*wait, notifyMaxBackoff)
	}
}

// abandon counts a message run gave up on as serve stopped.
func (r *receiver) abandon() {
	r.mu.Lock()
	r.lost++
	r.mu.Unlock()
}

// attempt posts m once, signed now, and reads the answer (at most
// notifyMaxAnswer bytes of it, discarded), all within the webhook's
// timeout.
func (r *receiver) attempt(m *outgoing) *attemptError {
	ctx, cancel := context.WithTimeout(r.ctx, r.t.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.t.cfg.URL, bytes.NewReader(m.body))
	if err != nil {
		return &attemptError{msg: "the request could not be made"}
	}
	ts := strconv.FormatInt(r.n.opts.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "execgate")
	req.Header.Set(headerDelivery, m.id)
	req.Header.Set(headerEvent, m.typ)
	req.Header.Set(headerTimestamp, ts)
	req.Header.Set(headerSignature, signature(r.t.key, ts, m.body))
	resp, err := r.n.opts.Client.Do(req)
	if err != nil {
		return &attemptError{msg: r.transportProblem(err), retry: true}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, notifyMaxAnswer))
	resp.Body.Close()
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		// Taken, even if the rest of its answer was too slow to read.
		return nil
	case code >= 300 && code < 400:
		return &attemptError{msg: fmt.Sprintf("answered %d, a redirect, which is not followed: set the url to the address that takes the messages", code)}
	case code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500:
		return &attemptError{msg: fmt.Sprintf("answered %d", code), retry: true, retryAfter: retryAfter(resp.Header.Get("Retry-After"), r.n.opts.Now())}
	}
	return &attemptError{msg: fmt.Sprintf("answered %d", code)}
}

// transportProblem says why a request got no answer, without its url,
// whose path may hold a secret.
func (r *receiver) transportProblem(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within the webhook's timeout, %s", r.t.cfg.Timeout)
	}
	return err.Error()
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date; 0 if
// it has none or it cannot be read.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(min(s, 3600)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), time.Hour)
	}
	return 0
}

// signature is the Execgate-Signature of body signed at the Unix time
// ts: "sha256=" and the lowercase hex of HMAC-SHA256(key, ts + "." +
// body).
func signature(key []byte, ts string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// pendingSet returns a new pendingSet of g whose approvals and decisions
// are told to g's webhooks.
func (g *gate) pendingSet() *pendingSet {
	p := newPendingSet(nil)
	p.notify = g.notify
	return p
}

// book returns where g's server keeps the approvals it issues: the
// PostgreSQL tables of server.approval_store, shared by every replica,
// or a new pendingSet of this process. Either tells g's webhooks.
func (g *gate) book() approvalBook {
	if g.pg != nil {
		return newPGBook(g.pg.states, g.notify)
	}
	return g.pendingSet()
}

// startNotify starts g's webhooks (server.notify) for a serve whose
// approvals wait for approvers: --http, --mcp-http, or --approver-http
// beside stdio. Over stdio alone no approval waits for approvers, so the
// webhooks are neither started nor their keys read. A key that is
// missing or too short refuses the start, and startNotify returns its
// exit code.
func (c *cli) startNotify(o *serveOptions, g *gate, srv *config.Server, logger *slog.Logger) int {
	if o.http == "" && o.mcpHTTP == "" && o.approverHTTP == "" {
		if len(srv.Notify) > 0 {
			logger.Warn("execgate: server.notify is not used over stdio without --approver-http: no approval waits for approvers there")
		}
		return exitOK
	}
	n, err := startNotifier(o.config, srv, os.Getenv, logger)
	if err != nil {
		return c.loadError(err)
	}
	g.notify = n
	return exitOK
}
