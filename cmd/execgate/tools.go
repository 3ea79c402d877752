package main

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/internal/inputrules"
	"github.com/execgate/execgate/mcpserver"
)

// toolInfo describes one tool in GET /v1/tools and execgate tools.
type toolInfo struct {
	// Name is the spec's name: the name to call, which the policy and
	// the audit trail see.
	Name string `json:"name"`
	// MCPName is the name the tool is listed under over MCP: the
	// client-safe mcpserver.ToolName of Name ("git_log" for "git.log"),
	// or Name itself with --logical-names. The HTTP API takes it too.
	MCPName string `json:"mcp_name"`
	// Description is the tool's description, as tools/list gives it: the
	// spec's, and for a dispatcher a sentence on its "subcommand".
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema of the input the tool accepts, as
	// tools/list gives it: for a dispatcher, with its required
	// "subcommand".
	InputSchema json.RawMessage `json:"input_schema"`
	// Dispatch marks a dispatcher: it is called by its name with the
	// subcommand in the input's "subcommand" (see "Dispatchers" in the
	// package documentation), and its DefaultAction applies.
	Dispatch bool `json:"dispatch,omitempty"`
	// CallAs is the command name each call of a dispatcher is checked
	// and decided as ("git.<subcommand>"), which POST /v1/tools/{name}
	// takes too, with the input without "subcommand".
	CallAs string `json:"call_as,omitempty"`
	// DefaultAction is a dispatcher's floor: allow, require_approval or
	// deny.
	DefaultAction string `json:"default_action,omitempty"`
	// Annotations are the spec's hints, which nothing enforces.
	Annotations *annotations `json:"annotations,omitempty"`
}

// annotations are a spec's Hints as JSON; an unset hint is left out.
type annotations struct {
	ReadOnly    *bool `json:"read_only,omitempty"`
	Destructive *bool `json:"destructive,omitempty"`
	Idempotent  *bool `json:"idempotent,omitempty"`
	OpenWorld   *bool `json:"open_world,omitempty"`
}

// toolList is the body of GET /v1/tools and the output of execgate tools.
type toolList struct {
	Tools []toolInfo `json:"tools"`
}

// listTools describes every spec of a, sorted by name, with the name
// each is listed under over MCP: its logical name with logicalNames, and
// else mcpserver.ToolName of it. A nil a lists nothing.
func listTools(a *execgate.Allowlist, logicalNames bool) toolList {
	return listShown(a, logicalNames, nil)
}

// listShown describes the specs of a that shown reports true for, as
// listTools does; a nil shown lists every spec.
func listShown(a *execgate.Allowlist, logicalNames bool, shown func(execgate.CommandSpec) bool) toolList {
	out := toolList{Tools: []toolInfo{}}
	if a == nil {
		return out
	}
	for _, s := range a.Specs() {
		if shown != nil && !shown(s) {
			continue
		}
		t := toolInfo{Name: s.Name, MCPName: mcpName(s.Name, logicalNames)}
		t.Description, t.InputSchema = describe(s, t.MCPName)
		if s.Dispatch {
			t.Dispatch = true
			t.CallAs = s.Name + ".<subcommand>"
			t.DefaultAction = s.Floor
		}
		if h := s.Hints; h.ReadOnly != nil || h.Destructive != nil || h.Idempotent != nil || h.OpenWorld != nil {
			t.Annotations = &annotations{ReadOnly: h.ReadOnly, Destructive: h.Destructive, Idempotent: h.Idempotent, OpenWorld: h.OpenWorld}
		}
		out.Tools = append(out.Tools, t)
	}
	return out
}

