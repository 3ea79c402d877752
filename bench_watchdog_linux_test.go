//go:build linux

package execgate_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/execgate/execgate/internal/proc"
)

// watchdogCPU is the CPU time the watchdogs of this process have used so
// far (see "When the gate dies" in the package documentation): the time
// each of their threads has been on a processor, from schedstat. They are
// this process's children but are not reaped while it runs, so getrusage
// does not count them.
func watchdogCPU() time.Duration {
	me := strconv.Itoa(os.Getpid())
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var total time.Duration
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(proc.WatchdogMarker)) {
			continue
		}
		st, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		// The fields after the command name: state, then the parent.
		fields := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
		if len(fields) < 2 || fields[1] != me {
			continue
		}
		tasks, _ := filepath.Glob(filepath.Join(d, "task", "[0-9]*", "schedstat"))
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue
			}
			if f := strings.Fields(string(b)); len(f) > 0 {
				ns, _ := strconv.ParseInt(f[0], 10, 64)
				total += time.Duration(ns)
			}
		}
	}
	return total
}
