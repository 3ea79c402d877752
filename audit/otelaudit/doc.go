// Package otelaudit turns the audit Events of an execgate.Executor into
// OpenTelemetry spans, one per call, run or refused. It uses only the
// OpenTelemetry API; bring your own SDK and exporter.
//
//	x, err := execgate.NewExecutor(execgate.Config{
//		Allowlist: allow,
//		Auditor:   audit.Multi(chain, otelaudit.New(tracerProvider)),
//	})
//
// Spans carry the semantic conventions' process attributes where they
// apply (process.executable.path, process.executable.name,
// process.exit.code, error.type) and execgate's own (execgate.name,
// execgate.decision, execgate.rule, execgate.termination, execgate.error,
// ...; see the Key constants). process.command_args, the argv, is left
// out unless WithArgs is given: arguments can hold secrets. Stdin and
// environment values never appear; execgate.env_keys names the variables.
//
// A Sink is not an execgate.ReadyAuditor: span export is best effort, so
// a Sink alone never stops a call. Pair it with an audit.Chain for a record
// that does.
package otelaudit
