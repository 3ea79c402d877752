package config_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/internal/pattern"
)

// TestLoad_IdenticalPatternsCompiledOnce loads a configuration whose
// tools give the same two patterns on flags, on a value of a flag with
// values and on positionals, and checks that each distinct pattern is
// compiled once in the load, and that every tool still checks them.
func TestLoad_IdenticalPatternsCompiledOnce(t *testing.T) {
	// Texts no other test uses, so that none is compiled already.
	nonce := fmt.Sprint(time.Now().UnixNano())
	id := `^[a-z]{1,9}-` + nonce + `$`
	ref := `^(?:main|v[0-9]+)-` + nonce + `$`
	var sb strings.Builder
	sb.WriteString("version: 1\ntools:\n")
	const tools = 20
	for i := range tools {
		fmt.Fprintf(&sb, `  - name: t%d
    bin: /bin/true
    description: A tool.
    bare:
      flags:
        - {name: id, value: pattern, pattern: '%s'}
        - {name: ref, value: pattern, pattern: '%s'}
        - {name: pair, values: [{name: a, value: pattern, pattern: '%s'}, {name: b, value: string}]}
      positionals: {max: 1, pattern: '%s'}
`, i, id, ref, id, ref)
	}
	before := pattern.Compiled()
	l := mustLoad(t, sb.String())
	assert.Equal(t, before+2, pattern.Compiled(), "two distinct patterns, each compiled once, in %d tools", tools)

	p := execgate.NewProposer(l.Allowlist)
	for i := range tools {
		name := fmt.Sprintf("t%d.run", i)
		for _, c := range []struct {
			input string
			ok    bool
			why   string
		}{
			{`{"flags":{"id":"abc-` + nonce + `"},"args":["v2-` + nonce + `"]}`, true, "both patterns match"},
			{`{"flags":{"id":"abc-x"}}`, false, "the flag's pattern does not match"},
			{`{"args":["v-` + nonce + `"]}`, false, "the positional's pattern does not match"},
			{`{"flags":{"pair":["` + strings.Repeat("a", 10) + `-` + nonce + `","b"]}}`, false, "the length bound of the value's pattern holds"},
		} {
			_, err := p.Check(name, json.RawMessage(c.input))
			if c.ok {
				assert.NoError(t, err, "%s: %s", name, c.why)
			} else {
				assert.Error(t, err, "%s: %s", name, c.why)
			}
		}
	}
}
