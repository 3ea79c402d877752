package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// stdioBenchConfig is the configuration of BenchmarkStdioEcho: one tool,
// echo.run, that runs /bin/echo with one checked word, allowed for every
// principal, and nothing else.
const stdioBenchConfig = `version: 1
defaults: {timeout: 10s, env: {PATH: /usr/bin:/bin}}
tools:
  - name: echo
    bin: /bin/echo
    description: Print one word.
    bare:
      positionals: {max: 1, pattern: '^[a-z]+$'}
policies:
  - name: everyone
    principal: "*"
    rules:
      - {name: echo, tools: [echo.run], action: allow}
server:
  principal: bench
`

// BenchmarkStdioEcho is one MCP client that keeps one session open with
// "execgate serve" over stdio and sends b.N tools/call requests of an
// echo tool one at a time, each after the answer to the one before.
// Besides the wall time per call it reports the server process's own
// CPU time per call (server-cpu-ns/call: user and system time of all its
// threads, from /proc, over the calls only, not its start or the
// handshake; the echo processes' own CPU is not counted), calls/s, and
// the server's context switches per call.
//
// The sub-benchmark bin=current runs the binary built from this tree.
// When EXECGATE_BENCH_BEFORE names another build of the binary, the
// sub-benchmark bin=before runs that one too, in the same round, so that
// -count N interleaves the two and both see the same machine load:
//
//	go build -o /tmp/execgate-before ./cmd/execgate   # at the old commit
//	EXECGATE_BENCH_BEFORE=/tmp/execgate-before go test -run '^$' \
//		-bench '^BenchmarkStdioEcho$' -benchtime 2000x -count 6 ./cmd/execgate
func BenchmarkStdioEcho(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads the server's CPU time from /proc")
	}
	bins := []struct{ name, path string }{{"current", benchBinary(b)}}
	if before := os.Getenv("EXECGATE_BENCH_BEFORE"); before != "" {
		bins = append(bins, struct{ name, path string }{"before", before})
	}
	dir := b.TempDir()
	config := filepath.Join(dir, "echo.yaml")
	if err := os.WriteFile(config, []byte(stdioBenchConfig), 0o600); err != nil {
		b.Fatal(err)
	}
	for _, bin := range bins {
		b.Run("bin="+bin.name, func(b *testing.B) { benchStdioEcho(b, bin.path, config) })
	}
}

// benchStdioEcho runs one session of BenchmarkStdioEcho against the
// binary at path.
func benchStdioEcho(b *testing.B, path, config string) {
	s := startStdioSession(b, path, config)
	cpu0, sw0 := serverUsage(b, s.pid())
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		s.call()
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cpu1, sw1 := serverUsage(b, s.pid())
	b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "server-cpu-ns/call")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64(sw1-sw0)/float64(b.N), "ctxsw/call")
}

// BenchmarkStdioEchoPaired is BenchmarkStdioEcho for the binary of this
// tree and the one EXECGATE_BENCH_BEFORE names at once: one session with
// each, and their calls alternated (current then before, then before then
// current, and so on), so that both see the same machine load call by
// call, which rounds of one session after the other do not ensure on a
// busy machine. It reports, for each, calls/s over its own calls' wall
// time and its server's CPU per call, and speedup, the before binary's
// wall time over the current one's.
//
//	EXECGATE_BENCH_BEFORE=/path/to/old/execgate go test -run '^$' \
//		-bench '^BenchmarkStdioEchoPaired$' -benchtime 2000x -count 6 ./cmd/execgate
func BenchmarkStdioEchoPaired(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads the servers' CPU time from /proc")
	}
	before := os.Getenv("EXECGATE_BENCH_BEFORE")
	if before == "" {
		b.Skip("EXECGATE_BENCH_BEFORE names no binary to compare with")
	}
	config := filepath.Join(b.TempDir(), "echo.yaml")
	if err := os.WriteFile(config, []byte(stdioBenchConfig), 0o600); err != nil {
		b.Fatal(err)
	}
	sessions := [2]*stdioSession{startStdioSession(b, benchBinary(b), config), startStdioSession(b, before, config)}
	var (
		wall [2]time.Duration
		cpu0 [2]time.Duration
	)
	for i, s := range sessions {
		cpu0[i], _ = serverUsage(b, s.pid())
	}
	b.ResetTimer()
	for n := range b.N {
		for k := range 2 {
			i := (n + k) % 2 // each goes first every other time
			start := time.Now()
			sessions[i].call()
			wall[i] += time.Since(start)
		}
	}
	b.StopTimer()
	for i, name := range []string{"current", "before"} {
		cpu, _ := serverUsage(b, sessions[i].pid())
		b.ReportMetric(float64(cpu-cpu0[i])/float64(b.N), name+"-server-cpu-ns/call")
		b.ReportMetric(float64(b.N)/wall[i].Seconds(), name+"-calls/s")
	}
	b.ReportMetric(wall[1].Seconds()/wall[0].Seconds(), "speedup")
}

// stdioSession is one client of "execgate serve" over stdio, with the
// MCP session initialized.
type stdioSession struct {
	b      *testing.B
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	br     *bufio.Reader
	stderr bytes.Buffer
	id     int
}

