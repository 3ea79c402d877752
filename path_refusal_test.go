package execgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

type pathArgs struct {
	File execgate.Path `json:"file" validate:"required"`
	N    int           `json:"n" validate:"max=3"`
}

// TestValidationError_UnwrapsTheRefusedPaths refuses inputs of a Flags
// and a Struct schema: errors.As finds a *PathError, with its token and
// reason, exactly when a path argument was among the refused, and none
// when only the grammar refused the input.
func TestValidationError_UnwrapsTheRefusedPaths(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "present"), []byte("x"), 0o600))
	a, err := execgate.NewAllowlist(
		execgate.CommandSpec{Name: "flags", Command: "/bin/echo", Dir: dir, Args: execgate.Flags(execgate.FlagSpec{
			Flags:       []execgate.Flag{{Name: "file", Value: execgate.ValuePath}, {Name: "count", Value: execgate.ValueInt}},
			Positionals: execgate.Positionals{Max: 2, Path: &execgate.PathRule{Must: execgate.PathFile}},
		})},
		execgate.CommandSpec{Name: "struct", Command: "/bin/echo", Dir: dir, Args: execgate.Struct(func(a pathArgs) execgate.Argv {
			return execgate.Argv{Args: []string{string(a.File)}}
		})},
	)
	require.NoError(t, err)
	p := execgate.NewProposer(a)
	for _, c := range []struct {
		why, name, input string
		token            string // the path refused, "" for none
	}{
		{"a flag's path outside the working directory", "flags", `{"flags":{"file":"/etc/passwd"}}`, "/etc/passwd"},
		{"a positional path that does not exist", "flags", `{"args":["missing"]}`, "missing"},
		{"a path beside a grammar problem", "flags", `{"flags":{"count":"x"},"args":["../up"]}`, "../up"},
		{"only the grammar", "flags", `{"flags":{"count":"x"}}`, ""},
		{"an unknown flag", "flags", `{"flags":{"nope":true},"args":["present"]}`, ""},
		{"a Struct path outside", "struct", `{"file":"/etc/passwd"}`, "/etc/passwd"},
		{"a Struct field the validator refuses", "struct", `{"file":"present","n":9}`, ""},
	} {
		_, err := p.Check(c.name, json.RawMessage(c.input))
		var ve *execgate.ValidationError
		require.ErrorAs(t, err, &ve, c.why)
		var pe *execgate.PathError
		if c.token == "" {
			assert.False(t, errors.As(err, &pe), "%s: no path was refused, got %v", c.why, pe)
			continue
		}
		require.True(t, errors.As(err, &pe), "%s: %v", c.why, err)
		assert.Equal(t, c.token, pe.Token, c.why)
		assert.NotEmpty(t, pe.Reason, c.why)
	}

	// Through the gate, as a caller gets it.
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: a, ExecFn: func(context.Context, execgate.Invocation) execgate.Outcome { return execgate.Outcome{} }})
	require.NoError(t, err)
	_, err = x.Run(context.Background(), "flags", json.RawMessage(`{"args":["/etc/passwd"]}`))
	var pe *execgate.PathError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Equal(t, "/etc/passwd", pe.Token)
}

// TestPathsAreAType_EachSpecBindsItsOwnRoots builds one Allowlist of two
// specs whose working directories differ, one of them a symbolic link to
// a third directory, in both orders: each accepts the files of its own
// directory (through the link, for the link) and refuses the other's,
// however NewAllowlist shares what it learns of the file system between
// the specs it checks.
func TestPathsAreAType_EachSpecBindsItsOwnRoots(t *testing.T) {
	base := t.TempDir()
	plain, target := filepath.Join(base, "plain"), filepath.Join(base, "target")
	link := filepath.Join(base, "link")
	for _, d := range []string{plain, target} {
		require.NoError(t, os.Mkdir(d, 0o700))
	}
	require.NoError(t, os.Symlink(target, link))
	require.NoError(t, os.WriteFile(filepath.Join(plain, "p"), []byte("x"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(target, "t"), []byte("x"), 0o600))
	spec := func(name, dir string) execgate.CommandSpec {
		return execgate.CommandSpec{Name: name, Command: "/bin/echo", Dir: dir, Args: execgate.Flags(execgate.FlagSpec{
			Positionals: execgate.Positionals{Max: 1, Path: &execgate.PathRule{Must: execgate.PathFile}},
		})}
	}
	for _, order := range [][]execgate.CommandSpec{
		{spec("plain", plain), spec("linked", link)},
		{spec("linked", link), spec("plain", plain)},
	} {
		a, err := execgate.NewAllowlist(order...)
		require.NoError(t, err)
		p := execgate.NewProposer(a)
		for _, c := range []struct {
			name, arg string
			ok        bool
		}{
			{"plain", "p", true},
			{"plain", filepath.Join(target, "t"), false},
			{"plain", "t", false},
			{"linked", "t", true},
			{"linked", filepath.Join(link, "t"), true},
			{"linked", filepath.Join(target, "t"), false}, // lexically outside its directory
			{"linked", filepath.Join(plain, "p"), false},
			{"linked", "p", false},
		} {
			_, err := p.Check(c.name, json.RawMessage(`{"args":["`+c.arg+`"]}`))
			assert.Equal(t, c.ok, err == nil, "%s %s (first %s): %v", c.name, c.arg, order[0].Name, err)
		}
	}
}
