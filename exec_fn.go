package execgate

import (
	"context"
	"time"
)

// Invocation is everything an [ExecFn] needs to start one process. The
// [Executor] builds it from the allowlisted spec and the validated [Argv];
// nothing in it comes from the caller except Args and Stdin, and those have
// passed the spec's schema.
type Invocation struct {
	// Name is the logical command name, for logging and test doubles.
	Name string
	// Path is the absolute path of the executable.
	Path string
	// SHA256 is the pinned lowercase hex digest of the executable's content,
	// or "" for no pin. An [ExecFn] that starts real processes must refuse to
	// start a file that does not match it.
	SHA256 string
	// Args are the arguments after the program name (argv[1:]).
	Args []string
	// Env is the child's whole environment as "KEY=value" entries, sorted.
	// It is never nil; an empty Env means an empty environment.
	Env []string
	// Dir is the absolute working directory.
	Dir string
	// Stdin is the child's whole standard input; nil means empty.
	Stdin []byte
	// Timeout bounds the call's wall time. It is always positive.
	Timeout time.Duration
	// NoOutputTimeout, if positive, bounds the silence on stdout and
	// stderr.
	NoOutputTimeout time.Duration
	// MaxOutput is how many bytes of each stream to keep. It is always
	// positive.
	MaxOutput int
	// Confine, if not nil, is the spec's normalized [Confinement], a copy
	// for this call. An [ExecFn] that starts real processes must apply all
	// of it, or, where it cannot: refuse to start anything ([Outcome.Err])
	// unless Confine.BestEffort is set, and then name what it did not
	// apply in [Outcome.Unconfined]. Nil means no confinement.
	Confine *Confinement
}

// Outcome is what a process did, as reported by an [ExecFn]. The [Executor]
// turns it into a [Result], normalizing it so that the rules documented on
// [Termination] hold whatever the ExecFn returned.
type Outcome struct {
	// ExitCode is the process's exit status when [Termination] is "" or
	// [TerminationExit]. The [Executor] reports -1 for every other termination.
	ExitCode int
	// Stdout and Stderr are the kept output. The [Executor] cuts them to
	// MaxOutput and adds what it cut to the dropped counts.
	Stdout, Stderr []byte
	// StdoutDropped and StderrDropped count bytes read and not kept.
	StdoutDropped, StderrDropped int64
	// OutputIncomplete reports that a stream may hold more than was read:
	// its pipe was still open when the [ExecFn] stopped reading, so bytes
	// written after that were neither kept nor counted.
	OutputIncomplete bool
	// Termination says how the process ended; "" means [TerminationExit].
	Termination Termination
	// Signal is the name of the signal that ended the process ("SIGKILL"),
	// or "" if it was not ended by a signal.
	Signal string
	// PID is the process ID, or 0 if no process was started.
	PID int
	// Unconfined names the parts of [Invocation.Confine] that were not
	// applied, in the vocabulary of [Result.Unconfined]; nil if everything
	// was (or there was no confinement).
	Unconfined []string
	// Connections are the connection attempts the command made through
	// its egress proxy (see [Egress]), in the order they were made; the
	// [Executor] keeps the first [MaxConnections] and counts the rest in
	// ConnectionsDropped, which an ExecFn that kept fewer may also set.
	Connections        []Connection
	ConnectionsDropped int
	// Err, if not nil, means the process could not be started; the
	// [Executor] then reports [TerminationSpawnError] with ExitCode -1, PID 0
	// and no Signal, keeping only Stdout and Stderr. Its message is shown
	// in [Result.SpawnError], so it must not contain secrets.
	Err error
}

// ExecFn starts one process as described by inv, waits for it within the
// limits inv sets, and reports what happened. It is the only part of
// execgate that touches processes, so tests can replace it (see package
// execgatetest).
//
// An ExecFn must honor every field of inv: exact argv, exact environment
// (never the caller's), Dir, Stdin, the timeouts and MaxOutput; it must
// return when ctx is done, ending the process; and it must never run a
// shell. It reports every result, including a failure to start, in the
// [Outcome], and may be called concurrently.
type ExecFn func(ctx context.Context, inv Invocation) Outcome

