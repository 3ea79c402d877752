// Package execgate is a gate between an untrusted caller, such as an AI
// agent, and the operating system's processes.
//
// A caller never names an executable or writes a command line. It asks for a
// logical command by name ("git.log") and hands over JSON arguments; the gate
// decides, before any process exists, whether that exact call may run, and
// builds the exact argv itself. Every call takes the same path:
//
//	Allowlist.Lookup(name)   unknown name: *NotFoundError
//	ArgsSchema.Parse(input)  strict decoding and field rules: Argv, or *ValidationError
//	Policy.Decide            allow, deny (*PolicyError) or require an approval
//	ExecFn(ctx, Invocation)  start the resolved executable directly
//	Result                   what happened, always
//
// An [Allowlist] is built once from CommandSpecs by [NewAllowlist], which checks
// every spec and fills in its defaults; an [Executor] made by [NewExecutor] runs
// calls against it:
//
//	allow, err := execgate.NewAllowlist(execgate.CommandSpec{
//		Name:    "git.log",
//		Command: "git",
//		Args: execgate.Struct(func(in struct {
//			MaxCount int `json:"max_count" validate:"min=1,max=100"`
//		}) execgate.Argv {
//			return execgate.Argv{Args: []string{"log", "--oneline", "-n", strconv.Itoa(in.MaxCount)}}
//		}),
//	})
//	...
//	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow})
//	...
//	res, err := x.Run(ctx, "git.log", json.RawMessage(`{"max_count": 5}`))
//
// A non-nil error from Run means the call was refused and nothing was
// started; otherwise res records how the process ended. [Config] needs only
// the Allowlist: a nil [Policy] allows every allowlisted call whose input is
// valid, a nil [ExecFn] means [DefaultExecFn] and a nil Now means time.Now.
//
// # Default deny
//
// Only names registered in the Allowlist can run, and there is no wildcard.
// A name that is not registered is refused with a [*NotFoundError] before its
// input is decoded, before any Policy is asked and before anything is
// started. A nil or empty Allowlist refuses every name, as does a zero
// [Proposer].
//
// Every spec needs an [ArgsSchema]. [Struct] decodes the input strictly into a
// Go struct, refusing unknown fields, wrong types, duplicate keys, keys that
// match a field only case-insensitively and trailing data, then applies the
// struct's validate tags; [Flags] declares a command line's flags,
// positionals and stdin, for configuration files and CLIs with many flags,
// and emits each in one canonical spelling; [Fixed] accepts only empty input
// and always runs the same arguments. Whatever the schema, the gate refuses an input larger than
// [MaxInputSize] before the schema sees it, and an argument holding a NUL
// byte after. Refusals are [*ValidationError] values that name the offending
// field; a Struct refusal never repeats the field's value, and a Flags
// refusal quotes the offending argv token.
//
// # No shell
//
// The gate never runs a shell, so characters such as ';', '|', '$' and '*'
// in an argument mean nothing: each argument reaches the child as one
// element of its argv, exactly as the schema built it.
//
// The executable is resolved once, when the Allowlist is built. An absolute
// Command is kept as given (cleaned, not symlink-resolved); a bare name such
// as "git" is looked up on PATH then. A relative path, or a name that PATH
// resolves only through a relative entry such as "." (see os/exec's
// ErrDot), is refused, so a later change of PATH or of the working
// directory cannot change what runs. [CommandSpec.SHA256] may pin the
// executable's content: NewAllowlist refuses a pin that does not match, and
// DefaultExecFn hashes the file again at every call and starts nothing on a
// mismatch. On Linux the file descriptor that was hashed is the one
// executed.
//
// # Environment isolation
//
// A child inherits nothing from the calling process. Its environment is
// exactly [CommandSpec.Env]: a nil or empty Env means an empty environment,
// with no PATH, HOME or credentials. To pass variables through, name them
// explicitly with [InheritEnv], which copies them when it is called:
//
//	Env: execgate.InheritEnv("HOME", "PATH"),
//
// The working directory is [CommandSpec.Dir], which must be absolute. An
// empty Dir means the working directory of the calling process when the
// Allowlist was built, captured then as an absolute path.
//
// # Bounded output and time
//
// Each of stdout and stderr keeps at most [CommandSpec.MaxOutput] bytes
// (zero means [DefaultMaxOutput], 64 KiB); the rest is read, counted in
// [Result.StdoutDropped] and [Result.StderrDropped], and discarded, so the child
// never blocks on a full pipe. A cut never splits a UTF-8 sequence. The
// Executor applies the same bound to whatever any ExecFn returns.
//
// A call runs for at most [CommandSpec.Timeout] (zero means [DefaultTimeout],
// 30 seconds) and, if [CommandSpec.NoOutputTimeout] is positive, may stay
// silent on both streams for at most that long; zero turns the silence limit
// off. When a limit passes or the context is done, DefaultExecFn kills the
// child's whole process group and the child itself, wherever it has moved,
// and when the child exits on its own it kills whatever is left of its
// group; any other process that has left the group (with setsid, say) is
// beyond its reach, unless the command is confined (see "Confinement":
// a confined command's PID namespace ends with it). Where processes
// cannot be started (js/wasm, Windows), DefaultExecFn starts nothing and
// every call's [Result] says spawn_error.
//
// # Watching a call
//
// A caller that wants a long command's output as it comes, or only a
// sign that it is alive, puts a [Watch] on the call's context with
// [WithWatch]: [Watch.Output] gets each chunk as it is read, in order, and
// [Watch.Progress] a heartbeat with the bytes so far and the latest line.
// The watcher is fed from a bounded queue by a goroutine of its own, so a
// slow one misses chunks (and is told how many) rather than slowing the
// command, and the [Result] is the same as without it.
//
// # Always a record
//
// Errors are for refusals before anything starts. Once a call has passed
// lookup, validation and policy, Run and Execute return a Result and a nil
// error for every outcome: a zero or non-zero exit, a signal, a timeout, a
// cancellation, or a failure to start. [Result.Termination] says which:
//
//	exit               the process exited; ExitCode is its status, OK if 0
//	signal             a signal the gate did not send ended it; ExitCode -1
//	timeout            Timeout passed and the group was killed; ExitCode -1
//	no_output_timeout  NoOutputTimeout passed and the group was killed; ExitCode -1
//	canceled           the context was done; ExitCode -1
//	spawn_error        nothing ran; SpawnError says why; ExitCode -1
//
// The Executor normalizes whatever an ExecFn reports so that these rules
// hold. A Result never carries the child's environment or stdin, and no
// error message repeats stdin or an environment value.
//
// The output of a Result is true: every byte the command's processes wrote
// is in Stdout or Stderr or counted as dropped, however long the gate's
// own process was paused, and [Result.OutputIncomplete] says when a process
// outside the group still held a pipe when reading stopped.
//
// # The audit trail
//
// With [Config.Auditor] set, a call that starts a process is recorded twice:
// an [Event] with Phase [PhaseIntent] before the process is handed to the
// ExecFn, and one with Phase [PhaseOutcome] after it ended; every other call
// (refused, proposed, rejected) is recorded once, as an outcome. An intent
// that cannot be recorded refuses the call with an [*AuditError] and nothing
// starts, so a trail holds every process that ran, even if the gate dies
// before the process ends: an intent without an outcome is such a call.
// [Config.AuditFailOpen] lets calls go ahead without their record instead.
// A server in front of the Executor records its own refusals (a bad
// token, a body too large) in the same trail with [Executor.RecordRefusal].
//
// # Refusals
//
// Every refusal has a kind, an [ErrorKind], that [KindOf] gives for any error
// the gate returns: not_found, validation, policy, approval, busy, audit,
// store_full or internal, and, for refusals a server makes before the gate,
// unauthenticated and request. The audit trail ([Event.Error]), package
// mcpserver and the execgate binary name refusals with these kinds and no
// others; ErrorKind says what each means and what a caller can do.
//
// # Concurrency
//
// [Config.MaxConcurrent] bounds the processes an Executor runs at once, and
// [Config.MaxConcurrentPerPrincipal] those of one principal. A call over a
// bound waits up to [Config.MaxQueueWait], within its context, for a slot,
// and is then refused with a [*BusyError] before anything is recorded as
// started; zero bounds mean no bound.
//
// # When the gate dies
//
// On Linux no command outlives the process that started it through
// DefaultExecFn, however that process ends (SIGKILL included). The leader
// of each call has a parent-death signal, and the first call starts a
// watchdog: the same program, run again with a marker as its only
// argument (its init function, like the confinement helper's, recognizes
// it and does nothing else), in a process group of its own and ignoring
// the signals of a terminal or service manager. The gate tells it the
// process group of each call as the call starts and ends; when the gate's
// end closes the pipe it reads, the watchdog kills every group still
// running and exits. It reads what waits in its pipe at once and, after a
// read that came soon after the one before, pauses 10 ms, so that a gate
// running calls back to back wakes it seldom; the kills after a gate's
// end come at most that much later. A process that left its group (setsid) is beyond
// reach, as it is for the limits, and a process forked in the instant
// between the leader's start and its group being registered could
// escape. A watchdog that cannot be started leaves the parent-death signal
// alone. On other Unix systems neither exists, and commands keep running
// after their gate is killed.
//
// This holds for commands that do not fight it. A command running as the
// gate's own user can kill the watchdog (it is that user's process, though
// not dumpable, so the command cannot reach its pipe through /proc), clear
// its own parent-death signal, execute a set-user-ID program (which the
// kernel starts without one), or leave its group, and then outlive a gate
// that dies. Calls and messages never wait for the watchdog: one that is
// gone or does not keep up is killed and replaced, with every group still
// running handed to the new one. Against a hostile command the backstop is
// a [Confinement], and a separate user for the commands.
//
// # Approvals
//
// A Policy may require that a call be approved by a person before it runs.
// [Executor.Propose] looks the name up, validates the input and asks the
// Policy as Run does, then stores a private [Record] in the [ApprovalStore] (a
// copy of the input, the spec's fingerprint and a hash of the stdin) and
// returns an [Approval]: an envelope with an ID, the command and argv, the
// reason, an expiry ([Config.ApprovalTTL], zero means [DefaultApprovalTTL], 15
// minutes) and a digest, and for the approver what the command will read
// and may touch: stdin's size, SHA-256 and, for text, an escaped preview
// of its first 4 KiB ([StdinInfo]), and the spec's confinement with its
// egress allowlist ([ConfinementInfo], [Egress]). The envelope is safe to
// show and serialize; it carries neither the environment nor the raw
// input. [Approval.Describe] writes it as text for a person to read, the
// same on every surface.
//
// [Executor.Execute] runs an approved call at most once. It takes the stored
// record atomically, so that of concurrent Execute and Reject calls exactly
// one wins, checks expiry, recomputes the digest from the envelope it was
// handed and compares it with the stored one, then looks the name up again
// in the current Allowlist, validates the stored input again and asks the
// current Policy. A change of the spec that would change what runs refuses
// the call with an [*ApprovalError]; once the record is taken, every refusal
// leaves it consumed. [Executor.Reject] withdraws a pending approval. Changing
// a spec's PolicyVersion (empty means "1") makes all its pending approvals
// unusable.
//
// [Executor.Submit] is the path for a server that takes approvals: it
// validates the call once, asks the Policy once, and runs the call when
// the Policy allows it or proposes it when the Policy holds it
// ([SubmitOptions.NoPropose] refuses a held call instead, as Run does).
// [Executor.Decide] says what Submit would do, as a [Verdict], and starts,
// stores and records nothing.
//
// A nil [Config.Store] means a [MemoryStore] of this process holding at most
// [DefaultStoreCapacity] (1000) pending records; when it is full, Propose
// fails with [ErrStoreFull] rather than evict a pending approval. One
// principal holds at most a quarter of it, in records and in bytes
// ([DefaultPerPrincipalQuota]); past that its proposals fail with a
// [*QuotaError] naming it, while the others' still go in. Executors
// in several processes share approvals only through a shared ApprovalStore.
//
// The digest binds the envelope to the call: a SHA-256 over the approval's
// fields and everything that decides what runs (path, pin, argv, stdin,
// environment, directory, limits, Confine, PolicyVersion). It is not a signature.
// Anyone can compute it, and it proves nothing about who approved. What
// authorizes a call is the record that Propose saved and Execute consumes;
// deciding who may call Execute, and who may write to a shared store, is up
// to the program that embeds the gate. [Proposer.Check] validates a call
// without a store or any means to run it; the [Proposal] it returns cannot be
// executed. [Proposer.Explain] validates the same way and says, for each
// argument of an accepted call, which part of the spec accepted or placed
// it.
//
// # Confinement
//
// Validation decides what starts; it cannot stop an allowed command from
// reading ~/.ssh, opening a socket or eating all memory. A spec's Confine
// says what the command may touch once it runs, and on Linux the kernel
// enforces it on the command and everything it starts, with no root and no
// container runtime:
//
//	Confine: &execgate.Confinement{
//		Read:   []string{"/usr", "/etc/ssl"},
//		Write:  []string{"/srv/scratch"},
//		Limits: execgate.Limits{CPU: 10 * time.Second, AddressSpace: 4 << 30},
//	},
//
// Files: Landlock refuses every path that Read, Write and Exec do not
// grant, apart from what the command needs to start (its executable, its
// dynamic loader and the system's libraries; not its Dir unless listed; see
// [Confinement.Read]). Network: unless Network is true, the command runs in
// a new network namespace with nothing but its own loopback interface; with
// an [Egress], that loopback also holds an egress proxy the gate runs for
// the call, which reaches the hosts and ports the Egress lists and nothing
// else (never a loopback, private, link-local or metadata address it does
// not name by address), and reports every attempt in [Result.Connections]:
//
//	Confine: &execgate.Confinement{
//		Read:   []string{"/etc/ssl"},
//		Egress: &execgate.Egress{Allow: []string{"api.github.com:443"}},
//	},
//
// Resources: [Limits] become setrlimit(2) limits. Privilege: no_new_privs is
// always set, so no set-user-ID program or file capability can raise the
// command's privileges, and the command holds no capability, also when the
// gate runs as root. Processes: the command runs in a new PID namespace,
// and when it ends the kernel kills everything it started, however it
// detached itself; it has an IPC namespace of its own, so it reaches no
// shared memory or message queue of the host and leaves none behind, and
// a session of its own, so it cannot move the namespace's first process
// into another process group (which would leave the kernel waiting for
// that group, and the call with it). Outside the write paths nothing
// changes, not even a file's mode, owner, times or extended attributes:
// its mount namespace is read-only but for them (a mount nested beneath a
// write path is read-only too). System calls: a seccomp filter refuses io_uring,
// ptrace and process_vm_readv/writev, kexec and kernel modules, bpf,
// perf_event_open, userfaultfd, the key management calls, mount, umount,
// pivot_root, chroot, setns, unshare and clone with a namespace flag (and
// clone3, whose flags it cannot read), open_by_handle_at, and packet,
// vsock and raw IP sockets, and Unix sockets unless
// [Confinement.UnixSockets] allows them (a pathname socket, such as a
// container runtime's, is reachable from any network namespace, and
// Landlock below ABI 9 does not stop a connect to one; socketpair still
// works). A call of another architecture's interface
// (i386 on amd64) kills the command. The Landlock domain also keeps the
// command from signaling processes outside it (Landlock ABI 6 or later).
//
// Go cannot run code in a child between fork and exec, so DefaultExecFn
// starts a helper: the calling program's own binary (/proc/self/exe)
// again, which the init function of this package recognizes by an argv
// that carries a marker and a random token for that one start, and by a
// request it reads from an inherited pipe with the same token. The helper
// confines itself and then executes the command in its place, so the PID,
// process group, exit status and output are the command's own; the
// command is the first process of its PID namespace (see
// [Confinement.Network] for what that changes about signals). No
// environment variable can turn a program into a helper, a program started
// set-user-ID or with file capabilities refuses to be one, and a program
// that never uses Confine pays one string comparison at start-up. The
// init functions of packages initialized before this one also run in the
// helper: keep them free of side effects. /proc must be mounted.
//
// Starting a helper (the program's own start, the new namespaces, the
// loopback interface) is most of what a confined call costs, so
// DefaultExecFn keeps helpers started ahead: after a confined call it
// keeps up to two ready for each kind of namespaces it used, for at most
// 30 seconds each, and hands the next call of that kind to one of them
// over a socket (the request, and the command's stdin, stdout and
// stderr). A warm helper runs nothing of a call before that handoff, and
// everything that depends on the call (its write paths, working
// directory, capabilities, Landlock rules, system call filters and
// limits) is still applied for that call alone, after it. What a process
// inherits rather than being given (the user and group, which choose the
// kind of helper; the umask, the resource limits a Confinement leaves
// unset, the cgroup) is the calling program's when the helper started, at
// most 30 seconds before the call. Its mount namespace is a copy made
// when it started, so every mount, unmount or remount in the calling
// process's mount namespace retires the helpers started before it; where
// that cannot be watched (/proc/self/mountinfo) no helper is kept. A warm helper ends with the program (a parent-death signal, and
// its socket closing), and [CloseIdleConfinementHelpers] ends the idle
// ones at once, for tests that look for goroutines or processes left
// behind. A call that finds none ready starts its own helper, as before;
// BENCHMARKS.md has the figures of both.
//
// What the kernel must offer: Landlock ABI 3 or later (Linux 6.2, with
// Landlock enabled among the boot-time LSMs) for the filesystem rules, and,
// when Network is false or the gate is not root, unprivileged user
// namespaces (user.max_user_namespaces above 0; some distributions also
// gate them behind kernel.unprivileged_userns_clone or an AppArmor
// policy). By default
// every part is required, and a kernel that lacks one makes the call a
// spawn_error that says what is missing. With BestEffort, the command runs
// with what could be applied and [Result.Unconfined] names the rest. On Landlock
// ABIs below 9, Unix sockets reachable by path are not restricted; below 5,
// device ioctls are not. Other operating systems cannot confine: there a
// required Confinement is a spawn_error and a best-effort one runs the
// command unconfined, saying so in Result.Unconfined.
//
// The Confinement is part of the spec fingerprint, and so of every approval
// digest: changing it between Propose and Execute refuses the call with
// policy_changed.
//
// # Testing
//
// [Config.ExecFn] is the only part of the gate that touches processes. Nil
// means DefaultExecFn. Package execgatetest provides Recorder, a fake ExecFn
// that starts nothing, records every [Invocation] and answers with canned
// Outcomes, so tests can drive the whole gate (lookup, validation, policy,
// approvals) and assert on the exact argv, environment and directory that
// would have run:
//
//	rec := execgatetest.NewRecorder()
//	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow, ExecFn: rec.Exec})
package execgate
