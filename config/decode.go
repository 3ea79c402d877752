package config

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// This file turns a parsed YAML document into the raw shape of a
// configuration (the *Doc types below), refusing what YAML allows but a
// configuration must not hold: unknown and duplicate keys, anchors,
// aliases, merge keys, tags, and values of the wrong type. Every value
// keeps its node, so that later checks can name its line and key path.

// val is one decoded value with where it came from.
type val[T any] struct {
	v    T
	set  bool
	node *yaml.Node // the value's node, also when it was refused; nil when the key is absent
	path string
}

// limitsDoc are the per-call limits that defaults, tools and commands set.
type limitsDoc struct {
	timeout         val[time.Duration]
	noOutputTimeout val[time.Duration]
	maxOutput       val[int]
}

type envVar struct {
	key   val[string] // node is the key's node
	value val[string]
}

type defaultsDoc struct {
	limitsDoc
	env        []envVar
	inheritEnv []val[string]
}

type fileDoc struct {
	version  val[int64]
	defaults defaultsDoc
	tools    []*toolDoc

	policiesKey *yaml.Node // nil when the key is absent
	policies    []*policyDoc
	grantsKey   *yaml.Node // nil when the key is absent
	grantsPath  string
	grants      []*grantDoc

	serverKey *yaml.Node // nil when the key is absent
	server    *serverDoc
}

// policyDoc is one entry of the policies list.
type policyDoc struct {
	node *yaml.Node
	path string
	ok   bool            // node is a mapping
	keys map[string]bool // the keys present

	name, principal val[string]
	rules           []*ruleDoc
	rate            rateDoc
}

// ruleDoc is one entry of a policy's rules list.
type ruleDoc struct {
	node *yaml.Node
	path string
	ok   bool
	keys map[string]bool

	name, action val[string]
	tools        []val[string]
	toolsNode    *yaml.Node
	examples     *examplesDoc // nil when the key is absent
}

// rateDoc is a policy's rate_limit mapping.
type rateDoc struct {
	node, loopNode *yaml.Node // nil when the key is absent
	path, loopPath string

	perMinute, burst, budget, loopMax val[int64]
	budgetWindow, loopWindow          val[time.Duration]
}

// grantDoc is one entry of the grants list.
type grantDoc struct {
	node *yaml.Node
	path string
	ok   bool
	keys map[string]bool

	id, principal, tool, reason val[string]
	expires                     val[time.Time]
}

type toolDoc struct {
	node *yaml.Node
	path string
	ok   bool            // node is a mapping
	keys map[string]bool // the keys present

	profile bool // the entry names a profile, whose environment is fixed
	// reloc, when it is set, places the problems found in this entry,
	// a copy of an earlier one (see cloneTool).
	reloc *relocation
	// buildKey is the expansionKey of an entry naming a profile, "" for
	// any other: the entries with the same key build the same specs but
	// for their names and working directories (see copyTool).
	buildKey string
	// alike are the entries this one is alike, nil when it is no
	// mapping (see alikeEntries).
	alike *alikeEntries

	name, bin, sha256, workingDir      val[string]
	policyVersion, description, action val[string]
	env                                []envVar
	inheritEnv                         []val[string]
	limitsDoc
	strict, allowHostileEnv, allowInterpreter val[bool]
	globalArgs                                []val[string]
	globalArgsNode                            *yaml.Node

	commandsNode *yaml.Node // nil when the key is absent
	commandsPath string
	commands     []*commandDoc
	bare         *commandDoc // nil when the key is absent
	confine      *confineDoc // nil when the key is absent
}

type commandDoc struct {
	name string     // the subcommand; "" for bare
	key  *yaml.Node // the subcommand's key node, or the "bare" key
	node *yaml.Node
	path string

	flags        []*flagDoc
	posMax       val[int64]
	posPattern   val[string]
	posPath      *pathDoc // nil when positionals.path is absent
	stdin        bool
	stdinMax     val[int]
	endOfOptions val[bool]
	leading      []val[string]
	leadingNode  *yaml.Node // nil when the key is absent
	approval     val[bool]  // human_approval
	limitsDoc
	description                                  val[string]
	readOnly, destructive, idempotent, openWorld val[bool]
	confine                                      *confineDoc  // nil when the key is absent
	examples                                     *examplesDoc // nil when the key is absent
}