// describe returns the description and input schema of the tool of s,
// listed as listed over MCP, as tools/list gives them
// (mcpserver.ToolOf). A spec whose schema cannot be listed over MCP
// (serve then refuses to start) is described by its own description and
// schema, or an empty object schema if that is not valid JSON, so that
// one bad schema cannot break the listing.
func describe(s execgate.CommandSpec, listed string) (string, json.RawMessage) {
	if def, err := mcpserver.ToolOf(s, listed); err == nil {
		if raw, ok := def.InputSchema.(json.RawMessage); ok {
			return def.Description, raw
		}
	}
	raw := s.Args.JSONSchema()
	if !json.Valid(raw) {
		raw = json.RawMessage(`{"type":"object"}`)
	}
	return s.Description, raw
}

// mcpName is the name the spec name is listed under over MCP.
func mcpName(name string, logicalNames bool) string {
	if logicalNames {
		return name
	}
	return mcpserver.ToolName(name)
}

// callNames finds what a name of POST /v1/tools/{name} asks for: a
// command, or a dispatcher called with its subcommand in the body, as
// over MCP. The HTTP API takes a command's own name ("git.log",
// "terraform.apply"), a dispatcher's ("terraform"), and the spelling of
// MCP tool names: a spec's mcpserver.ToolName ("git_log", or "cloud_tf"
// for the dispatcher "cloud.tf"), or a dispatcher's ToolName, '_' and a
// subcommand ("terraform_apply"). It keeps an index of the allowlist it
// last saw, and is safe for concurrent use.
type callNames struct {
	mu  sync.Mutex
	idx *nameIndex
}

// nameIndex holds the logical names of an allowlist's specs by the MCP
// spelling of their names, and its dispatchers by name.
type nameIndex struct {
	a           *execgate.Allowlist
	specs       map[string][]string             // the specs, dispatchers included, by ToolName
	dispatchers map[string][]string             // the dispatchers, by ToolName
	dispatcher  map[string]execgate.CommandSpec // the dispatchers, by name
}

// resolve returns the command name or dispatcher that name asks for in
// a, and whether it is a dispatcher: name itself when a serves it
// (Allowlist.Lookup) or has a dispatcher of that name, else the one spec
// or command whose MCP spelling it is, else name, which the gate then
// refuses as not allowlisted. When name is the MCP spelling of two, it
// returns both, sorted, and the caller refuses it as ambiguous.
func (c *callNames) resolve(a *execgate.Allowlist, name string) (string, bool, []string) {
	if _, ok := a.Lookup(name); ok {
		return name, false, nil
	}
	idx := c.index(a)
	if _, ok := idx.dispatcher[name]; ok {
		return name, true, nil
	}
	found := slices.Clone(idx.specs[name])
	if i := strings.LastIndexByte(name, '_'); i > 0 && inputrules.ValidSubcommand(name[i+1:]) {
		for _, d := range idx.dispatchers[name[:i]] {
			found = append(found, d+"."+name[i+1:])
		}
	}
	slices.Sort(found)
	found = slices.Compact(found)
	switch len(found) {
	case 0:
		return name, false, nil
	case 1:
		_, disp := idx.dispatcher[found[0]]
		return found[0], disp, nil
	}
	return "", false, found
}

// dispatcherSpec returns the dispatcher of a named name, if a has one.
func (c *callNames) dispatcherSpec(a *execgate.Allowlist, name string) (execgate.CommandSpec, bool) {
	spec, ok := c.index(a).dispatcher[name]
	return spec, ok
}

// index returns the index of a, built once for each allowlist in force.
func (c *callNames) index(a *execgate.Allowlist) *nameIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idx != nil && c.idx.a == a {
		return c.idx
	}
	idx := &nameIndex{a: a, specs: map[string][]string{}, dispatchers: map[string][]string{}, dispatcher: map[string]execgate.CommandSpec{}}
	for _, s := range a.Specs() {
		n := mcpserver.ToolName(s.Name)
		idx.specs[n] = append(idx.specs[n], s.Name)
		if s.Dispatch {
			idx.dispatchers[n] = append(idx.dispatchers[n], s.Name)
			idx.dispatcher[s.Name] = s
		}
	}
	c.idx = idx
	return idx
}
