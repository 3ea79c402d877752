package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
)

var explainCmd = &command{
	name:    "explain",
	summary: "show step by step what the gate does with one call, running nothing",
	usage: `Usage: execgate explain --config FILE [--principal P] [--json] NAME [INPUT]

Explain loads the configuration and shows what the gate does with the
call NAME INPUT (a JSON arguments object; {} when left out, "-" reads it
from stdin), one step at a time: lookup (the spec that serves the name
and its mode: declared, dispatcher or bare), validation (the argv it
builds with the part of the spec that accepted or placed each argument,
or every refused token with the rule that refused it), policy
(the action, the rule and the grant that decided), floor (the tool's
default_action), and the verdict: run (would run now), approval (needs
a person's approval) or refused. It starts no process and stores no
approval: the real gate decides the call as serve would, and stops there.
The principal is --principal, else the server section's stdio principal.
With --json it prints the same as one JSON object: name, principal,
steps (each {step, outcome, detail}, with spec, mode, args, tokens, rule
and grant where they apply), argv, verdict, and kind and error when
refused.

Exit codes: 0 the call would run or needs an approval; 1 it is refused;
2 usage error or a configuration that does not load.
`,
	setup: func(fs *flag.FlagSet) func(*cli, context.Context, []string) int {
		file := fs.String("config", "", "the configuration `FILE` (required)")
		principal := fs.String("principal", "", "the principal `P` making the call; default: the server section's")
		asJSON := fs.Bool("json", false, "print the explanation as JSON")
		return func(c *cli, ctx context.Context, args []string) int {
			if *file == "" {
				return c.usageError("--config is required")
			}
			if len(args) < 1 || len(args) > 2 {
				return c.usageError("want NAME and, optionally, INPUT")
			}
			input := json.RawMessage("{}")
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
			l, err := config.LoadFile(*file)
			if err != nil {
				return c.loadError(err)
			}
			p := *principal
			if p == "" && l.Server != nil {
				p = l.Server.Principal
			}
			ex := explain(ctx, l, args[0], p, input)
			if *asJSON {
				printJSON(c.stdout, ex)
			} else {
				ex.print(c.stdout)
			}
			if ex.Verdict == verdictRefused {
				return exitFailed
			}
			return exitOK
		}
	},
}

// Verdicts of an explanation.
const (
	verdictRun      = "run"      // the call would run now
	verdictApproval = "approval" // it needs a person's approval
	verdictRefused  = "refused"  // it is refused
)

// Kinds of refusal that execgate test cases can expect: the gate's own
// (execgate.ErrorKind), as every surface names them.
const (
	refusedNotFound   = execgate.ErrorKindNotFound
	refusedValidation = execgate.ErrorKindValidation
	refusedPolicy     = execgate.ErrorKindPolicy
)

// explanation is what explain prints.
type explanation struct {
	Name      string   `json:"name"`
	Principal string   `json:"principal"`
	Steps     []step   `json:"steps"`
	Argv      []string `json:"argv,omitempty"` // the executable, then the arguments
	Verdict   string   `json:"verdict"`
	Kind      string   `json:"kind,omitempty"`  // why it was refused: an execgate.ErrorKind
	Error     string   `json:"error,omitempty"` // the refusal
}

// step is one step of the gate.
type step struct {
	Step    string       `json:"step"` // lookup, validation, policy, floor
	Outcome string       `json:"outcome"`
	Detail  string       `json:"detail"`
	Spec    string       `json:"spec,omitempty"`
	Mode    string       `json:"mode,omitempty"`
	Tokens  []tokenIssue `json:"tokens,omitempty"`
	// Args says, for an accepted call, why each argument is there.
	Args  []execgate.ArgNote `json:"args,omitempty"`
	Rule  string             `json:"rule,omitempty"`
	Grant string             `json:"grant,omitempty"`
}

