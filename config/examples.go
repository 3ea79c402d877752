package config

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/policy"
)

// This file decodes the examples of commands, bare entries and policy
// rules, and runs them through the gate once the configuration is built.

// examplesDoc is the value of an examples key.
type examplesDoc struct {
	allow, refuse []*exampleDoc
}

// exampleDoc is one entry of an allow or refuse list.
type exampleDoc struct {
	node *yaml.Node
	path string

	input     json.RawMessage // the call's arguments; nil when unusable
	principal val[string]     // rule examples only
	tool      val[string]     // rule examples only
}

// examples decodes the value of an examples key. For a rule, each entry
// is {principal, tool, input}; otherwise each entry is the arguments
// object itself.
func (d *decoder) examples(_, n *yaml.Node, path string, rule bool) *examplesDoc {
	e := &examplesDoc{}
	list := func(dst *[]*exampleDoc) handler {
		return func(_, v *yaml.Node, lp string) {
			d.list(v, lp, func(_ int, item *yaml.Node, ip string) {
				ex := &exampleDoc{node: item, path: ip}
				if rule {
					d.ruleExample(ex, item, ip)
				} else {
					ex.input = d.toolInput(item, ip)
				}
				*dst = append(*dst, ex)
			})
		}
	}
	d.mapping(n, path, fields{handlers: map[string]handler{
		"allow":  list(&e.allow),
		"refuse": list(&e.refuse),
	}})
	return e
}

// ruleExample decodes a policy rule's example: {principal, tool, input}.
func (d *decoder) ruleExample(ex *exampleDoc, n *yaml.Node, path string) {
	ex.input = json.RawMessage("{}")
	present := d.mapping(n, path, fields{handlers: map[string]handler{
		"principal": d.str(&ex.principal),
		"tool":      d.str(&ex.tool),
		"input": func(_, v *yaml.Node, ip string) {
			ex.input = d.jsonObject(v, ip)
		},
	}, nullOK: map[string]bool{"input": true}})
	if n.Kind == yaml.MappingNode && !present["tool"] {
		d.add(n, keyPath(path, "tool"), "required: the command name to call, such as git.log")
	}
}

// alikeEntries are tools entries alike but for their names, in one
// load: an entry written twice (see sameEntry), or an entry naming the
// same profile as another, with the same site values and overrides,
// whatever its working directory (see expansionKey). Their examples are
// the same calls under other names (see runExamples for what the working
// directory changes).
type alikeEntries struct {
	entry *yaml.Node // the first of them
	// inputs are the arguments of the first's command examples as JSON,
	// by their key path below the entry, each written without a problem.
	inputs map[string]json.RawMessage
}

// alikeTool returns the entries alike the tools entry n (a mapping) is
// one of, found or started, and whether n is their first; nil when n is
// no mapping.
func (d *decoder) alikeTool(n *yaml.Node) (*alikeEntries, bool) {
	key, ok := entryHash(n, &d.hashBuf)
	if !ok {
		return nil, false
	}
	for _, a := range d.alike[key] {
		if sameEntry(a.entry, n) {
			return a, false
		}
	}
	if d.alike == nil {
		d.alike = make(map[uint64][]*alikeEntries)
	}
	a := &alikeEntries{entry: n, inputs: make(map[string]json.RawMessage)}
	d.alike[key] = append(d.alike[key], a)
	return a, true
}

// alikeExpansion is alikeTool for the tools entry n expanded from an
// entry naming a profile, whose expansionKey is key: the entries alike
// are those with the same key. An entry written out is never found alike
// one expanded (nor the other way), and is then checked in full, as an
// entry unlike any other is: the same outcome, by more work.
func (d *decoder) alikeExpansion(n *yaml.Node, key []byte) (*alikeEntries, bool) {
	if a, ok := d.expanded[string(key)]; ok {
		return a, false
	}
	if d.expanded == nil {
		d.expanded = make(map[string]*alikeEntries)
	}
	a := &alikeEntries{entry: n, inputs: make(map[string]json.RawMessage)}
	d.expanded[string(key)] = a
	return a, true
}

