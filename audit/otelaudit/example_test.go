package otelaudit_test

import (
	"context"
	"encoding/json"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit/otelaudit"
	"github.com/execgate/execgate/execgatetest"
)

// Every call through the Executor becomes one span; a refusal is an error.
func ExampleNew() {
	// Any TracerProvider works; this one keeps the spans in memory.
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())

	allow, err := execgate.NewAllowlist(execgate.CommandSpec{
		Name:    "git.status",
		Command: "/bin/echo", // stands in for git: the Recorder starts nothing
		Args:    execgate.Fixed("status"),
	})
	if err != nil {
		panic(err)
	}
	x, err := execgate.NewExecutor(execgate.Config{
		Allowlist: allow,
		ExecFn:    execgatetest.NewRecorder().Exec,
		Auditor:   otelaudit.New(tp),
	})
	if err != nil {
		panic(err)
	}
	_, _ = x.Run(context.Background(), "git.status", json.RawMessage(`{}`))
	_, _ = x.Run(context.Background(), "git.push", json.RawMessage(`{}`))

	for _, s := range spans.Ended() {
		attrs := map[string]string{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		fmt.Printf("%s name=%s path=%s exit=%s status=%s %q\n", s.Name(), attrs[otelaudit.KeyName],
			attrs[otelaudit.KeyExecutablePath], attrs[otelaudit.KeyExitCode], s.Status().Code, s.Status().Description)
	}
	// Output:
	// execgate.run name=git.status path=/bin/echo exit=0 status=Unset ""
	// execgate.run name=git.push path= exit= status=Error "refused: not_found"
}
