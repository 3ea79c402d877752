package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/internal/inputrules"
)

// SubcommandProperty is the input property that names the subcommand of a
// dispatcher tool. The server removes it from the arguments and calls the
// gate with the name "<tool>.<subcommand>".
const SubcommandProperty = "subcommand"

// tool is what a listed tool's handler needs to know about its spec.
type tool struct {
	name     string // the spec's logical name, which the gate sees
	listed   string // the name the tool is listed under (see ToolName)
	dispatch bool   // the spec is a dispatcher: the call names a subcommand

	spec execgate.CommandSpec // the spec, as Options.Visible is asked about it
	def  *mcp.Tool            // the tool as registered with the SDK
}

// ToolOf returns the tool a [Server] lists for spec under the name listed
// ([ToolName] of spec.Name, or the name itself with
// [Options.LogicalNames]): the spec's description, input schema and
// annotations, and for a dispatcher, whose call names its subcommand in
// the "subcommand" member ([SubcommandProperty]), the input schema with
// that member required and the description with a sentence on it. It
// returns an error if the spec's JSONSchema is not a JSON object of type
// "object", or a dispatcher's already has a "subcommand" property.
//
// The execgate binary's GET /v1/tools and execgate tools describe each
// tool with it, so that every surface describes a dispatcher alike.
func ToolOf(spec execgate.CommandSpec, listed string) (*mcp.Tool, error) {
	schema, err := inputSchema(spec)
	if err != nil {
		return nil, err
	}
	desc := spec.Description
	if spec.Dispatch {
		if desc != "" {
			desc += "\n\n"
		}
		desc += fmt.Sprintf("Set %q to the subcommand to run (it must match %s); the call is checked and decided as the command %q.",
			SubcommandProperty, inputrules.SubcommandPattern, spec.Name+".<subcommand>")
	}
	return &mcp.Tool{
		Name:        listed,
		Description: desc,
		InputSchema: schema,
		Annotations: annotations(spec.Hints),
	}, nil
}

// annotations turns a spec's Hints into MCP tool annotations. A spec that
// claims nothing gets none, so the client's defaults apply. MCP encodes
// readOnlyHint and idempotentHint as plain booleans whose default is false,
// so a nil ReadOnly or Idempotent is sent as false, which is that default;
// a nil Destructive or OpenWorld is omitted (MCP's default is true).
func annotations(h execgate.Hints) *mcp.ToolAnnotations {
	if h.ReadOnly == nil && h.Destructive == nil && h.Idempotent == nil && h.OpenWorld == nil {
		return nil
	}
	a := &mcp.ToolAnnotations{
		DestructiveHint: cloneBool(h.Destructive),
		OpenWorldHint:   cloneBool(h.OpenWorld),
	}
	if h.ReadOnly != nil {
		a.ReadOnlyHint = *h.ReadOnly
	}
	if h.Idempotent != nil {
		a.IdempotentHint = *h.Idempotent
	}
	return a
}

func cloneBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}

// inputSchema returns the tool's input schema: the spec's own JSONSchema,
// unchanged, or for a dispatcher that schema with a required "subcommand"
// string property added.
func inputSchema(spec execgate.CommandSpec) (json.RawMessage, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("mcpserver: spec %q: input schema: %s", spec.Name, fmt.Sprintf(format, args...))
	}
	raw := spec.Args.JSONSchema()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return nil, bad("not a JSON object")
	}
	var typ string
	if err := json.Unmarshal(top["type"], &typ); err != nil || typ != "object" {
		return nil, bad(`"type" must be "object"`)
	}
	if !spec.Dispatch {
		return bytes.Clone(raw), nil
	}
	props := map[string]json.RawMessage{}
	if p, ok := top["properties"]; ok {
		if err := json.Unmarshal(p, &props); err != nil || props == nil {
			return nil, bad(`"properties" is not an object`)
		}
	}
	if _, ok := props[SubcommandProperty]; ok {
		return nil, bad("a dispatcher's schema already has a %q property", SubcommandProperty)
	}
	sub, err := json.Marshal(map[string]any{
		"type":        "string",
		"pattern":     inputrules.SubcommandPattern,
		"minLength":   1,
		"maxLength":   inputrules.MaxSubcommandBytes,
		"description": fmt.Sprintf("The subcommand to run: the call is decided as %q.", spec.Name+".<subcommand>"),
	})
	if err != nil {
		return nil, err
	}
	props[SubcommandProperty] = sub
	var required []string
	if r, ok := top["required"]; ok {
		if err := json.Unmarshal(r, &required); err != nil {
			return nil, bad(`"required" is not an array of strings`)
		}
	}
	if !slices.Contains(required, SubcommandProperty) {
		required = append(required, SubcommandProperty)
	}
	if top["properties"], err = json.Marshal(props); err != nil {
		return nil, err
	}
	if top["required"], err = json.Marshal(required); err != nil {
		return nil, err
	}
	return json.Marshal(top)
}

// probeTools registers defs on a throwaway MCP server, so that a tool the
// SDK refuses (it panics on some schemas) is reported as an error before
// the real server is touched.
func probeTools(defs []*mcp.Tool) (err error) {
	probe := mcp.NewServer(&mcp.Implementation{Name: "probe"}, nil)
	var name string
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("mcpserver: tool %q cannot be listed: %v", name, r)
		}
	}()
	for _, def := range defs {
		name = def.Name
		probe.AddTool(def, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
	}
	return nil
}
