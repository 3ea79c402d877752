package config

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/execgate/execgate/profiles"
)

// profileOverrides are the keys a tools entry that names a profile may set
// besides profile: what differs from site to site. Everything else (the
// grammar, the environment, the confinement) is the profile's.
var profileOverrides = []string{"name", "bin", "sha256", "working_dir", "timeout", "no_output_timeout", "max_output", "policy_version"}

// hasKey reports whether the mapping n holds key.
func hasKey(n *yaml.Node, key string) bool {
	if n == nil || n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}

// fromProfile returns the tools entry n (which holds a profile key)
// expanded: the named profile's entry with the overrides n sets, its
// working_dir (the loading process's working directory when n sets none)
// made explicit and added to the profile's confine read paths. Problems
// are recorded against n's keys; the result is nil when the entry cannot
// be expanded.
//
// When an entry before n in this load expands alike (the same
// expansionKey: alike but perhaps for its name and the working_dir it
// sets) and was decoded without a problem, n is not expanded:
// that entry is returned instead, and the caller decodes n as a copy of
// it (see cloneTool).
func (d *decoder) fromProfile(n *yaml.Node, path string) (entry *yaml.Node, src *toolSource) {
	d.profileKey = d.profileKey[:0]
	var name string
	var overrides []*yaml.Node // key, value pairs
	var site []*yaml.Node      // key, value pairs of site values
	if v := mapValue(n, "profile"); v != nil && v.Kind == yaml.ScalarNode {
		name = v.Value
	}
	ok := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kp := keyPath(path, k.Value)
		// The entry's own nodes are read as strictly as any of the
		// file's: no anchor, alias or tag on a key or a value, and no
		// key written twice.
		if !d.usableTree(k, path) || !d.usableTree(v, kp) {
			ok = false
			continue
		}
		if first := firstKey(n, i, k.Value, nil); first != nil {
			d.add(k, kp, "duplicate key (first at line %d)", first.Line)
			ok = false
			continue
		}
		switch {
		case k.Value == "profile":
			if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
				d.add(v, kp, "must be a profile's name, one of %s", strings.Join(profiles.Names(), ", "))
				ok = false
				continue
			}
		case contains(profileOverrides, k.Value):
			overrides = append(overrides, k, v)
		case isSiteKey(k.Value):
			site = append(site, k, v)
		default:
			d.add(k, kp, "profile %s sets %s; an entry naming a profile may set only %s, and the site values its profile marks (%s)", quote(name), quote(k.Value), strings.Join(profileOverrides, ", "), siteKeyNames())
			ok = false
		}
	}
	if !ok {
		return nil, nil
	}
	pn := keyPath(path, "profile")
	info, found := profileInfoOf(name)
	if !found {
		d.add(profileValue(n), pn, "no profile %s; the profiles are %s", quote(name), strings.Join(profiles.Names(), ", "))
		return nil, nil
	}
	if info.bad {
		d.add(profileValue(n), pn, "profile %s does not parse as a tools entry", quote(name))
		return nil, nil
	}
	d.beginExpansion(name, n)
	// The entry's own keys are the file's, at the file's lines: a problem
	// found in one of them names the profile they override.
	for i := 0; i+1 < len(overrides); i += 2 {
		d.markOverride(overrides[i], name)
		d.markOverride(overrides[i+1], name)
	}
	for i := 1; i < len(site); i += 2 {
		d.markOverride(site[i], name)
	}
	vals, ok := d.siteValues(name, info.marks, site, n, path)
	if !ok {
		return nil, nil
	}
	// The bin and working_dir the expanded entry ends with, when the
	// entry sets neither: the profile's program under the name it is
	// installed as here, and the working directory at load time.
	var bin, dir string
	if info.hasBin && !hasKey(n, "bin") {
		bin = d.installedName(name, info.bin)
	}
	dir = info.dir
	if !info.hasDir && !hasKey(n, "working_dir") {
		wd, err := d.workingDir()
		if err != nil {
			d.add(profileValue(n), pn, "profile %s: the working directory: %v (set working_dir)", quote(name), err)
			return nil, nil
		}
		dir = wd
	}
	// An entry whose working_dir is refused is found alike no other: it
	// stops the load, checked in full.
	if wd := mapValue(n, "working_dir"); wd == nil || wd.Kind == yaml.ScalarNode && wd.Tag == "!!str" && workingDirProblem(wd.Value) == "" {
		d.profileKey = expansionKey(d.profileKey, name, overrides, site, bin, dir)
		if src := d.sources[string(d.profileKey)]; src != nil {
			return nil, src
		}
	}

	entry = info.entry()
	fillSite(entry, vals)
	// Report the profile's own nodes at the profile key, naming the
	// profile and the line they have in it.
	d.open.grow(info.nodes)
	d.markProfile(entry, name)
	place(entry, profileValue(n))
	for i := 0; i+1 < len(overrides); i += 2 {
		setKey(entry, overrides[i], overrides[i+1])
	}
	if v := mapValue(entry, "bin"); v != nil && v.Kind == yaml.ScalarNode && !hasKey(n, "bin") {
		v.Value = bin
	}
	wd := mapValue(entry, "working_dir")
	if wd == nil {
		wd = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: dir, Line: n.Line, Column: n.Column}
		setKey(entry, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "working_dir", Line: n.Line, Column: n.Column}, wd)
	}
	// A working_dir the tool's checks refuse is reported there, once: it
	// is not also made a read path of the confinement, which would report
	// it again under a key the file never wrote.
	if wd.Kind == yaml.ScalarNode && wd.Tag == "!!str" && workingDirProblem(wd.Value) == "" {
		readWorkingDir(entry, wd)
	}
	return entry, nil
}

