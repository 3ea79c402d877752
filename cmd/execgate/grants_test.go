package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/internal/fakeclock"
	"github.com/execgate/execgate/mcpserver"
	"github.com/execgate/execgate/policy"
)

// A second caller's token, for calls by another principal.
const otherCallerToken = "other-caller-token-for-tests"

// grantTools is the tools section of grantConfig:
//
//   - ship.run and other.run are bare tools the policy holds for
//     approval, with no floor, so that a grant can waive it;
//   - tf.<sub> goes to a dispatcher (default_action: allow) whose
//     subcommands the policy holds;
//   - deploy.<sub> goes to a dispatcher whose every call needs a person
//     (default_action: human_approval), a floor no grant lifts.
const grantTools = `tools:
  - name: ship
    bin: /bin/echo
    description: Ship a build; the policy holds every call.
    bare: {}
  - name: other
    bin: /bin/echo
    description: Another tool the policy holds.
    bare: {}
  - name: tf
    bin: /bin/echo
    description: A dispatcher whose subcommands the policy holds.
    default_action: allow
  - name: deploy
    bin: /bin/echo
    description: Every call needs a person.
    default_action: human_approval
`

// grantConfig is a configuration for approving with grants; extra is
// added to the server section.
func grantConfig(extra string) string {
	return `version: 1
defaults: {timeout: 10s, env: {PATH: /usr/bin:/bin}}
` + grantTools + `policies:
  - name: everyone
    principal: "*"
    rules:
      - {name: held, tools: [ship.run, other.run, "tf.*", "deploy.*"], action: require_approval}
server:
  tokens:
    - {principal: ci-bot, sha256: "` + tokenHash(callerToken) + `"}
    - {principal: bot-2, sha256: "` + tokenHash(otherCallerToken) + `"}
  approvers:
    - {principal: alice, sha256: "` + tokenHash(approverToken) + `"}
` + extra
}

// grantFixture is the HTTP API of a configuration file, with the
// gate's grant book, a clock that moves when told for the policy engine
// and the grants (unless opts.Now is set), the audit trail, and a
// reloader of the file.
type grantFixture struct {
	*apiFixture
	clk    *fakeclock.Clock
	trail  *trailOf
	path   string
	reload *reloader
	// during, when set, runs once inside the next process the gate
	// starts, before its outcome: what happens while a call runs.
	during func()
}

func newGrantFixture(t *testing.T, text string, opts config.LoadOptions, also ...execgate.Auditor) *grantFixture {
	t.Helper()
	clk := fakeclock.New(time.Date(2030, 1, 2, 15, 4, 5, 0, time.UTC))
	path := writeFile(t, "execgate.yaml", text)
	if opts.Now == nil {
		opts.Now = clk.Now
	}
	loaded, err := opts.LoadFile(path)
	require.NoError(t, err)
	f := &grantFixture{apiFixture: &apiFixture{rec: execgatetest.NewRecorder(), pending: newPendingSet(nil)}, clk: clk, trail: &trailOf{}, path: path}
	f.rec.Otherwise(execgate.Outcome{Stdout: []byte("ran\n")})
	exec := func(ctx context.Context, inv execgate.Invocation) execgate.Outcome {
		if d := f.during; d != nil {
			f.during = nil
			d()
		}
		return f.rec.Exec(ctx, inv)
	}
	f.gate, err = newGate(loaded, "", exec, append([]execgate.Auditor{f.trail}, also...)...)
	require.NoError(t, err)
	// The grants follow the Engine's clock.
	f.gate.grants.stop()
	f.gate.grants = newGrantBook(loaded.Engine, f.gate.x, f.gate.server(), opts.Now)
	t.Cleanup(func() { _ = f.gate.Close() })
	h, err := newAPI(apiOptions{Executor: f.gate.x, Server: f.gate.server(), Pending: f.pending, Visible: f.gate.visible, Grants: f.gate.grants})
	require.NoError(t, err)
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close)
	f.reload = &reloader{path: path, log: slog.New(slog.DiscardHandler), x: f.gate.x, cur: loaded, apis: []*api{h}}
	return f
}

// grantAnswer is any response body of the API, with the members about
// grants.
type grantAnswer struct {
	response
	Grant      *grantView  `json:"grant"`
	GrantError *errorInfo  `json:"grant_error"`
	Grants     []grantView `json:"grants"`
}

// send sends a request with a JSON body (none when empty) and returns
// the status, the decoded body and the body's bytes without its latency.
func (f *grantFixture) send(t *testing.T, method, path, token, body string) (int, grantAnswer, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := f.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var a grantAnswer
	require.NoError(t, json.Unmarshal(data, &a), "%s", data)
	if resp.StatusCode >= 400 {
		require.NotNil(t, a.Error, "an error status carries an error: %s", data)
	}
	return resp.StatusCode, a, data
}

// hold has token's principal call name with input, which the policy
// holds, and returns the pending approval.
func (f *grantFixture) hold(t *testing.T, token, name, input string) execgate.Approval {
	t.Helper()
	status, a, data := f.send(t, "POST", "/v1/tools/"+name, token, input)
	require.Equal(t, http.StatusAccepted, status, "%s", data)
	require.NotNil(t, a.Approval)
	return *a.Approval
}

