package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/mcpserver"
)

// testHookKey is the signing key of the webhooks of these tests.
const testHookKey = "hook-key-for-tests-0123456789"

// delivery is one request a hookReceiver took.
type delivery struct {
	header http.Header
	body   []byte
	msg    map[string]any
}

// hookReceiver is a webhook receiver that checks every request as a
// receiver should (see verifyHook) and answers each with the next status
// of its script (200 once the script is used up).
type hookReceiver struct {
	t   *testing.T
	srv *httptest.Server
	key string

	mu     sync.Mutex
	script []int
	got    []delivery
	bad    []string // why requests failed verification
	// hold, when set, makes each request wait for it to be closed or for
	// the request to be canceled; arrived is sent each request's
	// delivery ID as it arrives.
	hold    chan struct{}
	arrived chan string
	// retryAfter is the Retry-After of each 429 and 503.
	retryAfter string
}

func newHookReceiver(t *testing.T, script ...int) *hookReceiver {
	h := &hookReceiver{t: t, key: testHookKey, script: script}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if h.arrived != nil {
		h.arrived <- r.Header.Get(headerDelivery)
	}
	if h.hold != nil {
		select {
		case <-h.hold:
		case <-r.Context().Done():
			return
		}
	}
	h.mu.Lock()
	if err := verifyHook(h.key, r, body, time.Now()); err != nil {
		h.bad = append(h.bad, err.Error())
	}
	d := delivery{header: r.Header.Clone(), body: body}
	_ = json.Unmarshal(body, &d.msg)
	h.got = append(h.got, d)
	status := http.StatusOK
	if len(h.script) > 0 {
		status, h.script = h.script[0], h.script[1:]
	}
	ra := h.retryAfter
	h.mu.Unlock()
	if ra != "" && (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) {
		w.Header().Set("Retry-After", ra)
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte("answer that is read and discarded"))
}

// deliveries returns the requests taken so far, and fails the test if
// one did not verify.
func (h *hookReceiver) deliveries() []delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	assert.Empty(h.t, h.bad, "every request verifies")
	return slices.Clone(h.got)
}

