package flux7

import (
	"bytes"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/policy"
)

// This file assembles the output and writes it as YAML nodes, so that
// every value from the flux7 file is quoted by the encoder, never pasted
// into text.

// output is the converted file.
type output struct {
	tools        []*outTool
	toolComments []string // above the tools list: tools left out
	policies     []*outPolicy
	polComments  []string // above the policies list
	floored      []string
}

const header = `Converted from a flux7-mesh configuration by execgate import flux7.

Read every TODO(flux7) comment before serving this file: each marks
something flux7 allowed that this file cannot yet check as well. A tool
with a TODO is held at human_approval until a person finishes it:
human_approval: true on each of its commands (no grant lifts it), its
dispatcher's default_action, and a floor-N rule before every policy rule
that allows one of its commands. Remove the floor when the TODOs are done.

Every declared command accepts stdin, as every flux7 command did; remove
stdin from those that do not read it. Each bin is looked up on PATH when
the file is loaded; run execgate check on the machine that serves it.`

// convert builds the output of a checked file.
func (c *converter) convert(doc *fileDoc) *output {
	o := &output{}
	for _, t := range doc.tools {
		ot := c.tool(t)
		if ot.name == "" {
			o.toolComments = append(o.toolComments, ot.comments...)
			continue
		}
		o.tools = append(o.tools, ot)
		if !ot.todo {
			continue
		}
		if ot.action == "human_approval" && ot.actNote != "" {
			o.floored = append(o.floored, ot.name)
		}
		// Each command of a tool with a TODO is held by its own
		// human_approval, which no policy rule or grant lifts, besides
		// the floor-N rules below.
		for _, cmd := range ot.commands {
			cmd.held = true
			o.floored = append(o.floored, ot.name+"."+cmd.name)
		}
		if ot.bare != nil {
			ot.bare.held = true
			o.floored = append(o.floored, ot.name+".run")
		}
	}
	if doc.polsNode == nil {
		o.polComments = append(o.polComments, c.noPolicies(doc.root))
		return o
	}
	var commands []string
	for _, n := range o.floored {
		if strings.Contains(n, ".") {
			commands = append(commands, n)
		}
	}
	o.policies, o.polComments = c.policies(doc.policies, commands)
	return o
}

// check builds the output's policies with the policy package, which the
// loader does too, to catch a conversion that would not load.
func (o *output) check() error {
	_, err := policy.New(toPolicies(o.policies), policy.Options{})
	return err
}

