package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/execgate/execgate/config"
)

// TestGrants_UnknownGrantSaysWhereGrantsLive: grants given with an
// approval live in the replica that decided it, so a DELETE of a grant
// through another replica finds none; its 404 says so and where to
// revoke it, instead of only "never made here".
func TestGrants_UnknownGrantSaysWhereGrantsLive(t *testing.T) {
	f := newGrantFixture(t, grantConfig(""), config.LoadOptions{})
	status, a, data := f.send(t, "DELETE", "/v1/grants/0197a0b0-0000-7000-8000-000000000009", approverToken, "")
	assert.Equal(t, http.StatusNotFound, status, "%s", data)
	if assert.NotNil(t, a.Error) {
		assert.Contains(t, a.Error.Message, "a grant lives in the replica that decided its approval: list and revoke it there")
	}
}