// approve approves ap as alice, with the grant body member grant (none
// when empty).
func (f *grantFixture) approve(t *testing.T, ap execgate.Approval, grant string) (int, grantAnswer, []byte) {
	t.Helper()
	body := `{"action":"approve"}`
	if grant != "" {
		body = `{"action":"approve","grant":` + grant + `}`
	}
	return f.send(t, "POST", "/v1/approvals/"+ap.ID, approverToken, body)
}

// grants lists the grants in force, as alice.
func (f *grantFixture) grants(t *testing.T) []grantView {
	t.Helper()
	status, a, data := f.send(t, "GET", "/v1/grants", approverToken, "")
	require.Equal(t, http.StatusOK, status, "%s", data)
	require.NotNil(t, a.Grants, "the list is never null: %s", data)
	return a.Grants
}

// grantEvents returns the Events of changes to grants in the trail.
func (f *grantFixture) grantEvents() []execgate.Event {
	var out []execgate.Event
	for _, ev := range f.trail.all() {
		switch ev.Op {
		case execgate.OpGrant, execgate.OpRevoke, execgate.OpExpire:
			out = append(out, ev)
		}
	}
	return out
}

// TestApproveWithGrant_NextIdenticalCallRunsWithoutApproval: an approver
// approves a held call with a grant; the call runs, and the grant, for
// exactly the call's principal and command, lets that principal's next
// identical call run at once, while another principal's call of it and
// the same principal's call of another command are still held. The grant
// is listed, and its making is recorded.
func TestApproveWithGrant_NextIdenticalCallRunsWithoutApproval(t *testing.T) {
	f := newGrantFixture(t, grantConfig(""), config.LoadOptions{})
	ap := f.hold(t, callerToken, "ship.run", `{}`)
	status, a, data := f.approve(t, ap, `"30m"`)
	require.Equal(t, http.StatusOK, status, "%s", data)
	require.NotNil(t, a.Result, "the approved call ran")
	assert.Equal(t, 1, f.rec.Count())
	require.NotNil(t, a.Grant, "%s", data)
	assert.Nil(t, a.GrantError)
	g := *a.Grant
	assert.Equal(t, grantView{ID: g.ID, Principal: "ci-bot", Tool: "ship.run", Exact: true, GrantedBy: "alice",
		GrantedAt: f.clk.Now(), Expires: f.clk.Now().Add(30 * time.Minute), Source: "approval", Approval: ap.ID}, g)
	assert.Equal(t, []grantView{g}, f.grants(t))

	status, a, data = f.send(t, "POST", "/v1/tools/ship.run", callerToken, `{}`)
	require.Equal(t, http.StatusOK, status, "the granted principal's next identical call runs: %s", data)
	require.NotNil(t, a.Policy)
	assert.Equal(t, &policyInfo{Decision: execgate.ActionAllow, Rule: "everyone/held", Grant: g.ID}, a.Policy)
	assert.Equal(t, 2, f.rec.Count())

	f.hold(t, otherCallerToken, "ship.run", `{}`) // another principal: still held
	f.hold(t, callerToken, "other.run", `{}`)     // another command: still held
	assert.Equal(t, 2, f.rec.Count())

	evs := f.grantEvents()
	require.Len(t, evs, 1)
	assert.Equal(t, execgate.OpGrant, evs[0].Op)
	assert.Equal(t, "ci-bot", evs[0].Principal)
	assert.Equal(t, "alice", evs[0].Approver)
	assert.Equal(t, "ship.run", evs[0].Name)
	assert.Equal(t, g.ID, evs[0].Grant)
	assert.Equal(t, ap.ID, evs[0].ApprovalID)
	assert.Equal(t, "for 30m0s, until 2030-01-02T15:34:05Z", evs[0].Reason)
}

// TestApproveWithGrant_DispatcherSubcommandExactly: a grant made with the
// approval of a dispatcher's subcommand covers that subcommand's command
// name exactly, never the dispatcher's other subcommands.
func TestApproveWithGrant_DispatcherSubcommandExactly(t *testing.T) {
	f := newGrantFixture(t, grantConfig(""), config.LoadOptions{})
	bot := execgate.WithPrincipal(context.Background(), "ci-bot")
	ap, err := f.gate.x.Propose(bot, "tf.plan", nil, "test")
	require.NoError(t, err)
	require.NoError(t, f.pending.add(bot, ap))
	status, a, data := f.approve(t, ap, `"10m"`)
	require.Equal(t, http.StatusOK, status, "%s", data)
	require.NotNil(t, a.Grant, "%s", data)
	assert.Equal(t, "tf.plan", a.Grant.Tool)

	_, err = f.gate.x.Run(bot, "tf.plan", nil)
	require.NoError(t, err, "the subcommand granted runs")
	_, err = f.gate.x.Run(bot, "tf.apply", nil)
	var pe *execgate.PolicyError
	require.ErrorAs(t, err, &pe, "another subcommand of the same dispatcher is still held")
	assert.Equal(t, execgate.ActionRequireApproval, pe.Action)
}

