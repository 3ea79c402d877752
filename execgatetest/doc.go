// Package execgatetest provides test doubles and conformance kits for code
// that uses package execgate.
//
// A [Recorder] is a fake ExecFn: plug it into execgate.Config.ExecFn and your
// tests exercise the whole gate (lookup, validation, policy, approvals)
// without starting a process, then assert on the exact Invocations the gate
// would have started.
//
// [TestApprovalStore] checks an ApprovalStore implementation against the
// contract documented on execgate.ApprovalStore, and [TestExecFn] checks an
// ExecFn that starts real processes against the contract documented on
// execgate.ExecFn.
package execgatetest
