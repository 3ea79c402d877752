package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/internal/inputrules"
	"github.com/execgate/execgate/internal/pattern"
)

// This file checks the decoded configuration and turns it into
// execgate.CommandSpecs, one tool at a time.

// The rules for names, tokens and environment keys are the gate's own
// (internal/inputrules): this file applies each at the node it is about,
// so that every mistake in a file is reported at its line in one load,
// and NewAllowlist, which stops at a spec's first mistake, finds none of
// them. What only NewAllowlist can tell is placed by builder.place.

var sha256Re = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)

// Spellings of default_action.
var actions = map[string]string{
	"allow":          execgate.ActionAllow,
	"deny":           execgate.ActionDeny,
	"human_approval": execgate.ActionRequireApproval,
}

// origin is where a spec came from, to place NewAllowlist's errors.
type origin struct {
	tool *toolDoc
	cmd  *commandDoc // nil for a dispatcher
}

type builder struct {
	*decoder
	doc     *fileDoc
	specs   []execgate.CommandSpec
	origins map[string]origin
	tools   []Tool
	names   map[string]*yaml.Node // tool name -> its node
	// patterns holds the matchers checkPattern compiled, so that the
	// schemas built from the same patterns in this load share them
	// rather than compile them again (package pattern keeps a matcher
	// only while something refers to it).
	patterns []*pattern.Matcher
	// built holds what was built, without a problem, of the first entry
	// naming a profile with each expansionKey (toolDoc.buildKey): the
	// entries decoded as copies with the same key are built from it
	// (see copyTool).
	built map[string]*builtTool
}

// build checks doc and returns the specs and the tool descriptions. The
// caller must only use them when no problem was recorded.
func (d *decoder) build(doc *fileDoc) *builder {
	b := &builder{decoder: d, doc: doc, origins: make(map[string]origin), names: make(map[string]*yaml.Node)}
	if doc.version.set && doc.version.v != 1 {
		d.add(doc.version.node, doc.version.path, "unsupported version %d: this release reads version 1", doc.version.v)
	}
	b.checkEnv(doc.defaults.env, doc.defaults.inheritEnv, nil)
	for _, t := range doc.tools {
		if t.ok {
			b.tool(t)
		}
	}
	return b
}

// checkEnv checks the keys and values of env and inherit_env. t is the
// tool they belong to, or nil for defaults, where hostile keys are always
// refused.
func (b *builder) checkEnv(env []envVar, inherit []val[string], t *toolDoc) {
	allowHostile := t != nil && t.allowHostileEnv.v
	// refuse records why a variable is refused, unless the tool allows
	// hostile variables; in defaults they are refused always.
	refuse := func(n *yaml.Node, path, why string) {
		switch {
		case allowHostile:
		case t == nil:
			b.add(n, path, "%s; it is refused in defaults: set it on the tool that needs it, with allow_hostile_env: true", why)
		default:
			b.add(n, path, "%s; set allow_hostile_env: true on this tool if it really must be set", why)
		}
	}
	const runsCode = " can make the executable load or run other code"
	for _, e := range env {
		k := e.key.v
		if msg := inputrules.EnvKeyProblem(k); msg != "" {
			b.add(e.key.node, e.key.path, "an environment variable name %s", msg)
			continue
		}
		if msg := inputrules.EnvValueProblem(e.value.v); msg != "" {
			b.add(e.value.node, e.value.path, "the value %s", msg) // never repeat the value
		}
		if strings.EqualFold(k, "PATH") {
			if msg := pathProblem(e.value.v); msg != "" {
				b.add(e.value.node, e.value.path, "%s", msg)
			}
		}
		if isHostileEnv(k) {
			refuse(e.key.node, e.key.path, quote(k)+runsCode)
		}
		if msg := envValueHostile(k, e.value.v); msg != "" {
			refuse(e.value.node, e.value.path, msg) // it names what is allowed, never the value
		}
	}
	seen := make(map[string]*yaml.Node, len(inherit))
	for _, e := range inherit {
		k := e.v
		if msg := inputrules.EnvKeyProblem(k); msg != "" {
			b.add(e.node, e.path, "an environment variable name %s", msg)
			continue
		}
		if first, dup := seen[k]; dup {
			b.add(e.node, e.path, "%s is listed twice (first at line %d)", quote(k), first.Line)
			continue
		}
		seen[k] = e.node
		switch {
		case isHostileEnv(k):
			refuse(e.node, e.path, quote(k)+runsCode)
		case slices.ContainsFunc(valueHostileEnv, func(v string) bool { return strings.EqualFold(k, v) }):
			refuse(e.node, e.path, quote(k)+" is inherited from the process's environment, so what it allows is not known here; set it in env instead")
		}
	}
}

