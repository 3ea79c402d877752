package mcpserver_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/internal/inputrules"
	"github.com/execgate/execgate/mcpserver"
)

// clientSafe is the tool name pattern of Claude Desktop and the Anthropic
// API, GitHub Copilot CLI, Windsurf and OpenAI-backed clients.
var clientSafe = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestToolName(t *testing.T) {
	long := strings.Repeat("a", 60) + ".b." + strings.Repeat("c", 66) // 128 bytes, the longest name
	longMapped := strings.ReplaceAll(long, ".", "_")
	sum := sha256.Sum256([]byte(longMapped))
	for _, tc := range []struct{ about, name, want string }{
		{"a name without dots is listed as it is", "deploy", "deploy"},
		{"a dot becomes an underscore", "git.log", "git_log"},
		{"every dot does", "cloud.tf.apply", "cloud_tf_apply"},
		{"letters keep their case, and digits, '_' and '-' are kept", "Kube-CTL_2.get-Pods_3", "Kube-CTL_2_get-Pods_3"},
		{"a name of 64 bytes after mapping is kept whole", strings.Repeat("x", 60) + ".abc", strings.Repeat("x", 60) + "_abc"},
		{"a longer name is cut to 55 bytes, then '-' and 8 hex digits of the SHA-256 of the mapped name",
			long, longMapped[:55] + "-" + hex.EncodeToString(sum[:])[:8]},
		{"a byte no spec's name holds becomes an underscore too", "a b/c", "a_b_c"},
		{"the empty name stays empty", "", ""},
	} {
		got := mcpserver.ToolName(tc.name)
		assert.Equal(t, tc.want, got, tc.about)
		if tc.name != "" {
			assert.Regexp(t, clientSafe, got, tc.about)
		}
	}
	assert.NotEqual(t, mcpserver.ToolName(long), mcpserver.ToolName(long[:len(long)-1]+"d"),
		"two long names that share their first 55 bytes stay apart")
}

// TestToolName_EveryCharacterOfTheNameRule derives the characters a
// logical name may hold from the rule the Executor applies, so that a
// character the rule comes to allow cannot miss the mapping.
func TestToolName_EveryCharacterOfTheNameRule(t *testing.T) {
	allowed := 0
	for c := 0; c < 256; c++ {
		name := "a" + string([]byte{byte(c)}) + "b"
		if inputrules.NameProblem(name) != nil {
			continue
		}
		allowed++
		got := mcpserver.ToolName(name)
		assert.Regexp(t, clientSafe, got, "%q", c)
		if c == '.' {
			assert.Equal(t, "a_b", got, "a dot becomes an underscore")
		} else {
			assert.Equal(t, name, got, "%q is kept", c)
		}
	}
	assert.Equal(t, 26+26+10+3, allowed, "letters, digits, '_', '-' and '.'")
}

func TestListTools_NamesAreClientSafe(t *testing.T) {
	specs := append(testSpecs(),
		execgate.CommandSpec{Name: strings.Repeat("n", 70) + ".run", Command: "/bin/echo", Args: execgate.Fixed()},
		execgate.CommandSpec{Name: "cloud.tf", Command: "/bin/echo", Dispatch: true, Floor: execgate.ActionAllow,
			Args: execgate.Subcommands(execgate.SubcommandSpec{})},
	)
	f := start(t, setup{specs: specs})
	res, err := f.cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range res.Tools {
		assert.Regexp(t, clientSafe, tl.Name)
		names = append(names, tl.Name)
	}
	assert.ElementsMatch(t, []string{"echo_hello", "git_log", "git", "deploy", "forbidden", "dump",
		mcpserver.ToolName(strings.Repeat("n", 70) + ".run"), "cloud_tf"}, names)
}

// TestCall_GateSeesTheLogicalName calls tools by the names they are
// listed under and checks that the Policy, the process runner, the audit
// trail and the Result all see the spec's logical name.
func TestCall_GateSeesTheLogicalName(t *testing.T) {
	long := strings.Repeat("n", 70) + ".run"
	specs := append(testSpecs(),
		execgate.CommandSpec{Name: long, Command: "/bin/echo", Args: execgate.Fixed()},
		execgate.CommandSpec{Name: "cloud.tf", Command: "/bin/echo", Dispatch: true, Floor: execgate.ActionAllow,
			Args: execgate.Subcommands(execgate.SubcommandSpec{})},
	)
	for _, tc := range []struct{ about, tool, args, logical string }{
		{"a dotted name is called by its client-safe name", "git_log", `{"args":["main"]}`, "git.log"},
		{"a name cut for length is called by its shortened name", mcpserver.ToolName(long), `{}`, long},
		{"a dispatcher keeps its name and adds the subcommand with a dot", "git", `{"subcommand":"status"}`, "git.status"},
		{"a dotted dispatcher does too", "cloud_tf", `{"subcommand":"plan"}`, "cloud.tf.plan"},
	} {
		t.Run(tc.about, func(t *testing.T) {
			tr := &trail{}
			f := start(t, setup{specs: specs, auditor: tr})
			res := f.call(t, tc.tool, tc.args)
			require.False(t, res.IsError, text(t, res))
			assert.Equal(t, tc.logical, ran(t, res).Name, "the Result")
			reqs := f.policy.requests()
			require.Len(t, reqs, 1)
			assert.Equal(t, tc.logical, reqs[0].Name, "the Policy")
			calls := f.rec.Calls()
			require.Len(t, calls, 1)
			assert.Equal(t, tc.logical, calls[0].Name, "the process runner")
			evs := tr.all()
			require.NotEmpty(t, evs)
			for _, ev := range evs {
				assert.Equal(t, tc.logical, ev.Name, "the audit trail, op %s", ev.Op)
			}
		})
	}
}