// usableTree is usable for n and every node below it.
func (d *decoder) usableTree(n *yaml.Node, path string) bool {
	if !d.usable(n, path) {
		return false
	}
	for _, c := range n.Content {
		if !d.usableTree(c, path) {
			return false
		}
	}
	return true
}

// installedName is installedName for the profile called name, whose
// program is bin, found once per load.
func (d *decoder) installedName(name, bin string) string {
	if v, ok := d.bins[name]; ok {
		return v
	}
	v := installedName(name, bin)
	if d.bins == nil {
		d.bins = make(map[string]string)
	}
	d.bins[name] = v
	return v
}

// workingDir is os.Getwd, called once per load.
func (d *decoder) workingDir() (string, error) {
	if !d.wdRead {
		d.wd, d.wdErr = os.Getwd()
		d.wdRead = true
	}
	return d.wd, d.wdErr
}

// expansionKey appends to b what the expansion of an entry naming the
// profile called name depends on, but for its name and the working_dir
// it sets, and returns it: the profile's name; the nodes of the
// overrides and of the site values the entry sets, in its order, but for
// the values of name and working_dir (their keys are kept); and the bin
// and working_dir the expanded entry ends with when the entry sets
// neither (a program's name found on PATH, the working directory at load
// time; "" when it sets them). Two entries with the same key expand to
// entries alike but for their names and working directories, which only
// go in the entry's fields and its confine read paths, where cloneTool
// and copyTool put them; the key finds them without expanding them, and
// says nothing of where their nodes are.
func expansionKey(b []byte, name string, overrides, site []*yaml.Node, bin, dir string) []byte {
	b = appendKeyString(b, name)
	for i := 0; i+1 < len(overrides); i += 2 {
		b = appendKeyNode(b, overrides[i])
		if k := overrides[i].Value; k != "name" && k != "working_dir" {
			b = appendKeyNode(b, overrides[i+1])
		}
	}
	b = append(b, 0xff) // the overrides end, the site values begin
	for _, n := range site {
		b = appendKeyNode(b, n)
	}
	b = append(b, 0xff)
	b = appendKeyString(b, bin)
	return appendKeyString(b, dir)
}

// appendKeyString appends s to b, its length first.
func appendKeyString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendKeyNode appends to b what sameEntry compares of the tree n.
func appendKeyNode(b []byte, n *yaml.Node) []byte {
	b = binary.AppendUvarint(b, uint64(n.Kind))
	b = binary.AppendUvarint(b, uint64(n.Style&yaml.TaggedStyle))
	b = appendKeyString(b, n.Tag)
	b = appendKeyString(b, n.Anchor)
	b = appendKeyString(b, n.Value)
	b = binary.AppendUvarint(b, uint64(len(n.Content)))
	for _, c := range n.Content {
		b = appendKeyNode(b, c)
	}
	return b
}

// parsedProfiles holds what is known of each profile, found once: the
// profiles are embedded and never change, and a configuration may name
// the same one thousands of times. Each expansion gets its own copy of
// the nodes (which fromProfile changes); the strings, which nothing
// changes, are shared.
var parsedProfiles sync.Map // profile name -> *profileInfo

// profileInfo is a profile's entry as parsed, and what fromProfile needs
// of it before it expands it.
type profileInfo struct {
	name string
	bad  bool        // the profile does not parse as a tools entry
	tree profileTree // root is nil when the entry holds an alias: it is parsed at each use

	marks    []string // the site values it marks (see siteMarks)
	bin, dir string   // its bin and working_dir
	hasBin   bool     // bin is a string
	hasDir   bool     // it sets working_dir
	nodes    int      // the nodes of its tree (see expansion.grow)
}

// profileTree is a profile's entry as parsed, with the number of its
// nodes and of their children, so that a copy takes two allocations.
type profileTree struct {
	root           *yaml.Node
	nodes, content int
}

// profileInfoOf returns what is known of the profile called name, and
// whether there is such a profile.
func profileInfoOf(name string) (*profileInfo, bool) {
	if v, ok := parsedProfiles.Load(name); ok {
		return v.(*profileInfo), true
	}
	entry, found := parseProfile(name)
	if !found {
		return nil, false
	}
	info := &profileInfo{name: name, bad: entry == nil}
	if entry != nil {
		info.marks = siteMarks(entry)
		if v := mapValue(entry, "bin"); v != nil && v.Kind == yaml.ScalarNode {
			info.bin, info.hasBin = v.Value, true
		}
		if v := mapValue(entry, "working_dir"); v != nil {
			info.hasDir = true
			if v.Kind == yaml.ScalarNode {
				info.dir = v.Value
			}
		}
		info.tree.count(entry)
		info.nodes = info.tree.nodes
		if !hasAlias(entry) {
			// An alias shares its anchor's node, which a copy would not.
			info.tree.root = entry
		}
	}
	v, _ := parsedProfiles.LoadOrStore(name, info)
	return v.(*profileInfo), true
}