// limitsOf returns the first value set among ls, most specific first.
func limitsOf(ls ...*limitsDoc) (timeout, noOutput time.Duration, maxOutput int) {
	tSet, nSet, mSet := false, false, false
	for _, l := range ls {
		if l == nil {
			continue
		}
		if !tSet && l.timeout.set {
			timeout, tSet = l.timeout.v, true
		}
		if !nSet && l.noOutputTimeout.set {
			noOutput, nSet = l.noOutputTimeout.v, true
		}
		if !mSet && l.maxOutput.set {
			maxOutput, mSet = l.maxOutput.v, true
		}
	}
	return timeout, noOutput, maxOutput
}

// tool checks the tool t and adds its specs, one step at a time: its
// name, its executable, its other settings, its mode and default action,
// the interpreter rule, its environment, then a spec for each command, the
// bare entry or the dispatcher its mode calls for.
func (b *builder) tool(t *toolDoc) {
	b.reloc = t.reloc
	defer func() { b.reloc = nil }()
	if first := b.built[t.buildKey]; t.reloc != nil && first != nil {
		b.copyTool(t, first)
		return
	}
	problems := b.count()
	name, nameOK := b.toolName(t)
	path := b.toolExecutable(t)
	b.checkToolSettings(t)
	mode := b.toolMode(t)
	floor := b.toolFloor(t, mode)
	b.checkInterpreter(t, path, mode)
	env := b.toolEnv(t)

	base := execgate.CommandSpec{
		Command:       path,
		SHA256:        t.sha256.v,
		Description:   t.description.v,
		Env:           env,
		Dir:           t.workingDir.v,
		PolicyVersion: t.policyVersion.v,
		Confine:       b.confinement(t.confine),
	}
	globalArgs := make([]string, 0, len(t.globalArgs))
	for _, a := range t.globalArgs {
		globalArgs = append(globalArgs, a.v)
	}
	desc := Tool{Name: name, Mode: mode, Line: t.node.Line}
	// built is what copyTool needs to build the entries decoded as
	// copies of this one: its specs in order, each with the command it
	// comes from (nil for the dispatcher).
	var built *builtTool
	if _, done := b.built[t.buildKey]; t.buildKey != "" && !done {
		built = &builtTool{desc: desc, dir: t.workingDir.v}
	}
	add := func(s execgate.CommandSpec, c *commandDoc) {
		if built != nil {
			built.specs = append(built.specs, s)
			built.suffixes = append(built.suffixes, strings.TrimPrefix(s.Name, name))
			built.cmds = append(built.cmds, c)
		}
		b.addSpec(t, &desc, s, c, nameOK)
	}
	switch mode {
	case ModeBare:
		s := base
		s.Name = name + ".run"
		b.command(&s, t, t.bare, globalArgs)
		add(s, t.bare)
	case ModeStrict, ModeFineTuned:
		for _, c := range t.commands {
			if msg := inputrules.SubcommandProblem(c.name); msg != "" {
				b.add(c.key, c.path, "subcommand %s %s", quote(c.name), msg)
			}
			s := base
			s.Name = name + "." + c.name
			b.command(&s, t, c, append(globalArgs[:len(globalArgs):len(globalArgs)], b.commandLeading(c)...))
			add(s, c)
		}
	}
	if mode == ModeSimple || mode == ModeFineTuned {
		s := base
		s.Name = name
		s.Dispatch = true
		s.Floor = floor
		s.Args = execgate.Subcommands(execgate.SubcommandSpec{Leading: globalArgs})
		s.Timeout, s.NoOutputTimeout, s.MaxOutput = limitsOf(&t.limitsDoc, &b.doc.defaults.limitsDoc)
		desc.DefaultAction = floor
		add(s, nil)
	}
	b.tools = append(b.tools, desc)
	if built != nil && nameOK && b.count() == problems {
		built.desc.DefaultAction = desc.DefaultAction
		if b.built == nil {
			b.built = make(map[string]*builtTool)
		}
		b.built[t.buildKey] = built
	}
}

// builtTool is what was built of a tools entry that entries decoded as
// copies of it (see cloneTool) are built from.
type builtTool struct {
	desc     Tool                   // its description, without specs
	dir      string                 // its working directory
	specs    []execgate.CommandSpec // its specs in order
	suffixes []string               // each spec's name after the tool's
	cmds     []*commandDoc          // the command each spec comes from, nil for the dispatcher
}