// TestApproveWithGrant_RefusedBeforeAnythingIsDecided: a grant that
// cannot be made is refused before the approval is taken: the approval
// stays pending, nothing runs, no grant is made and none is recorded.
func TestApproveWithGrant_RefusedBeforeAnythingIsDecided(t *testing.T) {
	for _, tc := range []struct {
		about  string
		extra  string // server section keys
		tool   string
		body   string
		status int
		kind   string
		says   string
	}{
		{"longer than server.max_grant", "", "ship.run", `{"action":"approve","grant":"61m"}`, http.StatusUnprocessableEntity, execgate.ErrorKindValidation, "longer than server.max_grant, 1h0m0s"},
		{"longer than a lower server.max_grant", "  max_grant: 10m\n", "ship.run", `{"action":"approve","grant":"11m"}`, http.StatusUnprocessableEntity, execgate.ErrorKindValidation, "longer than server.max_grant, 10m0s"},
		{"zero", "", "ship.run", `{"action":"approve","grant":"0s"}`, http.StatusUnprocessableEntity, execgate.ErrorKindValidation, "longer than 0s"},
		{"negative", "", "ship.run", `{"action":"approve","grant":"-5m"}`, http.StatusUnprocessableEntity, execgate.ErrorKindValidation, "longer than 0s"},
		{"not a duration", "", "ship.run", `{"action":"approve","grant":"soon"}`, http.StatusUnprocessableEntity, execgate.ErrorKindValidation, "such as 30m"},
		{"no unit", "", "ship.run", `{"action":"approve","grant":"30"}`, http.StatusUnprocessableEntity, execgate.ErrorKindValidation, "such as 30m"},
		{"empty", "", "ship.run", `{"action":"approve","grant":""}`, http.StatusUnprocessableEntity, execgate.ErrorKindValidation, "such as 30m"},
		{"not a string", "", "ship.run", `{"action":"approve","grant":1800}`, http.StatusBadRequest, execgate.ErrorKindRequest, "the body must be"},
		{"with reject", "", "ship.run", `{"action":"reject","grant":"30m"}`, http.StatusUnprocessableEntity, execgate.ErrorKindValidation, `goes with "approve" only`},
		{"on a server whose max_grant is 0s", "  max_grant: 0s\n", "ship.run", `{"action":"approve","grant":"1m"}`, http.StatusUnprocessableEntity, execgate.ErrorKindValidation, "server.max_grant is 0s"},
		{"of a command whose configuration holds every call (a floor)", "", "deploy.prod", `{"action":"approve","grant":"30m"}`, http.StatusConflict, execgate.ErrorKindRequest, "which no grant lifts"},
	} {
		t.Run(tc.about, func(t *testing.T) {
			f := newGrantFixture(t, grantConfig(tc.extra), config.LoadOptions{})
			bot := execgate.WithPrincipal(context.Background(), "ci-bot")
			ap, err := f.gate.x.Propose(bot, tc.tool, nil, "test")
			require.NoError(t, err)
			require.NoError(t, f.pending.add(bot, ap))
			status, a, data := f.send(t, "POST", "/v1/approvals/"+ap.ID, approverToken, tc.body)
			assert.Equal(t, tc.status, status, "%s", data)
			assert.Equal(t, tc.kind, a.Error.Kind)
			assert.Contains(t, a.Error.Message, tc.says)
			assert.Equal(t, []string{ap.ID}, f.listed(t), "the approval is still pending")
			assert.Zero(t, f.rec.Count(), "nothing ran")
			assert.Empty(t, f.grants(t), "no grant was made")
			assert.Empty(t, f.grantEvents(), "and none recorded")
		})
	}
}

// TestApproveWithGrant_RefusedApprovalGrantsNothing: a grant is made only
// if the approval really executes: when the gate refuses the approved
// call (here its approval is no longer in the Executor's store), nothing
// runs and nothing is granted.
func TestApproveWithGrant_RefusedApprovalGrantsNothing(t *testing.T) {
	f := newGrantFixture(t, grantConfig(""), config.LoadOptions{})
	ap := f.hold(t, callerToken, "ship.run", `{}`)
	removed, err := f.gate.x.Reject(execgate.WithPrincipal(context.Background(), "alice"), ap.ID)
	require.NoError(t, err)
	require.True(t, removed)
	status, a, data := f.approve(t, ap, `"30m"`)
	assert.Equal(t, http.StatusNotFound, status, "%s", data)
	assert.Equal(t, execgate.ErrorKindApproval, a.Error.Kind)
	assert.Nil(t, a.Grant)
	assert.Zero(t, f.rec.Count())
	assert.Empty(t, f.grants(t))
	assert.Empty(t, f.grantEvents())
	f.hold(t, callerToken, "ship.run", `{}`) // still held
}