// parseProfile returns the tools entry the profile called name holds, as
// new nodes, and whether there is such a profile; the entry is nil when
// the profile does not parse as one.
func parseProfile(name string) (*yaml.Node, bool) {
	data, found := profiles.Lookup(name)
	if !found {
		return nil, false
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, true
	}
	return doc.Content[0], true
}

// entry returns the profile's entry as nodes of the caller's own.
func (pi *profileInfo) entry() *yaml.Node {
	if pi.tree.root == nil {
		entry, _ := parseProfile(pi.name)
		return entry
	}
	return pi.tree.copy()
}

// count adds n and the nodes below it to t's counts.
func (t *profileTree) count(n *yaml.Node) {
	t.nodes++
	t.content += len(n.Content)
	for _, c := range n.Content {
		t.count(c)
	}
}

// copy returns a copy of t's tree, which holds no alias: new nodes, the
// same strings. The nodes are one array and their children's lists one
// other, each list cut to its length, so that appending to one (setKey,
// readDir) moves it rather than overwriting its neighbour.
func (t *profileTree) copy() *yaml.Node {
	nodes := make([]yaml.Node, 0, t.nodes)
	content := make([]*yaml.Node, 0, t.content)
	var cp func(n *yaml.Node) *yaml.Node
	cp = func(n *yaml.Node) *yaml.Node {
		nodes = append(nodes, *n)
		c := &nodes[len(nodes)-1]
		if n.Content != nil {
			start, end := len(content), len(content)+len(n.Content)
			content = content[:end]
			c.Content = content[start:end:end]
			for i, k := range n.Content {
				c.Content[i] = cp(k)
			}
		}
		return c
	}
	return cp(t.root)
}

// hasAlias reports whether the tree n holds an alias.
func hasAlias(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode || n.Alias != nil {
		return true
	}
	for _, c := range n.Content {
		if hasAlias(c) {
			return true
		}
	}
	return false
}

// workingDirProblem says why w cannot be a tool's working_dir, or "".
func workingDirProblem(w string) string {
	if !filepath.IsAbs(w) || strings.IndexByte(w, 0) >= 0 {
		return "must be an absolute path without NUL (leave it out for the working directory at load time)"
	}
	return ""
}

// readWorkingDir adds the working directory dir to the read paths of
// every confine of the tools entry: the tool's, and a command's or the
// bare entry's own, which replaces the tool's whole.
func readWorkingDir(entry, dir *yaml.Node) {
	readDir(mapValue(entry, "confine"), dir)
	readDir(mapValue(mapValue(entry, "bare"), "confine"), dir)
	if cmds := mapValue(entry, "commands"); cmds != nil && cmds.Kind == yaml.MappingNode {
		for i := 1; i < len(cmds.Content); i += 2 {
			readDir(mapValue(cmds.Content[i], "confine"), dir)
		}
	}
}

// readDir adds the working directory dir to the read paths of the confine
// mapping c, if c is one.
func readDir(c, dir *yaml.Node) {
	if c == nil || c.Kind != yaml.MappingNode {
		return
	}
	read := mapValue(c, "read")
	if read == nil {
		read = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: c.Line, Column: c.Column}
		setKey(c, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "read", Line: c.Line, Column: c.Column}, read)
	}
	if read.Kind == yaml.SequenceNode {
		read.Content = append([]*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: dir.Value, Line: dir.Line, Column: dir.Column}}, read.Content...)
	}
}

// installedName returns the name the profile's program bin is installed
// under here: bin when it is on PATH or no other name is, else the first
// of the profile's other names that is (fd's fdfind).
func installedName(profile, bin string) string {
	if _, err := exec.LookPath(bin); err == nil {
		return bin
	}
	for _, alt := range profiles.Programs(profile) {
		if _, err := exec.LookPath(alt); err == nil && alt != bin {
			return alt
		}
	}
	return bin
}

// profileValue is the value node of n's profile key.
func profileValue(n *yaml.Node) *yaml.Node {
	if v := mapValue(n, "profile"); v != nil {
		return v
	}
	return n
}

// mapValue returns the value of key in the mapping n, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// setKey replaces the value of k's key in the mapping n, or appends k: v.
func setKey(n, k, v *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == k.Value {
			n.Content[i], n.Content[i+1] = k, v
			return
		}
	}
	n.Content = append(n.Content, k, v)
}

// place gives n and every node below it at's line and column.
func place(n, at *yaml.Node) {
	n.Line, n.Column = at.Line, at.Column
	for _, c := range n.Content {
		place(c, at)
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