// copyTool builds the tools entry t, decoded as a copy of an earlier one
// (see cloneTool) that was built into first without a problem: the same
// specs, under t's name, in t's working directory. Everything they hold
// but their names and working directories comes from what t shares with
// that entry, and from its overrides, which are the same: only the name
// is checked again. The working directory is each spec's Dir and the
// first of its confinement's read paths (see readWorkingDir).
func (b *builder) copyTool(t *toolDoc, first *builtTool) {
	dir := t.workingDir.v
	var moved map[*execgate.Confinement]*execgate.Confinement // first's, by t's
	if dir != first.dir {
		moved = make(map[*execgate.Confinement]*execgate.Confinement)
		for _, s := range first.specs {
			c := s.Confine
			if c == nil || moved[c] != nil {
				continue
			}
			if len(c.Read) == 0 || c.Read[0] != first.dir {
				// Not as readWorkingDir leaves it: built in full.
				t.buildKey = ""
				b.tool(t)
				return
			}
			m := *c
			m.Read = slices.Clone(c.Read)
			m.Read[0] = dir
			moved[c] = &m
		}
	}
	name, nameOK := b.toolName(t)
	desc := first.desc
	desc.Name, desc.Line, desc.Specs = name, t.node.Line, nil
	for i, s := range first.specs {
		s.Name = name + first.suffixes[i]
		if moved != nil {
			s.Dir = dir
			if s.Confine != nil {
				s.Confine = moved[s.Confine]
			}
		}
		b.addSpec(t, &desc, s, first.cmds[i], nameOK)
	}
	b.tools = append(b.tools, desc)
}

// addSpec adds the spec s, made of the command c of the tools entry t
// (nil for its dispatcher), to the specs built and to desc, unless the
// tool's name is not usable (nameOK false: the specs are checked, but
// their names would mislead) or another spec has its name.
func (b *builder) addSpec(t *toolDoc, desc *Tool, s execgate.CommandSpec, c *commandDoc, nameOK bool) {
	if !nameOK {
		return
	}
	if _, dup := b.origins[s.Name]; dup {
		n, p := t.node, t.path
		if c != nil {
			n, p = c.key, c.path
		}
		b.add(n, p, "produces the command name %s a second time", quote(s.Name))
		return
	}
	b.origins[s.Name] = origin{tool: t, cmd: c}
	b.specs = append(b.specs, s)
	desc.Specs = append(desc.Specs, s.Name)
}

// toolName checks the name of t and reports it, and whether specs may be
// named after it: it is well formed and no other tool has it.
func (b *builder) toolName(t *toolDoc) (name string, nameOK bool) {
	name = t.name.v
	switch {
	case !t.keys["name"]:
		b.add(t.node, t.path+".name", "required: the tool's name, such as git")
	case !t.name.set:
		// The type error is already reported.
	case name == "":
		b.add(t.name.node, t.name.path, "%s", inputrules.ToolNameProblem(name))
	case inputrules.ToolNameProblem(name) != "":
		b.add(t.name.node, t.name.path, "%s: %s", quote(name), inputrules.ToolNameProblem(name))
	default:
		if first, dup := b.names[name]; dup {
			b.add(t.name.node, t.name.path, "duplicate tool name %s (first at line %d)", quote(name), first.Line)
		} else {
			b.names[name] = t.name.node
			nameOK = true
		}
	}
	return name, nameOK
}

// toolExecutable checks bin and returns the absolute path it resolves to,
// or "" when it does not resolve (the problem is recorded).
func (b *builder) toolExecutable(t *toolDoc) string {
	var path string
	switch {
	case !t.keys["bin"]:
		b.add(t.node, t.path+".bin", "required: the executable's absolute path, or a name found on PATH")
	case !t.bin.set:
	default:
		p, err := inputrules.ResolveCommand(t.bin.v)
		if err != nil {
			b.add(t.bin.node, t.bin.path, "%v", err)
		} else {
			path = p
		}
	}
	return path
}