// toolInput is jsonObject for a command's example at path in the tool
// being decoded: the same node below an entry alike gives the same JSON,
// so the first entry's is taken when it had one.
func (d *decoder) toolInput(n *yaml.Node, path string) json.RawMessage {
	a := d.cur.alike
	rel, below := strings.CutPrefix(path, d.cur.path)
	if a == nil || !below {
		return d.jsonObject(n, path)
	}
	if !d.cur.first {
		if in, ok := a.inputs[rel]; ok {
			return in
		}
		return d.jsonObject(n, path)
	}
	in := d.jsonObject(n, path)
	if in != nil {
		a.inputs[rel] = in
	}
	return in
}

// jsonObject converts an arguments object written in YAML to JSON. Null
// is the empty object.
func (d *decoder) jsonObject(n *yaml.Node, path string) json.RawMessage {
	if isNull(n) {
		return json.RawMessage("{}")
	}
	if n.Kind != yaml.MappingNode {
		d.add(n, path, "must be a mapping of the call's arguments, not %s", describe(n))
		return nil
	}
	v, ok := d.jsonValue(n, path)
	if !ok {
		return nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		d.add(n, path, "cannot be written as JSON: %v", err)
		return nil
	}
	return out
}

// jsonValue converts a YAML value to the value json.Marshal writes.
func (d *decoder) jsonValue(n *yaml.Node, path string) (any, bool) {
	if !d.usable(n, path) {
		return nil, false
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		ok := true
		d.pairs(n, path, func(name string, _, v *yaml.Node, kp string) {
			x, good := d.jsonValue(v, kp)
			ok = ok && good
			m[name] = x
		})
		return m, ok
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		ok := true
		for i, e := range n.Content {
			x, good := d.jsonValue(e, indexPath(path, i))
			ok = ok && good
			s = append(s, x)
		}
		return s, ok
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			return n.Value, true
		case "!!null":
			return nil, true
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err == nil {
				return b, true
			}
		case "!!int":
			var i int64
			if err := n.Decode(&i); err == nil {
				return i, true
			}
		case "!!float":
			var f float64
			if err := n.Decode(&f); err == nil {
				if _, err := json.Marshal(f); err == nil {
					return f, true
				}
			}
		}
	}
	d.add(n, path, "%s cannot be part of a JSON arguments object; put it in quotes", describe(n))
	return nil, false
}

// exampleRun is one example to run: the command name, the principal, and
// whether the gate must let it through.
type exampleRun struct {
	ex        *exampleDoc
	name      string
	principal string
	allow     bool
}

// collect lists the examples of e for the command name (when name is
// not "", for commands and bare entries) or for a rule.
func (e *examplesDoc) collect(name string) []exampleRun {
	if e == nil {
		return nil
	}
	var out []exampleRun
	add := func(list []*exampleDoc, allow bool) {
		for _, ex := range list {
			if ex.input == nil {
				continue // already reported
			}
			r := exampleRun{ex: ex, name: name, allow: allow}
			if name == "" {
				if !ex.tool.set {
					continue
				}
				r.name, r.principal = ex.tool.v, ex.principal.v
			}
			out = append(out, r)
		}
	}
	add(e.allow, true)
	add(e.refuse, false)
	return out
}

