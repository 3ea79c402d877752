//go:build linux

package execgate

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/execgate/execgate/internal/confine"
)

// BenchmarkConfine measures what a Confinement costs per call: /bin/true
// run through an Executor with DefaultExecFn, unconfined, confined with
// the network left on (re-exec helper, no_new_privs, Landlock, limits),
// and confined without network (the same, plus new user and network
// namespaces). The helper is this test binary, so its start-up is part of
// the figure, as a program's own start-up will be in production. Each
// confined case runs with the warm helpers DefaultExecFn keeps, and cold,
// each call starting its own.
func BenchmarkConfine(b *testing.B) {
	dir := b.TempDir()
	limits := Limits{CPU: 10 * time.Second, AddressSpace: 4 << 30, Files: 256, FileSize: 64 << 20, Processes: 4096}
	network := &Confinement{Read: []string{"/usr/share"}, Network: true, Limits: limits}
	noNetwork := &Confinement{Read: []string{"/usr/share"}, Limits: limits}
	for _, c := range []struct {
		name    string
		confine *Confinement
		cold    bool
		ready   bool
	}{
		{"unconfined", nil, false, false},
		{"landlock+limits", network, false, false},
		{"landlock+limits+no-network", noNetwork, false, false},
		{"landlock+limits/cold", network, true, false},
		{"landlock+limits+no-network/cold", noNetwork, true, false},
		{"landlock+limits/ready", network, false, true},
		{"landlock+limits+no-network/ready", noNetwork, false, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			warmHelpers.setOff(c.cold)
			defer warmHelpers.setOff(false)
			a, err := NewAllowlist(CommandSpec{Name: "true", Command: "/bin/true", Dir: dir, Args: Fixed(), Confine: c.confine})
			if err != nil {
				b.Fatal(err)
			}
			x, err := NewExecutor(Config{Allowlist: a})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if c.ready {
				x.Run(ctx, "true", nil) // the pool makes helpers of a kind once it has seen a call of it
			}
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				if c.ready {
					// What a call waits for when a warm helper is ready
					// for it, and nothing else competes for the processor.
					b.StopTimer()
					waitForWarmHelper(b, namespacesFor(c.confine))
					b.StartTimer()
				}
				res, err := x.Run(ctx, "true", nil)
				if err != nil || !res.OK || len(res.Unconfined) > 0 {
					b.Fatal(err, res)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// waitForWarmHelper waits until the pool holds a ready helper of kind ns,
// and a little more, so that its start has finished using the processor.
func waitForWarmHelper(b *testing.B, ns confine.Namespaces) {
	key := warmKey{ns, os.Geteuid(), os.Getegid()}
	for range 1000 {
		warmHelpers.mu.Lock()
		k := warmHelpers.kinds[key]
		n := 0
		if k != nil {
			n = len(k.idle)
		}
		warmHelpers.mu.Unlock()
		if n == warmPerKind {
			time.Sleep(5 * time.Millisecond)
			return
		}
		time.Sleep(time.Millisecond)
	}
	b.Fatal("no warm helper was made ready")
}

// processCPU is the processor time this process and its reaped children
// have used: what a call costs the machine, wherever it was spent.
func processCPU() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	var d time.Duration
	for _, tv := range []syscall.Timeval{self.Utime, self.Stime, kids.Utime, kids.Stime} {
		d += time.Duration(tv.Nano())
	}
	return d
}
