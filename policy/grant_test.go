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

// TestGrant_ExactCoversOnlyThatPrincipalAndName: an exact grant, the kind
// a person's approval makes, covers the one principal and the one command
// name it names, even when they hold characters a pattern reads as
// wildcards or refuses, and never overturns a deny.
func TestGrant_ExactCoversOnlyThatPrincipalAndName(t *testing.T) {
	clk := newClock()
	e := newEngine(t, policy.Options{Now: clk.Now}, opsPolicy())
	for _, p := range []string{"team-*", "a?c", "ops[1]", "{x}"} {
		_, err := e.Grant(policy.Grant{Principal: p, Tool: "terraform.plan", Exact: true, Expires: clk.Now().Add(time.Hour)})
		require.NoError(t, err, p)
	}
	for _, tc := range []struct {
		about, principal, name string
		want                   string
	}{
		{"the principal named, the name named", "team-*", "terraform.plan", allow},
		{"a '*' in the principal is not a wildcard", "team-a", "terraform.plan", approval},
		{"a '?' in the principal is not a wildcard", "abc", "terraform.plan", approval},
		{"a principal with brackets can be granted", "ops[1]", "terraform.plan", allow},
		{"another principal is not covered", "ops1", "terraform.plan", approval},
		{"another name of the same tool is not covered", "team-*", "terraform.apply", approval},
		{"a longer name is not covered", "team-*", "terraform.plans", approval},
		{"a deny stays a deny", "team-*", "terraform.destroy", deny},
	} {
		assert.Equal(t, tc.want, decide(t, e, tc.principal, tc.name).Action, tc.about)
	}
}

// TestGrant_ExactRefusesPatternsAndEmptyNames: an exact grant names a
// principal and a command; a tool pattern, an empty principal and a
// principal the Executor would refuse create nothing.
func TestGrant_ExactRefusesPatternsAndEmptyNames(t *testing.T) {
	clk := newClock()
	e := newEngine(t, policy.Options{Now: clk.Now}, opsPolicy())
	expires := clk.Now().Add(time.Hour)
	for _, tc := range []struct {
		about string
		grant policy.Grant
		path  string
	}{
		{"a tool pattern is not a command name", policy.Grant{Principal: "alice", Tool: "terraform.*", Exact: true, Expires: expires}, "grant.tool"},
		{"the tool is required", policy.Grant{Principal: "alice", Exact: true, Expires: expires}, "grant.tool"},
		{"the principal is required", policy.Grant{Tool: "terraform.plan", Exact: true, Expires: expires}, "grant.principal"},
		{"a principal with white space", policy.Grant{Principal: "al ice", Tool: "terraform.plan", Exact: true, Expires: expires}, "grant.principal"},
		{"a granted_by with a control character", policy.Grant{Principal: "alice", Tool: "terraform.plan", Exact: true, Expires: expires, GrantedBy: "bob\n"}, "grant.granted_by"},
		{"a malformed approval ID", policy.Grant{Principal: "alice", Tool: "terraform.plan", Exact: true, Expires: expires, Approval: "a b"}, "grant.approval"},
		{"an exact grant is bounded like any other", policy.Grant{Principal: "alice", Tool: "terraform.plan", Exact: true, Expires: clk.Now().Add(25 * time.Hour)}, "grant.expires"},
	} {
		id, err := e.Grant(tc.grant)
		assert.Empty(t, id, tc.about)
		var ce *policy.ConfigError
		require.ErrorAs(t, err, &ce, tc.about)
		assert.Equal(t, tc.path, ce.Path, tc.about)
	}
	assert.Empty(t, e.Grants(), "nothing was created")
}

// TestGrant_ListsWhoGrantedItAndWithWhichApproval: Grants returns an
// exact grant with who made it and the approval it was made with, and
// Revoke ends it like any other.
func TestGrant_ListsWhoGrantedItAndWithWhichApproval(t *testing.T) {
	clk := newClock()
	e := newEngine(t, policy.Options{Now: clk.Now}, opsPolicy())
	ap := uuid.Must(uuid.NewV7()).String()
	g := policy.Grant{Principal: "agent-7", Tool: "kubectl.rollout", Exact: true, Expires: clk.Now().Add(30 * time.Minute), GrantedBy: "alice", Approval: ap}
	id, err := e.Grant(g)
	require.NoError(t, err)
	g.ID, g.Created = id, clk.Now()
	assert.Equal(t, []policy.Grant{g}, e.Grants())
	assert.Equal(t, id, decide(t, e, "agent-7", "kubectl.rollout").Grant)
	assert.True(t, e.Revoke(id))
	assert.Equal(t, approval, decide(t, e, "agent-7", "kubectl.rollout").Action)
}