// tokenIssue is one refused part of the input: the field, the token it
// holds when it is an argv token, and the rule it breaks.
type tokenIssue struct {
	Field string `json:"field"`
	Index *int   `json:"index,omitempty"`
	Token string `json:"token,omitempty"`
	Rule  string `json:"rule"`
}

// explain asks the gate of l what it would do with one call
// (Executor.Decide), and says what each step did.
func explain(ctx context.Context, l *config.Loaded, name, principal string, input json.RawMessage) *explanation {
	ex := &explanation{Name: name, Principal: principal}
	refuse := func(err error) *explanation {
		ex.Verdict, ex.Kind, ex.Error = verdictRefused, string(execgate.KindOf(err)), strings.TrimPrefix(err.Error(), "execgate: ")
		return ex
	}
	var pol execgate.Policy
	if l.Policy != nil {
		pol = l.Policy
	}
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: l.Allowlist, Policy: pol})
	if err != nil {
		return refuse(err)
	}
	if principal != "" {
		ctx = execgate.WithPrincipal(ctx, principal)
	}
	v, err := x.Decide(ctx, name, input, execgate.SubmitOptions{})

	var nf *execgate.NotFoundError
	if errors.As(err, &nf) {
		ex.Steps = append(ex.Steps, step{Step: "lookup", Outcome: "refused", Detail: "no command of the configuration serves this name"})
		return refuse(err)
	}
	mode, detail := modeOf(l, v.Spec, name)
	ex.Steps = append(ex.Steps, step{Step: "lookup", Outcome: "found", Detail: detail, Spec: v.Spec.Name, Mode: mode})

	// Decide validated the input as Explain does; Explain also says why
	// each argument is there, or which token broke which rule.
	notes, verr := execgate.NewProposer(l.Allowlist).Explain(name, input)
	if verr != nil {
		var ve *execgate.ValidationError
		if errors.As(verr, &ve) {
			toks := tokenIssues(ve, input)
			ex.Steps = append(ex.Steps, step{Step: "validation", Outcome: "refused", Detail: fmt.Sprintf("%d problem(s) in the input", len(toks)), Tokens: toks})
		}
		return refuse(verr)
	}
	ex.Argv = append([]string{v.Spec.Command}, v.Argv.Args...)
	ex.Steps = append(ex.Steps, step{Step: "validation", Outcome: "accepted", Detail: "argv " + quoteArgv(ex.Argv), Args: notes})
	ex.Steps = append(ex.Steps, policyStep(l, v), floorStep(v))

	switch {
	case err != nil:
		return refuse(err)
	case v.Op == execgate.OpRun:
		ex.Verdict = verdictRun
	default:
		ex.Verdict = verdictApproval
	}
	return ex
}

// policyStep says what the policy answered.
func policyStep(l *config.Loaded, v execgate.Verdict) step {
	switch {
	case l.Policy == nil:
		return step{Step: "policy", Outcome: execgate.ActionAllow, Detail: "the configuration has no policies section: every allowlisted call is allowed"}
	case v.Policy != nil:
		got := v.Policy
		s := step{Step: "policy", Outcome: got.Action, Rule: got.Rule, Grant: got.Grant, Detail: "decided by rule " + strconv.Quote(got.Rule)}
		if got.Grant != "" {
			s.Detail += ", through grant " + strconv.Quote(got.Grant)
		}
		return s
	default:
		return step{Step: "policy", Outcome: "not asked", Detail: "the call was refused before the policy was asked"}
	}
}

// floorStep says what the spec's floor (a tool's default_action) did to
// the policy's answer. The allowlist has filled in a dispatcher's default.
func floorStep(v execgate.Verdict) step {
	floor := v.Spec.Floor
	switch {
	case floor == "" || floor == execgate.ActionAllow:
		return step{Step: "floor", Outcome: execgate.ActionAllow, Detail: "the spec's floor is allow: the policy decides alone"}
	case v.Decision.Rule == execgate.FloorRule:
		return step{Step: "floor", Outcome: floor, Rule: execgate.FloorRule, Detail: "the tool's default_action " + floor + " made the decision stricter"}
	default:
		return step{Step: "floor", Outcome: floor, Detail: "the tool's default_action " + floor + " is no stricter than the policy's decision"}
	}
}

