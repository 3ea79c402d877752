package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/mcpserver"
	"github.com/execgate/execgate/stores/pgstore"
)

// loadError reports a configuration that does not load: every problem of
// an ErrorList on its own line, file:line:col first.
func (c *cli) loadError(err error) int {
	var list config.ErrorList
	if errors.As(err, &list) {
		for _, e := range list {
			fmt.Fprintln(c.stderr, e.Error())
		}
		noun := "problems"
		if len(list) == 1 {
			noun = "problem"
		}
		fmt.Fprintf(c.stderr, "execgate %s: the configuration has %d %s\n", c.cmd.name, len(list), noun)
		return exitUsage
	}
	return c.fail(exitUsage, err)
}

var checkCmd = &command{
	name:    "check",
	summary: "validate a configuration file and summarize it",
	usage: `Usage: execgate check --config FILE

Check loads the configuration as serve would, resolving every bin on
PATH, and reports every problem it finds on its own line, as
FILE:LINE:COLUMN: KEY.PATH: MESSAGE, on stderr. On success it prints a
summary on stdout: each tool with its mode and command names, the
policies and grants, the server section, the bounds on commands
running at once that serve would apply and its approval store (memory,
or postgres with its table and the variable of its connection string);
then one line on what this
kernel supports for confine (the Landlock ABI, and whether user
namespaces can be created, which network: false needs). A tool whose
confinement is required (require: true, the default) but asks for what
this kernel lacks gets a warning on stderr: its calls would fail to start
here. What loads but is likely a mistake gets a warning on stderr in the
form of a problem, FILE:LINE:COLUMN: KEY.PATH: MESSAGE: a policy rule's
tools pattern that no call can match (naming the closest command name),
and a command served without a description. Warnings do not change the
exit code.

Exit codes: 0 the configuration loads; 2 it does not, or the command line
is wrong.
`,
	setup: func(fs *flag.FlagSet) func(*cli, context.Context, []string) int {
		return withConfig(fs, func(c *cli, file string, l *config.Loaded) int {
			summarize(c.stdout, file, l)
			reportWarnings(c.stderr, l)
			reportKernel(c.stdout, c.stderr, probeKernel(), l)
			return exitOK
		})
	},
}

// reportWarnings prints each of l's warnings on its own line on w, in
// the form of a load problem, and a count after them.
func reportWarnings(w io.Writer, l *config.Loaded) {
	ws := l.Warnings()
	if len(ws) == 0 {
		return
	}
	for _, x := range ws {
		fmt.Fprintln(w, x.String())
	}
	noun := "warnings"
	if len(ws) == 1 {
		noun = "warning"
	}
	fmt.Fprintf(w, "execgate check: the configuration loads, with %d %s\n", len(ws), noun)
}

// summarize prints what a loaded configuration allows.
func summarize(w io.Writer, file string, l *config.Loaded) {
	n := len(l.Allowlist.Specs())
	fmt.Fprintf(w, "%s: ok: %d tools, %d commands\n", file, len(l.Tools), n)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, t := range l.Tools {
		names := make([]string, 0, len(t.Specs))
		for _, s := range t.Specs {
			if s == t.Name {
				s += " (dispatcher: " + t.Name + ".<subcommand>, default_action " + t.DefaultAction + ")"
			}
			names = append(names, s)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", t.Name, t.Mode, strings.Join(names, ", "))
	}
	tw.Flush()
	switch {
	case l.Policies == nil:
		fmt.Fprintln(w, "policies: none: every allowlisted call is allowed, subject to default_action")
	case len(l.Policies) == 0:
		fmt.Fprintln(w, "policies: [] denies every call")
	default:
		fmt.Fprintf(w, "policies: %d\n", len(l.Policies))
		for _, p := range l.Policies {
			fmt.Fprintf(w, "  %s: principal %s, %d rules\n", p.Name, p.Principal, len(p.Rules))
		}
	}
	if len(l.Grants) > 0 {
		fmt.Fprintf(w, "grants: %d\n", len(l.Grants))
	}
	if s := l.Server; s != nil {
		principal := s.Principal
		if principal == "" {
			principal = "(none)"
		}
		fmt.Fprintf(w, "server: stdio principal %s; %d caller tokens (%s); %d approver tokens (%s)\n",
			principal, len(s.Tokens), principals(s.Tokens), len(s.Approvers), principals(s.Approvers))
	}
	s := serverOf(l)
	wait := "is refused at once"
	if s.MaxQueueWait > 0 {
		wait = "waits up to " + s.MaxQueueWait.String() + " for a slot"
	}
	fmt.Fprintf(w, "bounds: %d commands at once, %d per principal; a call over them %s\n", s.MaxConcurrent, s.MaxConcurrentPerPrincipal, wait)
	fmt.Fprintf(w, "approval store: %s\n", s.ApprovalStore)
	fmt.Fprintf(w, "audit store: %s\n", s.AuditStore)
}

func principals(ts []config.Token) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Principal
	}
	return strings.Join(names, ", ")
}