// TestGrants_OnlyApproversListAndRevoke: a caller can neither list nor
// revoke grants, and its DELETE of a live grant is answered exactly as
// its DELETE of an ID no grant has, so it learns nothing. An approver's
// revocation ends the grant at once and is recorded; a grant revoked, an
// unknown ID and a made-up one then get the same 404.
func TestGrants_OnlyApproversListAndRevoke(t *testing.T) {
	f := newGrantFixture(t, grantConfig(""), config.LoadOptions{})
	ap := f.hold(t, callerToken, "ship.run", `{}`)
	_, a, _ := f.approve(t, ap, `"30m"`)
	require.NotNil(t, a.Grant)
	id := a.Grant.ID

	status, _, _ := f.send(t, "GET", "/v1/grants", callerToken, "")
	assert.Equal(t, http.StatusForbidden, status, "a caller does not list grants")
	status, live, liveBody := f.send(t, "DELETE", "/v1/grants/"+id, callerToken, "")
	_, _, unknownBody := f.send(t, "DELETE", "/v1/grants/0197a0b0-0000-7000-8000-000000000007", callerToken, "")
	assert.Equal(t, http.StatusForbidden, status, "a caller does not revoke grants")
	assert.Equal(t, execgate.ErrorKindRequest, live.Error.Kind)
	assert.Equal(t, withoutLatency(t, unknownBody), withoutLatency(t, liveBody), "a live grant's ID and an unknown one get the same answer")
	require.Len(t, f.grants(t), 1, "the grant is still in force")

	status, a, data := f.send(t, "DELETE", "/v1/grants/"+id, approverToken, "")
	require.Equal(t, http.StatusOK, status, "%s", data)
	assert.Equal(t, "revoked", a.Status)
	require.NotNil(t, a.Grant)
	assert.Equal(t, id, a.Grant.ID)
	assert.Empty(t, f.grants(t))
	f.hold(t, callerToken, "ship.run", `{}`) // held again

	var answers [][]byte
	for _, other := range []string{id, "0197a0b0-0000-7000-8000-000000000007", "nonsense"} {
		status, a, data := f.send(t, "DELETE", "/v1/grants/"+other, approverToken, "")
		assert.Equal(t, http.StatusNotFound, status, "%s: %s", other, data)
		assert.Equal(t, execgate.ErrorKindRequest, a.Error.Kind)
		answers = append(answers, withoutLatency(t, data))
	}
	assert.Equal(t, answers[0], answers[1], "a revoked grant reads as unknown")
	assert.Equal(t, answers[0], answers[2])

	evs := f.grantEvents()
	require.Len(t, evs, 2)
	assert.Equal(t, execgate.OpRevoke, evs[1].Op)
	assert.Equal(t, "alice", evs[1].Approver, "who revoked it")
	assert.Equal(t, "ci-bot", evs[1].Principal)
	assert.Equal(t, id, evs[1].Grant)
	assert.Equal(t, "revoked by an approver", evs[1].Reason)

	status, _, _ = f.send(t, "POST", "/v1/grants", approverToken, "")
	assert.Equal(t, http.StatusMethodNotAllowed, status)
	status, _, _ = f.send(t, "GET", "/v1/grants/"+id, approverToken, "")
	assert.Equal(t, http.StatusMethodNotAllowed, status)
}

// withoutLatency returns a response body with its latency_ms removed.
func withoutLatency(t *testing.T, body []byte) []byte {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	delete(m, "latency_ms")
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return b
}

// TestGrants_ConfigGrantsAreListedAndNotRevocable: the configuration
// file's grants are listed beside those made with approvals, as patterns
// from the file, and DELETE leaves them in force, saying that the file
// decides them.
func TestGrants_ConfigGrantsAreListedAndNotRevocable(t *testing.T) {
	text := strings.Replace(grantConfig(""), "server:\n", `grants:
  - {id: change-7, principal: "bot-*", tool: "other.*", expires: 2030-01-02T20:00:00Z, reason: incident 7}
server:
`, 1)
	f := newGrantFixture(t, text, config.LoadOptions{})
	gs := f.grants(t)
	require.Len(t, gs, 1)
	assert.Equal(t, grantView{ID: "change-7", Principal: "bot-*", Tool: "other.*", GrantedAt: f.clk.Now(),
		Expires: time.Date(2030, 1, 2, 20, 0, 0, 0, time.UTC), Source: "config", Reason: "incident 7"}, gs[0])

	status, a, data := f.send(t, "DELETE", "/v1/grants/change-7", approverToken, "")
	assert.Equal(t, http.StatusConflict, status, "%s", data)
	assert.Contains(t, a.Error.Message, "configuration file")
	assert.Len(t, f.grants(t), 1, "still in force")
	status, _, data = f.send(t, "POST", "/v1/tools/other.run", otherCallerToken, `{}`)
	assert.Equal(t, http.StatusOK, status, "%s", data)
	assert.Empty(t, f.grantEvents())
}

