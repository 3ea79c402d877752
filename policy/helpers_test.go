package policy_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/policy"
)

// clock is a fake clock that tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2030, 1, 2, 15, 4, 5, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
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
