package config

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/execgate/execgate"
)

// This file decodes and checks the confine key of a tool or a command
// entry, which becomes the spec's execgate.Confinement.

// maxLimitBytes is the largest memory or file_size limit: sizes there may
// exceed the 2GiB of max_output and stdin (a Go program needs more than
// 1GiB of address space just to start).
const maxLimitBytes = math.MaxInt64

// confineDoc is the raw value of a confine key.
type confineDoc struct {
	key  *yaml.Node // the confine key
	node *yaml.Node // its value
	path string
	ok   bool // node is a mapping

	read, write, exec             []val[string]
	readNode, writeNode, execNode *yaml.Node
	readPath, writePath, execPath string
	network, require, unixSockets val[bool]
	egress                        *egressDoc // network's host lists; nil when it is a boolean or absent

	limitsNode       *yaml.Node // nil when the key is absent
	limitsPath       string
	cpu              val[time.Duration]
	memory, fileSize val[int64]
	files, processes val[int64]
}

// confine decodes the value of a confine key.
func (d *decoder) confine(k, n *yaml.Node, path string) *confineDoc {
	c := &confineDoc{key: k, node: n, path: path, ok: n.Kind == yaml.MappingNode}
	paths := func(dst *[]val[string], node **yaml.Node, p *string) handler {
		return func(k, v *yaml.Node, vp string) {
			*node, *p = v, vp
			d.strings(dst)(k, v, vp)
		}
	}
	d.mapping(n, path, fields{handlers: map[string]handler{
		"read":         paths(&c.read, &c.readNode, &c.readPath),
		"write":        paths(&c.write, &c.writeNode, &c.writePath),
		"exec":         paths(&c.exec, &c.execNode, &c.execPath),
		"network":      d.network(c),
		"unix_sockets": d.boolean(&c.unixSockets),
		"require":      d.boolean(&c.require),
		"limits": func(_, v *yaml.Node, lp string) {
			c.limitsNode, c.limitsPath = v, lp
			d.mapping(v, lp, fields{handlers: map[string]handler{
				"cpu":       d.duration(&c.cpu, false),
				"memory":    d.bigSize(&c.memory),
				"file_size": d.bigSize(&c.fileSize),
				"files":     d.integer(&c.files),
				"processes": d.integer(&c.processes),
			}})
		},
	}})
	return c
}

// egressDoc is the value of a confine's network key when it lists the
// hosts the command may reach: a list (the allow list), or a mapping of
// allow and deny lists.
type egressDoc struct {
	allow, deny         []val[string]
	allowNode, denyNode *yaml.Node // nil when the list is absent
	allowPath, denyPath string
}

// networkForms says what a network key may hold, for error messages.
const networkForms = "true, false, or the hosts the command may reach: a list of HOST:PORT entries such as [api.github.com:443], or a mapping {allow: [...], deny: [...]}"

// network decodes the network key of a confine mapping: true or false;
// a list of HOST:PORT entries, the egress allow list; or a mapping of
// allow and deny lists. A list or a mapping means Network false with an
// execgate.Egress.
func (d *decoder) network(c *confineDoc) handler {
	return func(_, v *yaml.Node, path string) {
		c.network = val[bool]{node: v, path: path}
		switch v.Kind {
		case yaml.SequenceNode:
			e := &egressDoc{allowNode: v, allowPath: path}
			e.allow = d.egressList(v, path)
			c.egress, c.network.set = e, true
		case yaml.MappingNode:
			e := &egressDoc{}
			d.mapping(v, path, fields{handlers: map[string]handler{
				"allow": func(_, lv *yaml.Node, lp string) {
					e.allowNode, e.allowPath = lv, lp
					e.allow = d.egressList(lv, lp)
				},
				"deny": func(_, lv *yaml.Node, lp string) {
					e.denyNode, e.denyPath = lv, lp
					e.deny = d.egressList(lv, lp)
				},
			}})
			c.egress, c.network.set = e, true
		default:
			var b bool
			if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" || v.Decode(&b) != nil {
				d.add(v, path, "must be %s, not %s", networkForms, describe(v))
				return
			}
			c.network.v, c.network.set = b, true
		}
	}
}

// egressList decodes a list of egress entries, checking each as
// execgate.NewAllowlist will, so that a bad one is reported on its own
// line. The entries refused are left out.
func (d *decoder) egressList(n *yaml.Node, path string) []val[string] {
	var out []val[string]
	d.list(n, path, func(_ int, e *yaml.Node, ep string) {
		if !d.scalar(e, ep, "a string", "!!str") {
			return
		}
		if msg := egressEntryProblem(e.Value); msg != "" {
			d.add(e, ep, "%s", msg)
			return
		}
		out = append(out, val[string]{v: e.Value, set: true, node: e, path: ep})
	})
	return out
}

// maxEgressEntryBytes is longer than any egress entry: "*.", a name of
// 253 bytes, ':' and a port range.
const maxEgressEntryBytes = 2 + 253 + 1 + 11

