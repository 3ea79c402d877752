package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/internal/inputrules"
)

// DispatchCall takes apart the arguments of a call of the dispatcher
// whose logical name is dispatcher ("git"), as a [Server] does for each
// call of a dispatcher's tool: it returns the command name to ask the
// gate for, dispatcher+"."+subcommand ("git.status"), and the arguments
// without their "subcommand" member ([SubcommandProperty]), every other
// member byte for byte as sent, so that the gate still sees (and
// refuses) duplicate keys, case variants, unknown fields and bad values
// in what remains.
//
// It refuses, with a [*execgate.ValidationError] that names dispatcher
// and the field: arguments larger than [execgate.MaxInputSize], anything
// but a single JSON object, a missing or repeated "subcommand" (also when
// spelled with escapes), a "subcommand" that is not a string, and one
// that is no subcommand (it must match ^[a-z][a-z0-9-]*$ and be at most
// 64 bytes), which could otherwise add a '.' and reach another spec.
//
// Every transport that calls a dispatcher takes its arguments apart with
// it, so that a dispatcher is called one way everywhere: the execgate
// binary's HTTP API (POST /v1/tools/git with {"subcommand": "status"})
// and execgate run do.
func DispatchCall(dispatcher string, args json.RawMessage) (name string, input json.RawMessage, err error) {
	sub, rest, err := splitSubcommand(dispatcher, args)
	if err != nil {
		return "", nil, err
	}
	return dispatcher + "." + sub, rest, nil
}

// SpecOf returns the spec that [Options.Visible] is asked about for a
// call of the command name, and whether a serves name at all: the spec
// that serves it, as a.Lookup reports it, but for a name a dispatcher
// serves ("git.stash", served by "git"), the dispatcher's spec under that
// name, with Dispatch false, so that Visible judges the one command the
// call asks for. For such a spec policy.Engine's MayServe answers with
// MayRun of the name, after the dispatcher's Floor.
func SpecOf(a *execgate.Allowlist, name string) (execgate.CommandSpec, bool) {
	spec, ok := a.Lookup(name)
	if !ok {
		return execgate.CommandSpec{}, false
	}
	return asCommand(spec, name), true
}

// asCommand returns spec, which serves name, as the spec of the one
// command name: unchanged when spec is name's own, and for a dispatcher
// its spec under name, with Dispatch false.
func asCommand(spec execgate.CommandSpec, name string) execgate.CommandSpec {
	if spec.Dispatch && spec.Name != name {
		spec.Name, spec.Dispatch = name, false
	}
	return spec
}

// splitSubcommand takes the arguments of a call to a dispatcher tool apart.
// It returns the value of the top-level "subcommand" member and the
// arguments with that member removed, every other member byte for byte as
// the client sent it, so that the gate still sees (and refuses) duplicate
// keys, case variants, unknown fields and bad values in what remains.
//
// It refuses, with a *execgate.ValidationError for the tool: input larger
// than execgate.MaxInputSize, anything but a single JSON object, a missing
// or repeated "subcommand" (also when spelled with escapes), a
// "subcommand" that is not a string, and a subcommand that a dispatcher
// does not serve (inputrules.ValidSubcommand). The last check matters: the
// subcommand becomes part of the requested name, and must never add a '.'
// that would make the gate look up another spec.
func splitSubcommand(toolName string, args json.RawMessage) (string, json.RawMessage, error) {
	refuse := func(field, msg string) (string, json.RawMessage, error) {
		return "", nil, &execgate.ValidationError{Name: toolName, Issues: []execgate.Issue{{Field: field, Message: msg}}}
	}
	notObject := fmt.Sprintf("the arguments must be a JSON object with a %q string", SubcommandProperty)
	if msg := inputrules.InputSizeProblem(len(args)); msg != "" {
		return refuse("", msg)
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return refuse("", notObject)
	}
	var (
		sub     string
		found   bool
		members [][]byte
		prev    = dec.InputOffset()
	)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return refuse("", "the arguments are not valid JSON")
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return refuse("", "the arguments are not valid JSON")
		}
		end := dec.InputOffset()
		if key != SubcommandProperty {
			members = append(members, memberBytes(args[prev:end]))
			prev = end
			continue
		}
		prev = end
		if found {
			return refuse(SubcommandProperty, "duplicate key")
		}
		found = true
		if len(val) == 0 || val[0] != '"' || json.Unmarshal(val, &sub) != nil {
			return refuse(SubcommandProperty, "must be a string")
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return refuse("", "the arguments are not valid JSON")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return refuse("", "unexpected data after the arguments object")
	}
	if !found {
		return refuse(SubcommandProperty, "required")
	}
	if msg := inputrules.SubcommandProblem(sub); msg != "" {
		return refuse(SubcommandProperty, msg)
	}
	rest := make([]byte, 0, len(args))
	rest = append(rest, '{')
	for i, m := range members {
		if i > 0 {
			rest = append(rest, ',')
		}
		rest = append(rest, m...)
	}
	rest = append(rest, '}')
	return sub, rest, nil
}

// memberBytes trims what precedes a member in the span between the end of
// the previous member (or the opening brace) and the end of this one: white
// space and the separating comma. What is left is `"key": value` exactly as
// sent.
func memberBytes(span []byte) []byte {
	span = bytes.TrimLeft(span, " \t\r\n")
	if len(span) > 0 && span[0] == ',' {
		span = bytes.TrimLeft(span[1:], " \t\r\n")
	}
	return span
}