// TestGrant_ExpiresWithTheClock: a grant made with an approval applies
// until its expiry on the Engine's clock, then no longer: the next call
// is held again, the grant is no longer listed, and its expiry is
// recorded once.
func TestGrant_ExpiresWithTheClock(t *testing.T) {
	f := newGrantFixture(t, grantConfig(""), config.LoadOptions{})
	ap := f.hold(t, callerToken, "ship.run", `{}`)
	_, a, _ := f.approve(t, ap, `"30m"`)
	require.NotNil(t, a.Grant)

	f.clk.Advance(30*time.Minute - time.Second)
	status, _, data := f.send(t, "POST", "/v1/tools/ship.run", callerToken, `{}`)
	require.Equal(t, http.StatusOK, status, "live until its expiry: %s", data)
	f.clk.Advance(time.Second)
	f.hold(t, callerToken, "ship.run", `{}`) // expired: held again
	assert.Empty(t, f.grants(t))
	assert.Empty(t, f.grants(t))

	evs := f.grantEvents()
	require.Len(t, evs, 2, "made, then expired, once")
	assert.Equal(t, execgate.OpExpire, evs[1].Op)
	assert.Equal(t, a.Grant.ID, evs[1].Grant)
	assert.Equal(t, "ci-bot", evs[1].Principal)
	assert.Equal(t, "ship.run", evs[1].Name)
	assert.Equal(t, "", evs[1].Approver, "no one ended it")
	assert.Equal(t, "expired at 2030-01-02T15:34:05Z", evs[1].Reason)
}

// TestGrant_ExpiryIsRecordedWithoutARequest: the expiry of a grant made
// with an approval is recorded when it comes, on the real clock, without
// any request to notice it.
func TestGrant_ExpiryIsRecordedWithoutARequest(t *testing.T) {
	f := newGrantFixture(t, grantConfig(""), config.LoadOptions{Now: time.Now})
	ap := f.hold(t, callerToken, "ship.run", `{}`)
	_, a, data := f.approve(t, ap, `"1ms"`)
	require.NotNil(t, a.Grant, "%s", data)
	deadline := time.Now().Add(20 * time.Second)
	for len(f.grantEvents()) < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	evs := f.grantEvents()
	require.Len(t, evs, 2, "made, then expired")
	assert.Equal(t, execgate.OpExpire, evs[1].Op)
	assert.Equal(t, a.Grant.ID, evs[1].Grant)
}

// TestGrant_ReloadRemovingItsToolEndsIt: a reload that removes the
// command of a grant made with an approval ends the grant, and records
// it; a grant of a command the reload keeps stays; a later reload that
// brings the command back does not bring the grant back.
func TestGrant_ReloadRemovingItsToolEndsIt(t *testing.T) {
	f := newGrantFixture(t, grantConfig(""), config.LoadOptions{})
	var ids []string
	for _, tool := range []string{"ship.run", "other.run"} {
		ap := f.hold(t, callerToken, tool, `{}`)
		_, a, data := f.approve(t, ap, `"30m"`)
		require.NotNil(t, a.Grant, "%s", data)
		ids = append(ids, a.Grant.ID)
	}
	without := strings.Replace(grantConfig(""), `  - name: other
    bin: /bin/echo
    description: Another tool the policy holds.
    bare: {}
`, "", 1)
	require.NotEqual(t, grantConfig(""), without)
	require.NoError(t, os.WriteFile(f.path, []byte(without), 0o600))
	_, err := f.reload.reload()
	require.NoError(t, err)

	gs := f.grants(t)
	require.Len(t, gs, 1, "the grant of the command kept stays")
	assert.Equal(t, ids[0], gs[0].ID)
	evs := f.grantEvents()
	require.Len(t, evs, 3)
	assert.Equal(t, execgate.OpRevoke, evs[2].Op)
	assert.Equal(t, ids[1], evs[2].Grant)
	assert.Equal(t, "other.run", evs[2].Name)
	assert.Equal(t, "", evs[2].Approver)
	assert.Equal(t, "ended: a reload removed its command", evs[2].Reason)

	require.NoError(t, os.WriteFile(f.path, []byte(grantConfig("")), 0o600))
	_, err = f.reload.reload()
	require.NoError(t, err)
	assert.Len(t, f.grants(t), 1, "bringing the command back brings no grant back")
	f.hold(t, callerToken, "other.run", `{}`)
	status, _, data := f.send(t, "POST", "/v1/tools/ship.run", callerToken, `{}`)
	assert.Equal(t, http.StatusOK, status, "%s", data)
}

// TestGrant_ReloadAppliesMaxGrant: server.max_grant follows a reload.
func TestGrant_ReloadAppliesMaxGrant(t *testing.T) {
	f := newGrantFixture(t, grantConfig(""), config.LoadOptions{})
	require.NoError(t, os.WriteFile(f.path, []byte(grantConfig("  max_grant: 5m\n")), 0o600))
	_, err := f.reload.reload()
	require.NoError(t, err)
	ap := f.hold(t, callerToken, "ship.run", `{}`)
	status, a, data := f.approve(t, ap, `"6m"`)
	assert.Equal(t, http.StatusUnprocessableEntity, status, "%s", data)
	assert.Contains(t, a.Error.Message, "5m0s")
	status, _, data = f.approve(t, ap, `"5m"`)
	assert.Equal(t, http.StatusOK, status, "%s", data)
}

