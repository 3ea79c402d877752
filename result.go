package execgate

import "time"

// Termination says how a call's process ended.
//
//	Termination        ExitCode  OK     Signal            SpawnError  PID
//	exit               status    if 0   ""                ""          set
//	signal             -1        false  the signal        ""          set
//	timeout            -1        false  usually SIGKILL   ""          set
//	no_output_timeout  -1        false  usually SIGKILL   ""          set
//	canceled           -1        false  usually SIGKILL   ""          set, or 0 if ctx was done before start
//	spawn_error        -1        false  ""                set         0
//
// A spec's required [Confinement] that the kernel cannot apply ends the call
// in "spawn_error" before the command runs. A resource limit of a
// Confinement that stops the command ends it in "signal", with the signal
// the kernel sent (SIGXCPU or SIGKILL for CPU, SIGXFSZ for file size, and
// whatever the program does when an allocation fails for address space).
//
// Stdout, Stderr and their dropped counts account for every byte the
// command's processes wrote before the output was last read, in every
// termination but spawn_error; OutputIncomplete is set, in any of them,
// when a pipe was still held open by a process outside the group when
// reading stopped, so that later bytes may be missing.
//
// "timeout", "no_output_timeout" and "canceled" are reported when the
// process group was killed for that reason; if the leader had already
// exited on its own with a status, the termination is "exit".
type Termination string

// The terminations a [Result] can report.
const (
	// TerminationExit: the process exited on its own with ExitCode.
	TerminationExit Termination = "exit"
	// TerminationSignal: a signal the [Executor] did not send ended the
	// process.
	TerminationSignal Termination = "signal"
	// TerminationTimeout: the spec's Timeout passed and the process group
	// was killed.
	TerminationTimeout Termination = "timeout"
	// TerminationNoOutputTimeout: the process wrote nothing for the spec's
	// NoOutputTimeout and its process group was killed.
	TerminationNoOutputTimeout Termination = "no_output_timeout"
	// TerminationCanceled: the call's context was done and the process
	// group was killed, or the context was done before the process started.
	TerminationCanceled Termination = "canceled"
	// TerminationSpawnError: no process ran: the executable could not be
	// started, its content did not match the spec's SHA256 pin, or the
	// spec's required [Confinement] could not be applied.
	TerminationSpawnError Termination = "spawn_error"
)

func (t Termination) known() bool {
	switch t {
	case TerminationExit, TerminationSignal, TerminationTimeout,
		TerminationNoOutputTimeout, TerminationCanceled, TerminationSpawnError:
		return true
	}
	return false
}

// Result is the record of one call that passed validation and policy. Run
// and Execute return one for every outcome of the process, with a nil
// error; see [Termination] for which fields are set in which case. A Result is
// safe to log and serialize: it never carries the child's environment or
// stdin.
type Result struct {
	// ID is a new UUIDv7 for this call, time-ordered.
	ID string `json:"id"`
	// ApprovalID is the ID of the approval that authorized the call, or ""
	// for Run.
	ApprovalID string `json:"approvalId,omitempty"`
	// Name is the logical command name.
	Name string `json:"name"`
	// Command is the absolute path of the executable.
	Command string `json:"command"`
	// Args are the arguments after the program name.
	Args []string `json:"args"`
	// ExitCode is the exit status if [Termination] is "exit", else -1.
	ExitCode int `json:"exitCode"`
	// OK reports whether the process exited on its own with status 0.
	OK bool `json:"ok"`
	// Termination says how the process ended. It is never empty.
	Termination Termination `json:"termination"`
	// Signal is the name of the signal that ended the process, such as
	// "SIGKILL", or "".
	Signal string `json:"signal,omitempty"`
	// PID is the process ID, or 0 if no process was started.
	PID int `json:"pid"`
	// Stdout and Stderr hold at most the spec's MaxOutput bytes each,
	// cut at a UTF-8 boundary. They may hold bytes that are not UTF-8.
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	// StdoutDropped and StderrDropped count the bytes that were read and
	// not kept.
	StdoutDropped int64 `json:"stdoutDropped"`
	StderrDropped int64 `json:"stderrDropped"`
	// OutputIncomplete reports that Stdout or Stderr may be missing bytes
	// that were neither kept nor counted in the dropped counts: a process
	// that left the process group still held an output pipe when the
	// [ExecFn] stopped reading (see [DefaultExecFn]). It is false whenever
	// every byte written was read, which is always the case when the
	// command's processes all ended with its leader.
	OutputIncomplete bool `json:"outputIncomplete,omitempty"`
	// SpawnError says why no process ran, when [Termination] is
	// "spawn_error". A required [Confinement] the kernel cannot apply is
	// one such reason.
	SpawnError string `json:"spawnError,omitempty"`
	// Unconfined names the parts of the spec's best-effort [Confinement]
	// that could not be applied, so that the process ran with more access
	// than the spec asks for: "filesystem" (no filesystem rules),
	// "filesystem.truncate" (filesystem rules, but files outside the
	// write paths could still be truncated), "network" (the caller's
	// network), "processes" (no PID namespace: processes that left the
	// command's group may outlive the call), "filesystem.metadata" (no
	// read-only mount namespace: the mode, owner, times and attributes of
	// files outside the write paths may change), "limits" (no resource
	// limits) and "no_new_privs". It is
	// empty when everything was applied, when the spec has no
	// Confinement, and for a spawn_error.
	Unconfined []string `json:"unconfined,omitempty"`
	// Connections are the connection attempts the command made through
	// the egress proxy of its [Confinement] (see [Egress]): the first
	// [MaxConnections] of them, in order, each with its destination,
	// whether it was allowed (and if not, why) and the bytes each way.
	// ConnectionsDropped counts the attempts past those. Both are empty
	// for a spec without an Egress, and for a spawn_error.
	Connections        []Connection `json:"connections,omitempty"`
	ConnectionsDropped int          `json:"connectionsDropped,omitempty"`
	// At is when the call was handed to the [ExecFn], from [Config.Now].
	At time.Time `json:"at"`
	// Duration is how long the [ExecFn] took, measured with [Config.Now]. It
	// is encoded in JSON as integer nanoseconds.
	Duration time.Duration `json:"duration"`
}