// DefaultExecFn is the [ExecFn] used when [Config.ExecFn] is nil. On Unix
// systems (Linux, macOS, the BSDs) it starts the executable directly with
// os/exec, never through a shell, as the leader of a new process group,
// with argv[0] set to inv.Path, exactly inv.Env (a nil Env is empty, never
// this process's environment) and inv.Dir. Stdin is inv.Stdin, written by
// the parent so that a child that does not read it cannot block; an empty
// Stdin is the null device. Stdout and stderr are read into buffers of at
// most inv.MaxOutput bytes each while the rest is drained and counted, so
// the child never blocks on a full pipe and memory stays bounded.
//
// The child inherits no descriptor but those three: before each start,
// DefaultExecFn marks every descriptor of the calling process above stderr
// close-on-exec (one close_range call on Linux), so a descriptor the
// program that started this process left open, a socket or a file, does
// not reach a command, confined or not. That is a change to the calling
// process that stays: a descriptor it meant to hand to a program it
// executes itself must be passed explicitly (os/exec's ExtraFiles) or
// marked inheritable again. One created without close-on-exec by a raw
// system call between that moment and the fork can still reach the child.
//
// If ctx is already done, nothing is started and the [Outcome] says
// [TerminationCanceled]. inv.Timeout counts from the start of the process.
// When it passes, when no output arrives on either stream for
// inv.NoOutputTimeout, or when ctx is done, the whole process group is
// killed with SIGKILL, and the leader by its own process ID as well (it
// may have moved itself into another group), and the Outcome reports that
// reason, with the signal that ended the leader; a leader that had
// already exited with a status
// reports [TerminationExit]. A leader ended by a signal DefaultExecFn did not
// send reports [TerminationSignal]. When the leader exits on its own,
// whatever is left of its group is killed too. On Linux the group is
// killed before the leader is reaped, so its process group ID cannot have
// been reused. Elsewhere the leader has to be reaped first: a group kill
// then could, in principle, reach an unrelated group that took over the ID
// in between, which needs every process ID to have been recycled within
// that short window.
//
// DefaultExecFn returns about a second after the leader has ended at most,
// even if a process that left the group (with setsid, for example) still
// holds the output pipes open: the output it writes after that is lost,
// [Outcome.OutputIncomplete] says so, and the process itself is beyond
// DefaultExecFn's reach and keeps running. Output already in the pipes
// when that second ends is still read, so a pause of the calling process
// (a stopped process, a starved machine) loses nothing that the command's
// own processes wrote. A leader that cannot be killed at all (stuck in the
// kernel) delays the return until it ends.
//
// On Linux (5.3 and later, which have pidfds) an unconfined call, and a
// confined one handed to a warm helper, is supervised by the calling
// goroutine alone, on its own thread: one poll waits for output, for the
// leader's exit, for ctx and for the next limit, so its supervision
// starts no goroutine (one writes stdin when there is any) and no timer
// (a warm helper's handoff has a goroutine of its own that reads the
// helper's report, and a Watch one that delivers its events). Elsewhere,
// and for a confined call that starts a helper of its own, a goroutine
// reads each stream and the limits are timers.
//
// On Linux the commands die with the process that started them: the
// leader has a parent-death signal (SIGKILL, sent when this process dies,
// however it dies), and a watchdog, this program started again once as a
// small process of its own (see "When the gate dies" in the package
// documentation), kills the process group of every call still running
// when this process's end closes the pipe it reads. A process that left
// the group is not reached, and neither is a command of the same user
// that works to escape (see the package documentation). On other Unix
// systems neither exists: a command whose gate is killed keeps running.
//
// If inv.SHA256 is set, the file is opened and hashed through the opened
// descriptor first, and on a mismatch no process is started and the
// Outcome carries an error. On Linux that same descriptor is executed
// (through /proc/self/fd, so /proc must be mounted; without it nothing is
// started), so replacing the file at inv.Path between the check and the
// exec, by a rename or a symbolic link, does not change what runs. A "#!"
// script cannot be started this way. An in-place write to the same file by
// someone allowed to write it is not prevented, so a pinned executable
// must not be writable by anyone the pin is meant to guard against. On
// other Unix systems the path is hashed and then executed by path, which
// leaves a short window in which a replaced file would run.
//
// Start failures are reported in [Outcome.Err] with PID 0; the message names
// the executable and, if it is at fault, the working directory, and never
// the environment or stdin.
//
// If inv.Confine is set, on Linux the process is started through the
// confinement helper described in the package documentation: the helper
// becomes the command, so the PID, the process group, the exit status and
// the output are the command's own (the command is the first process of a
// PID namespace of its own, which changes how some signals end it: see
// [Limits]). A confinement the kernel cannot apply
// is a spawn error unless inv.Confine.BestEffort is set; then the process
// runs with what could be applied and [Outcome.Unconfined] says what could
// not. On other Unix systems a confinement cannot be applied at all: a
// required one is a spawn error, a best-effort one runs the command
// unconfined and says so.
//
// On other platforms DefaultExecFn starts nothing and reports an error.
var DefaultExecFn ExecFn = defaultExecFn