// failingGrants is an Auditor that fails to record the making of grants.
type failingGrants struct{}

func (failingGrants) Audit(_ context.Context, ev execgate.Event) error {
	if ev.Op == execgate.OpGrant {
		return errors.New("no space left on device")
	}
	return nil
}

// TestApproveWithGrant_NoRecordNoGrant: a grant whose making the audit
// trail cannot record is not made; the approved call has run, and the
// response says why no grant came with it.
func TestApproveWithGrant_NoRecordNoGrant(t *testing.T) {
	f := newGrantFixture(t, grantConfig(""), config.LoadOptions{}, failingGrants{})
	ap := f.hold(t, callerToken, "ship.run", `{}`)
	status, a, data := f.approve(t, ap, `"30m"`)
	require.Equal(t, http.StatusOK, status, "%s", data)
	require.NotNil(t, a.Result, "the approved call ran")
	assert.Nil(t, a.Grant)
	require.NotNil(t, a.GrantError, "%s", data)
	assert.Equal(t, execgate.ErrorKindAudit, a.GrantError.Kind)
	assert.Empty(t, f.grants(t))
	f.hold(t, callerToken, "ship.run", `{}`) // still held
}

// TestApproveWithGrant_BoundedByMaxGrants: the Engine holds a bounded
// number of grants; a grant beyond them is not made, the approved call
// having run, and the trail records it as revoked at once.
func TestApproveWithGrant_BoundedByMaxGrants(t *testing.T) {
	f := newGrantFixture(t, grantConfig(""), config.LoadOptions{Policy: policy.Options{MaxGrants: 1}})
	ap := f.hold(t, callerToken, "ship.run", `{}`)
	_, a, _ := f.approve(t, ap, `"30m"`)
	require.NotNil(t, a.Grant)
	ap = f.hold(t, callerToken, "other.run", `{}`)
	status, a, data := f.approve(t, ap, `"30m"`)
	require.Equal(t, http.StatusOK, status, "%s", data)
	require.NotNil(t, a.Result)
	assert.Nil(t, a.Grant)
	require.NotNil(t, a.GrantError)
	assert.Contains(t, a.GrantError.Message, "too many grants")
	assert.Len(t, f.grants(t), 1)
	evs := f.grantEvents()
	require.Len(t, evs, 3)
	assert.Equal(t, []string{execgate.OpGrant, execgate.OpGrant, execgate.OpRevoke}, []string{evs[0].Op, evs[1].Op, evs[2].Op})
	assert.Equal(t, evs[1].Grant, evs[2].Grant)
	assert.Contains(t, evs[2].Reason, "not made")
}

// TestGrant_DoesNotChangeTheToolsShown: a grant only turns a held call
// into an allowed one, so the tools a principal is shown are the same
// before and after it, and no client needs telling that the tool list
// changed. A reload that ends a grant changes the tools itself, and tells
// clients so as it always does.
func TestGrant_DoesNotChangeTheToolsShown(t *testing.T) {
	f := newGrantFixture(t, grantConfig(""), config.LoadOptions{})
	shown := func() map[string]bool {
		out := map[string]bool{}
		for _, spec := range f.gate.x.Allowlist().Specs() {
			out[spec.Name] = f.gate.visible(context.Background(), "ci-bot", spec)
		}
		return out
	}
	before := shown()
	ap := f.hold(t, callerToken, "ship.run", `{}`)
	_, a, _ := f.approve(t, ap, `"30m"`)
	require.NotNil(t, a.Grant)
	assert.Equal(t, before, shown())
}

// TestApproveWithGrant_BodyStillStrict: the decision body takes action
// and grant only; anything else is refused as before.
func TestApproveWithGrant_BodyStillStrict(t *testing.T) {
	f := newGrantFixture(t, grantConfig(""), config.LoadOptions{})
	ap := f.hold(t, callerToken, "ship.run", `{}`)
	for _, body := range []string{
		`{"action":"approve","grant":"30m","also":1}`,
		`{"action":"approve","grant":"30m"} {}`,
	} {
		status, _, data := f.send(t, "POST", "/v1/approvals/"+ap.ID, approverToken, body)
		assert.Equal(t, http.StatusBadRequest, status, "%s: %s", body, data)
	}
	assert.Equal(t, []string{ap.ID}, f.listed(t))
	assert.Zero(t, f.rec.Count())
}

