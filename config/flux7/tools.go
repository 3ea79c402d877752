package flux7

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
)

// This file checks the cli_tools entries and converts each into a tools
// entry of this project's format.

// The names this project's format accepts (see package config); a test
// checks them against the loader.
var (
	toolNameRe   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
	subcommandRe = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	flagNameRe   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
)

const (
	maxToolName   = 63
	maxSubcommand = 64
	maxFlagName   = 64
)

// flux7Actions are the spellings of a flux7 default_action and rule
// action, with this project's name of each.
var flux7Actions = map[string]string{
	"allow":          execgate.ActionAllow,
	"deny":           execgate.ActionDeny,
	"human_approval": execgate.ActionRequireApproval,
}

// inherited are the variables flux7 passes to every command besides its
// env.
var inherited = []string{"PATH", "HOME", "LANG"}

// converter turns a checked fileDoc into an output, recording notes.
type converter struct {
	*problems
	kinds kinds
	notes []Note
}

// note records what was not carried over as it was. A note with todo set
// also goes into the output as a TODO(flux7) comment, which the caller
// places.
func (c *converter) note(n *yaml.Node, path string, todo bool, format string, args ...any) string {
	line, col := 0, 0
	if n != nil {
		line, col = n.Line, n.Column
	}
	msg := fmt.Sprintf(format, args...)
	c.notes = append(c.notes, Note{File: c.file, Line: line, Column: col, Path: path, Message: msg, TODO: todo})
	tag := "flux7"
	if todo {
		tag = "TODO(flux7)"
	}
	return fmt.Sprintf("%s: line %d: %s", tag, line, msg)
}

func sortNotes(ns []Note) {
	sort.SliceStable(ns, func(i, j int) bool {
		if ns[i].Line != ns[j].Line {
			return ns[i].Line < ns[j].Line
		}
		return ns[i].Column < ns[j].Column
	})
}

// checkTools refuses what a flux7 loader refuses and what this format
// cannot express without changing what runs.
func (c *converter) checkTools(tools []*toolDoc) {
	names := make(map[string]*yaml.Node)
	for _, t := range tools {
		if t.name.set {
			switch n := t.name.v; {
			case len(n) > maxToolName || !toolNameRe.MatchString(n):
				c.add(t.name.node, t.name.path, "%s: this format needs a tool name of 1 to %d ASCII letters, digits, '_' and '-', starting with a letter or digit; rename the tool (and its policy rules) in the flux7 file", quote(n), maxToolName)
			case names[n] != nil:
				c.add(t.name.node, t.name.path, "duplicate tool name %s (first at line %d)", quote(n), names[n].Line)
			default:
				names[n] = t.name.node
			}
		}
		if t.bin.set {
			switch b := t.bin.v; {
			case b == "":
				c.add(t.bin.node, t.bin.path, "must not be empty")
			case strings.IndexFunc(b, unicode.IsControl) >= 0:
				c.add(t.bin.node, t.bin.path, "must not contain control characters")
			case !filepath.IsAbs(b) && strings.ContainsRune(b, '/'):
				c.add(t.bin.node, t.bin.path, "%s is a relative path; this format needs an absolute path or a bare name looked up on PATH", quote(b))
			}
		}
		if t.action.set {
			if _, ok := flux7Actions[t.action.v]; !ok {
				c.add(t.action.node, t.action.path, "unknown default_action %s: use allow, deny or human_approval", quote(t.action.v))
			}
		}
		if t.workingDir.set {
			if w := t.workingDir.v; !filepath.IsAbs(w) || strings.IndexByte(w, 0) >= 0 {
				c.add(t.workingDir.node, t.workingDir.path, "this format needs an absolute working_dir without NUL; leaving it out would run the commands elsewhere")
			}
		}
		for _, e := range t.env {
			if k := e.key.v; k == "" || strings.ContainsAny(k, "=\x00") {
				c.add(e.key.node, e.key.path, "an environment variable name must be non-empty and contain neither '=' nor NUL")
			}
			if strings.IndexByte(e.value.v, 0) >= 0 {
				c.add(e.value.node, e.value.path, "the value contains NUL") // never repeat the value
			}
		}
		c.checkMode(t)
		for _, cmd := range t.commands {
			c.checkTimeout(cmd)
		}
		if t.bare != nil {
			c.checkTimeout(t.bare)
		}
	}
}

