package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/mcpserver"
)

// BenchmarkStdioCall is the MCP side of a tool call over stdio alone: one
// client keeps one session with a Server over StdioTransport on a pair of
// OS pipes and sends b.N tools/call requests one at a time, each after
// the answer to the one before, to a tool whose ExecFn returns a fixed
// Outcome without starting a process. What it measures is what this
// package, the SDK and the gate's checks cost per call, the process
// aside; cpu-ns/call is this process's CPU time (user and system, the
// client's small part included) per call.
//
//	go test -run '^$' -bench '^BenchmarkStdioCall$' -benchmem ./mcpserver
func BenchmarkStdioCall(b *testing.B) {
	fixed := func(context.Context, execgate.Invocation) execgate.Outcome {
		return execgate.Outcome{Stdout: []byte("hello\n")}
	}
	a, err := execgate.NewAllowlist(execgate.CommandSpec{
		Name: "echo.hello", Command: "/bin/echo", Args: execgate.Fixed("hello"), Description: "Say hello.",
	})
	if err != nil {
		b.Fatal(err)
	}
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: a, ExecFn: fixed, Policy: &decisions{}})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := mcpserver.New(x, mcpserver.Options{Allowlist: a, Principal: testPrincipal})
	if err != nil {
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
	done := make(chan error, 1)
	go func() {
		done <- srv.Run(context.Background(), mcpserver.StdioTransport(inR, outW))
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
			b.Fatal(err)
		}
		answer, err := br.ReadSlice('\n')
		if err != nil {
			b.Fatal(err)
		}
		return answer
	}
	roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}` + "\n")
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	cpu0 := processCPU(b)
	b.ResetTimer()
	for i := range b.N {
		a := roundTrip(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"tools/call","params":{"name":"echo_hello","arguments":{}}}` + "\n")
		if !bytes.Contains(a, []byte(`hello\n`)) || bytes.Contains(a, []byte(`"isError":true`)) {
			b.Fatalf("call %d: %s", i+1, a)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/call")
}

// processCPU returns the CPU time (user and system) of this process.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
