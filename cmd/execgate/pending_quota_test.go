package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
)

// quotaConfig holds every call of say.run for approval, for two callers,
// with the server section's quotas in place of QUOTAS.
var quotaConfig = `version: 1
tools:
  - name: say
    bin: /bin/echo
    bare:
      positionals: {max: 1, pattern: '^[a-z]{1,8}$'}
policies:
  - name: everyone
    principal: "*"
    rules:
      - {name: held, tools: [say.run], action: require_approval}
server:
QUOTAS
  tokens:
    - {principal: bot-1, sha256: "` + tokenHash("token-1") + `"}
    - {principal: bot-2, sha256: "` + tokenHash("token-2") + `"}
  approvers:
    - {principal: alice, sha256: "` + tokenHash("approver-token") + `"}
`

// TestHTTP_PendingQuotaPerPrincipal: a caller holding its quota of the
// approval store (server.max_pending_per_principal, or the bytes of
// server.max_pending_bytes_per_principal) is refused with 429, kind
// store_full, reason principal, the quota and a message naming it, while
// another caller's proposals are still held for approval.
func TestHTTP_PendingQuotaPerPrincipal(t *testing.T) {
	for _, tc := range []struct {
		why    string
		quotas string
		fits   int // calls of bot-1 held before its quota is full
		limit  int // the quota the refusal names
		input  string
	}{
		{"two pending approvals fill max_pending_per_principal 2",
			"  max_pending_per_principal: 2", 2, 2, `{"args":["hello"]}`},
		{"two pending approvals of about 450 bytes fill max_pending_bytes_per_principal 1KiB",
			"  max_pending_bytes_per_principal: 1KiB", 2, 1024, `{"args":["hello"]` + strings.Repeat(" ", 400) + `}`},
	} {
		t.Run(tc.why, func(t *testing.T) {
			loaded, err := config.LoadBytes("quota.yaml", []byte(strings.Replace(quotaConfig, "QUOTAS", tc.quotas, 1)))
			require.NoError(t, err)
			g, err := newGate(loaded, "", nil)
			require.NoError(t, err)
			defer g.Close()
			h, err := newAPI(apiOptions{Executor: g.x, Server: g.server()})
			require.NoError(t, err)
			srv := httptest.NewServer(h)
			defer srv.Close()
			defer srv.Client().CloseIdleConnections()
			call := func(token string) (int, response) {
				req, err := http.NewRequest("POST", srv.URL+"/v1/tools/say.run", strings.NewReader(tc.input))
				require.NoError(t, err)
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := srv.Client().Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				data, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				var r response
				require.NoError(t, json.Unmarshal(data, &r), "%s", data)
				return resp.StatusCode, r
			}
			for i := range tc.fits {
				code, r := call("token-1")
				require.Equal(t, http.StatusAccepted, code, "bot-1's call %d is held for approval: %+v", i, r.Error)
			}
			code, r := call("token-1")
			assert.Equal(t, http.StatusTooManyRequests, code)
			require.NotNil(t, r.Error)
			assert.Equal(t, execgate.ErrorKindStoreFull, r.Error.Kind)
			assert.Equal(t, execgate.StoreFullPrincipal, r.Error.Reason)
			assert.Equal(t, tc.limit, r.Error.Limit)
			assert.Contains(t, r.Error.Message, `principal "bot-1"`, "the refusal says whose quota is full")
			assert.Nil(t, r.Approval, "nothing was held")

			code, r = call("token-2")
			assert.Equal(t, http.StatusAccepted, code, "bot-2 is not refused for bot-1's quota: %+v", r.Error)
		})
	}
}

// TestReload_PendingQuotasWaitForARestart: the store is built when serve
// starts, so a reload that changes its quotas says that they wait for a
// restart.
func TestReload_PendingQuotasWaitForARestart(t *testing.T) {
	var logged bytes.Buffer
	r := &reloader{log: slog.New(slog.NewTextHandler(&logged, nil))}
	r.restartNeeded(&config.Server{}, &config.Server{MaxPendingPerPrincipal: 10, MaxPendingBytesPerPrincipal: 1 << 20})
	assert.Contains(t, logged.String(), "key=server.max_pending_per_principal\n")
	assert.Contains(t, logged.String(), "key=server.max_pending_bytes_per_principal\n")
	logged.Reset()
	r.restartNeeded(&config.Server{MaxPendingPerPrincipal: 10}, &config.Server{MaxPendingPerPrincipal: 10})
	assert.Empty(t, logged.String(), "unchanged quotas are not reported")
}
