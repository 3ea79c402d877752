package execgate

import (
	"bytes"
	"encoding/json"

	"github.com/execgate/execgate/internal/inputrules"
)

// orderedProps is a JSON Schema "properties" object that keeps its members
// in the order they were added, so that a schema's bytes are deterministic
// and read in declaration order.
type orderedProps[N any] struct {
	names []string
	nodes []N
}

func (p *orderedProps[N]) add(name string, n N) {
	p.names = append(p.names, name)
	p.nodes = append(p.nodes, n)
}

// MarshalJSON writes the members in order.
func (p *orderedProps[N]) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, name := range p.names {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshalSchema(name)
		if err != nil {
			return nil, err
		}
		v, err := marshalSchema(p.nodes[i])
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshalSchema encodes v compactly without escaping <, > and &, which
// patterns and descriptions often hold, and with every character no token
// may hold escaped (inputrules.EscapeJSON), so that a schema's bytes never
// carry an invisible character raw.
func marshalSchema(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return inputrules.EscapeJSON(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}
