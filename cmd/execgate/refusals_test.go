package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/execgatetest"
)

// auditedAPI is the HTTP API of testConfig in this process, writing its
// audit chain to a file, with a Recorder in place of processes.
type auditedAPI struct {
	srv     *httptest.Server
	trail   string
	gate    *gate
	rec     *execgatetest.Recorder
	pending *pendingSet
}

func newAuditedAPI(t *testing.T) *auditedAPI {
	t.Helper()
	loaded, err := config.LoadBytes("test.yaml", []byte(testConfig))
	require.NoError(t, err)
	f := &auditedAPI{trail: filepath.Join(t.TempDir(), "audit.jsonl"), rec: execgatetest.NewRecorder(), pending: newPendingSet(nil)}
	f.gate, err = newGate(loaded, f.trail, f.rec.Exec)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.gate.Close()) })
	h, err := newAPI(apiOptions{Executor: f.gate.x, Server: f.gate.server(), Pending: f.pending})
	require.NoError(t, err)
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close)
	return f
}

// lines returns the lines of the audit file.
func (f *auditedAPI) lines(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(f.trail)
	require.NoError(t, err)
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")[:bytes.Count(data, []byte("\n"))]
}

// TestHTTP_RefusalsBeforeTheGateAreAudited: every request the HTTP API
// refuses before it reaches the gate is one line of the audit chain, with
// the principal when the request carries a valid token, its method and
// path, the kind and a short reason, and never the token, the query or
// the body.
func TestHTTP_RefusalsBeforeTheGateAreAudited(t *testing.T) {
	const (
		secretToken = "not-a-configured-token-4f1c9e"
		secretBody  = "BODY-SECRET-77d2"
		secretQuery = "QUERY-SECRET-a90b"
	)
	f := newAuditedAPI(t)
	// A pending approval proposed by alice, whom alice cannot approve.
	ctx := execgate.WithPrincipal(context.Background(), "alice")
	own, err := f.gate.x.Propose(ctx, "deploy.prod", nil, "self")
	require.NoError(t, err)
	require.NoError(t, f.pending.add(ctx, own))
	const unknownID = "01a22b06-dead-7e7e-beb5-2a3ecc4dc043"
	longPath := "/x/" + strings.Repeat("a", 500)

	for _, tc := range []struct {
		name                   string
		method, path, token    string
		contentType, body      string
		status                 int
		principal, route, tool string
		kind, reason           string
	}{
		{"a call without a token is refused as unauthenticated, with no principal",
			"POST", "/v1/tools/echo.run", "", "application/json", `{"args":["` + secretBody + `"]}`,
			401, "", "POST /v1/tools/echo.run", "echo.run", execgate.ErrorKindUnauthenticated, "no bearer token"},
		{"a call with a token that matches no entry is refused as unauthenticated, and the token is not written",
			"POST", "/v1/tools/echo.run", secretToken, "application/json", `{"args":["x"]}`,
			401, "", "POST /v1/tools/echo.run", "echo.run", execgate.ErrorKindUnauthenticated, "unknown bearer token"},
		{"a listing without a token is refused as unauthenticated",
			"GET", "/v1/approvals", "", "", "",
			401, "", "GET /v1/approvals", "", execgate.ErrorKindUnauthenticated, "no bearer token"},
		{"an approver's token on a caller route is refused for its role, as the approver",
			"POST", "/v1/tools/echo.run", approverToken, "application/json", `{"args":["x"]}`,
			403, "alice", "POST /v1/tools/echo.run", "echo.run", execgate.ErrorKindRequest, "approver token on a caller route"},
		{"a caller's token on an approver route is refused for its role, as the caller",
			"GET", "/v1/approvals", callerToken, "", "",
			403, "ci-bot", "GET /v1/approvals", "", execgate.ErrorKindRequest, "caller token on an approver route"},
		{"a body over 1 MiB is refused for its size, as the caller, and none of it is written",
			"POST", "/v1/tools/echo.run", callerToken, "application/json", `{"args":["` + secretBody + `"]}` + strings.Repeat(" ", maxBody),
			413, "ci-bot", "POST /v1/tools/echo.run", "echo.run", execgate.ErrorKindRequest, "body too large"},
		{"a body that is not JSON by its content type is refused, as the caller",
			"POST", "/v1/tools/echo.run", callerToken, "text/plain", secretBody,
			415, "ci-bot", "POST /v1/tools/echo.run", "echo.run", execgate.ErrorKindRequest, "content type is not JSON"},
		{"a decision body that is not the JSON of a decision is refused as malformed, as the approver",
			"POST", "/v1/approvals/" + unknownID, approverToken, "application/json", `approve ` + secretBody,
			400, "alice", "POST /v1/approvals/" + unknownID, "", execgate.ErrorKindRequest, "malformed body"},
		{"a decision with an unknown action is refused as invalid in its field, as the approver",
			"POST", "/v1/approvals/" + unknownID, approverToken, "application/json", `{"action":"maybe"}`,
			422, "alice", "POST /v1/approvals/" + unknownID, "", execgate.ErrorKindValidation, "unknown action"},
		{"a decision on an approval that is not pending is an approval refusal with reason unknown",
			"POST", "/v1/approvals/" + unknownID, approverToken, "application/json", `{"action":"approve"}`,
			404, "alice", "POST /v1/approvals/" + unknownID, "", execgate.ErrorKindApproval, execgate.ReasonUnknown},
		{"an approver deciding an approval of its own call is refused, as that approver",
			"POST", "/v1/approvals/" + own.ID, approverToken, "application/json", `{"action":"approve"}`,
			403, "alice", "POST /v1/approvals/" + own.ID, "", execgate.ErrorKindRequest, "self-approval"},
		{"a method a route does not serve is refused, with the principal of the valid token it carries",
			"GET", "/v1/tools/echo.run", callerToken, "", "",
			405, "ci-bot", "GET /v1/tools/echo.run", "echo.run", execgate.ErrorKindRequest, "method not allowed"},
		{"a route that does not exist is refused without a principal when no token comes with it, and the query is not written",
			"GET", "/v2/anything?access_token=" + secretQuery, "", "", "",
			404, "", "GET /v2/anything", "", execgate.ErrorKindRequest, "no such route"},
		{"a path that is not clean is no route, not a redirect",
			"GET", "/v1//tools", callerToken, "", "",
			404, "ci-bot", "GET /v1//tools", "", execgate.ErrorKindRequest, "no such route"},
		{"a long path is cut in the record",
			"DELETE", longPath, "", "", "",
			404, "", "DELETE " + longPath[:maxRoutePath] + "...", "", execgate.ErrorKindRequest, "no such route"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.lines(t))
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req, err := http.NewRequest(tc.method, f.srv.URL+tc.path, body)
			require.NoError(t, err)
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := f.srv.Client().Do(req)
			require.NoError(t, err)
			data, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			assert.Equal(t, tc.status, resp.StatusCode, "%s", data)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			var r response
			require.NoError(t, json.Unmarshal(data, &r), "%s", data)
			require.NotNil(t, r.Error, "%s", data)
			assert.Equal(t, tc.kind, r.Error.Kind, "the client gets the kind the trail records")
			assert.Equal(t, tc.reason, r.Error.Reason, "and its reason")

			lines := f.lines(t)
			require.Len(t, lines, before+1, "exactly one audit line per refusal")
			line := lines[before]
			var e audit.Entry
			require.NoError(t, json.Unmarshal([]byte(line), &e))
			assert.Equal(t, execgate.OpRequest, e.Op)
			assert.Equal(t, execgate.PhaseOutcome, e.Phase)
			assert.Equal(t, tc.principal, e.Principal)
			assert.Equal(t, tc.route, e.Route)
			assert.Equal(t, tc.tool, e.Name)
			assert.Equal(t, tc.kind, e.Error)
			assert.Equal(t, tc.reason, e.Reason)
			assert.NotEmpty(t, e.TraceID)
			for _, secret := range []string{secretToken, tokenHash(secretToken), callerToken, approverToken, secretBody, secretQuery} {
				assert.NotContains(t, line, secret)
			}
		})
	}
	assert.Zero(t, f.rec.Count(), "nothing ran")
	require.NoError(t, audit.VerifyFile(f.trail))
}

