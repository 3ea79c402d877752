package config

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/execgate/execgate/internal/inputrules"
)

// A site value is what a profile cannot know and a configuration must say:
// the hosts curl may reach, the namespaces kubectl may read, the file
// kubectl's credentials are in. A profile marks where one goes with
// ${name} in a string of its entry; an entry naming that profile must set
// it, and an entry naming a profile that has no such mark may not.
type siteKey struct {
	name  string
	list  bool                  // a list of strings; else one string
	check func(v string) string // why v is not a usable value, or ""
	about string                // what the value is, for error messages
}

var siteKeys = []siteKey{
	{name: "hosts", list: true, check: hostProblem, about: "the host names it may reach, such as [api.example.com]"},
	{name: "namespaces", list: true, check: namespaceProblem, about: "the namespaces it may read, such as [default, team-a]"},
	{name: "kubeconfig", check: absFileProblem, about: "the absolute path of the kubeconfig file it uses"},
}

func siteKeyNamed(name string) (siteKey, bool) {
	for _, k := range siteKeys {
		if k.name == name {
			return k, true
		}
	}
	return siteKey{}, false
}

// siteMark matches one site-value mark in a profile's string.
var siteMark = regexp.MustCompile(`\$\{([a-z]+)\}`)

var (
	hostRE      = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)
	namespaceRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

func hostProblem(v string) string {
	if len(v) > 253 || !hostRE.MatchString(v) {
		return "must be a host name in lower case (letters, digits, '-' and '.'), with no scheme, port, path or user"
	}
	return ""
}

func namespaceProblem(v string) string {
	if !namespaceRE.MatchString(v) {
		return "must be a namespace name: 1 to 63 lower-case letters, digits and '-', starting and ending with a letter or digit"
	}
	return ""
}

func absFileProblem(v string) string {
	if !filepath.IsAbs(v) || filepath.Clean(v) != v || strings.Contains(v, "${") {
		return "must be an absolute, clean path"
	}
	return inputrules.EnvValueProblem(v)
}