var runCmd = &command{
	name:    "run",
	summary: "make one governed call and print its Result as JSON",
	usage: `Usage: execgate run --config FILE [--principal P] [--audit FILE] NAME [INPUT]

Run makes one call through the gate, exactly as an agent's would be made:
NAME is looked up in the allowlist, INPUT (a JSON value; absent means no
input, "-" reads it from stdin) is validated into an argv, the policy
decides for the principal, and the command runs without a shell. The
Result is printed as JSON on stdout: exitCode, stdout, stderr, how the
process ended, and how many output bytes were dropped. A dispatcher is
called as over MCP and the HTTP API, by its name with the subcommand in
the input, as in execgate run terraform '{"subcommand": "plan"}' (or by
the command name, terraform.plan, with the rest of the input).

A refused call prints {"error": {"kind": ..., "message": ...}} on stderr
and runs nothing. A call the policy holds for approval is refused: run
cannot wait for a person; use serve.

The principal is --principal, else the configuration's server.principal,
else none.

Exit codes: 0 the command ran and exited 0; 1 the call was refused, or
the command ran and did not exit 0 (its Result, with its exit code, is
still printed on stdout); 2 usage error or a configuration that does not
load.
`,
	setup: func(fs *flag.FlagSet) func(*cli, context.Context, []string) int {
		file := fs.String("config", "", "the configuration `FILE` (required)")
		principal := fs.String("principal", "", "the principal `P` the call is made as (default: the config's server.principal)")
		auditFile := fs.String("audit", "", "append the call to the hash-chained audit `FILE`")
		return func(c *cli, ctx context.Context, args []string) int {
			if *file == "" {
				return c.usageError("--config is required")
			}
			if len(args) < 1 || len(args) > 2 {
				return c.usageError("want NAME and, optionally, INPUT")
			}
			var input json.RawMessage
			if len(args) == 2 {
				input = json.RawMessage(args[1])
				if args[1] == "-" {
					b, err := io.ReadAll(io.LimitReader(c.stdin, execgate.MaxInputSize+1))
					if err != nil {
						return c.fail(exitUsage, fmt.Errorf("reading the input: %w", err))
					}
					input = b
				}
			}
			g, err := openGate(*file, *auditFile)
			if err != nil {
				return c.loadError(err)
			}
			defer g.Close()
			p := *principal
			if p == "" {
				p = g.server().Principal
			}
			ctx, slot := withSlot(execgate.WithPrincipal(ctx, p))
			name, input, err := runTarget(g.x.Allowlist(), args[0], input)
			var res execgate.Result
			if err == nil {
				res, err = g.x.Run(ctx, name, input)
			} else if rerr := g.x.RecordRefusal(ctx, execgate.Refusal{Route: "execgate run", Name: args[0], Kind: execgate.ErrorKindValidation,
				Reason: "the subcommand argument of a dispatcher was refused"}); rerr != nil {
				err = rerr
			}
			if err != nil {
				e := refusal(err)
				switch {
				case e.Kind == execgate.ErrorKindInternal:
					e.Message = err.Error()
				case e.Action == execgate.ActionRequireApproval:
					e.Message = fmt.Sprintf("execgate: %q needs a person's approval, and execgate run cannot wait for one (use execgate serve); nothing ran", e.Name)
				}
				body := refusalBody{Error: e}
				if ev, ok := slot.last(); ok {
					body.TraceID, body.Policy = ev.TraceID, policyOf(ev)
				}
				printJSON(c.stderr, body)
				return exitFailed
			}
			printJSON(c.stdout, res)
			if !res.OK {
				return exitFailed
			}
			return exitOK
		}
	},
}

// runTarget returns the command name and input that execgate run NAME
// INPUT asks the gate for: NAME and INPUT, or for a dispatcher's NAME, as
// over MCP and the HTTP API, NAME.SUBCOMMAND and INPUT without its
// "subcommand" (mcpserver.DispatchCall). A subcommand with a command of
// its own is refused with a pointer to it, since its input has another
// shape.
func runTarget(a *execgate.Allowlist, name string, input json.RawMessage) (string, json.RawMessage, error) {
	if _, ok := a.Lookup(name); ok || !isDispatcher(a, name) {
		return name, input, nil
	}
	cmd, rest, err := mcpserver.DispatchCall(name, input)
	if err != nil {
		return "", nil, err
	}
	if own, ok := a.Lookup(cmd); ok && !own.Dispatch {
		return "", nil, &execgate.ValidationError{Name: name, Issues: []execgate.Issue{{
			Field: mcpserver.SubcommandProperty, Message: fmt.Sprintf("%q has its own tool; call it by its name instead (execgate run %s INPUT)", cmd, cmd),
		}}}
	}
	return cmd, rest, nil
}