type flagDoc struct {
	node *yaml.Node
	path string
	keys map[string]bool // the keys present

	name, short, value, pattern val[string]
	singleDash, glued, separate val[bool]
	min, max, repeat            val[int64]
	enum                        []val[string]
	enumNode                    *yaml.Node
	pathRule                    *pathDoc   // nil when the key is absent
	values                      []*flagDoc // the entries of values: name, value and a value's rules
	valuesNode                  *yaml.Node // nil when the key is absent
}

// pathDoc is a path: mapping, the rule of a path argument.
type pathDoc struct {
	node          *yaml.Node
	path          string
	roots         []val[string]
	must          val[string]
	glob, lexical val[bool]
}

// decoder walks the YAML nodes and records problems.
type decoder struct {
	*problems

	alike   map[uint64][]*alikeEntries // by entryHash
	hashBuf []byte                     // entryHash's, kept from one entry to the next
	// profileKey is the expansionKey of the entry fromProfile expanded
	// last, empty when it expanded none or its working_dir is not one;
	// expanded are the entries alike by that key, for their examples,
	// and sources those of them decoded without a problem that later
	// ones are copies of (see cloneTool).
	profileKey []byte
	expanded   map[string]*alikeEntries
	sources    map[string]*toolSource
	// bins are the names the profiles' programs are installed under
	// here, by profile (see installedName); wd is the working directory
	// at load time, read once (see workingDir).
	bins map[string]string
	// strs holds one copy of each string value decoded (see intern).
	strs   map[string]string
	wd     string
	wdErr  error
	wdRead bool
	// cur is the tools entry being decoded, if any.
	cur struct {
		path  string
		alike *alikeEntries
		first bool // the first of its alike
	}
}

func (d *decoder) add(n *yaml.Node, path, format string, args ...any) {
	line, col := 0, 0
	if n != nil {
		line, col = n.Line, n.Column
	}
	if o := d.origin(n); o != "" {
		format, args = "%s"+format, append([]any{o}, args...)
	}
	d.at(line, col, path, format, args...)
}

// handler decodes the value of one known key.
type handler func(key, value *yaml.Node, path string)

// fields are the keys a mapping may hold.
type fields struct {
	handlers map[string]handler
	nullOK   map[string]bool // keys whose empty value (null) means an empty mapping

	// lookup, when it is set, is used in place of handlers and nullOK: it
	// returns the handler of a known key, nil for an unknown one, and
	// whether the key's empty value (null) means an empty mapping; known
	// are then the known keys, sorted, for messages. A mapping decoded
	// thousands of times in a load (a flag) is given one, so that only
	// the handlers of the keys it holds are made.
	lookup func(name string) (h handler, nullOK bool)
	known  string
}

func keyPath(parent, key string) string {
	simple := key != ""
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			simple = false
			break
		}
	}
	if !simple {
		return parent + "[" + quote(key) + "]"
	}
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func indexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// standardTags are the tags the YAML core schema resolves by itself.
var standardTags = map[string]bool{
	"!!str": true, "!!int": true, "!!bool": true, "!!null": true, "!!float": true,
	"!!map": true, "!!seq": true, "!!timestamp": true, "!!binary": true,
}

// usable refuses the YAML features a configuration may not use: aliases,
// anchors and explicit tags.
func (d *decoder) usable(n *yaml.Node, path string) bool {
	switch {
	case n.Kind == yaml.AliasNode:
		d.add(n, path, "aliases (*%s) are not supported; write the value out", truncate(n.Value))
		return false
	case n.Anchor != "":
		d.add(n, path, "anchors (&%s) are not supported; write each value out", truncate(n.Anchor))
		return false
	case n.Tag == "!!merge":
		d.add(n, path, "merge keys (<<) are not supported; write each key out")
		return false
	case n.Style&yaml.TaggedStyle != 0 || !standardTags[n.Tag]:
		d.add(n, path, "tags (%s) are not supported", truncate(n.Tag))
		return false
	}
	return true
}