// checkToolSettings checks sha256, working_dir, policy_version, the
// environment and global_args of t.
func (b *builder) checkToolSettings(t *toolDoc) {
	if t.sha256.set && !sha256Re.MatchString(t.sha256.v) {
		b.add(t.sha256.node, t.sha256.path, "must be 64 hex digits (the executable's SHA-256)")
	}
	if t.workingDir.set {
		if msg := workingDirProblem(t.workingDir.v); msg != "" {
			b.add(t.workingDir.node, t.workingDir.path, "%s", msg)
		}
	}
	if t.policyVersion.set && strings.IndexByte(t.policyVersion.v, 0) >= 0 {
		b.add(t.policyVersion.node, t.policyVersion.path, "must not contain NUL")
	}
	b.checkEnv(t.env, t.inheritEnv, t)
	for _, a := range t.globalArgs {
		if msg := inputrules.TokenProblem(a.v); msg != "" {
			b.add(a.node, a.path, "%s", msg)
		}
	}
}

// toolMode checks the keys that choose the mode of t and returns it.
func (b *builder) toolMode(t *toolDoc) Mode {
	mode := ModeSimple
	hasCmds, hasBare := t.commandsNode != nil, t.bare != nil
	switch {
	case hasBare:
		mode = ModeBare
		if hasCmds {
			b.add(t.bare.key, t.bare.path, "bare and commands exclude each other: a bare tool has no subcommands")
		}
		if t.strict.v {
			b.add(t.strict.node, t.strict.path, "strict applies to commands, and a bare tool has none; remove it")
		}
	case t.strict.v:
		mode = ModeStrict
		if !hasCmds {
			b.add(t.strict.node, t.strict.path, "strict needs commands: declare the subcommands to allow")
		}
	case hasCmds:
		mode = ModeFineTuned
	}
	if hasCmds && t.commandsNode.Kind == yaml.MappingNode && len(t.commandsNode.Content) == 0 {
		b.add(t.commandsNode, t.commandsPath, "declares no subcommand; remove commands for a tool whose subcommands all go to the dispatcher")
	}
	return mode
}

// toolFloor checks default_action and returns the floor of the
// dispatcher: deny unless default_action says otherwise.
func (b *builder) toolFloor(t *toolDoc, mode Mode) string {
	floor := execgate.ActionDeny
	if t.action.set {
		a, ok := actions[t.action.v]
		switch {
		case !ok:
			b.add(t.action.node, t.action.path, "unknown default_action %s: use allow, deny or human_approval", quote(t.action.v))
		case mode == ModeStrict || mode == ModeBare:
			b.add(t.action.node, t.action.path, "has no effect on a %s tool, which has no dispatcher; remove it", mode)
		default:
			floor = a
		}
	}
	return floor
}

// checkInterpreter refuses a shell, interpreter or command runner as the
// executable of t: they run whatever their arguments say, so they are
// refused unless every argument is fixed.
func (b *builder) checkInterpreter(t *toolDoc, path string, mode Mode) {
	fixed := mode == ModeBare && len(t.bare.flags) == 0 && t.bare.posMax.v == 0 && !t.bare.stdin
	if path != "" && !t.allowInterpreter.v && !fixed {
		if which := interpreterName(t.bin.v, path); which != "" {
			b.add(t.bin.node, t.bin.path, "%s is a shell, interpreter or command runner (%s) and would run whatever its arguments say: expose it only as a bare entry with fixed arguments (no flags, positionals or stdin), or set allow_interpreter: true", quote(t.bin.v), which)
		}
	}
}

// toolEnv returns the environment of the specs of t: inherited variables,
// then defaults.env, then the tool's env.
func (b *builder) toolEnv(t *toolDoc) map[string]string {
	// A profile's environment is the profile's: the file's defaults do
	// not reach it (a PATH or a HOME there would undo what it fixes).
	defaults := b.doc.defaults
	if t.profile {
		defaults.env, defaults.inheritEnv = nil, nil
	}
	var inherit []string
	for _, e := range defaults.inheritEnv {
		inherit = append(inherit, e.v)
	}
	for _, e := range t.inheritEnv {
		inherit = append(inherit, e.v)
	}
	env := execgate.InheritEnv(inherit...)
	for _, e := range defaults.env {
		env[e.key.v] = e.value.v
	}
	for _, e := range t.env {
		env[e.key.v] = e.value.v
	}

	return env
}

// commandLeading checks the leading key of the command c and returns the
// tokens that name it on the command line: its leading list, or its name.
func (b *builder) commandLeading(c *commandDoc) []string {
	if c.leadingNode == nil {
		return []string{c.name}
	}
	if len(c.leading) == 0 {
		b.add(c.leadingNode, keyPath(c.path, "leading"), "must list at least one token, such as [%s]; leave it out to emit the command's name", c.name)
	}
	out := make([]string, 0, len(c.leading))
	for _, a := range c.leading {
		if msg := inputrules.TokenProblem(a.v); msg != "" {
			b.add(a.node, a.path, "%s", msg)
		}
		out = append(out, a.v)
	}
	return out
}

