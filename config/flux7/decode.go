package flux7

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/execgate/execgate/config"
)

// This file reads a flux7 file into the raw shape below, refusing what
// YAML allows but the conversion must not trust: unknown and duplicate
// keys, anchors, aliases, merge keys, tags, values of the wrong type, and
// more entries than the limits. Every value keeps its node, so that notes
// and errors can name its line and key path.

// Bounds on what one file may hold, so that the conversion's work (every
// allow rule is matched against every floored command) stays small.
const (
	maxTools        = 1000 // cli_tools entries
	maxCommands     = 2000 // commands, over all tools
	maxAllowedArgs  = 256  // allowed_args entries of one command
	maxPolicies     = 1000 // policies entries
	maxRules        = 2000 // rules, over all policies
	maxRulePatterns = 256  // tools patterns of one rule
	maxErrors       = 100  // problems reported; the rest are counted
	maxQuoted       = 64   // bytes of a value a message repeats
)

// str is a decoded string and where it was written.
type str struct {
	v    string
	set  bool
	node *yaml.Node
	path string
}

type fileDoc struct {
	root      *yaml.Node
	toolsNode *yaml.Node
	tools     []*toolDoc
	polsNode  *yaml.Node // nil when the key is absent
	policies  []*policyDoc
}

type toolDoc struct {
	node *yaml.Node
	path string

	name, bin, action, workingDir str
	strict                        bool
	strictNode                    *yaml.Node
	env                           []envVar
	commandsNode                  *yaml.Node // nil when the key is absent
	commands                      []*commandDoc
	bare                          *commandDoc // nil when the key is absent
}

type envVar struct {
	key, value str
}

type commandDoc struct {
	name string     // the subcommand; "" for bare
	key  *yaml.Node // the subcommand's key node, or the "bare" key
	path string

	allowedNode *yaml.Node // nil when allowed_args is absent
	allowed     []str
	timeout     str
}

type policyDoc struct {
	node *yaml.Node
	path string

	name, agent str
	rulesNode   *yaml.Node
	rules       []*ruleDoc
}

type ruleDoc struct {
	node *yaml.Node
	path string

	tools     []str
	toolsNode *yaml.Node
	action    str
}

// problems collects the errors of one conversion as a config.ErrorList.
type problems struct {
	file    string
	errs    config.ErrorList
	dropped int
}

func (p *problems) add(n *yaml.Node, path, format string, args ...any) {
	if len(p.errs) >= maxErrors {
		p.dropped++
		return
	}
	line, col := 0, 0
	if n != nil {
		line, col = n.Line, n.Column
	}
	msg := strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(fmt.Sprintf(format, args...))
	p.errs = append(p.errs, &config.Error{File: p.file, Line: line, Column: col, Path: path, Message: msg})
}

func (p *problems) err() error {
	if len(p.errs) == 0 {
		return nil
	}
	out := p.errs
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Line != out[j].Line {
			return out[i].Line < out[j].Line
		}
		return out[i].Column < out[j].Column
	})
	if p.dropped > 0 {
		out = append(out, &config.Error{File: p.file, Message: fmt.Sprintf("and %d more problems not listed", p.dropped)})
	}
	return out
}

// quote quotes s for a message or a comment, in ASCII and shortened to
// maxQuoted bytes, so that no text from the file can break a line.
func quote(s string) string {
	if len(s) > maxQuoted {
		cut := maxQuoted
		for cut > 0 && s[cut]&0xc0 == 0x80 {
			cut--
		}
		return strconv.QuoteToASCII(s[:cut]) + "..."
	}
	return strconv.QuoteToASCII(s)
}

var simpleKeyRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func keyPath(parent, key string) string {
	switch {
	case !simpleKeyRe.MatchString(key):
		return parent + "[" + quote(key) + "]"
	case parent == "":
		return key
	}
	return parent + "." + key
}

func indexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