// startStdioSession starts "execgate serve --config config" with the
// binary at path, initializes the session and makes one call, so that
// every call measured after it finds the session, the tool and the caches
// as later calls do. The server ends with the benchmark.
func startStdioSession(b *testing.B, path, config string) *stdioSession {
	s := &stdioSession{b: b, cmd: exec.Command(path, "serve", "--config", config)}
	s.cmd.Stderr = &s.stderr
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = s.stdin.Close()
		done := make(chan struct{})
		go func() { _ = s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = s.cmd.Process.Kill()
			<-done
		}
	})
	s.br = bufio.NewReaderSize(stdout, 64<<10)
	if a := s.roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}` + "\n"); !bytes.Contains(a, []byte(`"result"`)) {
		b.Fatalf("initialize: %s", a)
	}
	if _, err := io.WriteString(s.stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	s.call()
	return s
}

func (s *stdioSession) pid() int { return s.cmd.Process.Pid }

// roundTrip writes line and returns the next line the server writes.
func (s *stdioSession) roundTrip(line string) []byte {
	if _, err := io.WriteString(s.stdin, line); err != nil {
		s.b.Fatalf("the server stopped reading: %v; stderr: %s", err, s.stderr.Bytes())
	}
	answer, err := s.br.ReadSlice('\n')
	if err != nil {
		s.b.Fatalf("the server stopped answering: %v; stderr: %s", err, s.stderr.Bytes())
	}
	return answer
}

// call makes one call of echo_run and checks its answer.
func (s *stdioSession) call() {
	s.id++
	id := strconv.Itoa(s.id)
	a := s.roundTrip(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo_run","arguments":{"args":["hello"]}}}` + "\n")
	if !bytes.Contains(a, []byte(`"id":`+id+`,`)) && !bytes.Contains(a, []byte(`"id":`+id+`}`)) ||
		!bytes.Contains(a, []byte(`hello\n`)) || bytes.Contains(a, []byte(`"isError":true`)) {
		s.b.Fatalf("call %s: %s", id, a)
	}
}

// clockTick is the unit of the times in /proc/PID/stat: USER_HZ, 100 on
// every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// serverUsage returns the CPU time (user and system, all threads) the
// process pid has used, and the context switches of its threads that are
// still running.
func serverUsage(b *testing.B, pid int) (time.Duration, int64) {
	b.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14, stime 15.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	utime, err1 := strconv.ParseInt(fields[14-3], 10, 64)
	stime, err2 := strconv.ParseInt(fields[15-3], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %s", pid, stat)
	}
	var switches int64
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	for _, task := range tasks {
		status, err := os.ReadFile(task)
		if err != nil {
			continue // the thread ended
		}
		for _, line := range strings.Split(string(status), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				switches += n
			}
		}
	}
	return time.Duration(utime+stime) * clockTick, switches
}

// benchBinary returns the binary BenchmarkStdioEcho runs as bin=current:
// the one EXECGATE_BENCH_BIN names, or the one built from this tree once
// per test run (as the tests' binary helper builds it).
func benchBinary(b *testing.B) string {
	b.Helper()
	if bin := os.Getenv("EXECGATE_BENCH_BIN"); bin != "" {
		return bin
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "execgate-bin-")
		if buildErr != nil {
			return
		}
		goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goTool); err != nil {
			goTool = "go"
		}
		buildOut, buildErr = exec.Command(goTool, "build", "-o", filepath.Join(buildDir, "execgate"), ".").CombinedOutput()
	})
	if buildErr != nil {
		b.Fatalf("go build: %v: %s", buildErr, buildOut)
	}
	return filepath.Join(buildDir, "execgate")
}

// BenchmarkStdioEchoInProcess is BenchmarkStdioEcho with the server run
// in this process (the binary's own code, serve over stdio on a pair of
// pipes), so that -cpuprofile profiles the server's code. Its ns/op
// counts the client's work too, and it reports no server CPU of its own:
// BenchmarkStdioEcho is the measure, this one is for profiles:
//
//	go test -run '^$' -bench '^BenchmarkStdioEchoInProcess$' -benchtime 3000x \
//		-cpuprofile cpu.out ./cmd/execgate && go tool pprof -top cpu.out
func BenchmarkStdioEchoInProcess(b *testing.B) {
	config := filepath.Join(b.TempDir(), "echo.yaml")
	if err := os.WriteFile(config, []byte(stdioBenchConfig), 0o600); err != nil {
		b.Fatal(err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		c := &cli{stdin: inR, stdout: outW, stderr: &stderr}
		done <- c.run(context.Background(), []string{"serve", "--config", config})
		_ = outW.Close()
	}()
	defer func() {
		_ = inW.Close()
		<-done
		_ = outR.Close()
	}()
	br := bufio.NewReaderSize(outR, 64<<10)
	roundTrip := func(line string) []byte {
		if _, err := io.WriteString(inW, line); err != nil {
			b.Fatalf("the server stopped reading: %v; stderr: %s", err, stderr.String())
		}
		answer, err := br.ReadSlice('\n')
		if err != nil {
			b.Fatalf("the server stopped answering: %v; stderr: %s", err, stderr.String())
		}
		return answer
	}
	roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}` + "\n")
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		a := roundTrip(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"tools/call","params":{"name":"echo_run","arguments":{"args":["hello"]}}}` + "\n")
		if !bytes.Contains(a, []byte(`hello\n`)) || bytes.Contains(a, []byte(`"isError":true`)) {
			b.Fatalf("call %d: %s", i+1, a)
		}
	}
}