// checkMode applies flux7's own rules on strict, commands and bare.
func (c *converter) checkMode(t *toolDoc) {
	hasCmds := t.commandsNode != nil && len(t.commands) > 0
	switch {
	case t.bare != nil && t.commandsNode != nil:
		c.add(t.bare.key, t.bare.path, "bare and commands exclude each other")
	case t.bare != nil && t.strict:
		c.add(t.strictNode, keyPath(t.path, "strict"), "bare and strict exclude each other")
	case t.strict && !hasCmds:
		c.add(t.strictNode, keyPath(t.path, "strict"), "strict: true needs at least one command")
	}
}

func (c *converter) checkTimeout(cmd *commandDoc) {
	if !cmd.timeout.set {
		return
	}
	d, err := time.ParseDuration(cmd.timeout.v)
	switch {
	case err != nil:
		c.add(cmd.timeout.node, cmd.timeout.path, "%s is not a duration such as 30s or 5m", quote(cmd.timeout.v))
	case d < 0:
		c.add(cmd.timeout.node, cmd.timeout.path, "must not be negative")
	}
}

// outTool is one entry of the output's tools list.
type outTool struct {
	line     int
	comments []string // above the entry
	name     string
	bin      string
	dir      string
	env      []envVar
	mode     config.Mode
	action   string // the default_action to write, "" for none
	actNote  string // a comment on it
	commands []*outCommand
	bare     *outCommand
	todo     bool // something of the tool is a TODO: floor it
}

// outCommand is one command entry, or the bare entry.
type outCommand struct {
	name     string // "" for bare
	comments []string
	flags    []outFlag
	timeout  string
	held     bool // its tool has a TODO: human_approval: true
}

type outFlag struct {
	name       string
	singleDash bool
	value      execgate.ValueKind
}

// tool converts one cli_tools entry. It returns nil for a tool that is
// left out.
func (c *converter) tool(t *toolDoc) *outTool {
	o := &outTool{line: t.node.Line, name: t.name.v, bin: t.bin.v, dir: t.workingDir.v, env: t.env}
	switch {
	case t.bare != nil:
		o.mode = config.ModeBare
	case t.strict:
		o.mode = config.ModeStrict
	case t.commandsNode != nil && len(t.commands) > 0:
		o.mode = config.ModeFineTuned
	default:
		o.mode = config.ModeSimple
		if t.commandsNode != nil {
			o.comments = append(o.comments, c.note(t.commandsNode, keyPath(t.path, "commands"), false, "commands declares none; the tool is simple: every subcommand goes to its dispatcher"))
		}
	}
	switch o.mode {
	case config.ModeBare:
		o.bare = c.command(o, t.bare, "run")
	case config.ModeStrict, config.ModeFineTuned:
		for _, cmd := range t.commands {
			if oc := c.command(o, cmd, cmd.name); oc != nil {
				o.commands = append(o.commands, oc)
			}
		}
	}
	if o.mode == config.ModeStrict && len(o.commands) == 0 {
		o.comments = append(o.comments, c.note(t.node, t.path, true, "tool %s is left out: none of its commands can be declared in this format", quote(o.name)))
		return &outTool{line: o.line, comments: o.comments}
	}
	if o.mode == config.ModeFineTuned && len(o.commands) == 0 {
		o.mode = config.ModeSimple
	}
	c.action(o, t)
	if o.mode == config.ModeSimple || o.mode == config.ModeFineTuned {
		o.comments = append(o.comments, c.note(t.node, t.path, false, "the dispatcher of %s accepts no stdin; flux7's did", quote(o.name)))
	}
	return o
}

// action sets the output's default_action: flux7's where it has a
// dispatcher, raised to human_approval when the tool has a TODO.
func (c *converter) action(o *outTool, t *toolDoc) {
	given := t.action.v
	if o.mode == config.ModeStrict || o.mode == config.ModeBare {
		if t.action.set {
			o.comments = append(o.comments, c.note(t.action.node, t.action.path, false, "default_action is left out: it has no effect on a %s tool, which has no dispatcher, and this format refuses it there", o.mode))
		}
		return
	}
	o.action = given
	if o.todo && given == "allow" {
		o.action = "human_approval"
		o.actNote = c.note(t.action.node, t.action.path, true, "default_action allow is raised to human_approval until the TODOs of %s are done; then set it back", quote(o.name))
	}
}

