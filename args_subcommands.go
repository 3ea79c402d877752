package execgate

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/execgate/execgate/internal/inputrules"
)

// SubcommandSpec configures the schema of a dispatcher spec: a spec with
// Dispatch set, which serves the subcommands of a tool that have no spec of
// their own.
type SubcommandSpec struct {
	// Leading are fixed arguments placed before the subcommand, such as a
	// tool's global options ("--no-pager", "-c", "core.hooksPath=/dev/null").
	// Callers can never place anything there. Nil means none.
	Leading []string
	// Stdin, if not nil, lets calls send standard input, up to its Max.
	// Nil means stdin is refused.
	Stdin *StdinSpec
}

// subcommandParser is implemented by the schemas a dispatcher spec may use:
// they build the argv of one subcommand, which comes from the requested
// name and never from the input.
type subcommandParser interface {
	parseSubcommand(sub string, input json.RawMessage) (Argv, error)
}

// Subcommands returns the schema of a dispatcher spec ([CommandSpec.Dispatch]
// set). A dispatcher registered as "git" serves every requested name
// "git.<sub>" that has no spec of its own, where sub is 1 to 64 bytes
// matching ^[a-z][a-z0-9-]*$. The subcommand is taken from the requested
// name only, never from the input.
//
// The input is {"args": [...], "stdin": "..."}, both optional. The argv is
// spec.Leading, then the subcommand, then the caller's "args" in order.
//
// A dispatcher checks tokens, not a grammar: each token in "args" must pass
// the token rules of [Flags] (valid UTF-8 without NUL, control, formatting or
// invisible characters, see Flags; no shell metacharacters ; & | $ ` < > (
// ) { } or newline, no "--", nothing starting with '@', at most
// [MaxApprovalArgs] tokens of at most [MaxApprovalArgBytes] each), but there
// is no flag
// allowlist: any flag and operand the subcommand understands can be passed,
// including ones that change what it reads, writes or runs. For many tools
// that is arbitrary execution: git.config with ["alias.x", "!any command"]
// followed by git.x runs a shell command through git itself. And Leading
// pins position, not effect: a tool that lets a later option override an
// earlier one (most pflag/cobra CLIs: kubectl, gh, helm) takes the caller's
// --context or --namespace over the one in Leading. That is why a
// dispatcher's Floor defaults to [ActionDeny]; allow it only for tools whose
// every subcommand you would run with any arguments, or put a person in
// front with [ActionRequireApproval]. Give a subcommand its own spec with
// Flags to allow exactly the grammar you mean.
//
// Parse, which has no subcommand, refuses every input; the [Executor] calls
// the dispatcher with the subcommand from the requested name.
func Subcommands(spec SubcommandSpec) ArgsSchema {
	s := &subcommandSchema{leading: append([]string(nil), spec.Leading...)}
	if spec.Stdin != nil {
		s.stdinMax = spec.Stdin.Max
		if s.stdinMax == 0 {
			s.stdinMax = DefaultMaxStdin
		}
		if s.stdinMax < 0 {
			s.err = fmt.Errorf("Stdin.Max must not be negative")
		}
	}
	for i, a := range s.leading {
		if msg := checkArgText(a); msg != "" && s.err == nil {
			s.err = fmt.Errorf("Leading[%d]: %s", i, msg)
		}
	}
	if len(s.leading) >= MaxApprovalArgs && s.err == nil {
		s.err = fmt.Errorf("Leading has %d arguments; at most %d", len(s.leading), MaxApprovalArgs-1)
	}
	s.schema = s.buildJSONSchema()
	return s
}

type subcommandSchema struct {
	leading  []string
	stdinMax int // 0: stdin refused
	err      error
	schema   json.RawMessage
}

func (s *subcommandSchema) check() error { return s.err }

// JSONSchema implements [ArgsSchema].
func (s *subcommandSchema) JSONSchema() json.RawMessage { return s.schema }

// Parse implements [ArgsSchema]. A dispatcher needs the subcommand from the
// requested name, so Parse alone refuses every input.
func (s *subcommandSchema) Parse(json.RawMessage) (Argv, error) {
	return Argv{}, &ValidationError{Issues: []Issue{{Message: "a dispatched command needs a subcommand in its name"}}}
}