// siteMarks returns the names of the site values the profile entry n
// marks, sorted.
func siteMarks(n *yaml.Node) []string {
	seen := map[string]bool{}
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && hasSiteMark(n.Value) {
			for _, m := range siteMark.FindAllStringSubmatch(n.Value, -1) {
				seen[m[1]] = true
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// siteValues decodes the site values set in the entry (the key, value
// pairs in pairs) for the profile called name, whose entry marks the
// values in marks. Problems are recorded against the entry's nodes; ok is
// false when there was one.
func (d *decoder) siteValues(name string, marks []string, pairs []*yaml.Node, entry *yaml.Node, path string) (vals map[string][]string, ok bool) {
	vals = map[string][]string{}
	ok = true
	for i := 0; i+1 < len(pairs); i += 2 {
		k, v := pairs[i], pairs[i+1]
		kp := keyPath(path, k.Value)
		sk, _ := siteKeyNamed(k.Value)
		if !contains(marks, sk.name) {
			d.add(k, kp, "profile %s takes no %s; remove it", quote(name), sk.name)
			ok = false
			continue
		}
		var list []string
		switch {
		case sk.list && v.Kind == yaml.SequenceNode:
			for _, e := range v.Content {
				if e.Kind != yaml.ScalarNode || e.Tag != "!!str" {
					d.add(e, kp, "must be a list of strings")
					ok = false
					continue
				}
				list = append(list, e.Value)
			}
			if len(v.Content) == 0 {
				d.add(v, kp, "must list at least one: %s", sk.about)
				ok = false
			}
		case !sk.list && v.Kind == yaml.ScalarNode && v.Tag == "!!str":
			list = []string{v.Value}
		default:
			d.add(v, kp, "must be %s", sk.about)
			ok = false
			continue
		}
		for _, s := range list {
			if msg := sk.check(s); msg != "" {
				d.add(v, kp, "%s %s", quote(s), msg)
				ok = false
			}
		}
		vals[sk.name] = list
	}
	for _, m := range marks {
		if _, set := vals[m]; set {
			continue
		}
		sk, known := siteKeyNamed(m)
		if !known {
			d.add(entry, path, "profile %s marks ${%s}, which is no site value (the site values are hosts, namespaces and kubeconfig)", quote(name), m)
		} else {
			d.add(entry, path, "profile %s needs %s: %s", quote(name), m, sk.about)
		}
		ok = false
	}
	return vals, ok
}

// hasSiteMark reports whether s may hold a site-value mark: most of a
// profile's strings do not, and are then left as they are, neither
// searched nor copied.
func hasSiteMark(s string) bool { return strings.Contains(s, "${") }

// siteMarkIn returns the first site-value mark in s and its name, as
// siteMark.FindStringSubmatch does, or nil.
func siteMarkIn(s string) []string {
	if !hasSiteMark(s) {
		return nil
	}
	return siteMark.FindStringSubmatch(s)
}

// fillSite puts the site values in vals in place of their marks in the
// profile entry n:
//
//   - an item of a list that is a mark and nothing else becomes one item
//     per value (hosts: [a, b] makes [${hosts}] into [a, b]);
//   - a mark inside the value of a pattern key becomes an alternation of
//     the values, each quoted (^https://${hosts}/ matches either host and
//     nothing else);
//   - a mark inside a description becomes the values as a list ("a, b"),
//     so the model is told every one;
//   - an item of a confine's network list, or of its allow and deny
//     lists, that holds a mark becomes one item per value, the mark
//     replaced (hosts: [a, b] makes ['${hosts}:443'] into [a:443, b:443]):
//     every listed host is reachable, not only the first;
//   - a mark anywhere else becomes the first value (a default such as
//     --namespace=${namespaces}, or an example's host).
func fillSite(n *yaml.Node, vals map[string][]string) {
	switch n.Kind {
	case yaml.SequenceNode:
		if !hasMarkItem(n) {
			// Most lists hold no item to expand: they are left in place.
			for _, c := range n.Content {
				fillSite(c, vals)
			}
			return
		}
		var out []*yaml.Node
		for _, c := range n.Content {
			if m := siteMarkIn(c.Value); c.Kind == yaml.ScalarNode && m != nil && m[0] == c.Value {
				for _, v := range vals[m[1]] {
					e := *c
					e.Value = v
					out = append(out, &e)
				}
				continue
			}
			fillSite(c, vals)
			out = append(out, c)
		}
		n.Content = out
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "description" && v.Kind == yaml.ScalarNode {
				if !hasSiteMark(v.Value) {
					continue
				}
				v.Value = siteMark.ReplaceAllStringFunc(v.Value, func(m string) string {
					return strings.Join(vals[siteMark.FindStringSubmatch(m)[1]], ", ")
				})
				continue
			}
			if k.Value == "pattern" && v.Kind == yaml.ScalarNode {
				if !hasSiteMark(v.Value) {
					continue
				}
				v.Value = siteMark.ReplaceAllStringFunc(v.Value, func(m string) string {
					vs := vals[siteMark.FindStringSubmatch(m)[1]]
					q := make([]string, len(vs))
					for i, s := range vs {
						q[i] = regexp.QuoteMeta(s)
					}
					return "(?:" + strings.Join(q, "|") + ")"
				})
				continue
			}
			if k.Value == "confine" {
				fillEgress(v, vals)
			}
			fillSite(v, vals)
		}
	case yaml.ScalarNode:
		if !hasSiteMark(n.Value) {
			return
		}
		n.Value = siteMark.ReplaceAllStringFunc(n.Value, func(m string) string {
			if vs := vals[siteMark.FindStringSubmatch(m)[1]]; len(vs) > 0 {
				return vs[0]
			}
			return m
		})
	default:
		for _, c := range n.Content {
			fillSite(c, vals)
		}
	}
}

// isMarkItem reports whether the item c of a list is a site-value mark and
// nothing else, which fillSite makes into one item per value.
func isMarkItem(c *yaml.Node) bool {
	m := siteMarkIn(c.Value)
	return c.Kind == yaml.ScalarNode && m != nil && m[0] == c.Value
}

// hasMarkItem reports whether the list n holds an item isMarkItem accepts.
func hasMarkItem(n *yaml.Node) bool {
	for _, c := range n.Content {
		if isMarkItem(c) {
			return true
		}
	}
	return false
}

// fillEgress expands the marks in the egress entries of the confine
// mapping c: its network list, or the allow and deny lists of its network
// mapping. An entry becomes one entry per combination of the values of
// the marks it holds.
func fillEgress(c *yaml.Node, vals map[string][]string) {
	network := mapValue(c, "network")
	lists := []*yaml.Node{network}
	if network != nil && network.Kind == yaml.MappingNode {
		lists = []*yaml.Node{mapValue(network, "allow"), mapValue(network, "deny")}
	}
	for _, l := range lists {
		if l == nil || l.Kind != yaml.SequenceNode {
			continue
		}
		var out []*yaml.Node
		for _, e := range l.Content {
			if e.Kind != yaml.ScalarNode || !siteMark.MatchString(e.Value) {
				out = append(out, e)
				continue
			}
			for _, v := range expandMarks(e.Value, vals) {
				item := *e
				item.Value = v
				out = append(out, &item)
			}
		}
		l.Content = out
	}
}

// expandMarks returns s once for every combination of the values of the
// marks it holds, each mark replaced by its value.
func expandMarks(s string, vals map[string][]string) []string {
	out := []string{s}
	seen := map[string]bool{}
	for _, m := range siteMark.FindAllStringSubmatch(s, -1) {
		if seen[m[1]] {
			continue
		}
		seen[m[1]] = true
		var next []string
		for _, o := range out {
			for _, v := range vals[m[1]] {
				next = append(next, strings.ReplaceAll(o, m[0], v))
			}
		}
		out = next
	}
	return out
}

// expansion records the nodes of one expanded profile that a problem may
// be found in, and where each comes from, so that a message about one
// names the profile (see [problems.origin]). It is a list, searched only
// when a problem is reported, rather than a map from every node: a load
// of thousands of entries marks hundreds of nodes each and reports few
// problems, if any.
type expansion struct {
	profile string
	nodes   []*yaml.Node
	lines   []int32 // each node's line in the profile, or -1 for a node the file wrote over it

	// first and last are the lines of the file the entry spans, which
	// every node it records has once the profile's are placed at the
	// entry's profile key; last is 0 when they are not known.
	first, last int
}

// beginExpansion starts the record of the entry expanded from the profile
// called name, the file's tools entry entry (nil when there is none):
// markProfile and markOverride add to it.
func (p *problems) beginExpansion(name string, entry *yaml.Node) {
	p.open = &expansion{profile: name}
	if entry != nil {
		p.open.first, p.open.last = entry.Line, lastLine(entry)
	}
	if p.open.last == 0 {
		p.unranged = true
	}
	p.expansions = append(p.expansions, p.open)
	p.hint = len(p.expansions) - 1
}

// grow makes room in e for n more nodes.
func (e *expansion) grow(n int) {
	e.nodes = slices.Grow(e.nodes, n)
	e.lines = slices.Grow(e.lines, n)
}

// lastLine returns the last line a node of the tree n is on.
func lastLine(n *yaml.Node) int {
	last := n.Line
	for _, c := range n.Content {
		last = max(last, lastLine(c))
	}
	return last
}

// opened returns the expansion being recorded for the profile called
// name, starting one if there is none.
func (p *problems) opened(name string) *expansion {
	if p.open == nil || p.open.profile != name {
		p.beginExpansion(name, nil)
	}
	return p.open
}

// markProfile records, for each node of the profile entry n, the line it
// has in the profile called name, so that a problem found in it names the
// profile and its line (see [problems.origin]).
func (p *problems) markProfile(n *yaml.Node, name string) {
	e := p.opened(name)
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		e.nodes = append(e.nodes, n)
		e.lines = append(e.lines, int32(n.Line))
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
}

// markOverride records, for the node n of a tools entry that names the
// profile called name (a key the entry overrides, its value, a site
// value) and every node below it, that a problem found in it names the
// profile: the node is the file's, at the file's line, so the profile's
// name is all the message lacks.
func (p *problems) markOverride(n *yaml.Node, name string) {
	e := p.opened(name)
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		e.nodes = append(e.nodes, n)
		e.lines = append(e.lines, -1)
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
}

// find returns where n comes from, if e recorded it.
func (e *expansion) find(n *yaml.Node) (line int, ok bool) {
	for i, m := range e.nodes {
		if m == n {
			return int(e.lines[i]), true
		}
	}
	return 0, false
}

// origin returns the prefix naming the profile node n came from, or "".
// The expansion a problem was last found in is searched first, problems
// coming entry by entry; then those whose lines in the file hold n's
// (the entries are in the file's order), or, when one's lines are not
// known, every one.
func (p *problems) origin(n *yaml.Node) string {
	if n == nil || len(p.expansions) == 0 {
		return ""
	}
	try := func(i int) (string, bool) {
		e := p.expansions[i]
		line, ok := e.find(n)
		switch {
		case !ok:
			return "", false
		case line < 0:
			p.hint = i
			return fmt.Sprintf("profile %s: ", quote(e.profile)), true
		}
		p.hint = i
		return fmt.Sprintf("in profile %s, line %d: ", quote(e.profile), line), true
	}
	if p.hint < len(p.expansions) {
		if o, ok := try(p.hint); ok {
			return o
		}
	}
	if p.unranged {
		for i := range p.expansions {
			if o, ok := try(i); ok {
				return o
			}
		}
		return ""
	}
	i := sort.Search(len(p.expansions), func(i int) bool { return p.expansions[i].last >= n.Line })
	for ; i < len(p.expansions) && p.expansions[i].first <= n.Line; i++ {
		if o, ok := try(i); ok {
			return o
		}
	}
	return ""
}

func isSiteKey(key string) bool {
	_, ok := siteKeyNamed(key)
	return ok
}

func siteKeyNames() string {
	names := make([]string, len(siteKeys))
	for i, k := range siteKeys {
		names[i] = k.name
	}
	return strings.Join(names, ", ")
}
