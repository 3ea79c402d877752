package main

import "golang.org/x/sys/unix"

// init marks every descriptor this process inherited above stderr
// close-on-exec, so that none reaches a command it starts (or its
// watchdog): a descriptor left open by whoever started execgate, a
// terminal, a socket, a file, is not the commands' to use. Go opens its
// own descriptors close-on-exec already.
func init() {
	unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
}
