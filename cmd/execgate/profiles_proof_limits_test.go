package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// TestProfileProof_MemoryIsBounded makes calls whose input makes the real
// program double its memory again and again (invariant 13 of DESIGN.md):
// sed's hold space, a jq string (whose length overflows jq 1.6 at 2^31,
// a heap overflow the limit now stops well before). Each ends with an
// allocation failure inside the profile's memory limit, not with the
// machine's memory. (jq 1.6 then aborts, which its PID namespace's first
// process does by a fault.)
func TestProfileProof_MemoryIsBounded(t *testing.T) {
	for _, c := range []struct {
		why, profile, name string
		input              map[string]any
		stderr             string
	}{
		{"sed doubles its hold space 34 times", "sed", "sed.run",
			map[string]any{"args": []string{"-n", "-e", strings.Repeat("h;G;", 34) + "z"}, "stdin": "x\n"}, "memory"},
		{"jq doubles a string 31 times", "jq", "jq.run",
			map[string]any{"args": []string{"-n", `reduce range(31) as $i ("x"; . + .) | length`}}, "cannot allocate memory"},
	} {
		t.Run(c.why, func(t *testing.T) {
			s := newProofScene(t, c.profile)
			in, err := json.Marshal(c.input)
			require.NoError(t, err)
			code, out, errOut := runBinary(t, "run", "--config", s.config, c.name, string(in))
			require.NotEqual(t, exitUsage, code, errOut)
			var r execgate.Result
			require.NoError(t, json.Unmarshal([]byte(out), &r), out+errOut)
			assert.False(t, r.OK, "%+v", r)
			assert.NotEqual(t, execgate.TerminationTimeout, r.Termination, "%+v", r)
			assert.Contains(t, strings.ToLower(r.Stderr), c.stderr, "an allocation failed inside the limit")
		})
	}
}
