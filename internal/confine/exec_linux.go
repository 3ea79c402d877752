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
