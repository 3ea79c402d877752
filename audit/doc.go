// Package audit records what an execgate.Executor does: one entry per
// call, run or refused, in a log, a tamper-evident file, or both.
//
// The Executor hands exactly one execgate.Event per Run, Propose, Execute
// and Reject to its Config.Auditor. This package provides Auditors for it:
//
//   - Chain appends each Event as one line of a hash-chained JSON-lines
//     file (see Entry for the fields), which Verify checks.
//   - SlogSink writes each Event as a log/slog record.
//   - Multi hands each Event to several of them.
//
// Spans for OpenTelemetry are in the sub-package otelaudit.
//
// An Event, and so every entry, record and span, never holds stdin or
// environment values: only the size of stdin and the names of the
// environment variables. A spec with SensitiveArgs leaves only the SHA-256
// of its argv.
//
// # Wiring
//
//	chain, err := audit.OpenChain("/var/log/execgate/audit.jsonl", audit.ChainOptions{})
//	if err != nil {
//		return err // a broken existing file is refused: see below
//	}
//	defer chain.Close()
//	x, err := execgate.NewExecutor(execgate.Config{
//		Allowlist: allow,
//		Auditor:   audit.Multi(chain, audit.NewSlogSink(logger)),
//	})
//
// # Fail closed, recover without a restart
//
// Chain and SlogSink are [execgate.ReadyAuditor]s. When a Chain cannot
// write or sync an entry (a full disk, an I/O error), Audit returns the
// error, so the call whose intent it was is refused, and the file is cut
// back to the end of its last whole entry. From then on Ready reports the
// failure, and the Executor refuses every call that needs a record (a
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
// the previous line's bytes without its newline; Genesis on the first
// line), the Event's fields, and last hash (the hex SHA-256 of the line's
// bytes before the comma that precedes "hash"). So an edited line no
// longer matches its own hash, a deleted, repeated or reordered line
// breaks the sequence, and a line rewritten with hashes to match breaks
// the prev of the line after it. Each entry is written with a single write
// and, unless ChainOptions.NoSync is set, synced before Audit returns.
//
// OpenChain continues an existing file after verifying it (only its last
// line with ChainOptions.TailOnly) and refuses a broken one, leaving it
// untouched: move it aside, keep it as evidence, and start a new file. A
// crash in the middle of a write leaves a last line without a newline,
// which is refused the same way.
//
// # Verifying a file
//
//	if err := audit.VerifyFile(path); err != nil {
//		var ve *audit.VerifyError
//		if errors.As(err, &ve) {
//			fmt.Printf("line %d: %s\n", ve.Line, ve.Problem)
//		}
//	}
//
// Verify reports the first broken or missing line and what is wrong with
// it. No file can prove on its own that nothing was cut from its end, or
// that its last line was not rewritten by someone who recomputed its
// hashes: the chain has no secret key. Keep Chain.Head, now and then,
// somewhere its writers cannot change, and check the file against it with
// VerifyAnchored.
package audit