// runExamples runs every example of doc through an Executor built on
// allow, with a Recorder for an ExecFn, and records a problem for every
// example whose outcome is not the one it claims. Examples of commands
// and bare entries are decided without a policy (they test the command's
// grammar); examples of policy rules are decided by a new Engine with
// the same policies but no rate limits and no grants, so that they test
// the rules and nothing that changes while the program runs.
func (p *problems) runExamples(doc *fileDoc, allow *execgate.Allowlist, policies []policy.Policy, opts policy.Options) {
	var rules []exampleRun
	for _, pd := range doc.policies {
		for _, rd := range pd.rules {
			rules = append(rules, rd.examples.collect("")...)
		}
	}
	// The examples of each tool, in file order. A tool whose entry is,
	// but for its name, the entry of a tool checked before (an entry
	// naming the same profile with the same site values and overrides,
	// say) has the same commands under other names: its examples are the
	// same calls of the same specs, in the same order, decided without a
	// policy, and end as the first tool's did. Only those that failed
	// there are checked again, so that each failure is reported at its
	// own entry, under its own name. Entries naming a profile are alike so
	// whatever their working directories (see expansionKey); in another
	// working directory than the first's, the refuse examples that a path
	// rule refused there are checked again as well: a path rule's root is
	// the working directory, so one that was refused there may be
	// accepted here (an example reading /etc/passwd, in /etc), which the
	// warning must say. One refused by the grammar alone is refused in
	// every directory, and an allow example that held at the first is not
	// checked again in the others'.
	type outcome struct {
		bad []int  // the examples that failed, by index
		dir string // the working directory they were checked in
		// paths are the refuse examples refused there for what a
		// path rule found (see checkExample): only those may be let
		// through in another working directory.
		paths []int
	}
	var x *execgate.Executor
	checked := make(map[*alikeEntries]outcome)
	for _, t := range doc.tools {
		a := t.alike
		first, again := checked[a]
		again = again && a != nil
		moved := again && t.workingDir.v != first.dir
		if again && !moved && len(first.bad) == 0 {
			continue
		}
		runs := t.exampleRuns()
		if len(runs) == 0 {
			continue
		}
		if x == nil {
			var err error
			if x, err = execgate.NewExecutor(execgate.Config{Allowlist: allow, ExecFn: startNothing}); err != nil {
				p.at(0, 0, "", "cannot run the examples: %v", err)
				return
			}
		}
		p.reloc = t.reloc
		if again {
			for i, r := range runs {
				if (moved && slices.Contains(first.paths, i)) || slices.Contains(first.bad, i) {
					p.checkExample(x, allow, r)
					p.examplesRun++
				}
			}
			continue
		}
		var bad, paths []int
		for i, r := range runs {
			before, warned := p.count(), len(p.warned)
			if p.checkExample(x, allow, r) && !r.allow {
				paths = append(paths, i)
			}
			p.examplesRun++
			if p.count() != before || len(p.warned) != warned {
				bad = append(bad, i)
			}
		}
		if a != nil {
			checked[a] = outcome{bad: bad, dir: t.workingDir.v, paths: paths}
		}
	}
	p.reloc = nil

	if len(rules) > 0 {
		ps := make([]policy.Policy, len(policies))
		for i, pol := range policies {
			pol.RateLimit = policy.RateLimit{}
			ps[i] = pol
		}
		engine, err := policy.New(ps, opts)
		var x *execgate.Executor
		if err == nil {
			x, err = execgate.NewExecutor(execgate.Config{Allowlist: allow, Policy: engine, ExecFn: startNothing})
		}
		if err != nil {
			p.at(0, 0, "", "cannot run the examples: %v", err)
			return
		}
		for _, r := range rules {
			p.checkExample(x, allow, r)
		}
	}
}

// checkExample runs one example and records a problem if its outcome is
// not what it claims. A call that needs an approval counts as let
// through. It reports whether the call was refused for anything but its
// grammar: for a path a path rule refused (which another working
// directory may hold, or not), or by something other than its schema.
// A call refused only by its grammar is refused in any directory.
func (p *problems) checkExample(x *execgate.Executor, allow *execgate.Allowlist, r exampleRun) (notGrammar bool) {
	ctx := context.Background()
	if r.principal != "" {
		ctx = execgate.WithPrincipal(ctx, r.principal)
	}
	_, err := x.Run(ctx, r.name, r.ex.input)
	var pe *execgate.PolicyError
	needsApproval := errors.As(err, &pe) && pe.Action == execgate.ActionRequireApproval
	var ve *execgate.ValidationError
	var pathErr *execgate.PathError
	notGrammar = err != nil && (!errors.As(err, &ve) || errors.As(err, &pathErr))
	kind := "allow"
	if !r.allow {
		kind = "refuse"
	}
	line, col := r.ex.node.Line, r.ex.node.Column
	switch {
	case r.allow && err != nil && !needsApproval:
		from := p.origin(r.ex.node)
		p.exampleFailed(from, line, col, r.ex.path, "%s%s example for %s was refused: %s", from, kind, quote(r.name), strings.TrimPrefix(err.Error(), "execgate: "))
	case !r.allow && (err == nil || needsApproval):
		from := p.origin(r.ex.node)
		prop, _ := execgate.NewProposer(allow).Check(r.name, r.ex.input)
		how := "was accepted"
		if needsApproval {
			how = "was let through (it needs an approval"
			if pe.Rule != "" {
				how += ", rule " + quote(pe.Rule)
			}
			how += ")"
		}
		p.exampleFailed(from, line, col, r.ex.path, "%s%s example for %s %s, argv: %s", from, kind, quote(r.name), how, argvString(prop.Command, prop.Args))
	}
	return notGrammar
}