// command fills in s from the command or bare entry c.
func (b *builder) command(s *execgate.CommandSpec, t *toolDoc, c *commandDoc, leading []string) {
	if c.name == "" && c.leadingNode != nil {
		b.add(c.leadingNode, keyPath(c.path, "leading"), "a bare entry has no name to replace: put fixed tokens in the tool's global_args")
	}
	if c.approval.v {
		s.Floor = execgate.ActionRequireApproval
	}
	s.Timeout, s.NoOutputTimeout, s.MaxOutput = limitsOf(&c.limitsDoc, &t.limitsDoc, &b.doc.defaults.limitsDoc)
	switch {
	case c.description.set:
		s.Description = c.description.v
	case c.name != "":
		s.Description = "" // a subcommand does not inherit the tool's description
	}
	s.Hints = execgate.Hints{
		ReadOnly:    boolPtr(c.readOnly),
		Destructive: boolPtr(c.destructive),
		Idempotent:  boolPtr(c.idempotent),
		OpenWorld:   boolPtr(c.openWorld),
	}
	fs := execgate.FlagSpec{Leading: leading, EndOfOptions: c.endOfOptions.v}
	b.flags(&fs, c)
	if c.posMax.set {
		if c.posMax.v < 0 || c.posMax.v > execgate.MaxApprovalArgs {
			b.add(c.posMax.node, c.posMax.path, "must be between 0 and %d", execgate.MaxApprovalArgs)
		} else {
			fs.Positionals.Max = int(c.posMax.v)
		}
	}
	if c.posPattern.set {
		fs.Positionals.Pattern = c.posPattern.v
		if err := b.checkPattern(c.posPattern.v); err != nil {
			b.add(c.posPattern.node, c.posPattern.path, "%v", err)
		} else if c.posMax.v <= 0 {
			b.add(c.posPattern.node, c.posPattern.path, "a pattern needs positionals.max of at least 1; with max 0 no positional is accepted")
		}
	}
	if c.posPath != nil {
		switch {
		case c.posPattern.set:
			b.add(c.posPath.node, c.posPath.path, "path and pattern exclude each other: a path is checked as a path")
		case c.posMax.v <= 0:
			b.add(c.posPath.node, c.posPath.path, "a path needs positionals.max of at least 1; with max 0 no positional is accepted")
		}
		fs.Positionals.Path = b.pathRule(c.posPath)
	}
	if c.stdin {
		fs.Stdin = &execgate.StdinSpec{Max: c.stdinMax.v}
	}
	s.Args = execgate.Flags(fs)
	if c.confine != nil {
		s.Confine = b.confinement(c.confine) // replaces the tool's whole
	}
}

func boolPtr(v val[bool]) *bool {
	if !v.set {
		return nil
	}
	b := v.v
	return &b
}

// flags checks the flag declarations of c, placing each mistake on its
// line, and fills in fs.Flags.
func (b *builder) flags(fs *execgate.FlagSpec, c *commandDoc) {
	names := make(map[string]*yaml.Node)
	single := make(map[string]*flagDoc) // spelled with one dash
	long := make(map[string]*flagDoc)   // spelled with two dashes
	fs.Flags = slices.Grow(fs.Flags, len(c.flags))
	for _, fd := range c.flags {
		if fd.node.Kind != yaml.MappingNode {
			continue // already reported
		}
		f, nameOK := b.flag(fd)
		fs.Flags = append(fs.Flags, f)
		if !nameOK {
			continue
		}
		if first, dup := names[f.Name]; dup {
			b.add(fd.name.node, fd.name.path, "flag %s is declared twice (first at line %d)", quote(f.Name), first.Line)
			continue
		}
		names[f.Name] = fd.name.node
		spell := func(key string, n *yaml.Node, path string) {
			m, spelled := long, "--"+key
			if key == f.Short || f.SingleDash || len(key) == 1 {
				m, spelled = single, "-"+key
			}
			if other, dup := m[key]; dup {
				b.add(n, path, "spelling %s is already used by flag %s (line %d)", spelled, quote(other.name.v), other.node.Line)
				return
			}
			m[key] = fd
		}
		spell(f.Name, fd.name.node, fd.name.path)
		if f.Short != "" {
			spell(f.Short, fd.short.node, fd.short.path)
		}
	}
}