func TestNew_RefusesCollidingToolNames(t *testing.T) {
	spec := func(name string) execgate.CommandSpec {
		return execgate.CommandSpec{Name: name, Command: "/bin/echo", Args: execgate.Fixed()}
	}
	long := strings.Repeat("l", 60)
	for _, tc := range []struct {
		about               string
		names               []string
		tool, first, second string
	}{
		{"a dotted name and the same name with an underscore", []string{"a.b", "a_b"}, "a_b", "a.b", "a_b"},
		{"two names that differ only in which separator is a dot", []string{"x.y_z", "x_y.z"}, "x_y_z", "x.y_z", "x_y.z"},
		{"two long names that map to the same name before it is cut", []string{long + ".tail", long + "_tail"},
			mcpserver.ToolName(long + ".tail"), long + ".tail", long + "_tail"},
	} {
		t.Run(tc.about, func(t *testing.T) {
			var specs []execgate.CommandSpec
			for _, n := range tc.names {
				specs = append(specs, spec(n))
			}
			a, err := execgate.NewAllowlist(specs...)
			require.NoError(t, err)
			x, err := execgate.NewExecutor(execgate.Config{Allowlist: a})
			require.NoError(t, err)

			_, err = mcpserver.New(x, mcpserver.Options{Allowlist: a})
			var ce *mcpserver.ToolNameCollisionError
			require.True(t, errors.As(err, &ce), "%v", err)
			assert.Equal(t, tc.tool, ce.Tool)
			assert.Equal(t, [2]string{tc.first, tc.second}, ce.Names)
			for _, want := range []string{`"` + tc.first + `"`, `"` + tc.second + `"`, `"` + tc.tool + `"`, "rename one", "LogicalNames"} {
				assert.Contains(t, err.Error(), want, "the error names both commands, the tool and what to do")
			}

			srv, err := mcpserver.New(x, mcpserver.Options{Allowlist: a, LogicalNames: true})
			require.NoError(t, err, "logical names do not collide")
			cs := connect(t, srv, nil, "")
			res, err := cs.ListTools(context.Background(), nil)
			require.NoError(t, err)
			var listed []string
			for _, tl := range res.Tools {
				listed = append(listed, tl.Name)
			}
			assert.ElementsMatch(t, tc.names, listed)
		})
	}
}

func TestSetAllowlist_RefusesCollidingToolNamesAndKeepsTheTools(t *testing.T) {
	f := start(t, setup{})
	clash, err := execgate.NewAllowlist(
		execgate.CommandSpec{Name: "echo.hello", Command: "/bin/echo", Args: execgate.Fixed()},
		execgate.CommandSpec{Name: "echo_hello", Command: "/bin/echo", Args: execgate.Fixed()},
	)
	require.NoError(t, err)
	var ce *mcpserver.ToolNameCollisionError
	require.ErrorAs(t, f.srv.SetAllowlist(clash), &ce)
	assert.Equal(t, [2]string{"echo.hello", "echo_hello"}, ce.Names)

	res, err := f.cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	assert.Len(t, res.Tools, len(testSpecs()), "nothing changed")
}

func TestLogicalNames_ListsAndCallsTheLogicalNames(t *testing.T) {
	tr := &trail{}
	f := start(t, setup{auditor: tr, opts: mcpserver.Options{LogicalNames: true}})
	res, err := f.cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	assert.ElementsMatch(t, []string{"echo.hello", "git.log", "git", "deploy", "forbidden", "dump"}, names)

	r := ran(t, f.call(t, "git.log", `{}`))
	assert.Equal(t, "git.log", r.Name)

	// The client-safe name is not listed, and the refusal names the
	// listed one.
	st := status(t, f.call(t, "git_log", `{}`))
	assert.Equal(t, mcpserver.KindNotFound, st.Kind)
	assert.Contains(t, st.Message, `the command "git.log" is listed as the tool "git.log": call that`)
	// A subcommand that has its own tool points to that tool's name.
	st = status(t, f.call(t, "git", `{"subcommand":"log"}`))
	assert.Equal(t, mcpserver.KindValidation, st.Kind)
	assert.Contains(t, st.Message, `"git.log" has its own tool; call the tool "git.log" instead`)
	require.Len(t, f.rec.Calls(), 1)
}