// modeOf says how spec serves name: the tool's mode and the kind of spec.
func modeOf(l *config.Loaded, spec execgate.CommandSpec, name string) (mode, detail string) {
	toolMode := ""
	for _, t := range l.Tools {
		for _, s := range t.Specs {
			if s == spec.Name {
				toolMode = string(t.Mode)
			}
		}
	}
	switch {
	case spec.Dispatch:
		sub := name[strings.LastIndexByte(name, '.')+1:]
		return "dispatcher", fmt.Sprintf("served by the dispatcher %q (tool mode %s) as subcommand %q: any flag passes the token checks, no flag allowlist", spec.Name, toolMode, sub)
	case toolMode == string(config.ModeBare):
		return "bare", fmt.Sprintf("the bare command %q", spec.Name)
	default:
		return "declared", fmt.Sprintf("the declared command %q (tool mode %s)", spec.Name, toolMode)
	}
}

// argsFieldRe matches the field of an argv token: args[3].
var argsFieldRe = regexp.MustCompile(`^args\[(\d+)\]$`)

// tokenIssues lists the issues of ve, each with the argv token it names.
func tokenIssues(ve *execgate.ValidationError, input json.RawMessage) []tokenIssue {
	var in struct {
		Args []json.RawMessage `json:"args"`
	}
	_ = json.Unmarshal(input, &in)
	out := make([]tokenIssue, 0, len(ve.Issues))
	for _, is := range ve.Issues {
		ti := tokenIssue{Field: is.Field, Rule: is.Message}
		if m := argsFieldRe.FindStringSubmatch(is.Field); m != nil {
			if i, err := strconv.Atoi(m[1]); err == nil && i < len(in.Args) {
				ti.Index = &i
				var s string
				if json.Unmarshal(in.Args[i], &s) == nil {
					ti.Token = s
				} else {
					ti.Token = string(in.Args[i])
				}
				// Flag schemas start the message with the token.
				ti.Rule = strings.TrimPrefix(ti.Rule, quoteToken(ti.Token)+": ")
			}
		}
		out = append(out, ti)
	}
	return out
}

// quoteArgv writes an argv for people: ["git" "log"].
func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = strconv.Quote(a)
	}
	return "[" + strings.Join(q, " ") + "]"
}

// print writes the explanation for people.
func (ex *explanation) print(w io.Writer) {
	who := ex.Principal
	if who == "" {
		who = "(no principal)"
	}
	fmt.Fprintf(w, "call %s by %s\n", strconv.Quote(ex.Name), who)
	for i, s := range ex.Steps {
		fmt.Fprintf(w, "%d. %-10s %s: %s\n", i+1, s.Step, s.Outcome, s.Detail)
		for i, a := range s.Args {
			fmt.Fprintf(w, "     arg %d %s: %s\n", i+1, strconv.Quote(a.Arg), a.Why)
		}
		for _, t := range s.Tokens {
			switch {
			case t.Index != nil:
				fmt.Fprintf(w, "     token %d %s: %s\n", *t.Index, strconv.Quote(t.Token), t.Rule)
			case t.Field != "":
				fmt.Fprintf(w, "     %s: %s\n", t.Field, t.Rule)
			default:
				fmt.Fprintf(w, "     %s\n", t.Rule)
			}
		}
	}
	switch ex.Verdict {
	case verdictRun:
		fmt.Fprintf(w, "verdict: would run %s\n", quoteArgv(ex.Argv))
	case verdictApproval:
		fmt.Fprintf(w, "verdict: needs a person's approval to run %s\n", quoteArgv(ex.Argv))
	default:
		fmt.Fprintf(w, "verdict: refused (%s): %s\n", ex.Kind, ex.Error)
	}
}

// quoteToken quotes a token as a Flags schema's messages do.
func quoteToken(s string) string {
	return strconv.Quote(s)
}
