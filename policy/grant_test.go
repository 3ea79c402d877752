package policy_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/policy"
)

func opsPolicy() policy.Policy {
	return policy.Policy{Name: "ops", Principal: "*", Rules: []policy.Rule{
		{Name: "no-destroy", Tools: []string{"terraform.destroy"}, Action: deny},
		rule(approval, "terraform.*", "kubectl.*"),
		rule(allow, "git.*"),
	}}
}

func TestGrant_TurnsApprovalIntoAllowUntilExpiry(t *testing.T) {
	clk := newClock()
	e := newEngine(t, policy.Options{Now: clk.Now}, opsPolicy())
	require.Equal(t, approval, decide(t, e, "alice", "terraform.plan").Action)

	id, err := e.Grant(policy.Grant{Principal: "alice", Tool: "terraform.*", Expires: clk.Now().Add(time.Hour), Reason: "incident 4711"})
	require.NoError(t, err)
	_, err = uuid.Parse(id)
	require.NoError(t, err, "a generated ID is a UUID")

	assert.Equal(t, execgate.Decision{Action: allow, Rule: "ops/2", Grant: id}, decide(t, e, "alice", "terraform.plan"))
	assert.Equal(t, execgate.Decision{Action: approval, Rule: "ops/2"}, decide(t, e, "bob", "terraform.plan"), "other principals")
	assert.Equal(t, execgate.Decision{Action: approval, Rule: "ops/2"}, decide(t, e, "alice", "kubectl.delete"), "other tools")
	assert.Equal(t, execgate.Decision{Action: allow, Rule: "ops/3"}, decide(t, e, "alice", "git.log"), "an allow names no grant")

	clk.Advance(time.Hour - time.Nanosecond)
	assert.Equal(t, allow, decide(t, e, "alice", "terraform.plan").Action, "live until its expiry")
	clk.Advance(time.Nanosecond)
	assert.Equal(t, execgate.Decision{Action: approval, Rule: "ops/2"}, decide(t, e, "alice", "terraform.plan"), "expired at its expiry")
	assert.Empty(t, e.Grants(), "expired grants vanish")
	assert.False(t, e.Revoke(id), "an expired grant cannot be revoked")
}

func TestGrant_NeverOverturnsDeny(t *testing.T) {
	clk := newClock()
	e := newEngine(t, policy.Options{Now: clk.Now}, opsPolicy())
	_, err := e.Grant(policy.Grant{Principal: "*", Tool: "*", Expires: clk.Now().Add(time.Hour)})
	require.NoError(t, err)
	for name, want := range map[string]execgate.Decision{
		"terraform.destroy": {Action: deny, Rule: "ops/no-destroy"},
		"docker.run":        {Action: deny, Rule: "ops/default"},
	} {
		assert.Equal(t, want, decide(t, e, "alice", name), name)
	}
	e2 := newEngine(t, policy.Options{Now: clk.Now}, policy.Policy{Name: "ci", Principal: "ci", Rules: []policy.Rule{rule(approval, "*")}})
	_, err = e2.Grant(policy.Grant{Principal: "*", Tool: "*", Expires: clk.Now().Add(time.Hour)})
	require.NoError(t, err)
	assert.Equal(t, execgate.Decision{Action: deny, Rule: policy.DefaultRule}, decide(t, e2, "alice", "git.log"), "no policy: a grant does not help")
}

func TestGrant_Revoke(t *testing.T) {
	clk := newClock()
	e := newEngine(t, policy.Options{Now: clk.Now}, opsPolicy())
	first, err := e.Grant(policy.Grant{ID: "change-1", Principal: "team-*", Tool: "kubectl.*", Expires: clk.Now().Add(time.Hour)})
	require.NoError(t, err)
	assert.Equal(t, "change-1", first)
	clk.Advance(time.Second)
	second, err := e.Grant(policy.Grant{Principal: "team-a", Tool: "kubectl.rollout", Expires: clk.Now().Add(2 * time.Hour)})
	require.NoError(t, err)

	assert.Equal(t, first, decide(t, e, "team-a", "kubectl.rollout").Grant, "the oldest matching grant decides")
	gs := e.Grants()
	require.Len(t, gs, 2)
	assert.Equal(t, policy.Grant{ID: "change-1", Principal: "team-*", Tool: "kubectl.*", Expires: clk.Now().Add(time.Hour - time.Second), Created: clk.Now().Add(-time.Second)}, gs[0])
	assert.Equal(t, second, gs[1].ID)

	assert.True(t, e.Revoke(first))
	assert.False(t, e.Revoke(first), "revoked twice")
	assert.False(t, e.Revoke("never-was"))
	assert.Equal(t, second, decide(t, e, "team-a", "kubectl.rollout").Grant)
	assert.Equal(t, approval, decide(t, e, "team-b", "kubectl.rollout").Action)

	assert.True(t, e.Revoke(second))
	assert.Equal(t, execgate.Decision{Action: approval, Rule: "ops/2"}, decide(t, e, "team-a", "kubectl.rollout"))
	assert.Empty(t, e.Grants())
}

