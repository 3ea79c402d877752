package audit

import (
	"context"
	"errors"

	"github.com/execgate/execgate"
)

// Multi returns an Auditor that hands every [execgate.Event] to each of
// auditors, in order, as [execgate.Config] takes a single Auditor. Its
// Audit calls every auditor even when one fails and returns their errors
// joined; its Ready asks every auditor that is an
// [execgate.ReadyAuditor] and returns their errors joined, so the
// Executor fails closed when any of them is not ready. Nil auditors are
// skipped.
//
// An intent that one auditor cannot record refuses the call even when the
// others recorded it. Those others then hold an intent for a process that
// did not start, followed by the Executor's record of the refusal, which
// does not share the intent's trace ID, so [VerifyReport] lists that
// intent as unfinished.
//
// Wire a [Chain] and a [SlogSink] together so that the record of a call
// whose chain entry failed still reaches the log.
func Multi(auditors ...execgate.Auditor) execgate.ReadyAuditor {
	m := make(multi, 0, len(auditors))
	for _, a := range auditors {
		if a != nil {
			m = append(m, a)
		}
	}
	return m
}

type multi []execgate.Auditor

func (m multi) Audit(ctx context.Context, ev execgate.Event) error {
	var errs []error
	for _, a := range m {
		if err := a.Audit(ctx, ev); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (m multi) Ready(ctx context.Context) error {
	var errs []error
	for _, a := range m {
		if r, ok := a.(execgate.ReadyAuditor); ok {
			if err := r.Ready(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
