package pgstore_test

import (
	"context"
	"testing"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
)

// BenchmarkAuditedRun is one Run with its intent and outcome appended to
// a PostgreSQL audit table, with a Recorder as the ExecFn, so that no
// process is started: "one-writer" runs calls one after the other,
// "parallel" from 4 goroutines per GOMAXPROCS on one pool at once, where
// every entry waits for the table's lock (ns/op is per call).
func BenchmarkAuditedRun(b *testing.B) {
	for _, bc := range []struct {
		name    string
		writers int
	}{{"one-writer", 1}, {"parallel", 4}} {
		b.Run(bc.name, func(b *testing.B) {
			x := auditedExecutor(b, newAuditor(b, newPool(b, nil), newAuditTable(b), 0), execgatetest.NewRecorder().Exec)
			b.SetParallelism(bc.writers)
			if bc.writers == 1 {
				for b.Loop() {
					mustRun(b, x)
				}
				return
			}
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					mustRun(b, x)
				}
			})
		})
	}
}

func mustRun(b *testing.B, x *execgate.Executor) {
	if res, err := x.Run(context.Background(), "deploy", deployInput); err != nil || !res.OK {
		b.Errorf("Run = %+v, %v", res, err)
	}
}
