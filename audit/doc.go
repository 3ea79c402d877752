// Package audit records what an [execgate.Executor] does: every call, run
// or refused, in a log, a tamper-evident file, or both.
//
// The Executor hands its Config.Auditor an [execgate.Event] for every Run,
// Propose, Execute and Reject, and for every refusal a server reports with
// Executor.RecordRefusal. A call that starts a process is handed over
// twice: its intent ([execgate.PhaseIntent]) just before the process is
// handed to the ExecFn, and its outcome ([execgate.PhaseOutcome]) when the
// process has ended, both with the call's trace ID (the Result's ID).
// Every other call has an outcome only. An intent that cannot be recorded
// refuses the call, and nothing starts: no record, no start. This package
// provides Auditors for it:
//
//   - [Chain] appends each Event as one line of a hash-chained JSON-lines
//     file (see [Entry] for the fields), which [Verify] checks.
//   - [SlogSink] writes each Event as a log/slog record.
//   - [Multi] hands each Event to several of them.
//
// Spans for OpenTelemetry are in the sub-package otelaudit, one per call.
//
// An Event, and so every entry, record and span, never holds stdin or
// environment values: only the size of stdin and the names of the
// environment variables. A spec with SensitiveArgs leaves only a keyed
// hash of its argv.
//
// # Wiring
//
//	chain, err := audit.OpenChain("/var/log/execgate/audit.jsonl", audit.ChainOptions{})
//	if err != nil {
//		return err // a damaged existing file is refused: see below
//	}
//	defer chain.Close()
//	if r := chain.Recovery(); r.TornBytes > 0 || len(r.Unfinished) > 0 {
//		logger.Warn("audit trail recovered", "tornBytes", r.TornBytes, "unfinished", len(r.Unfinished))
//	}
//	x, err := execgate.NewExecutor(execgate.Config{
//		Allowlist: allow,
//		Auditor:   audit.Multi(chain, audit.NewSlogSink(logger)),
//	})
//
// # What the trail holds
//
// Every process that started has an intent entry, written (and, unless
// [ChainOptions].NoSync is set, synced) before the start, and no process
// without one started, unless Config.AuditFailOpen lets calls go ahead
// unrecorded: a [Chain] returns nil from Audit only for an entry that is in
// the file whole. When the process ends, its outcome follows, with how it
// ended. A refused call has its outcome, naming the kind of refusal.
//
// A crash, a kill or a power cut of the gate while a process runs leaves
// that call's intent with no outcome. That is not a broken chain: [Verify]
// passes the file, and [VerifyReport] lists each such call ([Unfinished]:
// its line, trace ID, op, name, principal and time) as started with no
// outcome recorded. A crash in the middle of a write leaves a torn last
// line, which [OpenChain] cuts when it opens the file again (see below).
//
// # Fail closed, recover without a restart
//
// Chain and [SlogSink] are each an [execgate.ReadyAuditor]. When a Chain
// cannot write or sync an entry (a full disk, an I/O error), Audit returns
// the error, so the call whose intent it was is refused, and the file is
// cut back to the end of its last whole entry. From then on Ready reports
// the failure, and the Executor refuses every call that needs a record (a
// process to start, an approval to store or take) with an
// *[execgate.AuditError] instead of running it unrecorded. Ready writes
// nothing; the Executor still hands each refusal to the Auditor, and that
// Audit is a new attempt: once the disk has space again, the first of them
// is written, the failure clears, and calls run again. The call whose
// outcome could not be written had already run; its Result is returned as
// usual, and its intent stays unfinished in the trail. A SlogSink whose
// handler fails behaves the same way.
//
// # The chain file
//
// Each line is a JSON object: seq (1, 2, 3, ...), prev (the hex SHA-256 of
// the previous line's bytes without its newline; [Genesis] on the first
// line), the Event's fields (phase among them), and last hash (the hex
// SHA-256 of the line's bytes before the comma that precedes "hash"). So
// an edited line no longer matches its own hash, a deleted, repeated or
// reordered line breaks the sequence, and a line rewritten with hashes to
// match breaks the prev of the line after it. Each entry is written with a
// single write and, unless [ChainOptions].NoSync is set, synced before
// Audit returns. Lines a Chain wrote before Events had a phase have none,
// and are outcomes.
//
// OpenChain continues an existing file after verifying it (only its last
// line with [ChainOptions].TailOnly). A torn last line (no newline, or a
// line that is not JSON: what a crash or a full disk mid-write leaves) is
// cut so that a restarted server appends without a person's help;
// [Chain.Recovery] says how many bytes were cut and which calls the file
// holds unfinished. Any other damage is refused and the file left
// untouched: move it aside, keep it as evidence, and start a new file.
//
// # Verifying a file
//
//	f, err := os.Open(path)
//	if err != nil {
//		return err
//	}
//	defer f.Close()
//	rep, err := audit.VerifyReport(f)
//	var ve *audit.VerifyError
//	if errors.As(err, &ve) {
//		fmt.Printf("line %d: %s\n", ve.Line, ve.Problem)
//	}
//	for _, u := range rep.Unfinished {
//		fmt.Println(u) // seq 7: run git.log by alice at ...: started, no outcome recorded
//	}
//
// Verify reports the first broken or missing line and what is wrong with
// it. No file can prove on its own that nothing was cut from its end, or
// that its last line was not rewritten by someone who recomputed its
// hashes: the chain has no secret key. Keep [Chain.Head], now and then,
// somewhere its writers cannot change, and check the file against it with
// [VerifyAnchored].
package audit