var yamlLineRe = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parse returns the root node of data's only document, or nil after
// recording why there is none.
func (p *problems) parse(data []byte) (root *yaml.Node) {
	defer func() {
		// The parser is not ours; whatever it does, Convert must not panic.
		if r := recover(); r != nil {
			p.add(nil, "", "the YAML parser failed on this input")
			root = nil
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	err := dec.Decode(&doc)
	if errors.Is(err, io.EOF) {
		p.add(nil, "", "empty: a flux7 file holds a cli_tools list")
		return nil
	}
	if err != nil {
		p.syntax(err)
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		p.syntax(err)
		return nil
	default:
		p.add(&extra, "", "holds more than one YAML document; convert one at a time")
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		p.add(nil, "", "holds no YAML document")
		return nil
	}
	return doc.Content[0]
}

func (p *problems) syntax(err error) {
	msg := err.Error()
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		p.errs = append(p.errs, &config.Error{File: p.file, Line: line, Message: "invalid YAML: " + m[2]})
		return
	}
	p.add(nil, "", "invalid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}

// The tags the YAML core schema resolves by itself.
var standardTags = map[string]bool{
	"!!str": true, "!!int": true, "!!bool": true, "!!null": true, "!!float": true,
	"!!map": true, "!!seq": true, "!!timestamp": true, "!!binary": true,
}

// usable refuses anchors, aliases, merge keys and explicit tags, so that
// what is read is what is written and no alias can multiply the input.
func (p *problems) usable(n *yaml.Node, path string) bool {
	switch {
	case n.Kind == yaml.AliasNode:
		p.add(n, path, "aliases (*%s) are not supported; write the value out", strings.Trim(quote(n.Value), `"`))
		return false
	case n.Anchor != "":
		p.add(n, path, "anchors (&%s) are not supported; write each value out", strings.Trim(quote(n.Anchor), `"`))
		return false
	case n.Tag == "!!merge":
		p.add(n, path, "merge keys (<<) are not supported; write each key out")
		return false
	case n.Style&yaml.TaggedStyle != 0 || !standardTags[n.Tag]:
		p.add(n, path, "tags (%s) are not supported", quote(n.Tag))
		return false
	}
	return true
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch n.Tag {
	case "!!str":
		return "a string"
	case "!!int":
		return "an integer"
	case "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	case "!!null":
		return "empty"
	}
	return "something else"
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// handler decodes the value of one known key.
type handler func(k, v *yaml.Node, path string)

// mapping calls the handler of every key of n, refusing a node that is
// not a mapping, unknown, duplicate and non-string keys, unusable values,
// and null values unless nullOK names the key. It returns the keys that
// were present, and false if n is not a mapping.
func (p *problems) mapping(n *yaml.Node, path string, hs map[string]handler, nullOK ...string) (map[string]bool, bool) {
	if n.Kind != yaml.MappingNode {
		p.add(n, path, "must be a mapping, not %s", describe(n))
		return nil, false
	}
	present := make(map[string]bool, len(n.Content)/2)
	first := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !p.usable(k, path) {
			continue
		}
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			p.add(k, path, "keys must be strings, not %s", describe(k))
			continue
		}
		kp := keyPath(path, k.Value)
		if f, dup := first[k.Value]; dup {
			p.add(k, kp, "duplicate key (first at line %d)", f.Line)
			continue
		}
		first[k.Value] = k
		present[k.Value] = true
		h, ok := hs[k.Value]
		if !ok {
			p.add(k, kp, "unknown key %s (known keys: %s)", quote(k.Value), known(hs))
			continue
		}
		if !p.usable(v, kp) {
			continue
		}
		if isNull(v) && !contains(nullOK, k.Value) {
			p.add(v, kp, "has no value; give one or remove the key")
			continue
		}
		h(k, v, kp)
	}
	return present, true
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func known(hs map[string]handler) string {
	names := make([]string, 0, len(hs))
	for n := range hs {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// list calls elem for every usable element of sequence n, at most max.
func (p *problems) list(n *yaml.Node, path string, max int, what string, elem func(i int, e *yaml.Node, path string)) {
	if n.Kind != yaml.SequenceNode {
		p.add(n, path, "must be a list, not %s", describe(n))
		return
	}
	for i, e := range n.Content {
		ep := indexPath(path, i)
		if i == max {
			p.add(e, ep, "more than %d %s; the conversion reads at most that many", max, what)
			return
		}
		if p.usable(e, ep) {
			elem(i, e, ep)
		}
	}
}

func (p *problems) str(f *str) handler {
	return func(_, v *yaml.Node, path string) {
		*f = str{node: v, path: path}
		if v.Kind == yaml.ScalarNode && v.Tag == "!!str" {
			f.v, f.set = v.Value, true
			return
		}
		p.add(v, path, "must be a string, not %s", describe(v))
	}
}

// scalarText reads a scalar that a flux7 loader reads as a string (an
// env value): a string, a number or a boolean, as written.
func (p *problems) scalarText(v *yaml.Node, path string) (str, bool) {
	if v.Kind == yaml.ScalarNode {
		switch v.Tag {
		case "!!str", "!!int", "!!float", "!!bool":
			return str{v: v.Value, set: true, node: v, path: path}, true
		}
	}
	p.add(v, path, "must be a string, not %s", describe(v))
	return str{}, false
}

func (p *problems) strList(f *[]str, max int, what string) handler {
	return func(_, v *yaml.Node, path string) {
		p.list(v, path, max, what, func(_ int, e *yaml.Node, ep string) {
			if e.Kind == yaml.ScalarNode && e.Tag == "!!str" {
				*f = append(*f, str{v: e.Value, set: true, node: e, path: ep})
				return
			}
			p.add(e, ep, "must be a string, not %s", describe(e))
		})
	}
}

// decoder holds the running counts the limits apply to.
type decoder struct {
	*problems
	commands, rules int
}

// file decodes the root mapping.
func (d *decoder) file(root *yaml.Node) *fileDoc {
	doc := &fileDoc{root: root}
	present, ok := d.mapping(root, "", map[string]handler{
		"cli_tools": func(_, v *yaml.Node, path string) {
			doc.toolsNode = v
			d.list(v, path, maxTools, "cli_tools entries", func(_ int, e *yaml.Node, ep string) {
				if t := d.tool(e, ep); t != nil {
					doc.tools = append(doc.tools, t)
				}
			})
		},
		"policies": func(_, v *yaml.Node, path string) {
			doc.polsNode = v
			d.list(v, path, maxPolicies, "policies", func(_ int, e *yaml.Node, ep string) {
				if pd := d.policy(e, ep); pd != nil {
					doc.policies = append(doc.policies, pd)
				}
			})
		},
	})
	if ok && !present["cli_tools"] {
		d.add(root, "cli_tools", "required: the file has no cli_tools section, so there is nothing to convert")
	}
	return doc
}

func (d *decoder) tool(n *yaml.Node, path string) *toolDoc {
	t := &toolDoc{node: n, path: path}
	present, ok := d.mapping(n, path, map[string]handler{
		"name":           d.str(&t.name),
		"bin":            d.str(&t.bin),
		"default_action": d.str(&t.action),
		"working_dir":    d.str(&t.workingDir),
		"strict": func(_, v *yaml.Node, p string) {
			t.strictNode = v
			if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" || v.Decode(&t.strict) != nil {
				d.add(v, p, "must be true or false, not %s", describe(v))
			}
		},
		"env": func(_, v *yaml.Node, p string) {
			d.mapping(v, p, d.envHandlers(v, &t.env))
		},
		"commands": func(_, v *yaml.Node, p string) {
			t.commandsNode = v
			if v.Kind != yaml.MappingNode {
				d.add(v, p, "must be a mapping of command names to command entries, not %s", describe(v))
				return
			}
			hs := make(map[string]handler, len(v.Content)/2)
			for i := 0; i+1 < len(v.Content); i += 2 {
				if k := v.Content[i]; k.Kind == yaml.ScalarNode && k.Tag == "!!str" {
					hs[k.Value] = func(k, e *yaml.Node, kp string) {
						if c := d.command(k.Value, k, e, kp); c != nil {
							t.commands = append(t.commands, c)
						}
					}
				}
			}
			d.mapping(v, p, hs, keysOf(hs)...)
		},
		"bare": func(k, v *yaml.Node, p string) {
			t.bare = d.command("", k, v, p)
		},
	}, "bare")
	if !ok {
		return nil
	}
	if !present["name"] {
		d.add(n, keyPath(path, "name"), "required: the tool's name, such as terraform")
	}
	if !present["bin"] {
		d.add(n, keyPath(path, "bin"), "required: the binary's path or name")
	}
	return t
}

// envHandlers returns a handler for every key of env mapping v: each
// value is read as text.
func (d *decoder) envHandlers(v *yaml.Node, env *[]envVar) map[string]handler {
	hs := make(map[string]handler)
	if v.Kind != yaml.MappingNode {
		return hs
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		if k := v.Content[i]; k.Kind == yaml.ScalarNode && k.Tag == "!!str" {
			hs[k.Value] = func(k, e *yaml.Node, kp string) {
				if val, ok := d.scalarText(e, kp); ok {
					*env = append(*env, envVar{key: str{v: k.Value, set: true, node: k, path: kp}, value: val})
				}
			}
		}
	}
	return hs
}

func keysOf(hs map[string]handler) []string {
	out := make([]string, 0, len(hs))
	for k := range hs {
		out = append(out, k)
	}
	return out
}

// command decodes a command entry or the bare entry; null means {}.
func (d *decoder) command(name string, k, n *yaml.Node, path string) *commandDoc {
	d.commands++
	if d.commands > maxCommands {
		if d.commands == maxCommands+1 {
			d.add(k, path, "more than %d commands in all; the conversion reads at most that many", maxCommands)
		}
		return nil
	}
	c := &commandDoc{name: name, key: k, path: path}
	if isNull(n) {
		return c
	}
	if _, ok := d.mapping(n, path, map[string]handler{
		"allowed_args": func(k, v *yaml.Node, p string) {
			c.allowedNode = v
			d.strList(&c.allowed, maxAllowedArgs, "allowed_args entries")(k, v, p)
		},
		"timeout": d.str(&c.timeout),
	}); !ok {
		return nil
	}
	return c
}

func (d *decoder) policy(n *yaml.Node, path string) *policyDoc {
	pd := &policyDoc{node: n, path: path}
	present, ok := d.mapping(n, path, map[string]handler{
		"name":  d.str(&pd.name),
		"agent": d.str(&pd.agent),
		"rules": func(_, v *yaml.Node, p string) {
			pd.rulesNode = v
			d.list(v, p, maxRules, "rules", func(_ int, e *yaml.Node, ep string) {
				d.rules++
				if d.rules > maxRules {
					if d.rules == maxRules+1 {
						d.add(e, ep, "more than %d rules in all; the conversion reads at most that many", maxRules)
					}
					return
				}
				if r := d.rule(e, ep); r != nil {
					pd.rules = append(pd.rules, r)
				}
			})
		},
	})
	if !ok {
		return nil
	}
	if !present["agent"] {
		d.add(n, keyPath(path, "agent"), "required: the agent the policy governs")
	}
	if !present["rules"] {
		d.add(n, keyPath(path, "rules"), "required: the policy's rules")
	}
	return pd
}

func (d *decoder) rule(n *yaml.Node, path string) *ruleDoc {
	r := &ruleDoc{node: n, path: path}
	present, ok := d.mapping(n, path, map[string]handler{
		"tools": func(k, v *yaml.Node, p string) {
			r.toolsNode = v
			d.strList(&r.tools, maxRulePatterns, "tools patterns")(k, v, p)
		},
		"action": d.str(&r.action),
	})
	if !ok {
		return nil
	}
	if !present["tools"] {
		d.add(n, keyPath(path, "tools"), "required: the tool names the rule applies to")
	} else if r.toolsNode != nil && r.toolsNode.Kind == yaml.SequenceNode && len(r.toolsNode.Content) == 0 {
		d.add(r.toolsNode, keyPath(path, "tools"), "lists no tool name")
	}
	if !present["action"] {
		d.add(n, keyPath(path, "action"), "required: allow, deny or human_approval")
	}
	return r
}
