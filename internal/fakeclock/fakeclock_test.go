package fakeclock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/execgate/execgate/internal/fakeclock"
)

var start = time.Date(2030, 1, 2, 15, 4, 5, 0, time.UTC)

func TestClock_ReadsTheSameTimeUntilMoved(t *testing.T) {
	c := fakeclock.New(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now() = %v, want %v", got, start)
	}
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("a second Now() = %v, want %v: an unmoved clock stands still", got, start)
	}
	c.Advance(time.Minute)
	if got, want := c.Now(), start.Add(time.Minute); !got.Equal(want) {
		t.Errorf("after Advance(1m): %v, want %v", got, want)
	}
	c.Advance(-2 * time.Minute)
	if got, want := c.Now(), start.Add(-time.Minute); !got.Equal(want) {
		t.Errorf("after Advance(-2m): %v, want %v", got, want)
	}
	c.Set(start.Add(time.Hour))
	if got, want := c.Now(), start.Add(time.Hour); !got.Equal(want) {
		t.Errorf("after Set: %v, want %v", got, want)
	}
	var zero fakeclock.Clock
	if got := zero.Now(); !got.IsZero() {
		t.Errorf("the zero Clock reads %v, want the zero time", got)
	}
}

func TestClock_TicksAtEveryReading(t *testing.T) {
	c := fakeclock.NewTicking(start, time.Millisecond)
	for i := 1; i <= 3; i++ {
		if got, want := c.Now(), start.Add(time.Duration(i)*time.Millisecond); !got.Equal(want) {
			t.Fatalf("reading %d: %v, want %v", i, got, want)
		}
	}
	c.Advance(time.Second)
	if got, want := c.Now(), start.Add(time.Second+4*time.Millisecond); !got.Equal(want) {
		t.Errorf("after Advance: %v, want %v", got, want)
	}
}

func TestClock_ConcurrentReadingsAreDistinct(t *testing.T) {
	c := fakeclock.NewTicking(start, time.Nanosecond)
	const n = 100
	seen := make(chan time.Time, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen <- c.Now()
		}()
	}
	wg.Wait()
	close(seen)
	distinct := map[time.Time]bool{}
	for t := range seen {
		distinct[t] = true
	}
	if len(distinct) != n {
		t.Errorf("%d concurrent readings gave %d distinct times", n, len(distinct))
	}
}