// egressEntryProblem says why s is not an egress entry, or "". Two
// mistakes get a message of their own: a URL, and an IPv6 address out of
// brackets, which the entry parser reads as a prefix or a name; and one
// longer than any entry is not repeated whole.
func egressEntryProblem(s string) string {
	switch {
	case len(s) > maxEgressEntryBytes:
		return fmt.Sprintf("%s is longer than any HOST:PORT entry (a host name has at most 253 bytes)", quote(s))
	case strings.Contains(s, "://"):
		return fmt.Sprintf("%s is a URL; write the host and port alone, HOST:PORT, such as api.github.com:443", quote(s))
	case !strings.HasPrefix(s, "[") && strings.Count(s, ":") > 1:
		return fmt.Sprintf("%s: an IPv6 address is written in brackets, such as [fd00::1]:443", quote(s))
	}
	if _, err := execgate.ParseEgressEntry(s); err != nil {
		return err.Error()
	}
	return ""
}

// bigSize decodes a byte count like size, up to maxLimitBytes.
func (d *decoder) bigSize(f *val[int64]) handler {
	return func(_, v *yaml.Node, path string) {
		*f = val[int64]{node: v, path: path}
		if !d.scalar(v, path, "a size such as 536870912 or 512MiB", "!!int", "!!str") {
			return
		}
		n, err := parseSizeMax(v.Value, maxLimitBytes)
		if err != nil {
			d.add(v, path, "%v", err)
			return
		}
		f.v, f.set = n, true
	}
}

// confinement checks c and returns the Confinement it declares, or nil
// when c is nil or not usable.
func (b *builder) confinement(c *confineDoc) *execgate.Confinement {
	if c == nil || !c.ok {
		return nil // absent, or not a mapping (already reported)
	}
	out := &execgate.Confinement{
		Network:     c.network.v,
		UnixSockets: c.unixSockets.v,
		BestEffort:  c.require.set && !c.require.v,
	}
	checkPaths := func(list []val[string]) []string {
		ps := make([]string, 0, len(list))
		for _, p := range list {
			switch {
			case !filepath.IsAbs(p.v):
				b.add(p.node, p.path, "%s is not an absolute path; confinement paths must start with /", quote(p.v))
			case strings.IndexByte(p.v, 0) >= 0:
				b.add(p.node, p.path, "must not contain NUL")
			default:
				ps = append(ps, p.v)
			}
		}
		return ps
	}
	if e := c.egress; e != nil {
		entries := func(list []val[string]) []string {
			out := make([]string, len(list))
			for i, s := range list {
				out[i] = s.v
			}
			return out
		}
		out.Network = false
		out.Egress = &execgate.Egress{Allow: entries(e.allow), Deny: entries(e.deny)}
	}
	out.Read = checkPaths(c.read)
	out.Write = checkPaths(c.write)
	out.Exec = checkPaths(c.exec)
	count := func(v val[int64]) int64 {
		if !v.set {
			return 0
		}
		if v.v <= 0 {
			msg := "must be more than zero; leave the key out for no limit"
			if v.v < 0 {
				msg = "must not be negative"
			}
			b.add(v.node, v.path, "%s", msg)
			return 0
		}
		return v.v
	}
	out.Limits = execgate.Limits{
		CPU:          c.cpu.v,
		AddressSpace: c.memory.v,
		FileSize:     c.fileSize.v,
		Files:        count(c.files),
		Processes:    count(c.processes),
	}
	return out
}

// confineFor returns the confine entry a spec's confinement came from:
// the command's own, else the tool's; nil when there is none.
func (o origin) confineFor() *confineDoc {
	if o.cmd != nil && o.cmd.confine != nil {
		return o.cmd.confine
	}
	return o.tool.confine
}

// placeConfine returns where, within the confine entry c, the
// execgate.ConfigError field (such as "Confine.Read" or
// "Confine.Limits.CPU", or "Confine.Egress.Allow" for the network key's
// allow list) is written.
func (c *confineDoc) placeConfine(field string) (*yaml.Node, string) {
	pick := func(n *yaml.Node, p string) (*yaml.Node, string) {
		if n != nil {
			return n, p
		}
		return c.key, c.path
	}
	switch field {
	case "Confine.Read":
		return pick(c.readNode, c.readPath)
	case "Confine.Write":
		return pick(c.writeNode, c.writePath)
	case "Confine.Exec":
		return pick(c.execNode, c.execPath)
	case "Confine.Limits.CPU":
		return pick(c.cpu.node, c.cpu.path)
	case "Confine.Limits.AddressSpace":
		return pick(c.memory.node, c.memory.path)
	case "Confine.Limits.FileSize":
		return pick(c.fileSize.node, c.fileSize.path)
	case "Confine.Limits.Files":
		return pick(c.files.node, c.files.path)
	case "Confine.Limits.Processes":
		return pick(c.processes.node, c.processes.path)
	case "Confine.Network", "Confine.Egress":
		return pick(c.network.node, c.network.path)
	case "Confine.Egress.Allow", "Confine.Egress.Deny":
		if e := c.egress; e != nil {
			if field == "Confine.Egress.Allow" && e.allowNode != nil {
				return e.allowNode, e.allowPath
			}
			if field == "Confine.Egress.Deny" && e.denyNode != nil {
				return e.denyNode, e.denyPath
			}
		}
		return pick(c.network.node, c.network.path)
	}
	if strings.HasPrefix(field, "Confine.Limits.") {
		return pick(c.limitsNode, c.limitsPath)
	}
	return c.key, c.path
}
