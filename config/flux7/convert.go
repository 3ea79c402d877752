package flux7

import (
	"fmt"
	"strings"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
)

// Options configures Convert. The zero Options is valid: every
// allowed_args flag then has an unknown value kind.
type Options struct {
	// Kinds say what value allowed_args flags take, which a flux7 file
	// does not say. A flag no Kind covers is written as a TODO comment,
	// not as a declared flag, and floors its tool. Nil means none.
	Kinds []Kind
}

// Kind says what value one allowed_args flag takes.
type Kind struct {
	// Tool limits the Kind to the cli_tools entry of that name. Empty
	// means every tool.
	Tool string

	// Command limits the Kind to one command of Tool ("run" for a bare
	// entry). Empty means every command; it needs Tool.
	Command string

	// Flag is the flag as allowed_args spells it: "-n", "--namespace",
	// "-target". It is required.
	Flag string

	// Value is what the flag takes: execgate.ValueNone (a boolean flag),
	// execgate.ValueString or execgate.ValueInt. Enum and pattern values
	// need their lists and expressions, so they are written in the
	// output by hand.
	Value execgate.ValueKind
}

// ParseKind reads a Kind written as [TOOL[.COMMAND]:]FLAG=VALUE, such as
// "--namespace=string", "kubectl:-n=string" or
// "terraform.apply:-parallelism=int". VALUE is none, string or int.
func ParseKind(s string) (Kind, error) {
	i := strings.LastIndexByte(s, '=')
	if i < 0 {
		return Kind{}, fmt.Errorf("flux7: kind %s: want [TOOL[.COMMAND]:]FLAG=VALUE, such as kubectl:--namespace=string", quote(s))
	}
	var k Kind
	spelling, value := s[:i], s[i+1:]
	if !strings.HasPrefix(spelling, "-") {
		j := strings.IndexByte(spelling, ':')
		if j < 0 {
			return Kind{}, fmt.Errorf("flux7: kind %s: the flag must start with '-', after an optional TOOL: or TOOL.COMMAND:", quote(s))
		}
		scope := spelling[:j]
		spelling = spelling[j+1:]
		k.Tool, k.Command, _ = strings.Cut(scope, ".")
	}
	k.Flag = spelling
	v, err := execgate.ParseValueKind(value)
	if err != nil {
		return Kind{}, fmt.Errorf("flux7: kind %s: %v", quote(s), err)
	}
	k.Value = v
	if err := k.check(); err != nil {
		return Kind{}, err
	}
	return k, nil
}

// check reports why k cannot be used.
func (k Kind) check() error {
	switch {
	case !strings.HasPrefix(k.Flag, "-"):
		return fmt.Errorf("flux7: kind for %s: Flag must be spelled as allowed_args spells it, starting with '-'", quote(k.Flag))
	case k.Command != "" && k.Tool == "":
		return fmt.Errorf("flux7: kind for %s: Command %s needs a Tool", quote(k.Flag), quote(k.Command))
	case k.Value != execgate.ValueNone && k.Value != execgate.ValueString && k.Value != execgate.ValueInt:
		return fmt.Errorf("flux7: kind for %s: value %s needs more than a name (its enum or pattern): declare it in the output by hand", quote(k.Flag), k.Value)
	}
	return nil
}

// kinds finds the Kind of a flag, the most specific first.
type kinds map[[3]string]execgate.ValueKind

func newKinds(ks []Kind) (kinds, error) {
	m := make(kinds, len(ks))
	for _, k := range ks {
		if err := k.check(); err != nil {
			return nil, err
		}
		key := [3]string{k.Tool, k.Command, k.Flag}
		if v, dup := m[key]; dup && v != k.Value {
			return nil, fmt.Errorf("flux7: kind for %s is given twice, as %s and as %s", quote(scopeOf(k)), v, k.Value)
		}
		m[key] = k.Value
	}
	return m, nil
}

func scopeOf(k Kind) string {
	switch {
	case k.Command != "":
		return k.Tool + "." + k.Command + ":" + k.Flag
	case k.Tool != "":
		return k.Tool + ":" + k.Flag
	}
	return k.Flag
}

func (m kinds) lookup(tool, command, flag string) (execgate.ValueKind, bool) {
	for _, key := range [][3]string{{tool, command, flag}, {tool, "", flag}, {"", "", flag}} {
		if v, ok := m[key]; ok {
			return v, true
		}
	}
	return 0, false
}

// Result is a converted file.
type Result struct {
	// YAML is the configuration in this project's format (package config),
	// with a TODO(flux7) comment on everything a person must finish.
	YAML []byte

	// Notes say what was not carried over as it was, in the order of the
	// flux7 file's lines.
	Notes []Note

	// Floored are the command names (strict and fine-tuned commands,
	// "<tool>.run" of bare entries) that the output's policies hold for
	// approval because their tool has a TODO, and the names of the
	// dispatchers whose default_action was raised to human_approval for
	// the same reason.
	Floored []string
}

// A Note is one thing the conversion did not carry over as it was.
type Note struct {
	// File is the name given to Convert.
	File string
	// Line and Column locate what the note is about in the flux7 file.
	Line, Column int
	// Path is its key path, such as "cli_tools[1].commands.get.allowed_args[0]".
	Path string
	// Message says what was done instead.
	Message string
	// TODO reports that a person must finish what the note is about; the
	// output holds a TODO(flux7) comment for it, and if it is in a tool,
	// the tool is floored at human_approval.
	TODO bool
}

// String returns the note as "file:line:col: path: message".
func (n Note) String() string {
	e := config.Error{File: n.File, Line: n.Line, Column: n.Column, Path: n.Path, Message: n.Message}
	return e.Error()
}

// inputName is the file name of notes and errors when none is given.
const inputName = "<input>"

// Convert converts the flux7 file in data, named name in notes and
// errors ("<input>" if empty). Problems that stop the conversion (YAML
// that is refused, an unknown key, a value of the wrong type, what a
// flux7 loader itself refuses, and what cannot be expressed without
// changing what runs, such as a relative working_dir) come together as a
// config.ErrorList whose entries name the line and the key. An Options
// that cannot be used gives a plain error.
//
// It never panics, and it reads at most config.MaxFileSize bytes.
func Convert(name string, data []byte, opts Options) (*Result, error) {
	if name == "" {
		name = inputName
	}
	ks, err := newKinds(opts.Kinds)
	if err != nil {
		return nil, err
	}
	p := &problems{file: name}
	if len(data) > config.MaxFileSize {
		p.add(nil, "", "larger than %d bytes; refusing to read it", config.MaxFileSize)
		return nil, p.err()
	}
	root := p.parse(data)
	if root == nil {
		return nil, p.err()
	}
	d := &decoder{problems: p}
	if !p.usable(root, "") {
		return nil, p.err()
	}
	doc := d.file(root)
	c := &converter{problems: p, kinds: ks}
	c.checkTools(doc.tools)
	c.checkPolicies(doc.policies)
	if err := p.err(); err != nil {
		return nil, err
	}
	out := c.convert(doc)
	if err := out.check(); err != nil {
		return nil, fmt.Errorf("flux7: the conversion produced policies that do not load (a bug): %w", err)
	}
	b, err := out.encode()
	if err != nil {
		return nil, fmt.Errorf("flux7: encoding the output: %w", err)
	}
	notes := c.notes
	sortNotes(notes)
	return &Result{YAML: b, Notes: notes, Floored: out.floored}, nil
}