func (s *subcommandSchema) parseSubcommand(sub string, input json.RawMessage) (Argv, error) {
	if s.err != nil {
		return Argv{}, &ValidationError{Issues: []Issue{{Message: "the command's dispatcher schema is misconfigured"}}}
	}
	if msg := inputrules.SubcommandProblem(sub); msg != "" {
		return Argv{}, &ValidationError{Issues: []Issue{{Field: "subcommand", Message: quoteArg(sub) + ": " + msg}}}
	}
	p := &flagsParse{s: &flagsSchema{stdinMax: s.stdinMax}}
	in, ok := p.decode(input)
	if ok {
		if len(in.Flags) > 0 {
			p.add("flags", "not accepted by a dispatched subcommand; pass flags as tokens in args")
		}
		if len(in.Args) > MaxApprovalArgs {
			p.add("args", fmt.Sprintf("must hold at most %d tokens", MaxApprovalArgs))
		} else {
			for i, tok := range in.Args {
				if msg := dispatchTokenProblem(tok); msg != "" {
					p.add(fmt.Sprintf("args[%d]", i), msg)
				}
			}
		}
		p.stdin(in.Stdin)
		if n := len(s.leading) + 1 + len(in.Args); p.issues == nil && n > MaxApprovalArgs {
			p.add("args", fmt.Sprintf("the call would have %d arguments, more than %d", n, MaxApprovalArgs))
		}
	}
	if p.issues != nil {
		if p.dropped > 0 {
			p.issues = append(p.issues, Issue{Message: fmt.Sprintf("and %d more issues", p.dropped)})
		}
		return Argv{}, &ValidationError{Issues: p.issues}
	}
	args := make([]string, 0, len(s.leading)+1+len(in.Args))
	args = append(args, s.leading...)
	args = append(args, sub)
	args = append(args, in.Args...)
	return Argv{Args: args, Stdin: p.stdinBytes}, nil
}

// dispatchTokenProblem returns why tok may not be passed to a dispatched
// subcommand, or "".
func dispatchTokenProblem(tok string) string {
	if msg := checkArgText(tok); msg != "" {
		return msg
	}
	switch {
	case tok == "":
		return `"": empty arguments are not accepted`
	case tok == "--":
		return `"--": not accepted from the caller`
	case strings.HasPrefix(tok, "@"):
		return quoteArg(tok) + ": arguments starting with '@' are not accepted"
	}
	if c := shellMetaIn(tok); c >= 0 {
		return fmt.Sprintf("%s: contains the shell metacharacter %q", quoteArg(tok), rune(c))
	}
	return ""
}

func (s *subcommandSchema) buildJSONSchema() json.RawMessage {
	type prop struct {
		Type        string `json:"type"`
		Description string `json:"description,omitempty"`
		Items       *prop  `json:"items,omitempty"`
		Pattern     string `json:"pattern,omitempty"`
		MinLength   int    `json:"minLength,omitempty"`
		MaxItems    int    `json:"maxItems,omitempty"`
		MaxLength   int    `json:"maxLength,omitempty"`
	}
	type props struct {
		Args  *prop `json:"args"`
		Stdin *prop `json:"stdin,omitempty"`
	}
	type object struct {
		Type                 string `json:"type"`
		Properties           props  `json:"properties"`
		AdditionalProperties bool   `json:"additionalProperties"`
	}
	o := object{Type: "object", Properties: props{Args: &prop{
		Type:        "array",
		Description: "Arguments after the subcommand, one token per element: flags and operands as the subcommand expects them. No shell metacharacters, no \"--\", nothing starting with '@'.",
		Items:       &prop{Type: "string", Pattern: dispatchTokenSchemaPattern, MinLength: 1, MaxLength: MaxApprovalArgBytes},
		MaxItems:    MaxApprovalArgs,
	}}}
	if s.stdinMax > 0 {
		o.Properties.Stdin = &prop{Type: "string", Description: "Standard input for the command.", MaxLength: s.stdinMax}
	}
	b, err := marshalSchema(o)
	if err != nil {
		panic(err) // fixed types: cannot happen
	}
	return b
}

// dispatchTokenSchemaPattern is the characters dispatchTokenProblem
// accepts: no leading '@', no shell metacharacter and nothing no token
// may hold.
var dispatchTokenSchemaPattern = `^[^@` + flagSchemaForbidden + `][^` + flagSchemaForbidden + `]*$`
