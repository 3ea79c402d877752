package execgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
)

type attackOpts struct {
	Depth int `json:"depth" validate:"max=10"`
}

type attackArgs struct {
	N     int         `json:"n"`
	Tiny  int8        `json:"tiny"`
	Name  string      `json:"name" validate:"max=64"`
	Opts  *attackOpts `json:"opts"`
	Paths []string    `json:"paths" validate:"max=4,dive,max=32"`
}

func buildAttack(a attackArgs) execgate.Argv {
	args := []string{"n=" + strconv.Itoa(a.N), "tiny=" + strconv.Itoa(int(a.Tiny)), "name=" + a.Name}
	if a.Opts != nil {
		args = append(args, "depth="+strconv.Itoa(a.Opts.Depth))
	}
	return execgate.Argv{Args: append(args, a.Paths...)}
}

// newStrictGate returns an Executor with one Struct command whose ExecFn
// records calls instead of starting processes.
func newStrictGate(t *testing.T) (*execgate.Executor, *execgatetest.Recorder) {
	t.Helper()
	allow, err := execgate.NewAllowlist(execgate.CommandSpec{
		Name:    "attack",
		Command: "/bin/echo",
		Args:    execgate.Struct(buildAttack),
	})
	require.NoError(t, err)
	rec := execgatetest.NewRecorder()
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow, ExecFn: rec.Exec})
	require.NoError(t, err)
	return x, rec
}

