package execgate

import (
	"encoding/json"
	"fmt"
	"regexp/syntax"
	"strings"

	"github.com/execgate/execgate/internal/inputrules"
)

// flagsRefuseAllSchema is the JSON Schema of a misconfigured Flags schema,
// which accepts nothing.
var flagsRefuseAllSchema = json.RawMessage(`{"type":"object","not":{}}`)

// JSONSchema implements [ArgsSchema]. The bytes are computed once, on the
// first call, and the same bytes are returned to every later one.
func (s *flagsSchema) JSONSchema() json.RawMessage {
	if s.err != nil {
		return flagsRefuseAllSchema
	}
	s.schema.once.Do(func() { s.schema.raw = s.buildJSONSchema() })
	return s.schema.raw
}

// flagSchemaNode is one JSON Schema object. Its fields are written in this
// order, which keeps the bytes deterministic.
type flagSchemaNode struct {
	Type                 string                         `json:"type,omitempty"`
	Description          string                         `json:"description,omitempty"`
	Properties           *orderedProps[*flagSchemaNode] `json:"properties,omitempty"`
	PrefixItems          []*flagSchemaNode              `json:"prefixItems,omitempty"`
	Items                *flagSchemaNode                `json:"items,omitempty"`
	Enum                 []string                       `json:"enum,omitempty"`
	Pattern              string                         `json:"pattern,omitempty"`
	AllOf                []*flagSchemaNode              `json:"allOf,omitempty"`
	Minimum              *int64                         `json:"minimum,omitempty"`
	Maximum              *int64                         `json:"maximum,omitempty"`
	MinLength            *int                           `json:"minLength,omitempty"`
	MaxLength            *int                           `json:"maxLength,omitempty"`
	MinItems             *int                           `json:"minItems,omitempty"`
	MaxItems             *int                           `json:"maxItems,omitempty"`
	AdditionalProperties *bool                          `json:"additionalProperties,omitempty"`
}

// The patterns of the JSON Schema, generated from the rules they publish
// so that a schema never accepts a character the gate refuses. Each is
// written in the syntax RE2 and ECMA-262 with the u flag share (see
// inputrules.SchemaClass); the refused characters stand for themselves,
// and the schema's JSON carries them as \uXXXX escapes.
var (
	// flagTokenClass is every character checkArgText refuses, as a
	// character class body.
	flagTokenClass = inputrules.SchemaClass()
	// flagSchemaForbidden is every character plain text (string values,
	// positionals without a pattern) may not hold: those and the shell
	// metacharacters.
	flagSchemaForbidden = schemaClassOf(argShellMeta) + flagTokenClass
	// flagPlainSchemaPattern is what plainArgProblem and checkArgText
	// accept.
	flagPlainSchemaPattern = `^[^\-@` + flagSchemaForbidden + `][^` + flagSchemaForbidden + `]*$`
	// flagTokenSchemaPattern is what checkArgText accepts: a token in
	// "args", and the value of a pattern flag besides its pattern.
	flagTokenSchemaPattern = `^[^` + flagTokenClass + `]*$`
	// flagNoDashSchemaPattern refuses a leading '-', as the gate does for
	// a value passed as its own argument.
	flagNoDashSchemaPattern = `^(?:[^\-]|$)`
)