// usableNode reports whether usable accepts n, recording nothing.
func usableNode(n *yaml.Node) bool {
	return n.Kind != yaml.AliasNode && n.Anchor == "" && n.Tag != "!!merge" && n.Style&yaml.TaggedStyle == 0 && standardTags[n.Tag]
}

// truncate shortens a name from the file for a message.
func truncate(s string) string {
	if len(s) > maxQuoted {
		return strings.ToValidUTF8(s[:maxQuoted], "?") + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

// describe names what a node holds, for "must be X, not Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
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
		case "!!timestamp":
			return "a date"
		}
	}
	return "something else"
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// key returns the text of a mapping key, which must be a plain string.
func (d *decoder) key(k *yaml.Node, parent string) (string, bool) {
	if !d.usable(k, parent) {
		return "", false
	}
	if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
		d.add(k, parent, "keys must be strings, not %s", describe(k))
		return "", false
	}
	return k.Value, true
}

// pairs calls f for every key of mapping n, refusing non-string and
// duplicate keys. It reports whether n is a mapping.
func (d *decoder) pairs(n *yaml.Node, path string, f func(name string, k, v *yaml.Node, path string)) bool {
	if n.Kind != yaml.MappingNode {
		d.add(n, path, "must be a mapping, not %s", describe(n))
		return false
	}
	// A mapping of a few keys, as most are, is searched for a duplicate
	// key rather than given a map.
	var seen map[string]*yaml.Node
	if len(n.Content) > 16 {
		seen = make(map[string]*yaml.Node, len(n.Content)/2)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name, ok := d.key(k, path)
		if !ok {
			continue
		}
		kp := keyPath(path, name)
		if first := firstKey(n, i, name, seen); first != nil {
			d.add(k, kp, "duplicate key (first at line %d)", first.Line)
			continue
		}
		if seen != nil {
			seen[name] = k
		}
		f(name, k, v, kp)
	}
	return true
}

// firstKey returns the first key of the mapping n before its i-th node
// (a key's) that is a string and reads name, or nil: from seen, when it is
// not nil, which holds every such key before i.
func firstKey(n *yaml.Node, i int, name string, seen map[string]*yaml.Node) *yaml.Node {
	if seen != nil {
		return seen[name]
	}
	for j := 0; j < i; j += 2 {
		if k := n.Content[j]; k.Value == name && k.Kind == yaml.ScalarNode && k.Tag == "!!str" && usableNode(k) {
			return k
		}
	}
	return nil
}

// mapping decodes mapping n with the known keys in fs. It returns the
// keys that were present, whether or not their values were usable.
func (d *decoder) mapping(n *yaml.Node, path string, fs fields) map[string]bool {
	present := make(map[string]bool)
	d.pairs(n, path, func(name string, k, v *yaml.Node, kp string) {
		present[name] = true
		var h handler
		var nullOK bool
		if fs.lookup != nil {
			h, nullOK = fs.lookup(name)
		} else {
			h, nullOK = fs.handlers[name], fs.nullOK[name]
		}
		if h == nil {
			known := fs.known
			if fs.lookup == nil {
				known = knownKeys(fs.handlers)
			}
			d.add(k, kp, "unknown key %s (known keys: %s)", quote(name), known)
			return
		}
		if !d.usable(v, kp) {
			return
		}
		if isNull(v) && !nullOK {
			d.add(v, kp, "has no value; give one or remove the key")
			return
		}
		h(k, v, kp)
	})
	return present
}