// isDispatcher reports whether a has a dispatcher named name.
func isDispatcher(a *execgate.Allowlist, name string) bool {
	for _, s := range a.Specs() {
		if s.Dispatch && s.Name == name {
			return true
		}
	}
	return false
}

var toolsCmd = &command{
	name:    "tools",
	summary: "list the tools of a configuration with their input schemas",
	usage: `Usage: execgate tools --config FILE [--logical-names]

Tools prints, as JSON on stdout, every command name the configuration
allows with its description and the JSON Schema of its input: the same
list as GET /v1/tools. Each tool's mcp_name is the name serve lists it
under over MCP: its name with each '.' made '_' ("git_log" for
"git.log"), or with --logical-names, as serve --logical-names lists it,
its name itself. A dispatcher ("dispatch": true) is called by its name
with the subcommand in the input's "subcommand", which its input_schema
requires (see "Dispatchers" in "go doc
github.com/execgate/execgate/cmd/execgate"); call_as is the command name
each call is decided as, and it carries its default_action. Two commands that
would be listed under one mcp_name are named on stderr: serve refuses
them without --logical-names.

Exit codes: 0 ok; 2 usage error or a configuration that does not load.
`,
	setup: func(fs *flag.FlagSet) func(*cli, context.Context, []string) int {
		logicalNames := fs.Bool("logical-names", false, "show the MCP names of serve --logical-names: the command names themselves")
		return withConfig(fs, func(c *cli, _ string, l *config.Loaded) int {
			list := listTools(l.Allowlist, *logicalNames)
			printJSON(c.stdout, list)
			reportCollisions(c.stderr, list)
			return exitOK
		})
	},
}

// reportCollisions names on w, one line each, the tools of list that
// share an mcp_name: serve refuses to list them over MCP.
func reportCollisions(w io.Writer, list toolList) {
	first := map[string]string{}
	for _, t := range list.Tools {
		if other, ok := first[t.MCPName]; ok {
			fmt.Fprintf(w, "execgate tools: %q and %q would both be listed as the MCP tool %q, and serve refuses that: rename one, or serve with --logical-names for clients that accept dots\n", other, t.Name, t.MCPName)
			continue
		}
		first[t.MCPName] = t.Name
	}
}

var auditCmd = &command{
	name:    "audit",
	summary: "verify a hash-chained audit file or table (audit verify FILE)",
	usage: `Usage: execgate audit verify FILE
       execgate audit verify --dsn-env NAME [--table T]

Verify checks every line of an audit file written with --audit: its own
hash, its sequence number, and the hash of the line before it. On
success it prints the number of entries and the chain's head (the last
line's seq and SHA-256): keep the head somewhere the server cannot
write, since no file alone shows that lines were cut from its end.

It then lists, one per line as "FILE: unfinished: seq N: ...", every call
whose intent (the entry written before its process started) no outcome
follows: the gate stopped while the process ran (a crash, a kill, a
power cut) or could not write the outcome, or, while serve still runs,
the call has not ended yet. Its process may have run to its end; the
trail does not say how. Such calls do not make the chain broken. Those
before the first broken line are listed for a broken chain too.

With --dsn-env it checks instead the PostgreSQL audit table T (default
execgate_audit) that replicas append to as one chain, in the database
whose connection string is in the environment variable NAME (the string
itself is never taken from the command line, nor printed): each row's
line as a line of a file, and each row's seq, prev_sha256 and
line_sha256 columns. It prints the same lines, labeled "table T"; the
first broken or missing entry is named by its seq.

Exit codes: 0 the chain is intact; 1 it is broken (the first broken line
and what is wrong are printed on stderr); 2 usage error or the file
(or table) cannot be read.
`,
	setup: func(fs *flag.FlagSet) func(*cli, context.Context, []string) int {
		dsnEnv := fs.String("dsn-env", "", "verify the PostgreSQL audit table in the database whose connection string is in the environment variable `NAME`")
		table := fs.String("table", "", "the audit table `T` to verify with --dsn-env (default "+pgstore.DefaultAuditTable+")")
		return func(c *cli, ctx context.Context, args []string) int {
			if len(args) > 0 && args[0] == "verify" {
				// The flags may also follow "verify".
				if code := c.parse(c.cmd, fs, args[1:]); code >= 0 {
					return code
				}
				args = append([]string{"verify"}, fs.Args()...)
			}
			if *dsnEnv != "" {
				if len(args) != 1 || args[0] != "verify" {
					return c.usageError("want: audit verify --dsn-env NAME [--table T], with no FILE")
				}
				return verifyPGAudit(c, ctx, *dsnEnv, *table)
			}
			if *table != "" {
				return c.usageError("--table needs --dsn-env")
			}
			if len(args) != 2 || args[0] != "verify" {
				return c.usageError("want: audit verify FILE")
			}
			f, err := os.Open(args[1])
			if err != nil {
				return c.fail(exitUsage, err)
			}
			defer f.Close()
			rep, err := audit.VerifyReport(f)
			var ve *audit.VerifyError
			switch {
			case errors.As(err, &ve):
				fmt.Fprintf(c.stderr, "%s: broken: %v\n", args[1], ve)
				printUnfinished(c.stdout, args[1], rep)
				return exitFailed
			case err != nil:
				return c.fail(exitUsage, err)
			}
			head := rep.Head
			fmt.Fprintf(c.stdout, "%s: ok: %d entries, head seq %d sha256 %s\n", args[1], head.Seq, head.Seq, head.SHA256)
			printUnfinished(c.stdout, args[1], rep)
			return exitOK
		}
	},
}

