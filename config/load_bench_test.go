//go:build unix

package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/profiles"
)

// profileFleet returns a configuration of n tools, each an entry naming
// one of the shipped profiles in turn under a name of its own, with the
// site values a profile marks: what a site that exposes many programs,
// or many copies of a few, loads. Every tool runs the test binary, which
// is no interpreter and is never started here.
func profileFleet(tb testing.TB, n int) []byte {
	tb.Helper()
	self, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	var sb strings.Builder
	sb.WriteString("version: 1\ntools:\n")
	names := profiles.Names()
	for i := range n {
		name := names[i%len(names)]
		data, _ := profiles.Lookup(name)
		fmt.Fprintf(&sb, "  - profile: %s\n    name: %s-%d\n    bin: %s\n    working_dir: %s\n", name, name, i, self, dir)
		if strings.Contains(string(data), "${hosts}") {
			sb.WriteString("    hosts: [example.com, api.example.org]\n")
		}
		if strings.Contains(string(data), "${namespaces}") {
			sb.WriteString("    namespaces: [default, team-a]\n")
		}
		if strings.Contains(string(data), "${kubeconfig}") {
			sb.WriteString("    kubeconfig: " + kubeconfig + "\n")
		}
	}
	return []byte(sb.String())
}

// cpuTime returns the CPU time this process has used, the collector's
// included: on a shared machine it is steadier than the wall time.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heapInUse returns the bytes of live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkLoadProfiles loads a configuration of 1,000 and of 5,000 tools
// copied from the shipped profiles (see profileFleet), and reports per
// tool the time (ns/tool), the CPU time of the process (cpu-ns/tool), the
// allocations (allocs/tool, B/tool) and the
// heap the loaded configuration keeps alive (retained-B/tool: the live
// heap after a collection with the result held, less the live heap
// before the load).
func BenchmarkLoadProfiles(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			data := profileFleet(b, n)
			// One load of every profile first, so that what a process
			// keeps once (each profile parsed, see parsedProfile) is not
			// counted per tool; the patterns it compiled are collected
			// with it, and compiled again by the loads measured.
			if _, err := config.LoadBytes("warm.yaml", profileFleet(b, len(profiles.Names()))); err != nil {
				b.Fatal(err)
			}
			var retained uint64
			var runs int
			var cpu time.Duration
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				before := heapInUse()
				b.StartTimer()
				c0 := cpuTime(b)
				l, err := config.LoadBytes("fleet.yaml", data)
				if err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime(b) - c0
				b.StopTimer()
				if after := heapInUse(); after > before {
					retained += after - before
				}
				runs++
				if len(l.Tools) != n {
					b.Fatalf("%d tools loaded, want %d", len(l.Tools), n)
				}
				runtime.KeepAlive(l)
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/tool")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(runs)/float64(n), "cpu-ns/tool")
			b.ReportMetric(float64(retained)/float64(runs)/float64(n), "retained-B/tool")
			b.ReportMetric(float64(retained)/float64(runs), "retained-B/op")
		})
	}
}
