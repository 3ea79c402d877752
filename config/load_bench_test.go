//go:build unix

package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/profiles"
)

// profileFleet returns a configuration of n tools, each an entry naming
// one of the shipped profiles in turn under a name of its own, with the
// site values a profile marks: what a site that exposes many copies of a
// few programs loads. Every tool runs the test binary, which is no
// interpreter and is never started here. The entries naming one profile
// are alike but for their names.
func profileFleet(tb testing.TB, dir string, n int) []byte {
	return fleetOfProfiles(tb, dir, n, false)
}

// ownFleet is profileFleet with no two entries alike: each has a working
// directory and site values of its own (hosts, namespaces, a kubeconfig
// file in its directory), as a site that exposes each program once per
// repository, cluster or team would write. Each directory holds the
// files the profiles' examples name (see exampleFiles), as a site's
// repositories would, so that the examples hold there.
func ownFleet(tb testing.TB, dir string, n int) []byte {
	return fleetOfProfiles(tb, dir, n, true)
}

// exampleFiles are the files the shipped profiles' examples name in
// their working directory: the benchmarks check that each loads with no
// warning.
var exampleFiles = []string{"README", "src/main.go", "archive.tar", "kubeconfig"}

// writeExampleFiles puts each of exampleFiles in dir, each small.
func writeExampleFiles(tb testing.TB, dir string) {
	tb.Helper()
	for _, f := range exampleFiles {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o700); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x\n"), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
}

func fleetOfProfiles(tb testing.TB, dir string, n int, own bool) []byte {
	tb.Helper()
	self, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeExampleFiles(tb, dir)
	var sb strings.Builder
	sb.WriteString("version: 1\ntools:\n")
	names := profiles.Names()
	for i := range n {
		name := names[i%len(names)]
		data, _ := profiles.Lookup(name)
		wd, hosts, namespaces := dir, "example.com, api.example.org", "default, team-a"
		if own {
			wd = filepath.Join(dir, strconv.Itoa(i))
			writeExampleFiles(tb, wd)
			kubeconfig = filepath.Join(wd, "kubeconfig")
			hosts = fmt.Sprintf("h%d.example.com, api.example.org", i)
			namespaces = fmt.Sprintf("default, team-%d", i)
		}
		fmt.Fprintf(&sb, "  - profile: %s\n    name: %s-%d\n    bin: %s\n    working_dir: %s\n", name, name, i, self, wd)
		if strings.Contains(string(data), "${hosts}") {
			sb.WriteString("    hosts: [" + hosts + "]\n")
		}
		if strings.Contains(string(data), "${namespaces}") {
			sb.WriteString("    namespaces: [" + namespaces + "]\n")
		}
		if strings.Contains(string(data), "${kubeconfig}") {
			sb.WriteString("    kubeconfig: " + kubeconfig + "\n")
		}
	}
	return []byte(sb.String())
}

// writtenFleet returns a configuration of n tools written out in the
// tools list, each the text of one of the shipped profiles in turn with
// a name of its own, the test binary for bin, a working directory and
// the site values written in its marks, and a policy_version of its own,
// so that no two entries are alike: what a site that writes its tools by
// hand, in the profiles' shape, loads. The working directory holds the
// files the profiles' examples name. The profiles' comments are left out,
// and still no more than about 900 such entries (4.5 KB each) fit in
// MaxFileSize.
func writtenFleet(tb testing.TB, dir string, n int) []byte {
	tb.Helper()
	self, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeExampleFiles(tb, dir)
	marks := strings.NewReplacer("${hosts}", "example.com", "${namespaces}", "default", "${kubeconfig}", kubeconfig)
	var sb strings.Builder
	sb.WriteString("version: 1\ntools:\n")
	names := profiles.Names()
	for i := range n {
		name := names[i%len(names)]
		data, _ := profiles.Lookup(name)
		first := true
		for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
			if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
				continue // to fit more tools under MaxFileSize
			}
			switch {
			case strings.HasPrefix(line, "name: "):
				line = fmt.Sprintf("name: %s-%d\npolicy_version: v%d\nworking_dir: %s", name, i, i, dir)
			case strings.HasPrefix(line, "bin: "):
				line = "bin: " + self
			case strings.Contains(line, "pattern:"):
				line = strings.ReplaceAll(line, "${hosts}", `example\.com`)
			}
			line = marks.Replace(line)
			for _, l := range strings.Split(line, "\n") {
				switch {
				case first:
					sb.WriteString("  - " + l + "\n")
					first = false
				default:
					sb.WriteString("    " + l + "\n")
				}
			}
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
//
// The case own,tools=5000 loads 5,000 entries naming profiles, no two
// alike (see ownFleet), so that no entry is decoded as a copy of
// another. The case written,tools=800 loads 800 tools written out in the tools
// list in the profiles' shape, no two alike (see writtenFleet), so that
// the figures do not rest on entries that name profiles; 5,000 such
// entries are five times larger than MaxFileSize.
func BenchmarkLoadProfiles(b *testing.B) {
	base := b.TempDir()
	for i, c := range []struct {
		name  string
		n     int
		fleet func(tb testing.TB, dir string, n int) []byte
	}{
		{"tools=1000", 1000, profileFleet},
		{"tools=5000", 5000, profileFleet},
		{"own,tools=5000", 5000, ownFleet},
		{"written,tools=800", 800, writtenFleet},
	} {
		n := c.n
		// The fleet and its directories are made on the case's first
		// run and kept for the others (the testing package runs a case
		// more than once), under a directory of the whole benchmark:
		// 5,000 working directories with their files take seconds to
		// make on some file systems.
		var data, warm []byte
		b.Run(c.name, func(b *testing.B) {
			if data == nil {
				dir := filepath.Join(base, strconv.Itoa(i))
				for _, d := range []string{dir, filepath.Join(dir, "warm")} {
					if err := os.Mkdir(d, 0o700); err != nil {
						b.Fatal(err)
					}
				}
				data = c.fleet(b, dir, n)
				warm = profileFleet(b, filepath.Join(dir, "warm"), len(profiles.Names()))
			}
			// One load of every profile first, so that what a process
			// keeps once (each profile parsed, see parsedProfile) is not
			// counted per tool; the patterns it compiled are collected
			// with it, and compiled again by the loads measured.
			if _, err := config.LoadBytes("warm.yaml", warm); err != nil {
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
				if w := l.Warnings(); len(w) > 0 {
					b.Fatalf("%d warnings, the first: %v", len(w), w[0])
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