// exampleFailed records an example that did not hold. One of the file's
// own is a problem. One of a profile's (from names the profile) is a
// warning: the project's tests prove a profile's examples in a directory
// holding the files they name, and a site's working directory, whose
// files differ, must not stop the site's configuration from loading.
func (p *problems) exampleFailed(from string, line, col int, path, format string, args ...any) {
	if from == "" {
		p.at(line, col, path, format, args...)
		return
	}
	if p.reloc != nil {
		line, col, path = p.reloc.apply(line, col, path)
	}
	p.warned = append(p.warned, Warning{File: p.file, Line: line, Column: col, Path: path, Message: oneLine.Replace(fmt.Sprintf(format, args...))})
}

// entrySeed seeds entryHash.
var entrySeed = maphash.MakeSeed()

// entryHash returns a hash of the tools entry n, every key and value but
// the tool's name, and false when n is no mapping. Entries alike (see
// sameEntry) hash alike. What is hashed is written to *buf first, which
// the caller keeps from one entry to the next: one hash of the whole is
// quicker than writing each of an entry's hundreds of nodes to a
// maphash.Hash.
func entryHash(n *yaml.Node, buf *[]byte) (uint64, bool) {
	if n == nil || n.Kind != yaml.MappingNode {
		return 0, false
	}
	b := (*buf)[:0]
	var walk func(n *yaml.Node, top bool)
	walk = func(n *yaml.Node, top bool) {
		b = binary.AppendUvarint(b, uint64(n.Kind))
		b = binary.AppendUvarint(b, uint64(n.Style&yaml.TaggedStyle))
		b = binary.AppendUvarint(b, uint64(len(n.Tag)))
		b = append(b, n.Tag...)
		b = binary.AppendUvarint(b, uint64(len(n.Anchor)))
		b = append(b, n.Anchor...)
		b = binary.AppendUvarint(b, uint64(len(n.Value)))
		b = append(b, n.Value...)
		b = binary.AppendUvarint(b, uint64(len(n.Content)))
		for i, c := range n.Content {
			if top && i%2 == 1 && n.Content[i-1].Value == "name" {
				continue // the tool's name
			}
			walk(c, false)
		}
	}
	walk(n, true)
	*buf = b
	return maphash.Bytes(entrySeed, b), true
}

// sameEntry reports whether the tools entries a and b, mappings, hold
// the same keys and values, in the same order, but for the tool's name:
// they declare the same commands, flags, patterns, paths, environment and
// confinement. Anchors and explicit tags count, since the format refuses
// them where an entry's own nodes are read, and an entry found alike is
// not read again.
func sameEntry(a, b *yaml.Node) bool {
	var same func(a, b *yaml.Node, top bool) bool
	same = func(a, b *yaml.Node, top bool) bool {
		if a.Kind != b.Kind || a.Tag != b.Tag || a.Value != b.Value || len(a.Content) != len(b.Content) ||
			a.Anchor != b.Anchor || a.Style&yaml.TaggedStyle != b.Style&yaml.TaggedStyle {
			return false
		}
		for i := range a.Content {
			if top && i%2 == 1 && a.Content[i-1].Value == "name" {
				continue
			}
			if !same(a.Content[i], b.Content[i], false) {
				return false
			}
		}
		return true
	}
	return same(a, b, true)
}

// argvString writes an argv for a message: [cmd "arg" ...].
func argvString(cmd string, args []string) string {
	parts := make([]string, 0, len(args)+1)
	parts = append(parts, strconv.Quote(cmd))
	for _, a := range args {
		parts = append(parts, strconv.Quote(a))
	}
	return fmt.Sprintf("[%s]", strings.Join(parts, " "))
}

// startNothing is the ExecFn of the Executors that check examples: it
// reports a clean exit and starts no process.
func startNothing(context.Context, execgate.Invocation) execgate.Outcome {
	return execgate.Outcome{}
}

// exampleRuns returns the examples of the tool's bare entry and commands,
// in file order.
func (t *toolDoc) exampleRuns() []exampleRun {
	var runs []exampleRun
	if t.bare != nil {
		runs = append(runs, t.bare.examples.collect(t.name.v+".run")...)
	}
	for _, c := range t.commands {
		runs = append(runs, c.examples.collect(t.name.v+"."+c.name)...)
	}
	return runs
}
