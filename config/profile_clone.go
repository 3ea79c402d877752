package config

import (
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// An entry naming a profile with the same site values and overrides as
// an entry before it, but for its name and working directory, expands to
// the same entry under another name, in another directory: a site that
// serves many copies of a few profiles (one per repository, say) loads
// the same expansion thousands of times. Such an entry is not expanded
// and decoded again. Its toolDoc is a copy of the first one's (which was
// decoded without a problem), sharing every document below it, which
// nothing changes once decoded, with the entry's own overrides decoded
// from its own nodes and its working directory put where the first's
// was. Its specs are the first one's, renamed and moved to its directory,
// when the first built without a problem (see copyTool); else they are
// built from it as from any entry.
//
// What such a copy shares is the first entry's, down to the nodes and
// key paths its problems would name. So that a problem found in it while
// building it, placing an error of the Allowlist, checking its examples
// or warning about it is reported at the copy's own entry, the copy
// carries a relocation, which problems.at applies.

// toolSource is a tools entry naming a profile, decoded without a
// problem, that later entries expanding alike are copies of.
type toolSource struct {
	doc  *toolDoc
	file *yaml.Node // the entry as the file wrote it
}

// cloneTool returns the toolDoc of the tools entry n at path, which
// names a profile and expands as src did but perhaps for its name and
// working_dir: a copy of src's, with n's own overrides, and its working
// directory where src's was put in confine read paths.
func (d *decoder) cloneTool(src *toolSource, n *yaml.Node, path string) *toolDoc {
	first := src.doc
	t := new(toolDoc)
	*t = *first
	t.path = path
	root := *first.node
	at := profileValue(n)
	root.Line, root.Column = at.Line, at.Column
	t.node = &root
	t.reloc = &relocation{first: src.file, firstPath: first.path, clone: n, clonePath: path}
	t.buildKey = string(d.profileKey)
	t.alike, d.cur.first = d.alikeExpansion(t.node, d.profileKey)
	// The overrides are the keys of the entry's own that the toolDoc
	// holds, each in the tool's own fields: the first one's nodes are
	// replaced by the copy's, so that its name is its own, and a problem
	// found in one is found at its own line.
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !contains(profileOverrides, k.Value) {
			continue
		}
		kp := keyPath(path, k.Value)
		if isNull(v) {
			// Decoded in full, the key is present and its value not set.
			clearOverride(t, k.Value)
			d.add(v, kp, "has no value; give one or remove the key")
			continue
		}
		h, _ := d.toolField(t, k.Value)
		h(k, v, kp)
	}
	if t.workingDir.v != first.workingDir.v {
		// fromProfile put the working directory first in the read
		// paths of every confine of the entry (see readWorkingDir).
		read := val[string]{v: t.workingDir.v, set: true, node: t.workingDir.node}
		t.confine = t.confine.withRead(read)
		if t.bare != nil && t.bare.confine != nil {
			c := *t.bare
			c.confine = c.confine.withRead(read)
			t.bare = &c
		}
		copied := false
		for i, c := range t.commands {
			if c.confine == nil {
				continue
			}
			if !copied {
				t.commands, copied = slices.Clone(t.commands), true
			}
			cc := *c
			cc.confine = c.confine.withRead(read)
			t.commands[i] = &cc
		}
	}
	return t
}

// withRead returns a copy of c whose first read path, the working
// directory readWorkingDir put there, is dir; nil stays nil.
func (c *confineDoc) withRead(dir val[string]) *confineDoc {
	if c == nil || len(c.read) == 0 {
		return c
	}
	cc := *c
	dir.path = c.read[0].path
	cc.read = append([]val[string]{dir}, c.read[1:]...)
	return &cc
}

// relocation maps where a problem found in a copy of an earlier tools
// entry is (see cloneTool), from the first entry's nodes and key paths,
// which the copy shares, to the copy's own.
type relocation struct {
	first, clone         *yaml.Node // the two entries as the file wrote them
	firstPath, clonePath string
}

// apply returns line, col and path moved from the first entry to the
// copy: a key path below the first entry's is put below the copy's; a
// node of the first entry's own, or the entry itself, is the copy's node
// of the same key and place, or the copy; a node of the profile, placed
// at the first entry's profile key, is at the copy's profile key.
func (r *relocation) apply(line, col int, path string) (int, int, string) {
	if rest, ok := strings.CutPrefix(path, r.firstPath); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
		path = r.clonePath + rest
	}
	if line == 0 {
		return line, col, path
	}
	if n := twin(r.first, r.clone, line, col); n != nil {
		return n.Line, n.Column, path
	}
	// The nodes fromProfile made for the first entry are placed at its
	// profile key (the profile's, see place) or at the entry itself (a
	// working_dir it did not set, see fromProfile). Any other place is
	// one of the copy's own nodes, which is where it belongs.
	if at := profileValue(r.first); line == at.Line && col == at.Column {
		at := profileValue(r.clone)
		return at.Line, at.Column, path
	}
	return line, col, path
}

// position is apply for a position.
func (r *relocation) position(p position) position {
	if r == nil {
		return p
	}
	p.line, p.col, p.path = r.apply(p.line, p.col, p.path)
	return p
}

// twin returns the node of the tree b at the place the node of the tree
// a at line and col has in a, or nil when a has none there or b has no
// such place. Mappings are matched key by key, lists item by item.
func twin(a, b *yaml.Node, line, col int) *yaml.Node {
	if a.Line == line && a.Column == col {
		return b
	}
	switch {
	case a.Kind == yaml.MappingNode && b.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(a.Content); i += 2 {
			k, v := a.Content[i], a.Content[i+1]
			bk, bv := mapKey(b, k.Value)
			if bk == nil {
				continue
			}
			if k.Line == line && k.Column == col {
				return bk
			}
			if m := twin(v, bv, line, col); m != nil {
				return m
			}
		}
	case len(a.Content) == len(b.Content):
		for i, c := range a.Content {
			if m := twin(c, b.Content[i], line, col); m != nil {
				return m
			}
		}
	}
	return nil
}

// mapKey returns the key and value nodes of key in the mapping n, or nils.
func mapKey(n *yaml.Node, key string) (k, v *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}

// clearOverride leaves the override key of the toolDoc t unset, as a
// full decode leaves a key whose value is null.
func clearOverride(t *toolDoc, key string) {
	switch key {
	case "name":
		t.name = val[string]{}
	case "bin":
		t.bin = val[string]{}
	case "sha256":
		t.sha256 = val[string]{}
	case "working_dir":
		t.workingDir = val[string]{}
	case "policy_version":
		t.policyVersion = val[string]{}
	case "timeout":
		t.timeout = val[time.Duration]{}
	case "no_output_timeout":
		t.noOutputTimeout = val[time.Duration]{}
	case "max_output":
		t.maxOutput = val[int]{}
	}
}