// TestE2E_ApproveWithGrantOverHTTP: the binary serving the HTTP API with
// an audit file: an approval with a grant runs the command, the
// principal's next identical call runs at once, the grant is listed, a
// reload on SIGHUP that removes the command ends it, and the audit file,
// which verifies, holds the grant's making and its end.
func TestE2E_ApproveWithGrantOverHTTP(t *testing.T) {
	path := writeFile(t, "tools.yaml", grantConfig(""))
	trail := writeFile(t, "audit.jsonl", "")
	p := startServe(t, "--config", path, "--http", "127.0.0.1:0", "--audit", trail)
	base := p.stderr.waitFor(t, regexp.MustCompile(`serving the HTTP API on (http://127\.0\.0\.1:\d+)`))
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	do := func(method, route, token, body string) (int, grantAnswer) {
		t.Helper()
		req, err := http.NewRequest(method, base+route, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var a grantAnswer
		require.NoError(t, json.Unmarshal(data, &a), "%s", data)
		return resp.StatusCode, a
	}

	code, a := do("POST", "/v1/tools/ship.run", callerToken, `{}`)
	require.Equal(t, http.StatusAccepted, code, "%+v", a.Error)
	code, a = do("POST", "/v1/approvals/"+a.Approval.ID, approverToken, `{"action":"approve","grant":"30m"}`)
	require.Equal(t, http.StatusOK, code, "%+v", a.Error)
	require.NotNil(t, a.Result)
	assert.True(t, a.Result.OK, "/bin/echo ran")
	require.NotNil(t, a.Grant, "%+v", a.GrantError)
	id := a.Grant.ID

	code, a = do("POST", "/v1/tools/ship.run", callerToken, `{}`)
	require.Equal(t, http.StatusOK, code, "the next identical call runs at once: %+v", a.Error)
	assert.Equal(t, id, a.Policy.Grant)
	code, a = do("POST", "/v1/tools/ship.run", otherCallerToken, `{}`)
	assert.Equal(t, http.StatusAccepted, code, "another principal's call is still held")
	code, a = do("GET", "/v1/grants", approverToken, "")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, a.Grants, 1)
	assert.Equal(t, id, a.Grants[0].ID)

	without := strings.Replace(grantConfig(""), `  - name: ship
    bin: /bin/echo
    description: Ship a build; the policy holds every call.
    bare: {}
`, "", 1)
	require.NoError(t, os.WriteFile(path, []byte(without), 0o600))
	p.hangup(t, 1)
	code, a = do("GET", "/v1/grants", approverToken, "")
	require.Equal(t, http.StatusOK, code)
	assert.Empty(t, a.Grants, "the reload that removed ship.run ended its grant")

	p.stop(t)
	code, out, errOut := runCLI(t, "", "audit", "verify", trail)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "ok:")
	data, err := os.ReadFile(trail)
	require.NoError(t, err)
	assert.Regexp(t, `"op":"grant","phase":"outcome".*"principal":"ci-bot","approver":"alice","name":"ship.run".*"grant":"`+id+`"`, string(data))
	assert.Regexp(t, `"op":"revoke","phase":"outcome".*"principal":"ci-bot","name":"ship.run".*"grant":"`+id+`".*"reason":"ended: a reload removed its command"`, string(data))
}

