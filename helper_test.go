package execgate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runHelper is the body of the test binary when it runs as a child process.
// Each mode is a small program used by the process tests. Modes never start
// a shell; the ones that start a grandchild start the test binary again.
func runHelper(mode string, args []string) int {
	switch mode {
	case "echo": // print the arguments, one per line
		fmt.Println(strings.Join(args, "\n"))
		return 0
	case "env": // print the environment, one entry per line
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
		return 0
	case "cwd": // print the working directory
		wd, err := os.Getwd()
		if err != nil {
			return helperFail(err)
		}
		fmt.Println(wd)
		return 0
	case "exit": // exit with status args[0]
		code, err := strconv.Atoi(helperArg(args, 0))
		if err != nil {
			return helperFail(err)
		}
		return code
	case "sigterm": // end by SIGTERM, sent to itself
		p, err := os.FindProcess(os.Getpid())
		if err == nil {
			err = p.Signal(syscall.SIGTERM)
		}
		if err != nil {
			return helperFail(err)
		}
		time.Sleep(time.Minute) // the signal ends the process first
		return 0
	case "sleep": // sleep for the duration args[0]
		d, err := time.ParseDuration(helperArg(args, 0))
		if err != nil {
			return helperFail(err)
		}
		time.Sleep(d)
		return 0
	case "silent": // print args[0], then write nothing for the duration args[1]
		d, err := time.ParseDuration(helperArg(args, 1))
		if err != nil {
			return helperFail(err)
		}
		fmt.Println(helperArg(args, 0))
		time.Sleep(d)
		return 0
	case "tick": // print a line every args[0], args[1] times
		d, err := time.ParseDuration(helperArg(args, 0))
		if err != nil {
			return helperFail(err)
		}
		n, err := strconv.Atoi(helperArg(args, 1))
		if err != nil {
			return helperFail(err)
		}
		for i := range n {
			time.Sleep(d)
			fmt.Println("tick", i)
		}
		return 0
	case "flood": // write args[0] bytes of 'x' to stdout, args[1] to stderr
		chunk := bytes.Repeat([]byte{'x'}, 1<<20)
		for i, w := range []*os.File{os.Stdout, os.Stderr} {
			n, err := strconv.ParseInt(helperArg(args, i), 10, 64)
			if err != nil {
				return helperFail(err)
			}
			for n > 0 {
				c := chunk[:min(n, int64(len(chunk)))]
				if _, err := w.Write(c); err != nil {
					return helperFail(err)
				}
				n -= int64(len(c))
			}
		}
		return 0
	case "utf8": // write args[0] copies of a line of 1- to 4-byte characters
		n, err := strconv.Atoi(helperArg(args, 0))
		if err != nil {
			return helperFail(err)
		}
		if _, err := os.Stdout.WriteString(strings.Repeat(helperUTF8Line, n)); err != nil {
			return helperFail(err)
		}
		return 0
	case "stdin": // copy stdin to stdout
		if _, err := io.Copy(os.Stdout, os.Stdin); err != nil {
			return helperFail(err)
		}
		return 0
	case "touch": // create the file args[0]
		if err := os.WriteFile(helperArg(args, 0), []byte("ran\n"), 0o600); err != nil {
			return helperFail(err)
		}
		return 0
	case "grandchild":
		// Start the test binary again, sleeping for a minute with this
		// process's stdout and stderr, and print its PID. args[0] is
		// "group" (the grandchild stays in this process group) or
		// "setsid" (it starts a new session, leaving the group); args[1]
		// is "exit" (exit at once) or "sleep" (sleep for a minute).
		exe, err := os.Executable()
		if err != nil {
			return helperFail(err)
		}
		cmd := &exec.Cmd{
			Path:   exe,
			Args:   []string{exe, "1m"},
			Env:    []string{helperEnv + "=sleep"},
			Stdout: os.Stdout,
			Stderr: os.Stderr,
		}
		if helperArg(args, 0) == "setsid" {
			cmd.SysProcAttr = newSessionAttr()
		}
		if err := cmd.Start(); err != nil {
			return helperFail(err)
		}
		fmt.Println(cmd.Process.Pid)
		if helperArg(args, 1) == "sleep" {
			time.Sleep(time.Minute)
		}
		return 0
	case "selfhash": // print the SHA-256 of the running executable, then argv[0] (Linux)
		b, err := os.ReadFile("/proc/self/exe")
		if err != nil {
			return helperFail(err)
		}
		sum := sha256.Sum256(b)
		fmt.Println(hex.EncodeToString(sum[:]))
		fmt.Println(os.Args[0])
		return 0
	case "fds": // print what each open descriptor refers to (Linux)
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return helperFail(err)
		}
		for _, e := range ents {
			target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
			if err == nil {
				fmt.Println(e.Name(), target)
			}
		}
		return 0
	default:
		if h := moreHelpers[mode]; h != nil {
			return h(args)
		}
		fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
		return 2
	}
}

// moreHelpers are helper modes that other test files register from their
// init functions, by mode name.
var moreHelpers = map[string]func(args []string) int{}

// helperUTF8Line is the line the "utf8" helper repeats: characters of
// every UTF-8 length, so that any cut point lands inside one sooner or
// later.
const helperUTF8Line = "aé€𝄞\n"

// coverageWarning is what a test binary built with -cover writes to
// stderr as it exits when GOCOVERDIR is not set, as in a helper whose
// environment is exactly its spec's Env.
const coverageWarning = "warning: GOCOVERDIR not set, no coverage data emitted\n"

// withoutCoverageWarning returns a helper's stderr without the line a
// test binary built with -cover adds to it, so that tests comparing
// stderr pass under go test -cover.
func withoutCoverageWarning(stderr string) string {
	return strings.Replace(stderr, coverageWarning, "", 1)
}

// helperArg returns args[i], or "" if there are fewer arguments.
func helperArg(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

// helperFail reports err on stderr and returns the status helpers exit
// with when something is wrong with the test itself.
func helperFail(err error) int {
	fmt.Fprintln(os.Stderr, "helper:", err)
	return 99
}