// printUnfinished prints the calls of rep that started and have no
// outcome, one per line. Unfinished.String quotes whatever of a call the
// file's writer chose that could forge a line or reach a terminal.
func printUnfinished(w io.Writer, file string, rep audit.Report) {
	for _, u := range rep.Unfinished {
		fmt.Fprintf(w, "%s: unfinished: %s\n", file, u)
	}
}

var tokenCmd = &command{
	name:    "token",
	summary: "make a bearer token and the sha256 line for the server section",
	usage: `Usage: execgate token [--principal P] [--stdin]

Token prints a new random bearer token (about 130 bits) and the entry to
put under server.tokens or server.approvers: the configuration holds only
the token's SHA-256, never the token. Give the token to its holder and
keep no other copy. With --stdin it reads an existing token from stdin
instead (surrounding white space removed) and prints only the entry.

Exit codes: 0 ok; 2 usage error.
`,
	setup: func(fs *flag.FlagSet) func(*cli, context.Context, []string) int {
		principal := fs.String("principal", "PRINCIPAL", "the principal `P` to put in the entry")
		stdin := fs.Bool("stdin", false, "hash the token read from stdin instead of making one")
		return func(c *cli, _ context.Context, args []string) int {
			if len(args) > 0 {
				return c.usageError("unexpected arguments %q", args)
			}
			var token string
			if *stdin {
				b, err := io.ReadAll(io.LimitReader(c.stdin, maxTokenBytes+1))
				if err != nil {
					return c.fail(exitUsage, err)
				}
				token = strings.TrimSpace(string(b))
				if token == "" || len(token) > maxTokenBytes || strings.ContainsAny(token, " \t\r\n") {
					return c.usageError("stdin must hold one token of 1 to %d bytes without white space", maxTokenBytes)
				}
			} else {
				token = rand.Text()
				fmt.Fprintf(c.stdout, "token: %s\n", token)
			}
			sum := sha256.Sum256([]byte(token))
			fmt.Fprintf(c.stdout, "entry: {principal: %q, sha256: %q}\n", *principal, hex.EncodeToString(sum[:]))
			return exitOK
		}
	},
}

var versionCmd = &command{
	name:    "version",
	summary: "print the version of execgate",
	usage: `Usage: execgate version

Version prints the module version the binary was built from.
`,
	setup: func(fs *flag.FlagSet) func(*cli, context.Context, []string) int {
		return func(c *cli, _ context.Context, _ []string) int {
			fmt.Fprintf(c.stdout, "execgate %s\n", moduleVersion())
			return exitOK
		}
	},
}

// moduleVersion is the module version the binary was built from, or
// "devel".
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// refusalBody is what execgate run prints on stderr for a refused call.
type refusalBody struct {
	Error   *errorInfo  `json:"error"`
	TraceID string      `json:"trace_id,omitempty"`
	Policy  *policyInfo `json:"policy,omitempty"`
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// withConfig is the body of a command that takes --config FILE and no
// arguments: it loads the file, reporting usage and load errors, and runs
// do with the loaded configuration.
func withConfig(fs *flag.FlagSet, do func(c *cli, file string, l *config.Loaded) int) func(*cli, context.Context, []string) int {
	file := fs.String("config", "", "the configuration `FILE` (required)")
	return func(c *cli, _ context.Context, args []string) int {
		if *file == "" {
			return c.usageError("--config is required")
		}
		if len(args) > 0 {
			return c.usageError("unexpected arguments %q", args)
		}
		l, err := config.LoadFile(*file)
		if err != nil {
			return c.loadError(err)
		}
		return do(c, *file, l)
	}
}
