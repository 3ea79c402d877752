// Package fakeclock is the clock the module's tests move by hand.
//
// A Clock's Now method is the func() time.Time that execgate.Config.Now,
// execgate.MemoryStoreOptions.Now, policy.Options.Now and
// config.LoadOptions.Now take, so one Clock can be the only time every
// part of a test gate sees. It reads the same time until the test moves
// it with Set or Advance; a ticking Clock (see NewTicking) also moves
// forward by itself at every reading, for tests that need readings to
// differ.
package fakeclock

import (
	"sync"
	"time"
)

// Clock is a settable clock. It is safe for concurrent use. The zero
// Clock reads the zero time and does not tick.
type Clock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

// New returns a Clock that reads start until it is moved.
func New(start time.Time) *Clock {
	return &Clock{t: start}
}

// NewTicking returns a Clock that moves forward by step before each
// reading: the first Now returns start+step, the next start+2*step, and
// so on, so no two readings are equal when step is positive.
func NewTicking(start time.Time, step time.Duration) *Clock {
	return &Clock{t: start, step: step}
}

// Now returns the clock's time, after moving it by its step if it ticks.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	return c.t
}

// Set moves the clock to t, forward or back.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Advance moves the clock by d, which may be negative.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
