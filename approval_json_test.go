package execgate_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// The tests in this file are about the Approval as it travels: what
// survives its JSON form, and what a changed or empty encoding does.

// Invariant 8 of DESIGN.md.
func TestSingleUse_ApprovalsCarryOnlyWhatSurvivesJSON(t *testing.T) {
	// A Fixed argument that is not UTF-8 could never come back intact
	// from an approver: Propose refuses it rather than issue an approval
	// that would burn itself.
	x, rec := newGate(t, execgate.Config{}, execgate.CommandSpec{Name: "latin1", Command: "/bin/echo", Args: execgate.Fixed("caf\xe9")})
	_, err := x.Propose(context.Background(), "latin1", nil, "")
	var ve *execgate.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "args[0]", ve.Issues[0].Field)
	_, err = x.Run(context.Background(), "latin1", nil)
	assert.NoError(t, err, "Run needs no JSON round trip")
	assert.Equal(t, 1, rec.Count())

	for _, spec := range []execgate.CommandSpec{
		{Name: "long.pv", Command: "/bin/echo", Args: execgate.Fixed(), PolicyVersion: strings.Repeat("v", 257)},
		{Name: "bad.pv", Command: "/bin/echo", Args: execgate.Fixed(), PolicyVersion: "\xff"},
	} {
		_, err := execgate.NewAllowlist(spec)
		var ce *execgate.ConfigError
		require.ErrorAs(t, err, &ce, spec.Name)
		assert.Equal(t, "PolicyVersion", ce.Field)
	}
}

// Invariant 9 of DESIGN.md.
func TestDigestBinding_ReZonedEnvelopeIsRefused(t *testing.T) {
	x, rec := newGate(t, execgate.Config{}, echoSpec())
	ap := propose(t, x, `{}`)
	b, err := json.Marshal(ap)
	require.NoError(t, err)
	z := ap.ExpiresAt.UTC().Format(time.RFC3339Nano)
	plus5 := ap.ExpiresAt.In(time.FixedZone("", 5*3600)).Format(time.RFC3339Nano)
	require.Contains(t, string(b), z)
	var moved execgate.Approval
	require.NoError(t, json.Unmarshal([]byte(strings.Replace(string(b), z, plus5, 1)), &moved))
	require.True(t, moved.ExpiresAt.Equal(ap.ExpiresAt), "the same instant")
	_, err = x.Execute(context.Background(), moved)
	var ve *execgate.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "expiresAt", ve.Issues[0].Field)
	_, err = x.Execute(context.Background(), ap)
	require.NoError(t, err, "a refused envelope burns nothing")
	assert.Equal(t, 1, rec.Count())
}

func TestApproval_UnmarshalNullIsANoOp(t *testing.T) {
	var w struct {
		A execgate.Approval  `json:"a"`
		P *execgate.Approval `json:"p"`
	}
	w.A.ID = "kept"
	require.NoError(t, json.Unmarshal([]byte(`{"a":null,"p":null}`), &w))
	assert.Equal(t, "kept", w.A.ID)
	assert.Nil(t, w.P)
}