// schemaClassOf writes the characters of chars that no token may hold
// anyway as a character class body, with a backslash before each one
// that ECMA-262's u flag or RE2 reads as syntax.
func schemaClassOf(chars string) string {
	var b strings.Builder
	for _, r := range chars {
		if inputrules.Refused(r) {
			continue // in flagTokenClass
		}
		if strings.ContainsRune(`^$\.*+?()[]{}|/-`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (s *flagsSchema) buildJSONSchema() json.RawMessage {
	f := false
	maxArgs, maxBytes := MaxApprovalArgs, MaxApprovalArgBytes

	flagProps := &orderedProps[*flagSchemaNode]{}
	for _, r := range s.rules {
		flagProps.add(r.Name, r.jsonSchema())
	}
	top := &orderedProps[*flagSchemaNode]{}
	top.add("flags", &flagSchemaNode{
		Type:                 "object",
		Description:          `Flags by declared name. A boolean flag is true (add it) or false (leave it out); a value flag takes its value, which becomes its own argument.`,
		Properties:           flagProps,
		AdditionalProperties: &f,
	})
	top.add("args", &flagSchemaNode{
		Type:        "array",
		Description: s.argsDescription(),
		Items:       &flagSchemaNode{Type: "string", Pattern: flagTokenSchemaPattern, MaxLength: &maxBytes},
		MaxItems:    &maxArgs,
	})
	if s.stdinMax > 0 {
		top.add("stdin", &flagSchemaNode{
			Type:        "string",
			Description: fmt.Sprintf("Standard input for the command, at most %d bytes of UTF-8, without NUL.", s.stdinMax),
			MaxLength:   &s.stdinMax,
		})
	}
	root := &flagSchemaNode{
		Type:                 "object",
		Description:          `Arguments for the command, which runs without a shell. Give flags by name in "flags", or as command-line tokens in "args" together with the positional arguments.`,
		Properties:           top,
		AdditionalProperties: &f,
	}
	b, err := marshalSchema(root)
	if err != nil {
		// Only strings, integers and booleans are encoded.
		panic("execgate: encoding a flags JSON Schema: " + err.Error())
	}
	return b
}

// jsonSchema describes r's entry in the "flags" object.
func (r *flagRule) jsonSchema() *flagSchemaNode {
	if r.values != nil {
		return r.valuesSchema()
	}
	if r.Value == ValueNone {
		d := fmt.Sprintf("true adds %s; false leaves it out.", r.canon)
		if r.max > 1 {
			d += fmt.Sprintf(" It may appear up to %d times in all; repeat it in args.", r.max)
		}
		return &flagSchemaNode{Type: "boolean", Description: d}
	}
	one := r.valueSchema()
	desc := fmt.Sprintf("Emitted as %s VALUE.", r.canon)
	if r.Value == ValueInt {
		desc = fmt.Sprintf("Emitted as %s N.", r.canon)
	}
	if r.max == 1 {
		if one.Description != "" {
			desc += " " + one.Description
		}
		one.Description = desc
		return one
	}
	return &flagSchemaNode{
		Type:        "array",
		Description: desc + fmt.Sprintf(" Up to %d values in all, each emitted with the flag.", r.max),
		Items:       one,
		MaxItems:    &r.max,
	}
}

// valuesSchema describes the entry in "flags" of r, a flag of several
// values: an array of exactly its values, each described by its own
// schema, or an array of such arrays when r may be given more than once.
func (r *flagRule) valuesSchema() *flagSchemaNode {
	n := len(r.values)
	one := &flagSchemaNode{Type: "array", MinItems: &n, MaxItems: &n}
	var names []string
	for k, vr := range r.values {
		name := r.Values[k].Name
		names = append(names, strings.ToUpper(name))
		item := vr.valueSchema()
		// The gate refuses a value that starts with '-', and so does
		// the schema.
		if item.Type == "integer" {
			zero := int64(0)
			if item.Minimum == nil || *item.Minimum < 0 {
				item.Minimum = &zero
			}
		} else {
			item.AllOf = append(item.AllOf, &flagSchemaNode{Pattern: flagNoDashSchemaPattern})
		}
		d := fmt.Sprintf("Value %d, %s.", k+1, name)
		if item.Description != "" {
			d += " " + item.Description
		}
		item.Description = d
		one.PrefixItems = append(one.PrefixItems, item)
	}
	desc := fmt.Sprintf("Emitted as %s %s, each value its own argument and none starting with '-'.", r.canon, strings.Join(names, " "))
	if r.max == 1 {
		one.Description = desc + fmt.Sprintf(" An array of exactly %d values, in this order: %s.", n, strings.Join(names, ", "))
		return one
	}
	one.Description = fmt.Sprintf("One occurrence: exactly %d values, in this order: %s.", n, strings.Join(names, ", "))
	return &flagSchemaNode{
		Type:        "array",
		Description: desc + fmt.Sprintf(" Up to %d occurrences in all, each an array of its values.", r.max),
		Items:       one,
		MaxItems:    &r.max,
	}
}

// valueSchema describes one value of r.
func (r *flagRule) valueSchema() *flagSchemaNode {
	switch r.Value {
	case ValueInt:
		return &flagSchemaNode{Type: "integer", Minimum: r.Min, Maximum: r.Max}
	case ValueEnum:
		return &flagSchemaNode{Type: "string", Enum: r.Enum}
	case ValuePattern:
		// The gate refuses what no token may hold whatever the pattern
		// says, and so does the schema.
		return &flagSchemaNode{Type: "string", Pattern: flagAnchoredPattern(r.Pattern), AllOf: []*flagSchemaNode{{Pattern: flagTokenSchemaPattern}}}
	case ValuePath:
		one, maxBytes := 1, MaxApprovalArgBytes
		return &flagSchemaNode{Type: "string", Pattern: flagTokenSchemaPattern, MinLength: &one, MaxLength: &maxBytes,
			Description: pathDescription(r.Path, r.path)}
	default:
		one, maxBytes := 1, MaxApprovalArgBytes
		return &flagSchemaNode{Type: "string", Pattern: flagPlainSchemaPattern, MinLength: &one, MaxLength: &maxBytes}
	}
}

// flagAnchoredPattern returns pattern as written when it is anchored at both
// ends, and ^(?:pattern)$ otherwise, so that a JSON Schema validator,
// which searches, agrees with the gate, which matches whole values.
func flagAnchoredPattern(pattern string) string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err == nil && re.Op == syntax.OpConcat && len(re.Sub) >= 2 &&
		re.Sub[0].Op == syntax.OpBeginText && re.Sub[len(re.Sub)-1].Op == syntax.OpEndText {
		return pattern
	}
	return `^(?:` + pattern + `)$`
}

// argsDescription tells a model which tokens "args" accepts.
func (s *flagsSchema) argsDescription() string {
	var b strings.Builder
	b.WriteString("Command-line tokens, each one argument.")
	if len(s.rules) > 0 {
		b.WriteString(" Declared flags and their accepted spellings:")
		for i, r := range s.rules {
			if i > 0 {
				b.WriteString(";")
			}
			b.WriteString(" ")
			b.WriteString(strings.Join(r.spellings(), " | "))
		}
		b.WriteString(".")
	}
	ps := s.spec.Positionals
	switch {
	case ps.Max == 0:
		b.WriteString(" No positional arguments.")
	case ps.Max == 1:
		b.WriteString(" At most 1 positional argument")
	default:
		fmt.Fprintf(&b, " At most %d positional arguments", ps.Max)
	}
	if ps.Max > 0 {
		if ps.Path != nil {
			b.WriteString(", each a path (" + strings.TrimSuffix(pathDescription(ps.Path, s.posPath), ".") + ")")
		} else if ps.Pattern != "" {
			fmt.Fprintf(&b, ", each matching %s", flagAnchoredPattern(ps.Pattern))
		} else {
			b.WriteString(", each without shell metacharacters")
		}
		if s.spec.EndOfOptions {
			b.WriteString(", not starting with '@' or '-' (except \"-\" itself); they are placed after \"--\"")
		} else {
			b.WriteString(", not starting with '-' or '@'")
		}
		b.WriteString(".")
	}
	b.WriteString(` Undeclared, abbreviated or bundled flags, glued values not listed above, and "--" are refused.`)
	return b.String()
}

// spellings lists the accepted spellings of r in "args", for descriptions.
func (r *flagRule) spellings() []string {
	if r.values != nil {
		var names []string
		for _, v := range r.Values {
			names = append(names, strings.ToUpper(v.Name))
		}
		v := " " + strings.Join(names, " ")
		out := []string{r.canon + v}
		if r.Short != "" {
			out = append(out, "-"+r.Short+v)
		}
		return out
	}
	v := ""
	switch r.Value {
	case ValueNone:
	case ValueInt:
		v = "N"
	default:
		v = "VALUE"
	}
	if v == "" {
		out := []string{r.canon}
		if r.Short != "" {
			out = append(out, "-"+r.Short)
		}
		return out
	}
	var out []string
	out = append(out, r.canon+" "+v)
	if len(r.Name) > 1 {
		out = append(out, r.canon+"="+v)
	}
	if r.Short != "" {
		out = append(out, "-"+r.Short+" "+v)
	}
	if r.Glued {
		if len(r.Name) == 1 {
			out = append(out, r.canon+v)
		}
		if r.Short != "" {
			out = append(out, "-"+r.Short+v)
		}
	}
	return out
}
