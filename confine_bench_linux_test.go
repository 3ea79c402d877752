//go:build linux

package execgate

import (
	"context"
	"testing"
	"time"
)

// BenchmarkConfine measures what a Confinement costs per call: /bin/true
// run through an Executor with DefaultExecFn, unconfined, confined with
// the network left on (re-exec helper, no_new_privs, Landlock, limits),
// and confined without network (the same, plus new user and network
// namespaces). The helper is this test binary, so its start-up is part of
// the figure, as a program's own start-up will be in production.
func BenchmarkConfine(b *testing.B) {
	dir := b.TempDir()
	limits := Limits{CPU: 10 * time.Second, AddressSpace: 4 << 30, Files: 256, FileSize: 64 << 20, Processes: 4096}
	for _, c := range []struct {
		name    string
		confine *Confinement
	}{
		{"unconfined", nil},
		{"landlock+limits", &Confinement{Read: []string{"/usr/share"}, Network: true, Limits: limits}},
		{"landlock+limits+no-network", &Confinement{Read: []string{"/usr/share"}, Limits: limits}},
	} {
		b.Run(c.name, func(b *testing.B) {
			a, err := NewAllowlist(CommandSpec{Name: "true", Command: "/bin/true", Dir: dir, Args: Fixed(), Confine: c.confine})
			if err != nil {
				b.Fatal(err)
			}
			x, err := NewExecutor(Config{Allowlist: a})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := x.Run(ctx, "true", nil)
				if err != nil || !res.OK || len(res.Unconfined) > 0 {
					b.Fatal(err, res)
				}
			}
		})
	}
}