// flag checks one flag declaration, recording every mistake. It reports
// whether the flag's name and short spelling are well-formed, so that
// duplicates can be looked for.
func (b *builder) flag(fd *flagDoc) (execgate.Flag, bool) {
	ok := true
	bad := func(n *yaml.Node, path, format string, args ...any) {
		b.add(n, path, format, args...)
	}
	f := execgate.Flag{
		Name:       fd.name.v,
		Short:      fd.short.v,
		SingleDash: fd.singleDash.v,
		Pattern:    fd.pattern.v,
		Glued:      fd.glued.v,
		Separate:   fd.separate.v,
	}
	switch {
	case !fd.name.set:
		ok = false
		if !fd.keys["name"] {
			bad(fd.node, fd.path+".name", "required: the flag's name without dashes, such as max-count")
		}
	case inputrules.FlagNameProblem(f.Name) != "":
		ok = false
		bad(fd.name.node, fd.name.path, "flag name %s %s", quote(f.Name), inputrules.FlagNameProblem(f.Name))
	}
	if fd.short.set {
		switch {
		case inputrules.ShortProblem(f.Short) != "":
			ok = false
			bad(fd.short.node, fd.short.path, "short spelling %s %s, without a dash", quote(f.Short), inputrules.ShortProblem(f.Short))
		case f.Short == f.Name:
			bad(fd.short.node, fd.short.path, "repeats the one-character name; remove it")
			f.Short = ""
		}
	} else if fd.keys["short"] {
		ok = false
	}
	if fd.valuesNode != nil {
		b.flagValues(fd, &f)
		return f, ok
	}
	// When the value kind is unknown, the checks that depend on it are
	// skipped rather than guessed.
	kindKnown := !fd.keys["value"]
	if fd.value.set {
		k, err := execgate.ParseValueKind(fd.value.v)
		if err != nil {
			bad(fd.value.node, fd.value.path, "%v", err)
		} else {
			kindKnown = true
		}
		f.Value = k
	}
	if !kindKnown {
		return f, ok
	}
	b.flagBounds(fd, &f)
	b.flagEnum(fd, &f)
	b.flagValueRule(fd, &f)
	b.flagRepeat(fd, &f)
	return f, ok
}

// flagValues checks the values list of a flag that takes several values,
// and the keys that list excludes on the flag itself.
func (b *builder) flagValues(fd *flagDoc, f *execgate.Flag) {
	var pathNode *yaml.Node
	if fd.pathRule != nil {
		pathNode = fd.pathRule.node
	}
	for _, k := range []struct {
		key  string
		node *yaml.Node
	}{{"value", fd.value.node}, {"min", fd.min.node}, {"max", fd.max.node}, {"enum", fd.enumNode}, {"pattern", fd.pattern.node}, {"path", pathNode}} {
		if !fd.keys[k.key] {
			continue
		}
		n := k.node
		if n == nil {
			n = fd.node
		}
		b.add(n, keyPath(fd.path, k.key), "values excludes %s on the flag: declare it on each value", k.key)
	}
	if f.Glued {
		b.add(fd.glued.node, fd.glued.path, "glued does not apply to a flag with values: its values are separate arguments")
		f.Glued = false
	}
	if f.Separate {
		b.add(fd.separate.node, fd.separate.path, "separate does not apply to a flag with values: its values are separate arguments already")
		f.Separate = false
	}
	b.flagRepeat(fd, f)
	switch {
	case fd.valuesNode.Kind != yaml.SequenceNode:
		return // the decoder has said so
	case len(fd.valuesNode.Content) == 0:
		b.add(fd.valuesNode, keyPath(fd.path, "values"), "must list at least one value")
		return
	case len(fd.valuesNode.Content) > execgate.MaxFlagValues:
		b.add(fd.valuesNode, keyPath(fd.path, "values"), "lists %d values; at most %d are accepted", len(fd.valuesNode.Content), execgate.MaxFlagValues)
		return
	}
	f.Values = []execgate.FlagValue{}
	seen := make(map[string]*yaml.Node, len(fd.values))
	for _, vd := range fd.values {
		v := execgate.FlagValue{Name: vd.name.v}
		switch {
		case !vd.name.set:
			if !vd.keys["name"] {
				b.add(vd.node, keyPath(vd.path, "name"), "required: the value's name, shown to the model, such as file")
			}
		case inputrules.FlagNameProblem(v.Name) != "":
			b.add(vd.name.node, vd.name.path, "value name %s %s", quote(v.Name), inputrules.FlagNameProblem(v.Name))
		case seen[v.Name] != nil:
			b.add(vd.name.node, vd.name.path, "value name %s is used twice (first at line %d)", quote(v.Name), seen[v.Name].Line)
		default:
			seen[v.Name] = vd.name.node
		}
		if !vd.value.set {
			if !vd.keys["value"] {
				b.add(vd.node, keyPath(vd.path, "value"), "required: the value's kind: string, int, enum, pattern or path")
			}
			f.Values = append(f.Values, v)
			continue
		}
		k, err := execgate.ParseValueKind(vd.value.v)
		switch {
		case err != nil:
			b.add(vd.value.node, vd.value.path, "%v", err)
			f.Values = append(f.Values, v)
			continue
		case k == execgate.ValueNone:
			b.add(vd.value.node, vd.value.path, "a value's kind must take a value: string, int, enum, pattern or path, not none")
		}
		one := execgate.Flag{Name: f.Name, Value: k, Pattern: vd.pattern.v}
		b.flagBounds(vd, &one)
		b.flagEnum(vd, &one)
		b.flagValueRule(vd, &one)
		v.Value, v.Min, v.Max, v.Enum, v.Pattern, v.Path = one.Value, one.Min, one.Max, one.Enum, one.Pattern, one.Path
		f.Values = append(f.Values, v)
	}
}