// TestStrictInput drives hostile inputs through Executor.Run:
// each is refused with a *ValidationError that names the offending field
// ("" when the input as a whole is refused), and nothing is spawned.
//
// Invariant 4 of DESIGN.md.
func TestStrictInput(t *testing.T) {
	deep := strings.Repeat("[", 100000)
	manyKeys := func() string {
		var b strings.Builder
		b.WriteString("{")
		for i := range 60000 {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"k` + strconv.Itoa(i) + `":0`)
		}
		b.WriteString("}")
		return b.String()
	}()
	tests := []struct {
		name  string
		in    string
		field string // a field that some issue must name
	}{
		{"unknown field", `{"n":1,"nope":2}`, "nope"},
		{"duplicate key", `{"n":1,"n":2}`, "n"},
		{"key matching only case-insensitively", `{"N":1}`, "n"},
		{"nested key matching only case-insensitively", `{"opts":{"Depth":1}}`, "opts.depth"},
		{"nested duplicate", `{"opts":{"depth":1,"depth":2}}`, "opts.depth"},
		{"duplicate through an escape", `{"name":"a","\u006eame":"b"}`, "name"},
		{"trailing object", `{"n":1} {"n":2}`, ""},
		{"trailing garbage", `{"n":1}x`, ""},
		{"NUL escape in a value", `{"name":"a\u0000b"}`, "name"},
		{"NUL escape in a key", `{"na\u0000me":"a"}`, ""},
		{"NUL escape in a nested value", `{"paths":["ok","\u0000"]}`, "paths[1]"},
		{"raw NUL byte", "{\"name\":\"a\x00b\"}", "name"},
		{"invalid UTF-8", "{\"name\":\"\xc3\x28\"}", "name"},
		{"unpaired surrogate", `{"name":"\udc00"}`, "name"},
		{"1 MiB + 1 byte", `{"name":"` + strings.Repeat("a", execgate.MaxInputSize+1-len(`{"name":""}`)) + `"}`, ""},
		{"string for int", `{"n":"1"}`, "n"},
		{"float for int", `{"n":1.5}`, "n"},
		{"overflow for int8", `{"tiny":128}`, "tiny"},
		{"underflow for int8", `{"tiny":-129}`, "tiny"},
		{"array for string", `{"name":["x"]}`, "name"},
		{"object for string", `{"name":{"x":1}}`, "name"},
		{"null for string", `{"name":null}`, "name"},
		{"bool for int", `{"n":true}`, "n"},
		{"top-level array", `[{"n":1}]`, ""},
		{"top-level string", `"{\"n\":1}"`, ""},
		{"top-level number", `1`, ""},
		{"top-level true", `true`, ""},
		{"deep nesting bomb", deep, ""},
		{"deep nesting in a field", `{"paths":` + deep, "paths[0]"},
		{"huge number of keys", manyKeys, "k0"},
		{"invalid JSON", `{"n":1,}`, ""},
		{"validator rule", `{"opts":{"depth":11}}`, "opts.depth"},
		{"validator rule after dive", `{"paths":["` + strings.Repeat("a", 33) + `"]}`, "paths[0]"},
	}
	x, rec := newStrictGate(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			res, err := x.Run(context.Background(), "attack", json.RawMessage(tt.in))
			runtime.ReadMemStats(&after)
			// Refusing costs a bounded multiple of the input, not a tree
			// of every value or work that grows faster than the input.
			assert.LessOrEqual(t, after.TotalAlloc-before.TotalAlloc, uint64(4*len(tt.in)+64<<10), "refused with bounded work")
			var ve *execgate.ValidationError
			require.True(t, errors.As(err, &ve), "want *ValidationError, got %v", err)
			assert.Equal(t, "attack", ve.Name)
			assert.Zero(t, res)
			var fields []string
			for _, is := range ve.Issues {
				fields = append(fields, is.Field)
				assert.NotEmpty(t, is.Message)
			}
			assert.Contains(t, fields, tt.field, "issues: %v", ve.Issues)
			assert.LessOrEqual(t, len(ve.Issues), 33, "a refusal lists a bounded number of issues")
			assert.Equal(t, 0, rec.Count(), "nothing was spawned")
		})
	}

	// The same gate runs a valid input, with exactly the argv build made.
	_, err := x.Run(context.Background(), "attack", json.RawMessage(`{"n":-3,"tiny":127,"name":"x y","opts":{"depth":10},"paths":["a","b"]}`))
	require.NoError(t, err)
	calls := rec.Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, []string{"n=-3", "tiny=127", "name=x y", "depth=10", "a", "b"}, calls[0].Args)
}

// TestStrictInput_MessagesNeverRepeatValues sends a secret in every place a
// value can go wrong and checks that no refusal repeats it.
//
// Invariant 4 of DESIGN.md.
func TestStrictInput_MessagesNeverRepeatValues(t *testing.T) {
	const canary = "sk-CANARY-0123456789"
	inputs := []string{
		`{"n":"` + canary + `"}`,
		`{"n":` + canary + `}`,
		`{"name":["` + canary + `"]}`,
		`{"name":{"` + canary + `":1}}`,
		`{"name":"` + canary + strings.Repeat("x", 64) + `"}`,
		`{"name":"` + canary + `\u0000"}`,
		"{\"name\":\"" + canary + "\xff\"}",
		`{"paths":["` + canary + strings.Repeat("x", 32) + `"]}`,
		`{"opts":{"depth":"` + canary + `"}}`,
		`{"n":1}` + canary,
		`"` + canary + `"`,
		`{"` + canary + ` as a key":1}`,
		`{"name":"` + canary + `","name":"` + canary + `"}`,
		`{"name":"` + canary + "\n" + `"}`,
	}
	x, rec := newStrictGate(t)
	for _, in := range inputs {
		_, err := x.Run(context.Background(), "attack", json.RawMessage(in))
		var ve *execgate.ValidationError
		require.ErrorAs(t, err, &ve, in)
		assert.NotContains(t, err.Error(), canary, in)
		for _, is := range ve.Issues {
			assert.NotContains(t, is.Field, canary, in)
			assert.NotContains(t, is.Message, canary, in)
		}
	}
	assert.Equal(t, 0, rec.Count())
}

// TestStructConfigErrorsAtBuildTime checks that Struct's mistakes surface
// from NewAllowlist as a *ConfigError for the Args field.
func TestStructConfigErrorsAtBuildTime(t *testing.T) {
	type badTag struct {
		N int `json:"n" validate:"min=1,bogus"`
	}
	for name, schema := range map[string]execgate.ArgsSchema{
		"non-struct T": execgate.Struct(func(int) execgate.Argv { return execgate.Argv{} }),
		"nil build":    execgate.Struct[attackArgs](nil),
		"unknown tag":  execgate.Struct(func(badTag) execgate.Argv { return execgate.Argv{} }),
	} {
		_, err := execgate.NewAllowlist(execgate.CommandSpec{Name: "bad", Command: "/bin/echo", Args: schema})
		var ce *execgate.ConfigError
		require.True(t, errors.As(err, &ce), "%s: want *ConfigError, got %v", name, err)
		assert.Equal(t, "Args", ce.Field, name)
		assert.Equal(t, "bad", ce.Spec, name)
	}
}

// TestStructThroughProposer checks the spawn-free path gives the same
// answers as Run.
func TestStructThroughProposer(t *testing.T) {
	x, rec := newStrictGate(t)
	p, err := x.Proposer().Check("attack", json.RawMessage(`{"name":"z"}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"n=0", "tiny=0", "name=z"}, p.Args)
	_, err = x.Proposer().Check("attack", json.RawMessage(`{"Name":"z"}`))
	var ve *execgate.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, []execgate.Issue{{Field: "name", Message: "must be spelled exactly name (field names are case-sensitive)"}}, ve.Issues)
	assert.Equal(t, 0, rec.Count())
}
