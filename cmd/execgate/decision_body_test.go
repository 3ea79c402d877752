package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
)

// TestStrictInput_DecisionBody: the body of POST /v1/approvals/{id} is
// read by the gate's strict decoder (invariant 4), so a body whose keys
// could be read two ways is refused with 400 and the approval stays
// pending, never run: encoding/json reads keys case-insensitively and
// the last duplicate wins, which made {"action":"reject","ACTION":
// "approve"} an approval.
func TestStrictInput_DecisionBody(t *testing.T) {
	f := newGrantFixture(t, grantConfig(""), config.LoadOptions{})
	for _, tc := range []struct {
		why, body string
	}{
		{"a key that matches only case-insensitively, after the real one, is not read as it", `{"action":"reject","ACTION":"approve"}`},
		{"a case-only match alone is not the action", `{"Action":"approve"}`},
		{"a duplicate key is refused, not read as its last value", `{"action":"reject","action":"approve"}`},
		{"a duplicate grant is refused", `{"action":"approve","grant":"1m","grant":"60m"}`},
		{"a grant spelled in capitals is refused", `{"action":"approve","GRANT":"60m"}`},
		{"an unknown key is refused", `{"action":"approve","force":true}`},
		{"trailing data is refused", `{"action":"reject"}{"action":"approve"}`},
		{"a NUL in the action is refused", `{"action":"approve\u0000"}`},
		{"an array is not an object", `[{"action":"approve"}]`},
	} {
		ap := f.hold(t, callerToken, "ship.run", `{}`)
		status, a, data := f.send(t, "POST", "/v1/approvals/"+ap.ID, approverToken, tc.body)
		assert.Equal(t, http.StatusBadRequest, status, "%s: %s", tc.why, data)
		if assert.NotNil(t, a.Error, tc.why) {
			assert.Equal(t, execgate.ErrorKindRequest, a.Error.Kind, tc.why)
		}
		assert.Equal(t, 0, f.rec.Count(), "%s: nothing ran", tc.why)
		status, _, data = f.send(t, "POST", "/v1/approvals/"+ap.ID, approverToken, `{"action":"reject"}`)
		require.Equal(t, http.StatusOK, status, "%s: the approval is still pending, and rejected: %s", tc.why, data)
	}
	ap := f.hold(t, callerToken, "ship.run", `{}`)
	status, _, data := f.send(t, "POST", "/v1/approvals/"+ap.ID, approverToken, `{"action":"approve"}`)
	require.Equal(t, http.StatusOK, status, "a well-formed body is decided: %s", data)
	assert.Equal(t, 1, f.rec.Count())
}