// bad places one mistake of a flag entry on its line.
func (b *builder) bad(n *yaml.Node, path, format string, args ...any) {
	b.add(n, path, format, args...)
}

// flagBounds checks min and max, which only an int value takes.
func (b *builder) flagBounds(fd *flagDoc, f *execgate.Flag) {
	bad, kind := b.bad, f.Value
	if fd.min.set || fd.max.set {
		if kind != execgate.ValueInt {
			n, p := fd.min.node, fd.min.path
			if !fd.min.set {
				n, p = fd.max.node, fd.max.path
			}
			bad(n, p, "min and max apply only to value: int")
		} else {
			if fd.min.set {
				v := fd.min.v
				f.Min = &v
			}
			if fd.max.set {
				v := fd.max.v
				f.Max = &v
			}
			if fd.min.set && fd.max.set && fd.min.v > fd.max.v {
				bad(fd.min.node, fd.min.path, "min %d is greater than max %d", fd.min.v, fd.max.v)
			}
		}
	}
}

// flagEnum checks enum, which an enum value requires and no other takes.
func (b *builder) flagEnum(fd *flagDoc, f *execgate.Flag) {
	bad, kind := b.bad, f.Value
	switch {
	case fd.enumNode != nil && kind != execgate.ValueEnum:
		bad(fd.enumNode, keyPath(fd.path, "enum"), "enum applies only to value: enum")
	case !fd.keys["enum"] && kind == execgate.ValueEnum:
		bad(fd.node, keyPath(fd.path, "enum"), "required for value: enum: list the accepted values")
	case fd.enumNode != nil && len(fd.enum) == 0 && len(fd.enumNode.Content) == 0:
		bad(fd.enumNode, keyPath(fd.path, "enum"), "must list at least one value")
	}
	seen := make(map[string]*yaml.Node, len(fd.enum))
	for _, e := range fd.enum {
		if msg := inputrules.TokenProblem(e.v); msg != "" {
			bad(e.node, e.path, "%s", msg)
		} else if first, dup := seen[e.v]; dup {
			bad(e.node, e.path, "%s is listed twice (first at line %d)", quote(e.v), first.Line)
		}
		seen[e.v] = e.node
		f.Enum = append(f.Enum, e.v)
	}
}

// flagValueRule checks the rule of a path or pattern value: path only on
// value: path, pattern required on, and only on, value: pattern.
func (b *builder) flagValueRule(fd *flagDoc, f *execgate.Flag) {
	bad, kind := b.bad, f.Value
	switch {
	case fd.pathRule != nil && kind != execgate.ValuePath:
		bad(fd.pathRule.node, fd.pathRule.path, "path applies only to value: path")
	case fd.pathRule != nil:
		f.Path = b.pathRule(fd.pathRule)
	}
	switch {
	case fd.pattern.node != nil && kind != execgate.ValuePattern:
		bad(fd.pattern.node, fd.pattern.path, "pattern applies only to value: pattern")
	case !fd.keys["pattern"] && kind == execgate.ValuePattern:
		bad(fd.node, keyPath(fd.path, "pattern"), "required for value: pattern: the regular expression values must match")
	case fd.pattern.set:
		if err := b.checkPattern(f.Pattern); err != nil {
			bad(fd.pattern.node, fd.pattern.path, "%v", err)
		}
	}
}