func knownKeys(hs map[string]handler) string {
	names := make([]string, 0, len(hs))
	for n := range hs {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// scalar checks that n is a scalar with one of the tags, and otherwise
// reports that it must be want.
func (d *decoder) scalar(n *yaml.Node, path, want string, tags ...string) bool {
	if n.Kind == yaml.ScalarNode {
		for _, t := range tags {
			if n.Tag == t {
				return true
			}
		}
	}
	if n.Kind == yaml.ScalarNode && want == "a string" {
		d.add(n, path, "must be a string, not %s; put it in quotes", describe(n))
		return false
	}
	d.add(n, path, "must be %s, not %s", want, describe(n))
	return false
}

func (d *decoder) str(f *val[string]) handler {
	return func(_, v *yaml.Node, path string) {
		*f = val[string]{node: v, path: path}
		if d.scalar(v, path, "a string", "!!str") {
			f.v, f.set = d.intern(v.Value), true
		}
	}
}

func (d *decoder) boolean(f *val[bool]) handler {
	return func(_, v *yaml.Node, path string) {
		*f = val[bool]{node: v, path: path}
		if !d.scalar(v, path, "true or false", "!!bool") {
			return
		}
		var b bool
		switch v.Value {
		case "true", "True", "TRUE":
			b = true
		case "false", "False", "FALSE":
		default:
			if err := v.Decode(&b); err != nil {
				d.add(v, path, "must be true or false")
				return
			}
		}
		f.v, f.set = b, true
	}
}

func (d *decoder) integer(f *val[int64]) handler {
	return func(_, v *yaml.Node, path string) {
		*f = val[int64]{node: v, path: path}
		if !d.scalar(v, path, "an integer", "!!int") {
			return
		}
		i, ok := plainInt(v.Value)
		if !ok {
			if err := v.Decode(&i); err != nil {
				d.add(v, path, "must be an integer between %d and %d", int64(math.MinInt64), int64(math.MaxInt64))
				return
			}
		}
		f.v, f.set = i, true
	}
}

// plainInt returns the value of s when it is 0 or a decimal integer of at
// most 18 digits without a sign or leading zero, which YAML reads as that
// number; any other integer is left to the YAML package.
func plainInt(s string) (int64, bool) {
	if s == "" || len(s) > 18 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	var i int64
	for j := 0; j < len(s); j++ {
		c := s[j]
		if c < '0' || c > '9' {
			return 0, false
		}
		i = i*10 + int64(c-'0')
	}
	return i, true
}

// duration decodes a duration written as a string with units ("30s").
// Zero is accepted only when zeroOK says what it means.
func (d *decoder) duration(f *val[time.Duration], zeroOK bool) handler {
	return func(_, v *yaml.Node, path string) {
		*f = val[time.Duration]{node: v, path: path}
		if v.Kind == yaml.ScalarNode && (v.Tag == "!!int" || v.Tag == "!!float") {
			d.add(v, path, "a duration needs a unit, such as 30s, 2m or 1m30s")
			return
		}
		if !d.scalar(v, path, "a duration such as 30s", "!!str") {
			return
		}
		t, err := parseDuration(v.Value, zeroOK)
		if err != nil {
			d.add(v, path, "%v", err)
			return
		}
		f.v, f.set = t, true
	}
}

// size decodes a byte count, a plain integer or a string with a unit
// ("64KiB"). It must be positive.
func (d *decoder) size(f *val[int]) handler {
	return func(_, v *yaml.Node, path string) {
		*f = val[int]{node: v, path: path}
		if !d.scalar(v, path, "a size such as 65536 or 64KiB", "!!int", "!!str") {
			return
		}
		n, err := parseSize(v.Value)
		if err != nil {
			d.add(v, path, "%v", err)
			return
		}
		f.v, f.set = n, true
	}
}

// list decodes a sequence, calling elem for every element.
func (d *decoder) list(n *yaml.Node, path string, elem func(i int, e *yaml.Node, path string)) {
	if n.Kind != yaml.SequenceNode {
		d.add(n, path, "must be a list, not %s", describe(n))
		return
	}
	for i, e := range n.Content {
		ep := indexPath(path, i)
		if !d.usable(e, ep) {
			continue
		}
		elem(i, e, ep)
	}
}

// intern returns s, or the string equal to it that an earlier value of
// this load decoded: the specs built keep the strings they are given
// (descriptions, patterns, enum values, arguments, environments), and a
// file of many tools in the same shape writes the same ones again and
// again, each a new string of the YAML parser's.
func (d *decoder) intern(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := d.strs[s]; ok {
		return v
	}
	if d.strs == nil {
		d.strs = make(map[string]string)
	}
	d.strs[s] = s
	return s
}

func (d *decoder) strings(f *[]val[string]) handler {
	return func(_, v *yaml.Node, path string) {
		*f = nil
		d.list(v, path, func(_ int, e *yaml.Node, ep string) {
			if d.scalar(e, ep, "a string", "!!str") {
				*f = append(*f, val[string]{v: d.intern(e.Value), set: true, node: e, path: ep})
			}
		})
	}
}

func (d *decoder) env(f *[]envVar) handler {
	return func(_, v *yaml.Node, path string) {
		*f = nil
		d.pairs(v, path, func(name string, k, e *yaml.Node, kp string) {
			if !d.usable(e, kp) || !d.scalar(e, kp, "a string", "!!str") {
				return
			}
			*f = append(*f, envVar{
				key:   val[string]{v: d.intern(name), set: true, node: k, path: kp},
				value: val[string]{v: d.intern(e.Value), set: true, node: e, path: kp},
			})
		})
	}
}

func (d *decoder) limits(l *limitsDoc, hs map[string]handler) {
	hs["timeout"] = d.duration(&l.timeout, false)
	hs["no_output_timeout"] = d.duration(&l.noOutputTimeout, true)
	hs["max_output"] = d.size(&l.maxOutput)
}

// file decodes the document's root mapping.
func (d *decoder) file(root *yaml.Node) *fileDoc {
	doc := &fileDoc{}
	hs := map[string]handler{
		"version": d.integer(&doc.version),
		"defaults": func(_, v *yaml.Node, path string) {
			d.defaults(v, path, &doc.defaults)
		},
		"tools": func(_, v *yaml.Node, path string) {
			d.list(v, path, func(_ int, e *yaml.Node, ep string) {
				doc.tools = append(doc.tools, d.tool(e, ep))
			})
		},
	}
	hs["policies"] = func(k, v *yaml.Node, path string) {
		doc.policiesKey = k
		d.list(v, path, func(_ int, e *yaml.Node, ep string) {
			doc.policies = append(doc.policies, d.policy(e, ep))
		})
	}
	hs["grants"] = func(k, v *yaml.Node, path string) {
		doc.grantsKey, doc.grantsPath = k, path
		d.list(v, path, func(_ int, e *yaml.Node, ep string) {
			doc.grants = append(doc.grants, d.grant(e, ep))
		})
	}
	hs["server"] = func(k, v *yaml.Node, path string) {
		doc.serverKey, doc.server = k, d.server(v, path)
	}
	present := d.mapping(root, "", fields{handlers: hs})
	if root.Kind != yaml.MappingNode {
		return doc
	}
	if !present["version"] {
		d.add(root, "version", "required: write version: 1 at the top of the file")
	}
	if !present["tools"] {
		d.add(root, "tools", "required: list the tools this configuration allows (an empty list allows nothing)")
	}
	return doc
}

func (d *decoder) defaults(n *yaml.Node, path string, def *defaultsDoc) {
	hs := map[string]handler{
		"env":         d.env(&def.env),
		"inherit_env": d.strings(&def.inheritEnv),
	}
	d.limits(&def.limitsDoc, hs)
	d.mapping(n, path, fields{handlers: hs})
}

func (d *decoder) tool(n *yaml.Node, path string) *toolDoc {
	isProfile := hasKey(n, "profile")
	file := n // the file's own entry
	if isProfile {
		// An entry naming a profile is the profile's entry with the
		// entry's overrides (see profile.go).
		entry, src := d.fromProfile(n, path)
		if src != nil {
			return d.cloneTool(src, n, path)
		}
		if entry == nil {
			return &toolDoc{node: n, path: path}
		}
		n = entry
	}
	t := &toolDoc{node: n, path: path, ok: n.Kind == yaml.MappingNode, profile: isProfile}
	if isProfile && len(d.profileKey) > 0 {
		t.buildKey = string(d.profileKey)
		t.alike, d.cur.first = d.alikeExpansion(n, d.profileKey)
	} else {
		t.alike, d.cur.first = d.alikeTool(n)
	}
	d.cur.path, d.cur.alike = path, t.alike
	defer func() { d.cur.alike = nil }()
	problems, warned := d.count(), len(d.warned)
	t.keys = d.mapping(n, path, fields{known: toolKeys, lookup: func(name string) (handler, bool) {
		return d.toolField(t, name)
	}})
	if isProfile && len(d.profileKey) > 0 && t.ok && d.count() == problems && len(d.warned) == warned {
		// Entries after this one that expand alike are decoded as
		// copies of it (see cloneTool).
		if d.sources == nil {
			d.sources = make(map[string]*toolSource)
		}
		if _, ok := d.sources[string(d.profileKey)]; !ok {
			d.sources[string(d.profileKey)] = &toolSource{doc: t, file: file}
		}
	}
	return t
}

// toolField returns the handler of the tools entry's key name, which
// decodes its value into t, and whether its empty value means an empty
// mapping.
func (d *decoder) toolField(t *toolDoc, name string) (handler, bool) {
	switch name {
	case "name":
		return d.str(&t.name), false
	case "bin":
		return d.str(&t.bin), false
	case "sha256":
		return d.str(&t.sha256), false
	case "working_dir":
		return d.str(&t.workingDir), false
	case "env":
		return d.env(&t.env), false
	case "inherit_env":
		return d.strings(&t.inheritEnv), false
	case "policy_version":
		return d.str(&t.policyVersion), false
	case "description":
		return d.str(&t.description), false
	case "default_action":
		return d.str(&t.action), false
	case "strict":
		return d.boolean(&t.strict), false
	case "allow_hostile_env":
		return d.boolean(&t.allowHostileEnv), false
	case "allow_interpreter":
		return d.boolean(&t.allowInterpreter), false
	case "global_args":
		return func(k, v *yaml.Node, p string) {
			t.globalArgsNode = v
			d.strings(&t.globalArgs)(k, v, p)
		}, false
	case "commands":
		return func(_, v *yaml.Node, p string) {
			t.commandsNode, t.commandsPath = v, p
			d.pairs(v, p, func(name string, k, e *yaml.Node, kp string) {
				if !d.usable(e, kp) {
					return
				}
				t.commands = append(t.commands, d.command(name, k, e, kp))
			})
		}, false
	case "bare":
		return func(k, v *yaml.Node, p string) {
			t.bare = d.command("", k, v, p)
		}, true
	case "confine":
		return func(k, v *yaml.Node, p string) {
			t.confine = d.confine(k, v, p)
		}, false
	}
	return d.limitHandler(&t.limitsDoc, name), false
}

// command decodes a command entry or a bare entry; null means {}.
func (d *decoder) command(name string, k, n *yaml.Node, path string) *commandDoc {
	c := &commandDoc{name: name, key: k, node: n, path: path}
	if isNull(n) {
		return c
	}
	d.mapping(n, path, fields{known: commandKeys, lookup: func(name string) (handler, bool) {
		switch name {
		case "flags":
			return func(_, v *yaml.Node, p string) {
				d.list(v, p, func(_ int, e *yaml.Node, ep string) {
					c.flags = append(c.flags, d.flag(e, ep))
				})
			}, false
		case "positionals":
			return func(_, v *yaml.Node, p string) {
				d.mapping(v, p, fields{handlers: map[string]handler{
					"max":     d.integer(&c.posMax),
					"pattern": d.str(&c.posPattern),
					"path": func(_, v *yaml.Node, p string) {
						c.posPath = d.pathRule(v, p)
					},
				}, nullOK: map[string]bool{"path": true}})
			}, false
		case "stdin":
			return func(_, v *yaml.Node, p string) {
				c.stdin = true
				if isNull(v) {
					return
				}
				d.mapping(v, p, fields{handlers: map[string]handler{"max": d.size(&c.stdinMax)}})
			}, true
		case "end_of_options":
			return d.boolean(&c.endOfOptions), false
		case "leading":
			return func(k, v *yaml.Node, p string) {
				c.leadingNode = v
				d.strings(&c.leading)(k, v, p)
			}, false
		case "human_approval":
			return d.boolean(&c.approval), false
		case "description":
			return d.str(&c.description), false
		case "annotations":
			return func(_, v *yaml.Node, p string) {
				d.mapping(v, p, fields{handlers: map[string]handler{
					"read_only":   d.boolean(&c.readOnly),
					"destructive": d.boolean(&c.destructive),
					"idempotent":  d.boolean(&c.idempotent),
					"open_world":  d.boolean(&c.openWorld),
				}})
			}, false
		case "confine":
			return func(k, v *yaml.Node, p string) {
				c.confine = d.confine(k, v, p)
			}, false
		case "examples":
			return func(k, v *yaml.Node, p string) {
				c.examples = d.examples(k, v, p, false)
			}, false
		}
		return d.limitHandler(&c.limitsDoc, name), false
	}})
	return c
}

// toolKeys are the keys a tools entry may hold, sorted.
var toolKeys = "allow_hostile_env, allow_interpreter, bare, bin, commands, confine, default_action, description, env, global_args, inherit_env, max_output, name, no_output_timeout, policy_version, sha256, strict, timeout, working_dir"

// commandKeys are the keys a command entry or a bare entry may hold,
// sorted.
var commandKeys = "annotations, confine, description, end_of_options, examples, flags, human_approval, leading, max_output, no_output_timeout, positionals, stdin, timeout"

// limitHandler returns the handler of the limit key name (see limits), or
// nil.
func (d *decoder) limitHandler(l *limitsDoc, name string) handler {
	switch name {
	case "timeout":
		return d.duration(&l.timeout, false)
	case "no_output_timeout":
		return d.duration(&l.noOutputTimeout, true)
	case "max_output":
		return d.size(&l.maxOutput)
	}
	return nil
}

func (d *decoder) flag(n *yaml.Node, path string) *flagDoc {
	f := &flagDoc{node: n, path: path}
	f.keys = d.mapping(n, path, fields{known: flagKeys, lookup: func(name string) (handler, bool) {
		switch name {
		case "short":
			return d.str(&f.short), false
		case "single_dash":
			return d.boolean(&f.singleDash), false
		case "repeat":
			return d.integer(&f.repeat), false
		case "glued":
			return d.boolean(&f.glued), false
		case "separate":
			return d.boolean(&f.separate), false
		case "values":
			return func(_, v *yaml.Node, p string) {
				f.valuesNode = v
				d.list(v, p, func(_ int, e *yaml.Node, ep string) {
					f.values = append(f.values, d.flagValue(e, ep))
				})
			}, false
		}
		return d.valueHandler(f, name)
	}})
	return f
}

// flagKeys and flagValueKeys are the keys a flag and an entry of its
// values may hold, sorted.
var (
	flagKeys      = "enum, glued, max, min, name, path, pattern, repeat, separate, short, single_dash, value, values"
	flagValueKeys = "enum, max, min, name, path, pattern, value"
)

// flagValue decodes one entry of a flag's values list: its name, its value
// kind and the rules of that kind, spelled as on a flag of one value.
func (d *decoder) flagValue(n *yaml.Node, path string) *flagDoc {
	f := &flagDoc{node: n, path: path}
	f.keys = d.mapping(n, path, fields{known: flagValueKeys, lookup: func(name string) (handler, bool) {
		return d.valueHandler(f, name)
	}})
	return f
}

// valueHandler returns the handler of the key name that a flag and each
// of its values share (the name, the value kind and the rules of that
// kind), or nil, and whether its empty value means an empty mapping.
func (d *decoder) valueHandler(f *flagDoc, name string) (handler, bool) {
	switch name {
	case "name":
		return d.str(&f.name), false
	case "value":
		return d.str(&f.value), false
	case "min":
		return d.integer(&f.min), false
	case "max":
		return d.integer(&f.max), false
	case "enum":
		return func(k, v *yaml.Node, p string) {
			f.enumNode = v
			d.strings(&f.enum)(k, v, p)
		}, false
	case "pattern":
		return d.str(&f.pattern), false
	case "path":
		return func(_, v *yaml.Node, p string) {
			f.pathRule = d.pathRule(v, p)
		}, true
	}
	return nil, false
}

// pathRule decodes the rule of a path argument: a mapping of roots, must,
// glob and lexical, each optional; an empty or null one is the default
// rule (anything inside the working directory).
func (d *decoder) pathRule(n *yaml.Node, path string) *pathDoc {
	pd := &pathDoc{node: n, path: path}
	if isNull(n) {
		return pd
	}
	d.mapping(n, path, fields{handlers: map[string]handler{
		"roots":   d.strings(&pd.roots),
		"must":    d.str(&pd.must),
		"glob":    d.boolean(&pd.glob),
		"lexical": d.boolean(&pd.lexical),
	}})
	return pd
}

// timestamp decodes an RFC 3339 timestamp with a time zone
// ("2030-01-02T15:04:05Z"), written plain or quoted.
func (d *decoder) timestamp(f *val[time.Time]) handler {
	return func(_, v *yaml.Node, path string) {
		*f = val[time.Time]{node: v, path: path}
		if !d.scalar(v, path, "an RFC 3339 timestamp such as 2030-01-02T15:04:05Z", "!!timestamp", "!!str") {
			return
		}
		t, err := time.Parse(time.RFC3339, v.Value)
		if err != nil {
			d.add(v, path, "%s is not an RFC 3339 timestamp: write a date, a time and a time zone, such as 2030-01-02T15:04:05Z or 2030-01-02T16:04:05+01:00", quote(v.Value))
			return
		}
		f.v, f.set = t, true
	}
}

// policy decodes one entry of the policies list.
func (d *decoder) policy(n *yaml.Node, path string) *policyDoc {
	p := &policyDoc{node: n, path: path, ok: n.Kind == yaml.MappingNode}
	p.keys = d.mapping(n, path, fields{handlers: map[string]handler{
		"name":      d.str(&p.name),
		"principal": d.str(&p.principal),
		"rules": func(_, v *yaml.Node, rp string) {
			d.list(v, rp, func(_ int, e *yaml.Node, ep string) {
				p.rules = append(p.rules, d.rule(e, ep))
			})
		},
		"rate_limit": func(_, v *yaml.Node, rp string) {
			r := &p.rate
			r.node, r.path = v, rp
			d.mapping(v, rp, fields{handlers: map[string]handler{
				"per_minute":    d.integer(&r.perMinute),
				"burst":         d.integer(&r.burst),
				"budget":        d.integer(&r.budget),
				"budget_window": d.duration(&r.budgetWindow, false),
				"loop": func(_, lv *yaml.Node, lp string) {
					r.loopNode, r.loopPath = lv, lp
					d.mapping(lv, lp, fields{handlers: map[string]handler{
						"max":    d.integer(&r.loopMax),
						"window": d.duration(&r.loopWindow, false),
					}})
				},
			}})
		},
	}})
	return p
}

// rule decodes one entry of a policy's rules list.
func (d *decoder) rule(n *yaml.Node, path string) *ruleDoc {
	r := &ruleDoc{node: n, path: path, ok: n.Kind == yaml.MappingNode}
	r.keys = d.mapping(n, path, fields{handlers: map[string]handler{
		"name":   d.str(&r.name),
		"action": d.str(&r.action),
		"tools": func(k, v *yaml.Node, p string) {
			r.toolsNode = v
			d.strings(&r.tools)(k, v, p)
		},
		"examples": func(k, v *yaml.Node, p string) {
			r.examples = d.examples(k, v, p, true)
		},
	}})
	return r
}

// grant decodes one entry of the grants list.
func (d *decoder) grant(n *yaml.Node, path string) *grantDoc {
	g := &grantDoc{node: n, path: path, ok: n.Kind == yaml.MappingNode}
	g.keys = d.mapping(n, path, fields{handlers: map[string]handler{
		"id":        d.str(&g.id),
		"principal": d.str(&g.principal),
		"tool":      d.str(&g.tool),
		"expires":   d.timestamp(&g.expires),
		"reason":    d.str(&g.reason),
	}})
	return g
}