// TestE2E_ApproveWithGrantBesideStdio: over MCP on stdio with
// --approver-http, an approver approves a held call with a grant: the
// agent's retry claims the approved call's Result, and its next
// identical call runs at once.
func TestE2E_ApproveWithGrantBesideStdio(t *testing.T) {
	path := writeFile(t, "tools.yaml", grantConfig(""))
	cs, stderr := startMCP(t, os.Environ(), "--config", path, "--approver-http", "127.0.0.1:0", "--principal", "mcp-agent")
	base := stderr.waitFor(t, approvalsAddrRe)

	res := callTool(t, cs, "ship_run", `{}`)
	var st mcpserver.CallStatus
	structured(t, res, &st)
	require.Equal(t, mcpserver.StatusPending, st.Status, st.Message)
	require.NotNil(t, st.Approval)

	req, err := http.NewRequest("POST", base+"/v1/approvals/"+st.Approval.ID, strings.NewReader(`{"action":"approve","grant":"10m"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+approverToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var a grantAnswer
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%+v", a.Error)
	require.NotNil(t, a.Grant, "%+v", a.GrantError)
	assert.Equal(t, "mcp-agent", a.Grant.Principal)

	res = callTool(t, cs, "ship_run", `{}`) // the retry claims the approved Result
	require.False(t, res.IsError, "%+v", res.Content)
	res = callTool(t, cs, "ship_run", `{}`) // and the next call runs under the grant
	require.False(t, res.IsError, "%+v", res.Content)
	var r execgate.Result
	structured(t, res, &r)
	assert.True(t, r.OK)
	assert.Empty(t, r.ApprovalID, "it ran without an approval")
}

// TestMCPHTTP_ServesGrants: the approval routes of serve --mcp-http make
// grants with the gate's grant book, as --http and --approver-http do.
func TestMCPHTTP_ServesGrants(t *testing.T) {
	loaded, err := config.LoadBytes("test.yaml", []byte(grantConfig("")))
	require.NoError(t, err)
	g, err := newGate(loaded, "", execgatetest.NewRecorder().Exec)
	require.NoError(t, err)
	defer g.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logger := slog.New(slog.DiscardHandler)
	h, err := newMCPHTTPServer(ctx, g, g.server(), false, logger, logger)
	require.NoError(t, err)
	require.NotNil(t, g.grants)
	assert.Same(t, g.grants, h.api.grants)
}

// otherTool is the tools entry of other in grantConfig.
const otherTool = `  - name: other
    bin: /bin/echo
    description: Another tool the policy holds.
    bare: {}
`

// rewrite puts text in the fixture's file and reloads it.
func (f *grantFixture) rewrite(t *testing.T, text string) {
	t.Helper()
	require.NoError(t, os.WriteFile(f.path, []byte(text), 0o600))
	_, err := f.reload.reload()
	require.NoError(t, err)
}

// TestGrant_ReloadWhileTheApprovedCallRunsRemovingItsToolGrantsNothing:
// a reload that removes a command while its approved call runs, after
// the gate took the approval and before the grant asked with it is made,
// leaves no grant: the call ran, the response says why no grant came
// with it, and bringing the command back brings no grant with it.
func TestGrant_ReloadWhileTheApprovedCallRunsRemovingItsToolGrantsNothing(t *testing.T) {
	f := newGrantFixture(t, grantConfig(""), config.LoadOptions{})
	without := strings.Replace(grantConfig(""), otherTool, "", 1)
	require.NotEqual(t, grantConfig(""), without)
	ap := f.hold(t, callerToken, "other.run", `{}`)
	f.during = func() { f.rewrite(t, without) }
	status, a, data := f.approve(t, ap, `"30m"`)
	require.Equal(t, http.StatusOK, status, "%s", data)
	require.NotNil(t, a.Result, "the approved call ran")
	assert.Nil(t, a.Grant, "%s", data)
	require.NotNil(t, a.GrantError, "%s", data)
	assert.Equal(t, execgate.ErrorKindRequest, a.GrantError.Kind)
	assert.Contains(t, a.GrantError.Message, "reload")
	assert.Empty(t, f.grants(t))

	f.rewrite(t, grantConfig(""))
	assert.Empty(t, f.grants(t))
	f.hold(t, callerToken, "other.run", `{}`) // still held
}

// TestGrant_ReloadWhileTheApprovedCallRunsChangingItsToolGrantsNothing:
// the same for a reload that changes what the command runs.
func TestGrant_ReloadWhileTheApprovedCallRunsChangingItsToolGrantsNothing(t *testing.T) {
	f := newGrantFixture(t, grantConfig(""), config.LoadOptions{})
	changed := strings.Replace(grantConfig(""), otherTool, strings.Replace(otherTool, "/bin/echo", "/bin/true", 1), 1)
	require.NotEqual(t, grantConfig(""), changed)
	ap := f.hold(t, callerToken, "other.run", `{}`)
	f.during = func() { f.rewrite(t, changed) }
	status, a, data := f.approve(t, ap, `"30m"`)
	require.Equal(t, http.StatusOK, status, "%s", data)
	require.NotNil(t, a.Result, "the approved call ran")
	assert.Nil(t, a.Grant, "%s", data)
	require.NotNil(t, a.GrantError, "%s", data)
	assert.Empty(t, f.grants(t))
	f.hold(t, callerToken, "other.run", `{}`) // still held
}

// TestGrant_ReloadChangingWhatItsToolRunsEndsIt: a reload that changes
// what a grant's command runs (its executable, or its policy_version)
// ends the grant, recorded as revoked, and bringing the old command back
// brings no grant back; a reload that changes nothing of it keeps it.
func TestGrant_ReloadChangingWhatItsToolRunsEndsIt(t *testing.T) {
	for _, change := range []struct{ name, old, new string }{
		{"executable", "    bin: /bin/echo\n    description: Another", "    bin: /bin/true\n    description: Another"},
		{"policy version", "    bare: {}\n  - name: tf", "    bare: {}\n    policy_version: \"2\"\n  - name: tf"},
	} {
		t.Run(change.name, func(t *testing.T) {
			f := newGrantFixture(t, grantConfig(""), config.LoadOptions{})
			ap := f.hold(t, callerToken, "other.run", `{}`)
			_, a, data := f.approve(t, ap, `"30m"`)
			require.NotNil(t, a.Grant, "%s", data)

			f.rewrite(t, grantConfig("  max_grant: 2h\n"))
			require.Len(t, f.grants(t), 1, "a reload that leaves the command as it was keeps the grant")

			changed := strings.Replace(grantConfig(""), change.old, change.new, 1)
			require.NotEqual(t, grantConfig(""), changed)
			f.rewrite(t, changed)
			assert.Empty(t, f.grants(t))
			evs := f.grantEvents()
			require.Len(t, evs, 2)
			assert.Equal(t, execgate.OpRevoke, evs[1].Op)
			assert.Equal(t, a.Grant.ID, evs[1].Grant)
			assert.Equal(t, "ended: a reload changed what its command runs", evs[1].Reason)
			f.hold(t, callerToken, "other.run", `{}`) // held again

			f.rewrite(t, grantConfig(""))
			assert.Empty(t, f.grants(t))
			f.hold(t, callerToken, "other.run", `{}`)
		})
	}
}