// encode writes the output as YAML.
func (o *output) encode() ([]byte, error) {
	root := mapping()
	root.HeadComment = "# " + strings.ReplaceAll(strings.ReplaceAll(header, "\n", "\n# "), "# \n", "#\n")
	add(root, "version", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "1"})
	def := mapping()
	inherit := flowSeq(inherited...)
	add(def, "inherit_env", inherit).HeadComment = comment("flux7 gives every command PATH, HOME and LANG from its own environment, besides its env")
	add(root, "defaults", def)
	tools := &yaml.Node{Kind: yaml.SequenceNode}
	for _, t := range o.tools {
		tools.Content = append(tools.Content, t.node())
	}
	add(root, "tools", tools).HeadComment = comment(o.toolComments...)
	pols := &yaml.Node{Kind: yaml.SequenceNode}
	if len(o.policies) == 0 {
		pols.Style = yaml.FlowStyle
	}
	for _, p := range o.policies {
		pols.Content = append(pols.Content, p.node())
	}
	add(root, "policies", pols).HeadComment = comment(o.polComments...)

	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (t *outTool) node() *yaml.Node {
	m := mapping()
	m.HeadComment = comment(t.comments...)
	name := add(m, "name", scalar(t.name))
	name.LineComment = "# flux7 line " + strconv.Itoa(t.line)
	add(m, "bin", scalar(t.bin))
	if t.dir != "" {
		add(m, "working_dir", scalar(t.dir))
	}
	if len(t.env) > 0 {
		env := mapping()
		for _, e := range t.env {
			add(env, e.key.v, scalar(e.value.v))
		}
		add(m, "env", env)
	}
	if t.mode == config.ModeStrict {
		add(m, "strict", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
	}
	if t.action != "" {
		add(m, "default_action", scalar(t.action)).HeadComment = comment(t.actNote)
	}
	switch t.mode {
	case config.ModeStrict, config.ModeFineTuned:
		cmds := mapping()
		for _, c := range t.commands {
			add(cmds, c.name, c.node()).HeadComment = comment(c.comments...)
		}
		add(m, "commands", cmds)
	case config.ModeBare:
		add(m, "bare", t.bare.node()).HeadComment = comment(t.bare.comments...)
	}
	return m
}

func (c *outCommand) node() *yaml.Node {
	m := mapping()
	if len(c.flags) > 0 {
		flags := &yaml.Node{Kind: yaml.SequenceNode}
		for _, f := range c.flags {
			e := mapping()
			e.Style = yaml.FlowStyle
			add(e, "name", scalar(f.name))
			if f.singleDash {
				add(e, "single_dash", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
			}
			if f.value != execgate.ValueNone {
				add(e, "value", scalar(f.value.String()))
			}
			flags.Content = append(flags.Content, e)
		}
		add(m, "flags", flags)
	}
	stdin := mapping()
	stdin.Style = yaml.FlowStyle
	add(m, "stdin", stdin)
	if c.timeout != "" {
		add(m, "timeout", scalar(c.timeout))
	}
	if c.held {
		add(m, "human_approval", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"}).HeadComment =
			comment("TODO(flux7): every call needs a person's approval, which no grant lifts, until this tool's TODOs are done; then remove human_approval")
	}
	return m
}

func (p *outPolicy) node() *yaml.Node {
	m := mapping()
	m.HeadComment = comment(p.comments...)
	add(m, "name", scalar(p.name))
	add(m, "principal", scalar(p.principal))
	rules := &yaml.Node{Kind: yaml.SequenceNode}
	if len(p.rules) == 0 {
		rules.Style = yaml.FlowStyle
	}
	for _, r := range p.rules {
		e := mapping()
		e.HeadComment = comment(r.comments...)
		if r.name != "" {
			add(e, "name", scalar(r.name))
		}
		add(e, "tools", flowSeq(r.tools...))
		add(e, "action", scalar(r.action))
		rules.Content = append(rules.Content, e)
	}
	add(m, "rules", rules)
	return m
}

func mapping() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode} }

func scalar(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if strings.ContainsAny(s, "\n\r\t") {
		// Quoted, with escapes: the encoder would write a line break as a
		// literal block, which a line starting with a tab makes invalid.
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

func flowSeq(items ...string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, s := range items {
		n.Content = append(n.Content, scalar(s))
	}
	return n
}

// add appends key: v to mapping m and returns the key's node.
func add(m *yaml.Node, key string, v *yaml.Node) *yaml.Node {
	k := scalar(key)
	m.Content = append(m.Content, k, v)
	return k
}

// comment joins lines into a comment, each on its own line, wrapped at
// about 72 columns, each starting with "#". Text from the flux7 file reaches it quoted; control
// and format characters are replaced all the same, so that a comment can
// never end early.
func comment(lines ...string) string {
	var out []string
	for _, l := range lines {
		if l == "" {
			continue
		}
		l = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
				return '?'
			}
			return r
		}, l)
		for _, w := range wrap(l, 70) {
			out = append(out, strings.TrimRight("# "+w, " "))
		}
	}
	return strings.Join(out, "\n")
}

// wrap breaks s at spaces into lines of at most width bytes where it can;
// lines after the first are indented by two spaces.
func wrap(s string, width int) []string {
	var lines []string
	indent := ""
	for len(indent)+len(s) > width {
		cut := strings.LastIndexByte(s[:width-len(indent)], ' ')
		if cut <= 0 {
			cut = strings.IndexByte(s, ' ')
			if cut < 0 {
				break
			}
		}
		lines = append(lines, indent+s[:cut])
		s = strings.TrimLeft(s[cut:], " ")
		indent = "  "
	}
	return append(lines, indent+s)
}
