package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Exit codes; see the package documentation.
const (
	exitOK      = 0 // done
	exitFailed  = 1 // refused, failed, or found broken
	exitUsage   = 2 // bad command line, or a configuration that does not load
	exitUnknown = exitUsage
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := (&cli{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}).run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// cli is one invocation of the binary: its standard streams.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	cmd            *command // the subcommand being run
}

// command is one subcommand.
type command struct {
	name    string
	summary string // one line, for execgate help
	usage   string // the synopsis and a description, for execgate help <name>
	// setup defines the command's flags on fs and returns what runs the
	// command with the arguments left after them.
	setup func(fs *flag.FlagSet) func(c *cli, ctx context.Context, args []string) int
}

// help returns the command's usage text with its flags.
func (cmd *command) help() string {
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	cmd.setup(fs)
	var b strings.Builder
	b.WriteString(cmd.usage)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		b.WriteString("\nFlags:\n")
		fs.SetOutput(&b)
		fs.PrintDefaults()
	}
	return b.String()
}

// commands are the subcommands, in the order execgate help lists them.
var commands []*command

func init() {
	commands = []*command{serveCmd, checkCmd, explainCmd, testCmd, runCmd, toolsCmd, profilesCmd, initCmd, importCmd, auditCmd, tokenCmd, versionCmd}
}

const mainUsage = `execgate serves an allowlist of commands to AI agents: every call is
looked up, validated into an exact argv, decided by a policy, optionally
held for a person's approval, run without a shell, and audited.

Usage:

	execgate <command> [flags] [arguments]

Commands:
%s
Run "execgate help <command>" or "execgate <command> -h" for a command's flags.

Exit codes: 0 ok; 1 refused or failed (a call was refused, a command
that ran did not exit 0, an audit file is broken, a test case failed);
2 usage error or a configuration that does not load.
`

func (c *cli) run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		c.mainUsage(c.stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if name == "help" && len(rest) > 0 {
			cmd := lookup(rest[0])
			if cmd == nil {
				fmt.Fprintf(c.stderr, "execgate help: unknown command %q\n", rest[0])
				return exitUnknown
			}
			fmt.Fprint(c.stdout, cmd.help())
			return exitOK
		}
		c.mainUsage(c.stdout)
		return exitOK
	}
	cmd := lookup(name)
	if cmd == nil {
		fmt.Fprintf(c.stderr, "execgate: unknown command %q\n\n", name)
		c.mainUsage(c.stderr)
		return exitUnknown
	}
	c.cmd = cmd
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	run := cmd.setup(fs)
	if code := c.parse(cmd, fs, rest); code >= 0 {
		return code
	}
	return run(c, ctx, fs.Args())
}

func lookup(name string) *command {
	for _, cmd := range commands {
		if cmd.name == name {
			return cmd
		}
	}
	return nil
}

func (c *cli) mainUsage(w io.Writer) {
	var b strings.Builder
	for _, cmd := range commands {
		fmt.Fprintf(&b, "\t%-8s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprintf(w, mainUsage, b.String())
}

// parse parses a subcommand's flags. With -h it prints the help to
// stdout; on a bad flag it prints the problem and the help to stderr. It
// returns the exit code to stop with, or -1 to go on.
func (c *cli) parse(cmd *command, fs *flag.FlagSet, args []string) int {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(c.stdout, cmd.help())
		return exitOK
	case err != nil:
		fmt.Fprintf(c.stderr, "execgate %s: %v\n\n%s", cmd.name, err, cmd.help())
		return exitUsage
	}
	return -1
}

// usageError reports a bad command line.
func (c *cli) usageError(format string, args ...any) int {
	fmt.Fprintf(c.stderr, "execgate %s: %s\n\n%s", c.cmd.name, fmt.Sprintf(format, args...), c.cmd.help())
	return exitUsage
}

// fail reports an error of a command and returns code.
func (c *cli) fail(code int, err error) int {
	fmt.Fprintf(c.stderr, "execgate %s: %v\n", c.cmd.name, err)
	return code
}
