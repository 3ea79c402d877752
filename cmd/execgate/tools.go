package main

import (
	"encoding/json"

	"github.com/execgate/execgate"
)

// toolInfo describes one tool in GET /v1/tools and execgate tools.
type toolInfo struct {
	// Name is the spec's name: the name to call.
	Name string `json:"name"`
	// Description is the spec's description.
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema of the input the tool accepts.
	InputSchema json.RawMessage `json:"input_schema"`
	// Dispatch marks a dispatcher: it is called as "<name>.<subcommand>",
	// never as "<name>" alone, and its DefaultAction applies.
	Dispatch bool `json:"dispatch,omitempty"`
	// CallAs is how a dispatcher is called ("git.<subcommand>").
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

// listTools describes every spec of a, sorted by name. A nil a lists
// nothing.
func listTools(a *execgate.Allowlist) toolList {
	out := toolList{Tools: []toolInfo{}}
	if a == nil {
		return out
	}
	for _, s := range a.Specs() {
		t := toolInfo{
			Name:        s.Name,
			Description: s.Description,
			InputSchema: schemaOf(s),
		}
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

// schemaOf returns the spec's input schema, or an empty object schema if
// it is not valid JSON, so that one bad schema cannot break the listing.
func schemaOf(s execgate.CommandSpec) json.RawMessage {
	raw := s.Args.JSONSchema()
	if !json.Valid(raw) {
		return json.RawMessage(`{"type":"object"}`)
	}
	return raw
}
