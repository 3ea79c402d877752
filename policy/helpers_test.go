package policy_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/internal/fakeclock"
	"github.com/execgate/execgate/policy"
)

// newClock returns a clock that tests move by hand.
func newClock() *fakeclock.Clock {
	return fakeclock.New(time.Date(2030, 1, 2, 15, 4, 5, 0, time.UTC))
}

// rule is shorthand for a Rule.
func rule(action string, tools ...string) policy.Rule {
	return policy.Rule{Tools: tools, Action: action}
}

// newEngine builds an Engine or fails the test.
func newEngine(t testing.TB, opts policy.Options, policies ...policy.Policy) *policy.Engine {
	t.Helper()
	e, err := policy.New(policies, opts)
	require.NoError(t, err)
	return e
}

// decide asks e about principal calling name with args.
func decide(t testing.TB, e *policy.Engine, principal, name string, args ...string) execgate.Decision {
	t.Helper()
	d, err := e.Decide(context.Background(), execgate.Request{Principal: principal, Name: name, Argv: execgate.Argv{Args: args}})
	require.NoError(t, err)
	return d
}

const (
	allow    = execgate.ActionAllow
	deny     = execgate.ActionDeny
	approval = execgate.ActionRequireApproval
	limited  = execgate.ActionRateLimited
)
