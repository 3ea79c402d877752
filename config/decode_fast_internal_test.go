package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// TestPlainInt_ReadsWhatYAMLReads reads the integers plainInt takes as
// the YAML package does, and leaves it every other spelling.
func TestPlainInt_ReadsWhatYAMLReads(t *testing.T) {
	for _, s := range []string{"0", "7", "42", "65536", "999999999999999999", "1000000000000000000", "0123", "-5", "+5", "0x1F", "0o17", "1_000", "", "12a"} {
		got, ok := plainInt(s)
		if !ok {
			continue
		}
		var want int64
		require.NoError(t, (&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: s}).Decode(&want), s)
		assert.Equal(t, want, got, s)
	}
	for _, s := range []string{"0123", "-5", "+5", "0x1F", "1000000000000000000", ""} {
		_, ok := plainInt(s)
		assert.False(t, ok, "%q is left to the YAML package", s)
	}
}

// TestPairs_DuplicateKeys finds a key written twice in a mapping of a
// few keys (searched) and of many (a map), names the first one's line,
// and does not count a refused key as the first.
func TestPairs_DuplicateKeys(t *testing.T) {
	many := make([]string, 12)
	for i := range many {
		many[i] = fmt.Sprintf("k%d: 1", i)
	}
	for _, c := range []struct {
		why, text string
		want      []string
	}{
		{"a few keys, one twice", "a: 1\nb: 2\na: 3\n", []string{`3:1: m.a: duplicate key (first at line 1)`}},
		{"many keys, one twice", strings.Join(many, "\n") + "\nk3: 2\n", []string{`13:1: m.k3: duplicate key (first at line 4)`}},
		{"a key three times names the first", "a: 1\na: 2\na: 3\n", []string{`2:1: m.a: duplicate key (first at line 1)`, `3:1: m.a: duplicate key (first at line 1)`}},
		{"a tagged key is refused, and is no first", "!!str a: 1\na: 2\n", []string{`1:1: m: tags (!!str) are not supported`}},
	} {
		var doc yaml.Node
		require.NoError(t, yaml.Unmarshal([]byte(c.text), &doc), c.why)
		d := &decoder{problems: &problems{file: "f"}}
		d.pairs(doc.Content[0], "m", func(string, *yaml.Node, *yaml.Node, string) {})
		var got []string
		for _, e := range d.problems.list {
			got = append(got, strings.TrimPrefix(e.Error(), "f:"))
		}
		assert.Equal(t, c.want, got, c.why)
	}
}