// verifyHook checks a request as the package documentation tells a
// receiver to: the signature over the timestamp, a dot and the body,
// compared in constant time, a timestamp within five minutes of now, and
// the delivery ID and event of the headers equal to the body's.
func verifyHook(key string, r *http.Request, body []byte, now time.Time) error {
	ts := r.Header.Get("Execgate-Timestamp")
	sig, ok := strings.CutPrefix(r.Header.Get("Execgate-Signature"), "sha256=")
	if !ok {
		return errors.New("no sha256= signature")
	}
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	want := hex.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(sig), []byte(want)) {
		return errors.New("the signature does not verify")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || now.Sub(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return fmt.Errorf("timestamp %q is not within five minutes of now", ts)
	}
	var m struct {
		DeliveryID string `json:"delivery_id"`
		Type       string `json:"type"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return fmt.Errorf("the body is not JSON: %v", err)
	}
	if m.DeliveryID == "" || m.DeliveryID != r.Header.Get("Execgate-Delivery") || m.Type != r.Header.Get("Execgate-Event") {
		return errors.New("the headers do not match the body")
	}
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		return errors.New("not a JSON POST")
	}
	return nil
}

// hookClock is the notifier's clock in these tests: Sleep records the
// wait and moves the clock on by it at once, and Jitter is the full
// wait, so that retries take no time and their waits can be asserted.
type hookClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newHookClock() *hookClock { return &hookClock{now: time.Now()} }

func (c *hookClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *hookClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

func (c *hookClock) waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sleeps)
}

// testNotifier returns a notifier on clock that logs into the returned
// buffer, with opts.
func testNotifier(t *testing.T, clock *hookClock, opts notifyOptions) (*notifier, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	opts.Now, opts.Sleep = clock.Now, clock.Sleep
	opts.Jitter = func(d time.Duration) time.Duration { return d }
	n := newNotifier(slog.New(slog.NewJSONHandler(logs, nil)), opts)
	t.Cleanup(func() { n.close(time.Minute) })
	return n, logs
}

// hookTarget is a webhook of url with the tests' key.
func hookTarget(url string, events ...string) notifyTarget {
	if len(events) == 0 {
		events = []string{config.NotifyPending, config.NotifyDecided}
	}
	return notifyTarget{cfg: config.Notify{URL: url, SecretEnv: "HOOK_KEY", Events: events, Timeout: 10 * time.Second}, key: []byte(testHookKey)}
}

// hookApproval is an approval as the gate makes one, with stdin whose
// preview holds stdinText.
func hookApproval(stdinText string) execgate.Approval {
	created := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	sum := sha256.Sum256([]byte(stdinText))
	return execgate.Approval{
		ID: "01890000-0000-7000-8000-000000000001", Principal: "ci-bot", Name: "kubectl.apply", Command: "/usr/bin/kubectl",
		Args: []string{"apply", "-f", "-"}, Digest: strings.Repeat("ab", 32), Reason: "requested by \"ci-bot\" via the HTTP API", PolicyVersion: "1",
		Stdin:     &execgate.StdinInfo{Bytes: len(stdinText), SHA256: hex.EncodeToString(sum[:]), Preview: stdinText},
		CreatedAt: created, ExpiresAt: created.Add(15 * time.Minute),
	}
}

// waitFor waits until cond holds, failing the test after a long while:
// the cond is the assertion, the wait only a bound on a broken build.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never came true: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestNotify_MessagesAreSignedAndSayWhatHappened: a pending approval and
// its decision each reach the webhook as a JSON POST signed with
// HMAC-SHA256 over the timestamp, a dot and the body, carrying the
// approval (ID, tool, principal, argv, stdin's size and SHA-256, expiry)
// and, for the decision, the action, the approver, the state and how the
// call ended; the webhook verifies each as a receiver would.
func TestNotify_MessagesAreSignedAndSayWhatHappened(t *testing.T) {
	h := newHookReceiver(t)
	n, _ := testNotifier(t, newHookClock(), notifyOptions{})
	n.configure([]notifyTarget{hookTarget(h.srv.URL)})
	ap := hookApproval("kind: ClusterRoleBinding\n")

	n.pending(ap)
	res := &execgate.Result{ID: "trace-1", ExitCode: 0, OK: true, Termination: execgate.TerminationExit, Duration: 2 * time.Second}
	decidedAt := ap.CreatedAt.Add(time.Minute)
	n.decided(ap, decisionNote{approver: "alice", approve: true, state: mcpserver.ApprovalApproved, at: decidedAt, res: res})
	waitFor(t, "two deliveries", func() bool { return len(h.deliveries()) == 2 })

	got := h.deliveries()
	pending, decided := got[0].msg, got[1].msg
	assert.Equal(t, "approval.pending", pending["type"])
	assert.Equal(t, "approval.pending", got[0].header.Get("Execgate-Event"))
	assert.Equal(t, "2030-01-02T03:04:05Z", pending["occurred_at"])
	shown := pending["approval"].(map[string]any)
	assert.Equal(t, ap.ID, shown["id"])
	assert.Equal(t, "kubectl.apply", shown["name"])
	assert.Equal(t, "ci-bot", shown["principal"])
	assert.Equal(t, []any{"apply", "-f", "-"}, shown["args"])
	assert.Equal(t, "2030-01-02T03:19:05Z", shown["expiresAt"])
	assert.Equal(t, map[string]any{"bytes": float64(ap.Stdin.Bytes), "sha256": ap.Stdin.SHA256}, shown["stdin"])
	assert.Nil(t, pending["decision"])

	assert.Equal(t, "approval.decided", decided["type"])
	assert.Equal(t, "2030-01-02T03:05:05Z", decided["occurred_at"])
	assert.Equal(t, map[string]any{
		"action": "approve", "approver": "alice", "state": "approved",
		"result": map[string]any{"id": "trace-1", "exitCode": float64(0), "ok": true, "termination": "exit", "duration": float64(2 * time.Second)},
	}, decided["decision"])
	assert.NotEqual(t, pending["delivery_id"], decided["delivery_id"], "each message has its own delivery ID")
}

// TestNotify_DecisionStates: each decision is told with its action and
// what became of the approval; a refused approved call carries the
// refusal's kind and reason, never its message.
func TestNotify_DecisionStates(t *testing.T) {
	for _, tc := range []struct {
		why  string
		note decisionNote
		want map[string]any
	}{
		{"a rejection", decisionNote{approver: "bob", state: mcpserver.ApprovalRejected},
			map[string]any{"action": "reject", "approver": "bob", "state": "rejected"}},
		{"an approved call the gate refused since its tool changed", decisionNote{approver: "bob", approve: true, state: mcpserver.ApprovalFailed,
			err: &execgate.ApprovalError{ID: "x", Reason: execgate.ReasonPolicyChanged}},
			map[string]any{"action": "approve", "approver": "bob", "state": "failed", "error": map[string]any{"kind": "approval", "reason": "policy_changed"}}},
		{"an approved call the policy now denies", decisionNote{approver: "bob", approve: true, state: mcpserver.ApprovalFailed,
			err: &execgate.PolicyError{Name: "x", Action: execgate.ActionDeny, Rule: "secret rule name"}},
			map[string]any{"action": "approve", "approver": "bob", "state": "failed", "error": map[string]any{"kind": "policy", "reason": "deny"}}},
		{"an approval that expired as it was approved", decisionNote{approver: "bob", approve: true, state: mcpserver.ApprovalExpired},
			map[string]any{"action": "approve", "approver": "bob", "state": "expired"}},
	} {
		t.Run(tc.why, func(t *testing.T) {
			m, err := buildMessage(notifyTypeDecided, hookApproval("x"), time.Now(), decisionOf(tc.note))
			require.NoError(t, err)
			var msg map[string]any
			require.NoError(t, json.Unmarshal(m.body, &msg))
			assert.Equal(t, tc.want, msg["decision"])
		})
	}
}

// TestNotify_NeverCarriesStdinOrOutput: a message carries stdin's size
// and SHA-256, never its content (the approval's preview), and of an
// approved call how it ended, never what it wrote or its spawn error.
func TestNotify_NeverCarriesStdinOrOutput(t *testing.T) {
	const stdinText, stdout, stderr, spawn = "STDIN-CONTENT-apiVersion: v1", "STDOUT-SECRET-TOKEN=abc", "STDERR-SECRET", "SPAWN-DETAIL"
	ap := hookApproval(stdinText)
	res := &execgate.Result{ID: "r", Stdout: stdout, Stderr: stderr, SpawnError: spawn, Termination: execgate.TerminationSpawnError, ExitCode: -1}
	for _, m := range []func() (*outgoing, error){
		func() (*outgoing, error) { return buildMessage(notifyTypePending, ap, ap.CreatedAt, nil) },
		func() (*outgoing, error) {
			return buildMessage(notifyTypeDecided, ap, ap.CreatedAt, decisionOf(decisionNote{approve: true, state: mcpserver.ApprovalApproved, res: res}))
		},
	} {
		out, err := m()
		require.NoError(t, err)
		for _, secret := range []string{stdinText, "STDIN-CONTENT", stdout, stderr, spawn, "preview"} {
			assert.NotContains(t, string(out.body), secret)
		}
		assert.Contains(t, string(out.body), ap.Stdin.SHA256)
	}
}

// TestNotify_EveryApprovalFieldIsDecided: every member of an Approval's
// JSON is either sent as it is or withheld for a stated reason, so that
// a member added to the Approval reaches no webhook until someone
// decides it may.
func TestNotify_EveryApprovalFieldIsDecided(t *testing.T) {
	typ := reflect.TypeFor[execgate.Approval]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		_, withheld := notifyWithheldKeys[name]
		assert.True(t, slices.Contains(notifySentKeys, name) || withheld,
			"the Approval's %s (JSON %q) is neither in notifySentKeys nor in notifyWithheldKeys: decide whether a webhook may be sent it", f.Name, name)
		assert.False(t, slices.Contains(notifySentKeys, name) && withheld, "%q is both sent and withheld", name)
	}

	// A member the lists do not name is not sent: only the listed ones
	// are copied.
	shown, err := approvalShown(hookApproval("x"))
	require.NoError(t, err)
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(shown, &m))
	for k := range m {
		assert.True(t, slices.Contains(notifySentKeys, k) || k == "stdin", "%q is sent", k)
	}
}

// TestNotify_Retries: what an attempt that fails leads to, by the
// receiver's answers: network errors, 5xx, 408 and 429 are tried again
// after waits that double from 1s (or the receiver's Retry-After when
// longer), up to 5 attempts; any other answer is final.
func TestNotify_Retries(t *testing.T) {
	for _, tc := range []struct {
		why        string
		script     []int
		retryAfter string
		attempts   int
		waits      []time.Duration
		log        string
	}{
		{"a 2xx is a delivery", []int{204}, "", 1, nil, "a webhook took a message"},
		{"5xx are tried again until one succeeds", []int{500, 502, 503, 200}, "", 4, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, "a webhook took a message"},
		{"429 waits the Retry-After when it is longer", []int{429, 200}, "7", 2, []time.Duration{7 * time.Second}, "a webhook took a message"},
		{"a Retry-After beyond 30s waits 30s", []int{503, 200}, "3600", 2, []time.Duration{30 * time.Second}, "a webhook took a message"},
		{"408 is tried again", []int{408, 200}, "", 2, []time.Duration{time.Second}, "a webhook took a message"},
		{"5 attempts at most", []int{500, 500, 500, 500, 500, 500, 500}, "", 5, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}, "could not be delivered in 5 attempts"},
		{"a 4xx is final", []int{400}, "", 1, nil, "a webhook refused a message; it is not sent again"},
		{"a 401 is final: a retry would be refused alike", []int{401}, "", 1, nil, "answered 401"},
	} {
		t.Run(tc.why, func(t *testing.T) {
			h := newHookReceiver(t, tc.script...)
			h.retryAfter = tc.retryAfter
			clock := newHookClock()
			n, logs := testNotifier(t, clock, notifyOptions{})
			n.configure([]notifyTarget{hookTarget(h.srv.URL)})
			n.pending(hookApproval("x"))
			n.close(time.Minute)

			got := h.deliveries()
			require.Len(t, got, tc.attempts, "attempts")
			for _, d := range got[1:] {
				assert.Equal(t, got[0].body, d.body, "a retry sends the same body, with the same delivery ID")
			}
			assert.Equal(t, tc.waits, clock.waits(), "waits between attempts")
			assert.Contains(t, logs.String(), tc.log)
		})
	}
}

// TestNotify_RetriesAreBoundedInTime: no retry starts more than
// notifyMaxElapsed after the first attempt, whatever attempts are left.
func TestNotify_RetriesAreBoundedInTime(t *testing.T) {
	h := newHookReceiver(t, 503, 503, 503, 503, 503)
	h.retryAfter = "20"
	clock := newHookClock()
	n, logs := testNotifier(t, clock, notifyOptions{MaxElapsed: 45 * time.Second})
	n.configure([]notifyTarget{hookTarget(h.srv.URL)})
	n.pending(hookApproval("x"))
	n.close(time.Minute)
	assert.Len(t, h.deliveries(), 3, "attempts at 0s, 20s and 40s; the next would start at 60s")
	assert.Contains(t, logs.String(), "could not be delivered within 45s")
}

// TestNotify_NetworkErrorsAreRetriedWithoutTheURL: a receiver that cannot
// be reached is tried again, and the log names it by scheme and host
// only: the path of a webhook's url may hold a secret.
func TestNotify_NetworkErrorsAreRetriedWithoutTheURL(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/services/T0KEN-IN-THE-PATH"
	srv.Close() // nothing listens there now
	clock := newHookClock()
	n, logs := testNotifier(t, clock, notifyOptions{MaxAttempts: 3})
	n.configure([]notifyTarget{hookTarget(url)})
	n.pending(hookApproval("x"))
	n.close(time.Minute)
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second}, clock.waits())
	assert.Contains(t, logs.String(), "could not be delivered in 3 attempts")
	assert.Contains(t, logs.String(), `"receiver":"`+strings.TrimSuffix(srv.URL, "/")+`"`)
	assert.NotContains(t, logs.String(), "T0KEN-IN-THE-PATH")
}

// TestNotify_RedirectsAreNotFollowed: a receiver that redirects is not
// followed (a message goes where the file says and nowhere else), and
// the answer is final.
func TestNotify_RedirectsAreNotFollowed(t *testing.T) {
	elsewhere := newHookReceiver(t)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.srv.URL+"/stolen", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)
	clock := newHookClock()
	n, logs := testNotifier(t, clock, notifyOptions{})
	n.configure([]notifyTarget{hookTarget(redirect.URL)})
	n.pending(hookApproval("x"))
	n.close(time.Minute)
	assert.Empty(t, elsewhere.deliveries(), "the redirect's target got nothing")
	assert.Empty(t, clock.waits(), "not tried again")
	assert.Contains(t, logs.String(), "answered 307, a redirect, which is not followed")
}

// TestNotify_HangingReceiverHoldsNothingUp: a receiver that never answers
// holds up neither the approval calls that tell it (pending and decided
// return at once) nor the other webhooks; each attempt ends at the
// webhook's timeout, and a stopping serve waits for it no longer than
// its grace.
func TestNotify_HangingReceiverHoldsNothingUp(t *testing.T) {
	hang := newHookReceiver(t)
	hang.hold = make(chan struct{}) // never closed: every request waits until it is canceled
	hang.arrived = make(chan string, 100)
	fine := newHookReceiver(t)
	n, logs := testNotifier(t, newHookClock(), notifyOptions{MaxAttempts: 2})
	slow := hookTarget(hang.srv.URL + "/slow")
	slow.cfg.Timeout = 50 * time.Millisecond
	n.configure([]notifyTarget{slow, hookTarget(fine.srv.URL)})

	ap := hookApproval("x")
	n.pending(ap)
	<-hang.arrived // the hanging receiver holds the first message
	for range 10 {
		n.decided(ap, decisionNote{approver: "alice", state: mcpserver.ApprovalRejected, at: time.Now()})
	}
	waitFor(t, "the other webhook takes every message", func() bool { return len(fine.deliveries()) == 11 })
	waitFor(t, "an attempt times out", func() bool { return strings.Contains(logs.String(), "no answer within the webhook's timeout, 50ms") })

	n.close(10 * time.Millisecond)
	assert.Contains(t, logs.String(), "serve stopped before a webhook was sent every message")
	assert.Contains(t, logs.String(), `"receiver":"`+hang.srv.URL+`"`)
}

// TestNotify_FullQueueDropsTheOldest: a webhook's queue is bounded; when
// it is full, the oldest message is dropped, counted and logged, and the
// newest are delivered, in order.
func TestNotify_FullQueueDropsTheOldest(t *testing.T) {
	h := newHookReceiver(t)
	h.hold = make(chan struct{})
	h.arrived = make(chan string, 100)
	n, logs := testNotifier(t, newHookClock(), notifyOptions{QueueSize: 3})
	n.configure([]notifyTarget{hookTarget(h.srv.URL)})

	ids := make([]string, 8)
	for i := range ids {
		ap := hookApproval("x")
		ap.ID = fmt.Sprintf("01890000-0000-7000-8000-00000000000%d", i)
		ids[i] = ap.ID
		n.pending(ap)
		if i == 0 {
			<-h.arrived // the first is in flight; the queue is empty
		}
	}
	close(h.hold)
	n.close(time.Minute)

	var got []string
	for _, d := range h.deliveries() {
		got = append(got, d.msg["approval"].(map[string]any)["id"].(string))
	}
	assert.Equal(t, []string{ids[0], ids[5], ids[6], ids[7]}, got, "the one in flight, then the newest three")
	assert.Equal(t, 4, strings.Count(logs.String(), "its oldest message is dropped"))
	assert.Contains(t, logs.String(), `"dropped_total":4`)
	for _, id := range ids[1:5] {
		assert.Contains(t, logs.String(), `"approval":"`+id+`"`, "each drop names what was dropped")
	}
}

// TestNotify_CloseFlushesTheQueue: a stopping serve delivers what the
// webhooks' queues hold before it returns, within its grace.
func TestNotify_CloseFlushesTheQueue(t *testing.T) {
	h := newHookReceiver(t)
	n, logs := testNotifier(t, newHookClock(), notifyOptions{})
	n.configure([]notifyTarget{hookTarget(h.srv.URL)})
	for range 20 {
		n.pending(hookApproval("x"))
	}
	n.close(time.Minute)
	assert.Len(t, h.deliveries(), 20)
	assert.NotContains(t, logs.String(), "undelivered")

	n.pending(hookApproval("x")) // after close: told to no one, and no panic
	assert.Len(t, h.deliveries(), 20)
}

// TestNotify_EventsAndReconfigure: a webhook is sent only its events; a
// configure (a reload) starts new webhooks, keeps those configured as
// before, and sends nothing more to one it no longer lists.
func TestNotify_EventsAndReconfigure(t *testing.T) {
	onlyDecided, removed, added := newHookReceiver(t), newHookReceiver(t), newHookReceiver(t)
	n, _ := testNotifier(t, newHookClock(), notifyOptions{})
	n.configure([]notifyTarget{hookTarget(onlyDecided.srv.URL, config.NotifyDecided), hookTarget(removed.srv.URL)})
	ap := hookApproval("x")
	n.pending(ap)
	n.decided(ap, decisionNote{state: mcpserver.ApprovalRejected})
	waitFor(t, "both delivered", func() bool { return len(removed.deliveries()) == 2 && len(onlyDecided.deliveries()) == 1 })
	assert.Equal(t, "approval.decided", onlyDecided.deliveries()[0].msg["type"])

	kept := n.receivers[0]
	n.configure([]notifyTarget{hookTarget(onlyDecided.srv.URL, config.NotifyDecided), hookTarget(added.srv.URL)})
	assert.Same(t, kept, n.receivers[0], "a webhook configured as before keeps its queue")
	n.pending(ap)
	n.decided(ap, decisionNote{state: mcpserver.ApprovalRejected})
	n.close(time.Minute)
	assert.Len(t, removed.deliveries(), 2, "a webhook no longer listed gets nothing more")
	assert.Len(t, added.deliveries(), 2)
	assert.Len(t, onlyDecided.deliveries(), 2)
}

// TestNotifyTargets_KeysFromTheEnvironment: each webhook's key is read
// from its variable; a missing, empty or short key is a problem at the
// entry's line that names the variable and never repeats the value.
func TestNotifyTargets_KeysFromTheEnvironment(t *testing.T) {
	srv := &config.Server{Notify: []config.Notify{
		{URL: "https://a.example/x", SecretEnv: "KEY_A", Line: 5},
		{URL: "https://b.example/x", SecretEnv: "KEY_B", Line: 7},
		{URL: "https://c.example/x", SecretEnv: "KEY_C", Line: 9},
	}}
	env := map[string]string{"KEY_A": testHookKey, "KEY_B": "short-KEY"}
	_, err := notifyTargets("serve.yaml", srv, func(k string) string { return env[k] })
	var list config.ErrorList
	require.ErrorAs(t, err, &list)
	require.Len(t, list, 2)
	assert.Equal(t, "serve.yaml:7: server.notify[1].secret_env: the environment variable KEY_B holds fewer than 16 bytes, too short a signing key: set it to a random one, such as a token execgate token prints", list[0].Error())
	assert.Contains(t, list[1].Error(), "serve.yaml:9: server.notify[2].secret_env: the environment variable KEY_C is not set")
	assert.NotContains(t, err.Error(), "short-KEY")

	env["KEY_B"], env["KEY_C"] = testHookKey+"b", testHookKey+"c"
	targets, err := notifyTargets("serve.yaml", srv, func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Len(t, targets, 3)
	assert.Equal(t, []byte(testHookKey+"c"), targets[2].key)
}

// TestPendingSet_TellsTheWebhooks: an approval added to a pending set is
// told as pending, and the approver's decision on it as decided, in that
// order, with who decided and what came of it.
func TestPendingSet_TellsTheWebhooks(t *testing.T) {
	h := newHookReceiver(t)
	n, _ := testNotifier(t, newHookClock(), notifyOptions{})
	n.configure([]notifyTarget{hookTarget(h.srv.URL)})
	p := newPendingSet(nil)
	p.notify = n

	approved, rejected := hookApproval("x"), hookApproval("y")
	rejected.ID = "01890000-0000-7000-8000-000000000002"
	for _, ap := range []execgate.Approval{approved, rejected} {
		ap.CreatedAt, ap.ExpiresAt = time.Now(), time.Now().Add(time.Hour)
		require.NoError(t, p.add(context.Background(), ap))
	}
	_, found, err := p.take(approved.ID, true, func(execgate.Approval) error { return nil })
	require.True(t, found)
	require.NoError(t, err)
	p.settleBy(approved.ID, "alice", mcpserver.ApprovalApproved, &execgate.Result{ID: "t", OK: true, Termination: execgate.TerminationExit}, nil)
	_, found, _ = p.take(rejected.ID, false, func(execgate.Approval) error { return nil })
	require.True(t, found)
	p.settleBy(rejected.ID, "bob", mcpserver.ApprovalRejected, nil, nil)
	n.close(time.Minute)

	var got []string
	for _, d := range h.deliveries() {
		line := d.msg["type"].(string) + " " + d.msg["approval"].(map[string]any)["id"].(string)
		if dec, ok := d.msg["decision"].(map[string]any); ok {
			line += fmt.Sprintf(" %s by %s: %s", dec["action"], dec["approver"], dec["state"])
		}
		got = append(got, line)
	}
	assert.Equal(t, []string{
		"approval.pending " + approved.ID,
		"approval.pending " + rejected.ID,
		"approval.decided " + approved.ID + " approve by alice: approved",
		"approval.decided " + rejected.ID + " reject by bob: rejected",
	}, got)
}

// TestSignature_Scheme pins the signature scheme receivers implement:
// "sha256=" and the hex HMAC-SHA256 of the timestamp, ".", and the body.
func TestSignature_Scheme(t *testing.T) {
	body := []byte(`{"type":"approval.pending"}`)
	mac := hmac.New(sha256.New, []byte("key"))
	mac.Write([]byte("1700000000." + string(body)))
	assert.Equal(t, "sha256="+hex.EncodeToString(mac.Sum(nil)), signature([]byte("key"), "1700000000", body))
	assert.NotEqual(t, signature([]byte("key"), "1700000001", body), signature([]byte("key"), "1700000000", body), "the timestamp is signed")
	assert.False(t, bytes.Equal([]byte(signature([]byte("key2"), "1700000000", body)), []byte(signature([]byte("key"), "1700000000", body))))
}
