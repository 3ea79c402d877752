package execgatetest

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// kitRecorder is a reporter that records what a kit's check reports
// instead of failing the test, so that the kit's own tests can run it
// against broken implementations and assert that it fails.
type kitRecorder struct {
	t        *testing.T // what TempDir and Setenv use
	mu       sync.Mutex
	failures []string
}

func (r *kitRecorder) Helper() {}

func (r *kitRecorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

// Fatalf records the failure and ends the check's goroutine, as
// testing.T's Fatalf does.
func (r *kitRecorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *kitRecorder) TempDir() string { return r.t.TempDir() }

// Setenv expects the variable to be set already, by the test that runs
// the kit (testing.T.Setenv cannot be called from parallel subtests), and
// refuses to change it.
func (r *kitRecorder) Setenv(key, value string) {
	if got, ok := os.LookupEnv(key); !ok || got != value {
		r.t.Fatalf("the kit sets %s=%q; set it in the test that runs the kit", key, value)
	}
}

// runCheck runs one check on its own goroutine, as t.Run would, and
// returns what it reported.
func runCheck(t *testing.T, check func(reporter)) []string {
	r := &kitRecorder{t: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r)
	}()
	<-done
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.failures)
}

// brokenCase is an implementation with one property of its contract
// broken, and the checks of the kit that must report it.
type brokenCase[T any] struct {
	name     string
	protects string // what the failing checks protect, in a sentence
	impl     T
	want     []string // checks that must fail
}

// requireEveryCheckCanFail fails unless each named check is shown to fail
// by at least one broken case: a check that nothing breaks might be one
// that cannot fail.
func requireEveryCheckCanFail[T any](t *testing.T, checks []string, cases []brokenCase[T]) {
	t.Helper()
	shown := map[string]bool{}
	for _, c := range cases {
		for _, w := range c.want {
			if !slices.Contains(checks, w) {
				t.Errorf("case %q expects a check %q that the kit does not have", c.name, w)
			}
			shown[w] = true
		}
	}
	for _, name := range checks {
		if !shown[name] {
			t.Errorf("no broken implementation shows that check %s can fail", name)
		}
	}
}
