//go:build linux

package confine

import "syscall"

// execTarget replaces the helper with the target: path, with exactly argv
// (argv[0] included) and env. It is the one place in execgate that
// replaces a process image, and the reason a re-exec helper exists at all:
// Go cannot run code in a child between fork and exec, so the helper
// confines itself and then becomes the target. path is an absolute path
// from the allowlist (or /proc/self/fd/N for a pinned executable) and argv
// the gate's validated argv: no shell is involved.
func execTarget(path string, argv, env []string) error {
	return syscall.Exec(path, argv, env)
}

// startTarget starts the target as a child of the helper, from the calling
// thread (whose Landlock domain, no_new_privs, capabilities and limits the
// child keeps), with exactly argv and env, descriptors 0, 1 and 2 only, in
// the helper's directory and process group. It is the one other place in
// execgate that starts a process this way, for a helper that is the first
// process of a PID namespace and must stay so (see superviseTarget).
func startTarget(path string, argv, env []string) (pid int, err error) {
	return syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: env, Files: []uintptr{0, 1, 2}})
}