// command converts one command entry (or the bare entry, named "run").
// It returns nil for a command that cannot be declared.
func (c *converter) command(o *outTool, cmd *commandDoc, name string) *outCommand {
	oc := &outCommand{name: cmd.name}
	if cmd.name != "" && (len(cmd.name) > maxSubcommand || !subcommandRe.MatchString(cmd.name)) {
		o.todo = true
		o.comments = append(o.comments, c.note(cmd.key, cmd.path, true, "command %s is left out: this format needs a subcommand of 1 to %d bytes matching %s, and no dispatcher serves it either", quote(cmd.name), maxSubcommand, subcommandRe))
		return nil
	}
	if cmd.timeout.set {
		if d, err := time.ParseDuration(cmd.timeout.v); err == nil && d > 0 {
			oc.timeout = d.String()
		} else if err == nil {
			oc.comments = append(oc.comments, c.note(cmd.timeout.node, cmd.timeout.path, false, "timeout 0 is left out, so the default of 30s applies"))
		}
	}
	at, atPath := cmd.key, cmd.path
	if cmd.allowedNode == nil || len(cmd.allowed) == 0 {
		o.todo = true
		if cmd.allowedNode != nil {
			at, atPath = cmd.allowedNode, keyPath(cmd.path, "allowed_args")
		}
		oc.comments = append(oc.comments, c.note(at, atPath, true, "flags: flux7 accepted any here (allowed_args is omitted or empty); this command accepts none: declare those it needs, each with its value kind"))
	}
	c.flags(o, oc, cmd, name)
	o.todo = true
	oc.comments = append(oc.comments, c.note(cmd.key, cmd.path, true,
		"positionals: flux7 accepted any here (checked only for shell metacharacters); this command accepts none: declare those it needs, such as positionals: {max: 1, pattern: '^[a-z0-9._-]{1,63}$'}"))
	return oc
}

// flags converts the allowed_args of cmd into declared flags, and what
// it cannot type into TODO comments.
func (c *converter) flags(o *outTool, oc *outCommand, cmd *commandDoc, name string) {
	seen := make(map[string]bool)    // spellings
	names := make(map[string]string) // flag name -> its first spelling
	for _, a := range cmd.allowed {
		s := a.v
		if seen[s] {
			continue
		}
		seen[s] = true
		f, why := spellingOf(s)
		if why != "" {
			if strings.HasPrefix(s, "-") {
				o.todo = true
				oc.comments = append(oc.comments, c.note(a.node, a.path, true, "flag %s is left out: %s", quote(s), why))
			} else {
				oc.comments = append(oc.comments, c.note(a.node, a.path, false, "allowed_args %s is left out: %s", quote(s), why))
			}
			continue
		}
		if first, dup := names[f.name]; dup {
			o.todo = true
			oc.comments = append(oc.comments, c.note(a.node, a.path, true, "flag %s is left out: this format gives a flag name one spelling, and %s has it", quote(s), quote(first)))
			continue
		}
		names[f.name] = s
		kind, ok := c.kinds.lookup(o.name, name, s)
		if !ok {
			o.todo = true
			oc.comments = append(oc.comments, c.note(a.node, a.path, true,
				"flag %s: its value kind is unknown, so it is not declared; add %s to flags (KIND: none, string, int, enum or pattern), or give its kind to the import",
				quote(s), flowFlag(f, "KIND")))
			continue
		}
		f.value = kind
		oc.flags = append(oc.flags, f)
	}
}

// spellingOf returns the flag an allowed_args entry declares, or why it
// declares none this format can express.
func spellingOf(s string) (outFlag, string) {
	var f outFlag
	switch {
	case strings.HasPrefix(s, "--"):
		f.name = s[2:]
		if len(f.name) == 1 {
			return f, "this format spells a one-character flag with one dash only"
		}
	case strings.HasPrefix(s, "-"):
		f.name = s[1:]
		f.singleDash = len(f.name) > 1
	default:
		return f, "it is not a flag (flux7 accepts positional arguments anyway; see the positionals TODO)"
	}
	if len(f.name) > maxFlagName || !flagNameRe.MatchString(f.name) {
		return f, fmt.Sprintf("this format needs a flag name of 1 to %d ASCII letters, digits, '_' and '-' after the dashes, starting with a letter or digit", maxFlagName)
	}
	return f, ""
}

// flowFlag writes a flag entry in flow style, as the output has it,
// with kind as its value ("" for none).
func flowFlag(f outFlag, kind string) string {
	var b strings.Builder
	b.WriteString("{name: ")
	b.WriteString(f.name)
	if f.singleDash {
		b.WriteString(", single_dash: true")
	}
	if kind != "" {
		b.WriteString(", value: ")
		b.WriteString(kind)
	}
	b.WriteString("}")
	return b.String()
}