// flagRepeat checks repeat and glued.
func (b *builder) flagRepeat(fd *flagDoc, f *execgate.Flag) {
	bad, kind := b.bad, f.Value
	if fd.repeat.set {
		if fd.repeat.v < 0 || fd.repeat.v > execgate.MaxApprovalArgs {
			bad(fd.repeat.node, fd.repeat.path, "must be between 0 and %d", execgate.MaxApprovalArgs)
		} else {
			f.Repeat = int(fd.repeat.v)
		}
	}
	if f.Glued {
		switch {
		case kind == execgate.ValueNone:
			bad(fd.glued.node, fd.glued.path, "glued needs a flag that takes a value")
		case f.Short == "" && len(f.Name) != 1:
			bad(fd.glued.node, fd.glued.path, "glued needs a one-character spelling: a short, or a one-character name")
		}
	}
	if f.Separate && kind == execgate.ValueNone {
		bad(fd.separate.node, fd.separate.path, "separate needs a flag that takes a value")
	}
}

// pathRule builds the rule of a path argument, placing each mistake on its
// line: a root that is not absolute, a must that is not exists, file or
// dir.
func (b *builder) pathRule(pd *pathDoc) *execgate.PathRule {
	r := &execgate.PathRule{Glob: pd.glob.v, Lexical: pd.lexical.v}
	for _, root := range pd.roots {
		if !filepath.IsAbs(root.v) {
			b.add(root.node, root.path, "a root must be an absolute path, not %s", quote(root.v))
			continue
		}
		r.Roots = append(r.Roots, filepath.Clean(root.v))
	}
	if pd.must.set {
		switch m := execgate.PathMust(pd.must.v); m {
		case execgate.PathExists, execgate.PathFile, execgate.PathDir:
			r.Must = m
		default:
			b.add(pd.must.node, pd.must.path, "must be exists, file or dir, not %s", quote(pd.must.v))
		}
	}
	return r
}

// checkPattern reports whether p compiles as an RE2 expression that
// matches whole arguments, and keeps its matcher for the rest of the load.
func (b *builder) checkPattern(p string) error {
	m, err := pattern.Compile(p)
	if err != nil {
		return fmt.Errorf("the regular expression does not compile: %v", err)
	}
	b.patterns = append(b.patterns, m)
	return nil
}

// interpreterName returns the base name under which bin, resolved to
// path, is a shell, interpreter or command runner, or "". Both the
// configured name and the file the symlinks lead to are judged.
func interpreterName(bin, path string) string {
	if isInterpreter(bin) {
		return filepath.Base(bin)
	}
	if isInterpreter(path) {
		return filepath.Base(path)
	}
	if target, err := filepath.EvalSymlinks(path); err == nil && isInterpreter(target) {
		return filepath.Base(target)
	}
	return ""
}

// place puts an error from execgate.NewAllowlist on the key it came from.
func (b *builder) place(err error) {
	var ce *execgate.ConfigError
	if !errors.As(err, &ce) {
		b.add(nil, "", "%v", err)
		return
	}
	o, ok := b.origins[ce.Spec]
	if !ok {
		b.add(nil, "", "%s: %s", ce.Field, ce.Message)
		return
	}
	t := o.tool
	b.reloc = t.reloc
	defer func() { b.reloc = nil }()
	n, path := t.node, t.path
	pick := func(v *yaml.Node, p string) {
		if v != nil {
			n, path = v, p
		}
	}
	if c := o.confineFor(); c != nil && strings.HasPrefix(ce.Field, "Confine") {
		n, path = c.placeConfine(ce.Field)
		b.add(n, path, "%s", ce.Message)
		return
	}
	switch ce.Field {
	case "Name":
		pick(t.name.node, t.name.path)
	case "Command":
		pick(t.bin.node, t.bin.path)
	case "SHA256":
		pick(t.sha256.node, t.sha256.path)
	case "Dir":
		pick(t.workingDir.node, t.workingDir.path)
	case "PolicyVersion":
		pick(t.policyVersion.node, t.policyVersion.path)
	case "Floor":
		pick(t.action.node, t.action.path)
	case "Env":
		n, path = t.node, keyPath(t.path, "env")
	default: // Args and the limits
		if o.cmd != nil {
			n, path = o.cmd.key, o.cmd.path
		} else {
			pick(t.globalArgsNode, keyPath(t.path, "global_args"))
		}
	}
	b.add(n, path, "%s", ce.Message)
}
