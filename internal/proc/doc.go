// Package proc holds the operating-system mechanics behind execgate's
// DefaultExecFn that differ between platforms: killing a whole process
// group, learning that a process has exited without reaping it, and naming
// an opened executable so that exactly that file is executed.
//
// # Why the exit is observed before the process is reaped
//
// A child started in its own process group has a process group ID equal to
// its process ID. Once the child has been reaped (waited for), its ID may be
// handed to a new, unrelated process, and a later kill of the group could
// hit that process's group instead. Where the system allows it (Linux),
// WaitExit reports that the leader has exited while it is still a zombie,
// so its ID stays reserved: the caller kills what is left of the group and
// only then reaps the leader. Elsewhere WaitExit reports
// errors.ErrUnsupported and the caller has to reap first, which leaves a
// short window described on WaitExit.
//
// # Why the executable is run through its descriptor
//
// When the content of an executable is pinned by a hash, the file is opened
// once, hashed through that descriptor, and, on Linux, executed through the
// same descriptor (/proc/self/fd/N), so a rename or a replaced symbolic link
// between the check and the exec cannot make a different file run.
//
// Nothing in this package is meant for users of execgate; it is internal so
// the public surface stays small.
package proc