func TestGrant_Refusals(t *testing.T) {
	clk := newClock()
	now := clk.Now()
	e := newEngine(t, policy.Options{Now: clk.Now, MaxGrants: 2}, opsPolicy())
	for _, tc := range []struct {
		name  string
		grant policy.Grant
		path  string
	}{
		{"longer than the default maximum of 24h", policy.Grant{Principal: "a", Tool: "*", Expires: now.Add(24*time.Hour + time.Second)}, "grant.expires"},
		{"already expired", policy.Grant{Principal: "a", Tool: "*", Expires: now}, "grant.expires"},
		{"no expiry", policy.Grant{Principal: "a", Tool: "*"}, "grant.expires"},
		{"no principal", policy.Grant{Tool: "*", Expires: now.Add(time.Hour)}, "grant.principal"},
		{"malformed tool", policy.Grant{Principal: "a", Tool: "terraform.[a-z]*", Expires: now.Add(time.Hour)}, "grant.tool"},
		{"malformed ID", policy.Grant{ID: "a b", Principal: "a", Tool: "*", Expires: now.Add(time.Hour)}, "grant.id"},
		{"control characters in reason", policy.Grant{Principal: "a", Tool: "*", Expires: now.Add(time.Hour), Reason: "ok\nforged line"}, "grant.reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := e.Grant(tc.grant)
			assert.Empty(t, id)
			var ce *policy.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.path, ce.Path)
		})
	}
	assert.Empty(t, e.Grants(), "nothing was created")

	_, err := e.Grant(policy.Grant{ID: "g1", Principal: "a", Tool: "*", Expires: now.Add(24 * time.Hour)})
	require.NoError(t, err, "exactly the maximum duration is accepted")
	_, err = e.Grant(policy.Grant{ID: "g1", Principal: "b", Tool: "*", Expires: now.Add(time.Hour)})
	require.ErrorIs(t, err, policy.ErrDuplicateGrant)
	_, err = e.Grant(policy.Grant{Principal: "b", Tool: "*", Expires: now.Add(time.Minute)})
	require.NoError(t, err)
	_, err = e.Grant(policy.Grant{Principal: "c", Tool: "*", Expires: now.Add(time.Hour)})
	require.ErrorIs(t, err, policy.ErrTooManyGrants)

	clk.Advance(time.Minute)
	_, err = e.Grant(policy.Grant{Principal: "c", Tool: "*", Expires: clk.Now().Add(time.Hour)})
	require.NoError(t, err, "an expired grant no longer counts against MaxGrants")
}

func TestGrant_MaxDurationIsConfigurable(t *testing.T) {
	clk := newClock()
	e := newEngine(t, policy.Options{Now: clk.Now, MaxGrantDuration: time.Hour}, opsPolicy())
	_, err := e.Grant(policy.Grant{Principal: "a", Tool: "*", Expires: clk.Now().Add(time.Hour + time.Second)})
	var ce *policy.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "grant.expires", ce.Path)
	_, err = e.Grant(policy.Grant{Principal: "a", Tool: "*", Expires: clk.Now().Add(time.Hour)})
	require.NoError(t, err)
}

func TestGrant_SurvivesSwap(t *testing.T) {
	clk := newClock()
	e := newEngine(t, policy.Options{Now: clk.Now}, opsPolicy())
	id, err := e.Grant(policy.Grant{Principal: "alice", Tool: "kubectl.*", Expires: clk.Now().Add(time.Hour)})
	require.NoError(t, err)
	require.NoError(t, e.Swap([]policy.Policy{{Name: "v2", Principal: "alice", Rules: []policy.Rule{rule(approval, "*")}}}))
	assert.Equal(t, execgate.Decision{Action: allow, Rule: "v2/1", Grant: id}, decide(t, e, "alice", "kubectl.get"))
}