// TestHTTP_UnauthenticatedRefusalsCannotFloodTheTrail: anyone who can reach
// the port can send requests without a token, so their refusals are
// recorded at a bounded rate, and the next record says how many were left
// out; a caller with a valid token is recorded whatever the flood.
func TestHTTP_UnauthenticatedRefusalsCannotFloodTheTrail(t *testing.T) {
	f := newAuditedAPI(t)
	send := func(token string) int {
		req, err := http.NewRequest("GET", f.srv.URL+"/v2/nothing", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := f.srv.Client().Do(req)
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	const flood = 3 * anonBurst
	for range flood {
		require.Equal(t, http.StatusNotFound, send(""), "every refused request is still answered")
	}
	recorded := len(f.lines(t))
	assert.GreaterOrEqual(t, recorded, anonBurst, "the burst is recorded")
	assert.Less(t, recorded, flood, "the flood is not recorded whole")

	// A caller with a valid token is recorded at once, flood or not.
	send(callerToken)
	lines := f.lines(t)
	require.Len(t, lines, recorded+1)
	assert.Contains(t, lines[recorded], `"principal":"ci-bot"`)

	// Once the rate allows it again, the next record counts what was left
	// out (on a slow machine the rate may have allowed one during the
	// flood already, which then counted what was left out before it):
	// every refusal is either recorded or counted, once.
	time.Sleep(2 * time.Second / anonRate)
	send("")
	lines = f.lines(t)
	require.Len(t, lines, recorded+2)
	counted := 0
	for _, l := range lines {
		if m := regexp.MustCompile(`and (\d+) refusals of requests without a valid token not recorded`).FindStringSubmatch(l); m != nil {
			n, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			counted += n
		}
	}
	anonymous := len(lines) - 1 // all but the caller's
	assert.Equal(t, flood+1-anonymous, counted, "each refusal left out is counted")
	assert.Positive(t, counted)
	require.NoError(t, audit.VerifyFile(f.trail))
}

// unreachableBook is a book whose store cannot be reached for listing,
// taking or adding approvals.
type unreachableBook struct{ *pendingSet }

func (unreachableBook) unavailable(op string) error {
	return &storeUnavailableError{Op: op, Err: errors.New("connection refused")}
}

func (b unreachableBook) Add(context.Context, execgate.Approval) error {
	return b.unavailable("keeping the approval")
}

func (b unreachableBook) List(context.Context) ([]execgate.Approval, error) {
	return nil, b.unavailable("listing the pending approvals")
}

func (b unreachableBook) Take(context.Context, string, bool, func(execgate.Approval) error) (execgate.Approval, bool, error) {
	return execgate.Approval{}, false, b.unavailable("taking the approval")
}

// TestRecordIsTrue_UnreachableStoreRefusalsAreOneKindOverHTTP: while the
// approval store cannot be reached, listing the approvals, deciding one
// and proposing a call are each refused with 503, a Retry-After saying
// when to try again, and, for the approver's requests, a line of the
// audit trail, as every refusal before the gate has. The list's refusal
// was written by hand, with no header and no record, and the decision's
// and the proposal's had no header.
func TestRecordIsTrue_UnreachableStoreRefusalsAreOneKindOverHTTP(t *testing.T) {
	loaded, err := config.LoadBytes("test.yaml", []byte(testConfig))
	require.NoError(t, err)
	trail := filepath.Join(t.TempDir(), "audit.jsonl")
	g, err := newGate(loaded, trail, execgatetest.NewRecorder().Exec)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, g.Close()) })
	h, err := newAPI(apiOptions{Executor: g.x, Server: g.server(), Pending: unreachableBook{newPendingSet(nil)}})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	lines := func() []string {
		data, err := os.ReadFile(trail)
		require.NoError(t, err)
		return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")[:bytes.Count(data, []byte("\n"))]
	}
	for _, tc := range []struct {
		why, method, path, token, body string
		recorded                       bool
	}{
		{"listing the approvals", "GET", "/v1/approvals", approverToken, "", true},
		{"deciding one", "POST", "/v1/approvals/01a22b06-dead-7e7e-beb5-2a3ecc4dc043", approverToken, `{"action":"approve"}`, true},
		{"proposing a call that needs an approval", "POST", "/v1/tools/deploy.prod", callerToken, "{}", false},
	} {
		before := len(lines())
		req, err := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tc.token)
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s: %s", tc.why, data)
		assert.NotEmpty(t, resp.Header.Get("Retry-After"), "%s: when to try again", tc.why)
		var r response
		require.NoError(t, json.Unmarshal(data, &r), "%s", data)
		require.NotNil(t, r.Error, "%s: %s", tc.why, data)
		if tc.recorded {
			after := lines()
			require.Len(t, after, before+1, "%s: one line of the audit trail", tc.why)
			var e audit.Entry
			require.NoError(t, json.Unmarshal([]byte(after[before]), &e))
			assert.Equal(t, execgate.OpRequest, e.Op, tc.why)
		}
	}
}
