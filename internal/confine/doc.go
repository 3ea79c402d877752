// Package confine is the mechanism behind execgate's Confinement on Linux:
// a re-exec helper that confines itself with the kernel's own tools and
// then becomes the command.
//
// # Why a helper
//
// Go cannot run code in a child process between fork and exec, and
// Landlock rules, no_new_privs and resource limits have to be applied
// there: in the process that will execute the command, and not in the
// caller. So execgate's DefaultExecFn starts the running program itself
// again (/proc/self/exe), with an argv of exactly [name, Marker, token]
// and an empty environment. RunHelperIfRequested, called from this
// package's init function (which Go runs before the packages whose import
// paths sort after this one and that do not depend on it, so a helper
// skips most of the embedding program's initialization), recognizes that
// argv, reads a Request from descriptor 3, confines the process and
// executes the command.
//
// In order, the helper: makes its mount namespace read-only but for the
// write paths (see mount_linux.go); brings up the loopback interface of
// its new network namespace (when the command has no network), and, for a
// command with an egress list, binds the egress proxy's listener on
// 127.0.0.1:3128 there and sends it to the parent on descriptor 6; drops every
// capability it has (ambient, bounding where it may, effective, permitted
// and inheritable, with the secure bits that keep root from regaining
// them); sets no_new_privs; builds and enforces a Landlock ruleset on the
// one locked OS thread that executes the command (Landlock domains,
// no_new_privs and capabilities belong to a thread, and execve keeps the
// calling thread's); installs three seccomp filters on that thread (an
// architecture check, the sockets and the deny list, see
// seccomp_linux.go; the parent builds them once and sends them in the
// Request, and a Request without them is refused); reports "ready" on
// descriptor 4; sets the resource
// limits, last, as a new mapping may fail from then on; and executes the
// command with syscall.Exec: same process, same PID, same process group
// (a session of its own) and pipes, so the caller supervises the command
// as it would an unconfined one. No part of the helper stays behind: the
// threads it had, with the privileges it started with, end at that exec.
// In the normal case it is the first process of a new PID namespace, and
// so is the command: when it ends, the kernel kills whatever is left in
// the namespace.
// Descriptors 3, 4, 5 and 6 are close-on-exec by then, so the command
// inherits none of them. A failure is reported on descriptor 4 and the
// helper exits with status 2: the command never runs unconfined by
// accident.
//
// # Warm helpers
//
// A helper may also be started before its call (see Warm): with an argv
// of [name, WarmMarker, token, preparation], descriptor 3 a Unix socket
// whose other end only the gate holds, descriptor 4 its status pipe, and
// descriptors 5 and 6 open on /dev/null, holding the places of the pinned
// executable and the egress socket (the Go runtime opens files of its
// own at the lowest free numbers). While it waits it does only what does
// not depend on a call: it drops its runtime to one P and turns the
// collector off (what every helper does before its exec, see
// quietRuntime), brings up the loopback interface of its network
// namespace, and makes its mount tree private and read-only (sealTree),
// and then writes one byte on its socket: the gate hands a
// call only to a helper that has said it is prepared. A handoff is one
// message with the command's stdout, stderr,
// stdin (if any), pinned executable and egress socket as SCM_RIGHTS, and
// as data the Request's length and the Request itself (of a Request
// larger than 32 KiB, the rest follows on the socket; all of it within
// ten seconds). The
// helper checks the token, that no descriptor or data was cut off, and
// that the descriptors are exactly those the Request asks for (pipes for
// the command's standard streams, a regular file for the executable, a
// socket for the egress listener), puts each in its place, binds the call's write paths
// writable, enters the call's working directory (Request.Dir), and goes
// on as a helper started for its call would, from the capabilities on.
// If the socket closes before a handoff (the gate ended, or retired it),
// it exits. The checks a helper started for its call makes of its
// privileges (AT_SECURE) and token are made the same way.
//
// # Who can make a process a helper
//
// Every program that imports execgate contains the helper, so the helper
// mode must not be reachable by anyone who could not already run the
// command themselves. It is entered only when argv[1] is Marker and argc
// is 3: no environment variable plays any part, and the request (argv,
// environment, rules) never passes through argv or the environment the
// command sees. The helper then refuses, doing nothing but exiting with
// status 2, unless:
//
//   - argv[2] is a well-formed 64-hex-digit token;
//   - the process did not gain privileges at exec (the kernel's AT_SECURE
//     is 0: not set-user-ID, set-group-ID or file capabilities), so a
//     privileged program that imports execgate cannot be turned into a way
//     to run arbitrary commands with its privileges;
//   - descriptors 3 and 4 are pipes;
//   - a complete, well-formed request arrives on descriptor 3 within ten
//     seconds, and carries the same token as argv. The parent makes a new
//     random token for every start, so argv alone, or a pipe alone, is not
//     enough.
//
// Whoever controls a program's argv and its inherited descriptors can
// already run any program they like with the same privileges, so a helper
// started by them gives them nothing new: at most a program executed
// under a confinement of their choosing.
//
// A program that never uses Confine pays for the helper with one
// comparison of os.Args[1] at start-up.
//
// # Caveats
//
// The init functions of packages that the program initializes before
// execgate also run in the helper before it executes the command; they
// should have no side effects beyond the process (most have none). A
// command the helper executes in its place (without a PID namespace)
// counts the few milliseconds of processor time the helper used against
// its CPU limit.
//
// Nothing in this package is meant for users of execgate; it is internal
// so the public surface stays small.
package confine
