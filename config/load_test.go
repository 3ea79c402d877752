package config_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/execgatetest"
)

// withStandIns puts stand-ins for git, jq and terraform first on PATH, for
// configurations that name them, such as the issue's example.
func withStandIns(t *testing.T) string {
	t.Helper()
	dir := standIns(t, "git", "jq", "terraform")
	t.Setenv("PATH", dir+string(os.PathListSeparator)+"/usr/bin"+string(os.PathListSeparator)+"/bin")
	return dir
}

// TestValidFiles loads every example in testdata, with the clock
// the dates of their grants are written for.
func TestValidFiles(t *testing.T) {
	withStandIns(t)
	files, err := filepath.Glob(filepath.Join(testdataDir, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			l, err := config.LoadOptions{Now: newTestClock().Now}.LoadFile(file)
			require.NoError(t, err)
			require.NotNil(t, l.Allowlist)
			if l.Engine == nil {
				assert.Nil(t, l.Policy, "no policies section: no Policy at all, not a typed nil")
				assert.Empty(t, l.Grants)
			} else {
				assert.Same(t, l.Engine, l.Policy)
			}
			assert.NotEmpty(t, l.Tools)
		})
	}
}

func TestIssueExample(t *testing.T) {
	dir := withStandIns(t)
	t.Setenv("HOME", "/home/operator")
	l, err := config.LoadFile(filepath.Join(testdataDir, "issue_example.yaml"))
	require.NoError(t, err)

	assert.Equal(t, []config.Tool{
		{Name: "git", Mode: config.ModeStrict, Specs: []string{"git.log"}, Line: 7},
		{Name: "jq", Mode: config.ModeBare, Specs: []string{"jq.run"}, Line: 21},
		{Name: "terraform", Mode: config.ModeFineTuned, Specs: []string{"terraform.plan", "terraform"},
			DefaultAction: execgate.ActionRequireApproval, Line: 27},
	}, l.Tools)

	s, ok := l.Allowlist.Lookup("git.log")
	require.True(t, ok)
	assert.Equal(t, filepath.Join(dir, "git"), s.Command)
	assert.Equal(t, 30*time.Second, s.Timeout)
	assert.Equal(t, 64<<10, s.MaxOutput)
	assert.Equal(t, map[string]string{"PATH": "/usr/bin:/bin", "HOME": "/home/operator"}, s.Env)
	assert.Equal(t, "Show recent commits", s.Description)

	p := execgate.NewProposer(l.Allowlist)
	prop, err := p.Check("git.log", json.RawMessage(`{"flags":{"max-count":5,"oneline":true},"args":["--author","Ann Lee","main"]}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"--no-pager", "-c", "core.hooksPath=/dev/null", "log",
		"--max-count=5", "--oneline", "--author=Ann Lee", "--", "main"}, prop.Args)

	prop, err = p.Check("jq.run", json.RawMessage(`{"args":["-c",".a"],"stdin":"{\"a\":1}"}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"--compact-output", ".a"}, prop.Args)
	assert.Equal(t, []byte(`{"a":1}`), prop.Stdin)

	prop, err = p.Check("terraform.plan", json.RawMessage(`{"flags":{"target":"module.db"}}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"plan", "--target=module.db"}, prop.Args)

	prop, err = p.Check("terraform.apply", json.RawMessage(`{"args":["-auto-approve"]}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"apply", "-auto-approve"}, prop.Args)

	_, err = p.Check("git.push", nil)
	var nf *execgate.NotFoundError
	assert.ErrorAs(t, err, &nf, "strict: git has no dispatcher")
	_, err = p.Check("jq", nil)
	assert.ErrorAs(t, err, &nf)
}

// modesConfig has one tool per mode; /bin/echo stands in for each.
const modesConfig = `
version: 1
tools:
  - name: strict
    bin: /bin/echo
    strict: true
    commands:
      log: {flags: [{name: oneline}]}
      status:
  - name: tuned
    bin: /bin/echo
    default_action: allow
    commands:
      log: {flags: [{name: oneline}]}
  - name: simple
    bin: /bin/echo
    default_action: allow
  - name: bare
    bin: /bin/echo
    bare: {positionals: {max: 2}}
`

func TestModes(t *testing.T) {
	l := mustLoad(t, modesConfig)
	p := execgate.NewProposer(l.Allowlist)
	for _, tc := range []struct {
		name  string
		input string
		args  []string // nil: *NotFoundError
	}{
		{name: "strict.log", input: `{"flags":{"oneline":true}}`, args: []string{"log", "--oneline"}},
		{name: "strict.status", args: []string{"status"}},
		{name: "strict.push"},
		{name: "strict"},
		{name: "tuned.log", input: `{"flags":{"oneline":true}}`, args: []string{"log", "--oneline"}},
		{name: "tuned.push", input: `{"args":["--force"]}`, args: []string{"push", "--force"}},
		{name: "simple.log", input: `{"args":["--oneline"]}`, args: []string{"log", "--oneline"}},
		{name: "simple.anything-else", args: []string{"anything-else"}},
		{name: "bare.run", input: `{"args":["a","b"]}`, args: []string{"a", "b"}},
		{name: "bare"},
		{name: "bare.log"},
		{name: "nobody.run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prop, err := p.Check(tc.name, json.RawMessage(tc.input))
			if tc.args == nil {
				var nf *execgate.NotFoundError
				assert.ErrorAs(t, err, &nf)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.args, prop.Args)
			assert.Equal(t, "/bin/echo", prop.Command)
		})
	}

	// A declared subcommand in fine-tuned mode keeps its grammar: the
	// dispatcher does not serve it with a looser one.
	_, err := p.Check("tuned.log", json.RawMessage(`{"args":["--format=%H"]}`))
	var ve *execgate.ValidationError
	assert.ErrorAs(t, err, &ve)
}

func newExecutor(t *testing.T, l *config.Loaded, policy execgate.Policy) (*execgate.Executor, *execgatetest.Recorder) {
	t.Helper()
	rec := execgatetest.NewRecorder()
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: l.Allowlist, ExecFn: rec.Exec, Policy: policy})
	require.NoError(t, err)
	return x, rec
}

// TestDispatcherRunsOnlyTheNamedSubcommand pins that a dispatcher takes
// the subcommand from the requested name and nowhere else: whatever the
// arguments say, the token after global_args is the name's subcommand.
func TestDispatcherRunsOnlyTheNamedSubcommand(t *testing.T) {
	l := mustLoad(t, `
version: 1
tools:
  - name: git
    bin: /bin/echo
    default_action: allow
    global_args: ["--no-pager"]
    commands:
      log: {}
`)
	x, rec := newExecutor(t, l, nil)
	ctx := context.Background()

	for _, tc := range []struct {
		name  string
		input string
		want  []string
	}{
		{"git.status", `{"args":["log","--oneline"]}`, []string{"--no-pager", "status", "log", "--oneline"}},
		{"git.stash", `{"args":["push"]}`, []string{"--no-pager", "stash", "push"}},
		{"git.log", ``, []string{"--no-pager", "log"}},
	} {
		rec.Reset()
		r, err := x.Run(ctx, tc.name, json.RawMessage(tc.input))
		require.NoError(t, err, tc.name)
		assert.True(t, r.OK)
		calls := rec.Calls()
		require.Len(t, calls, 1)
		assert.Equal(t, tc.want, calls[0].Args, tc.name)
		assert.Equal(t, tc.name, calls[0].Name)
	}

	rec.Reset()
	for _, tc := range []struct {
		name  string
		input string
	}{
		{"git.Status", ``},                      // not ^[a-z][a-z0-9-]*$
		{"git.-c", ``},                          // an option is no subcommand
		{"git.status", `{"subcommand":"push"}`}, // the input cannot name one
		{"git.status", `{"args":["--","push"]}`},
		{"git.status", `{"args":["a;b"]}`},
		{"git.status", `{"flags":{"all":true}}`},
		{"git.status", `{"args":["@file"]}`},
	} {
		_, err := x.Run(ctx, tc.name, json.RawMessage(tc.input))
		var ve *execgate.ValidationError
		assert.ErrorAs(t, err, &ve, "%s %s", tc.name, tc.input)
	}
	for _, name := range []string{"git.status.push", "git..status", "git."} {
		_, err := x.Run(ctx, name, nil)
		assert.Error(t, err, name)
	}
	assert.Zero(t, rec.Count(), "a refused call reached the ExecFn")
}

func TestDefaultAction(t *testing.T) {
	allowAll := execgate.PolicyFunc(func(context.Context, execgate.Request) (execgate.Decision, error) {
		return execgate.Decision{Action: execgate.ActionAllow, Rule: "allow-all"}, nil
	})
	for _, tc := range []struct {
		line      string
		runAction string // "" when Run runs
		proposeOK bool
	}{
		{line: "default_action: human_approval", runAction: execgate.ActionRequireApproval, proposeOK: true},
		{line: "", runAction: execgate.ActionDeny},
		{line: "default_action: deny", runAction: execgate.ActionDeny},
		{line: "default_action: allow", proposeOK: true},
	} {
		t.Run(tc.line, func(t *testing.T) {
			l := mustLoad(t, `
version: 1
tools:
  - name: tf
    bin: /bin/echo
    `+tc.line+`
    commands:
      plan: {}
`)
			x, rec := newExecutor(t, l, allowAll)
			ctx := context.Background()

			// The declared subcommand is not under the floor.
			_, err := x.Run(ctx, "tf.plan", nil)
			require.NoError(t, err)
			rec.Reset()

			_, err = x.Run(ctx, "tf.apply", json.RawMessage(`{"args":["-auto-approve"]}`))
			if tc.runAction == "" {
				require.NoError(t, err)
				assert.Equal(t, 1, rec.Count())
			} else {
				var pe *execgate.PolicyError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, tc.runAction, pe.Action)
				assert.Equal(t, execgate.FloorRule, pe.Rule)
				assert.Zero(t, rec.Count())
			}

			rec.Reset()
			ap, err := x.Propose(ctx, "tf.apply", json.RawMessage(`{"args":["-auto-approve"]}`), "ship it")
			if !tc.proposeOK {
				var pe *execgate.PolicyError
				assert.ErrorAs(t, err, &pe)
				return
			}
			require.NoError(t, err)
			r, err := x.Execute(ctx, ap)
			require.NoError(t, err)
			assert.True(t, r.OK)
			calls := rec.Calls()
			require.Len(t, calls, 1)
			assert.Equal(t, []string{"apply", "-auto-approve"}, calls[0].Args)
		})
	}
}

// TestGlobalArgsComeFirst pins that global_args open every argv, in every
// mode, and that nothing a caller sends lands before or among them.
func TestGlobalArgsComeFirst(t *testing.T) {
	global := []string{"--no-pager", "-c", "core.hooksPath=/dev/null"}
	l := mustLoad(t, `
version: 1
tools:
  - name: strict
    bin: /bin/echo
    strict: true
    global_args: ["--no-pager", "-c", "core.hooksPath=/dev/null"]
    commands:
      log: {flags: [{name: c, value: string}], positionals: {max: 2}}
  - name: tuned
    bin: /bin/echo
    default_action: allow
    global_args: ["--no-pager", "-c", "core.hooksPath=/dev/null"]
    commands:
      log: {positionals: {max: 2}}
  - name: bare
    bin: /bin/echo
    global_args: ["--no-pager", "-c", "core.hooksPath=/dev/null"]
    bare: {flags: [{name: c, value: string}], positionals: {max: 2}}
`)
	x, rec := newExecutor(t, l, nil)
	for _, tc := range []struct {
		name, input string
		rest        []string
	}{
		{"strict.log", `{"flags":{"c":"core.pager=less"},"args":["x"]}`, []string{"log", "-c", "core.pager=less", "x"}},
		{"tuned.log", `{"args":["x","y"]}`, []string{"log", "x", "y"}},
		{"tuned.status", `{"args":["-c","core.pager=less"]}`, []string{"status", "-c", "core.pager=less"}},
		{"bare.run", `{"flags":{"c":"v"},"args":["x"]}`, []string{"-c", "v", "x"}},
	} {
		rec.Reset()
		_, err := x.Run(context.Background(), tc.name, json.RawMessage(tc.input))
		require.NoError(t, err, tc.name)
		calls := rec.Calls()
		require.Len(t, calls, 1)
		assert.Equal(t, append(append([]string(nil), global...), tc.rest...), calls[0].Args, tc.name)
	}
}

// TestDigestsAreStable pins that loading the same configuration twice
// gives the same digest for the same call, and that a change to what runs
// changes it.
func TestDigestsAreStable(t *testing.T) {
	withStandIns(t)
	path := filepath.Join(testdataDir, "issue_example.yaml")
	calls := []struct{ name, input string }{
		{"git.log", `{"flags":{"max-count":3},"args":["main"]}`},
		{"jq.run", `{"args":[".a"],"stdin":"{}"}`},
		{"terraform.plan", `{}`},
		{"terraform.apply", `{"args":["-auto-approve"]}`},
	}
	digests := func(l *config.Loaded) []string {
		p := execgate.NewProposer(l.Allowlist)
		var out []string
		for _, c := range calls {
			prop, err := p.Check(c.name, json.RawMessage(c.input))
			require.NoError(t, err, c.name)
			out = append(out, prop.Digest)
		}
		return out
	}
	a, err := config.LoadFile(path)
	require.NoError(t, err)
	b, err := config.LoadFile(path)
	require.NoError(t, err)
	first := digests(a)
	assert.Equal(t, first, digests(b))

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	changed := bytes.Replace(data, []byte("timeout: 30s"), []byte("timeout: 31s"), 1)
	require.NotEqual(t, data, changed)
	c, err := config.LoadBytes("changed.yaml", changed)
	require.NoError(t, err)
	for i, d := range digests(c) {
		assert.NotEqual(t, first[i], d, calls[i].name)
	}
}

func TestLimitsOverride(t *testing.T) {
	l := mustLoad(t, `
version: 1
defaults: {timeout: 10s, no_output_timeout: 3s, max_output: 1KiB}
tools:
  - name: a
    bin: /bin/echo
    timeout: 20s
    max_output: 2048
    commands:
      fast: {timeout: 5s, no_output_timeout: 0s, max_output: 512B}
      plain: {}
  - name: b
    bin: /bin/echo
    bare: {}
  - name: c
    bin: /bin/echo
    no_output_timeout: 1m
    bare: {timeout: 1m30s}
`)
	for _, tc := range []struct {
		name      string
		timeout   time.Duration
		noOutput  time.Duration
		maxOutput int
	}{
		{"a.fast", 5 * time.Second, 0, 512},
		{"a.plain", 20 * time.Second, 3 * time.Second, 2048},
		{"a.other", 20 * time.Second, 3 * time.Second, 2048}, // the dispatcher
		{"b.run", 10 * time.Second, 3 * time.Second, 1024},
		{"c.run", 90 * time.Second, time.Minute, 1024},
	} {
		s, ok := l.Allowlist.Lookup(tc.name)
		require.True(t, ok, tc.name)
		assert.Equal(t, tc.timeout, s.Timeout, tc.name)
		assert.Equal(t, tc.noOutput, s.NoOutputTimeout, tc.name)
		assert.Equal(t, tc.maxOutput, s.MaxOutput, tc.name)
	}

	// What nothing sets gets the root package's defaults.
	l = mustLoad(t, "version: 1\ntools: [{name: e, bin: /bin/echo, bare: {}}]\n")
	s, ok := l.Allowlist.Lookup("e.run")
	require.True(t, ok)
	assert.Equal(t, execgate.DefaultTimeout, s.Timeout)
	assert.Equal(t, execgate.DefaultMaxOutput, s.MaxOutput)
	assert.Zero(t, s.NoOutputTimeout)
}

func TestEnvMerge(t *testing.T) {
	t.Setenv("EXECGATE_CFG_A", "process-a")
	t.Setenv("EXECGATE_CFG_B", "process-b")
	t.Setenv("EXECGATE_CFG_T", "process-t")
	t.Setenv("EXECGATE_CFG_SECRET", "not-asked-for")
	require.NoError(t, os.Unsetenv("EXECGATE_CFG_UNSET"))
	l := mustLoad(t, `
version: 1
defaults:
  inherit_env: [EXECGATE_CFG_A, EXECGATE_CFG_B, EXECGATE_CFG_UNSET]
  env: {EXECGATE_CFG_B: defaults-b, EXECGATE_CFG_C: defaults-c, EXECGATE_CFG_D: defaults-d}
tools:
  - name: one
    bin: /bin/echo
    inherit_env: [EXECGATE_CFG_T]
    env: {EXECGATE_CFG_C: tool-c, EXECGATE_CFG_T: tool-t}
    bare: {}
  - name: two
    bin: /bin/echo
    inherit_env: [EXECGATE_CFG_T]
    bare: {}
`)
	s, ok := l.Allowlist.Lookup("one.run")
	require.True(t, ok)
	assert.Equal(t, map[string]string{
		"EXECGATE_CFG_A": "process-a",  // inherited
		"EXECGATE_CFG_B": "defaults-b", // defaults.env beats inheritance
		"EXECGATE_CFG_C": "tool-c",     // the tool's env beats defaults.env
		"EXECGATE_CFG_D": "defaults-d",
		"EXECGATE_CFG_T": "tool-t", // the tool's env beats its own inheritance
	}, s.Env)

	s, ok = l.Allowlist.Lookup("two.run")
	require.True(t, ok)
	assert.Equal(t, map[string]string{
		"EXECGATE_CFG_A": "process-a",
		"EXECGATE_CFG_B": "defaults-b",
		"EXECGATE_CFG_C": "defaults-c",
		"EXECGATE_CFG_D": "defaults-d",
		"EXECGATE_CFG_T": "process-t",
	}, s.Env)

	// The environment is read at load time: changing the process's
	// environment later changes nothing.
	t.Setenv("EXECGATE_CFG_A", "changed")
	s, _ = l.Allowlist.Lookup("two.run")
	assert.Equal(t, "process-a", s.Env["EXECGATE_CFG_A"])
}

func TestHostileEnv(t *testing.T) {
	for _, key := range []string{
		"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "GLIBC_TUNABLES", "DYLD_INSERT_LIBRARIES",
		"DYLD_LIBRARY_PATH", "BASH_ENV", "ENV", "PAGER", "GIT_PAGER", "LESSOPEN", "GIT_SSH_COMMAND",
		"GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_GLOBAL",
		"GIT_EXEC_PATH", "NODE_OPTIONS", "PYTHONPATH", "PERL5OPT", "RUBYOPT", "JAVA_TOOL_OPTIONS",
		"ld_preload", "Dyld_Foo",
	} {
		t.Run(key, func(t *testing.T) {
			for _, form := range []struct{ where, text, path string }{
				{"env", "    env: {" + key + ": x}\n", "tools[0].env." + key},
				{"inherit_env", "    inherit_env: [" + key + "]\n", "tools[0].inherit_env[0]"},
			} {
				text := "version: 1\ntools:\n  - name: t\n    bin: /bin/echo\n    bare: {}\n" + form.text
				list := loadErrors(t, text)
				require.Len(t, list, 1, "%s:%s", form.where, describe(list))
				assert.Equal(t, 6, list[0].Line)
				assert.Equal(t, form.path, list[0].Path)
				assert.Contains(t, list[0].Message, "allow_hostile_env: true")
				assert.Contains(t, list[0].Message, key)

				// The tool's flag allows it.
				mustLoad(t, text+"    allow_hostile_env: true\n")

				// In defaults it is refused whatever the tools say.
				def := "version: 1\ndefaults:\n  " + strings.TrimSpace(form.text) + "\ntools:\n  - {name: t, bin: /bin/echo, bare: {}, allow_hostile_env: true}\n"
				list = loadErrors(t, def)
				require.Len(t, list, 1, describe(list))
				assert.Equal(t, 3, list[0].Line)
				assert.Contains(t, list[0].Message, "refused in defaults")
			}
		})
	}

	// An environment value is never repeated in a message.
	list := loadErrors(t, "version: 1\ntools:\n  - {name: t, bin: /bin/echo, bare: {}, env: {LD_PRELOAD: s3cr3t-value}}\n")
	assert.NotContains(t, list.Error(), "s3cr3t-value")
	for _, key := range []string{"HOME", "LANG", "TZ", "GIT_AUTHOR_NAME", "LD", "MY_LD_PRELOAD"} {
		mustLoad(t, "version: 1\ntools:\n  - {name: t, bin: /bin/echo, bare: {}, env: {"+key+": x}}\n")
	}
	for _, key := range []string{"GCONV_PATH", "LOCPATH", "GIT_TEMPLATE_DIR", "KUBECONFIG", "MANPAGER", "BROWSER", "ZDOTDIR"} {
		list := loadErrors(t, "version: 1\ntools:\n  - {name: t, bin: /bin/echo, bare: {}, env: {"+key+": x}}\n")
		require.Len(t, list, 1, key)
		assert.Contains(t, list[0].Message, "allow_hostile_env")
	}

	// PATH must hold only absolute directories.
	mustLoad(t, "version: 1\ntools:\n  - {name: t, bin: /bin/echo, bare: {}, env: {PATH: /usr/bin:/bin}}\n")
	for _, value := range []string{".:/usr/bin", "/usr/bin:", ":/usr/bin", "bin", "/usr/bin::/bin"} {
		list := loadErrors(t, "version: 1\ntools:\n  - {name: t, bin: /bin/echo, bare: {}, env: {PATH: '"+value+"'}}\n")
		require.Len(t, list, 1, value)
		assert.Contains(t, list[0].Message, "absolute directory", value)
	}
}

func TestInterpreters(t *testing.T) {
	dir := standIns(t, "python3.11", "perl5.36.0", "mytool", "node", "ipython3", "pnpm", "make", "Bash")
	require.NoError(t, os.Symlink("/bin/sh", filepath.Join(dir, "innocent")))
	require.NoError(t, os.Symlink(filepath.Join(dir, "node"), filepath.Join(dir, "js")))
	for _, tc := range []struct {
		bin, body string
		which     string // "" when allowed
	}{
		{bin: "/bin/sh", body: "commands: {version: {}}", which: "sh"},
		{bin: "sh", body: "", which: "sh"},
		{bin: "/bin/sh", body: "bare: {positionals: {max: 1}}", which: "sh"},
		{bin: "/bin/sh", body: "bare: {stdin: {}}", which: "sh"},
		{bin: "/bin/sh", body: "bare: {flags: [{name: e}]}", which: "sh"},
		{bin: "/usr/bin/env", body: "bare: {flags: [{name: version}]}", which: "env"},
		{bin: "env", body: "default_action: allow", which: "env"},
		{bin: filepath.Join(dir, "python3.11"), body: "bare: {positionals: {max: 1}}", which: "python3.11"},
		{bin: filepath.Join(dir, "perl5.36.0"), body: "strict: true\n    commands: {x: {}}", which: "perl5.36.0"},
		{bin: filepath.Join(dir, "js"), body: "bare: {positionals: {max: 1}}", which: "node"},
		{bin: filepath.Join(dir, "ipython3"), body: "bare: {positionals: {max: 1}}", which: "ipython3"},
		{bin: filepath.Join(dir, "pnpm"), body: "bare: {positionals: {max: 1}}", which: "pnpm"},
		{bin: filepath.Join(dir, "make"), body: "bare: {positionals: {max: 1}}", which: "make"},
		{bin: filepath.Join(dir, "Bash"), body: "bare: {positionals: {max: 1}}", which: "Bash"},
		// A symlink is judged by the file it leads to: /bin/sh is dash,
		// bash or busybox, each in the list.
		{bin: filepath.Join(dir, "innocent"), body: "bare: {positionals: {max: 1}}", which: "?"},

		// Fixed arguments are allowed: the operator wrote the whole argv.
		{bin: "/bin/sh", body: "global_args: [/dev/null]\n    bare: {}"},
		{bin: "/usr/bin/env", body: "bare:"},
		{bin: filepath.Join(dir, "python3.11"), body: "global_args: [--version]\n    bare: {positionals: {max: 0}}"},
		// Not interpreters.
		{bin: filepath.Join(dir, "mytool"), body: "bare: {positionals: {max: 1}}"},
		{bin: "/bin/echo", body: ""},
	} {
		text := "version: 1\ntools:\n  - name: t\n    bin: " + tc.bin + "\n    " + tc.body + "\n"
		t.Run(tc.bin+" "+tc.body, func(t *testing.T) {
			if tc.which == "" {
				mustLoad(t, text)
				return
			}
			list := loadErrors(t, text)
			require.Len(t, list, 1, describe(list))
			assert.Equal(t, 4, list[0].Line)
			assert.Equal(t, "tools[0].bin", list[0].Path)
			assert.Contains(t, list[0].Message, "shell, interpreter or command runner")
			if tc.which != "?" {
				assert.Contains(t, list[0].Message, "("+tc.which+")")
			}
			// allow_interpreter lets it through.
			mustLoad(t, text+"    allow_interpreter: true\n")
		})
	}
}

// TestAllowlistErrorsArePlaced covers refusals that only the file system
// can decide, including those execgate.NewAllowlist reports, which are put
// on the tool's key.
func TestAllowlistErrorsArePlaced(t *testing.T) {
	dir := standIns(t, "tool")
	tool := filepath.Join(dir, "tool")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data"), []byte("x"), 0o644))

	t.Run("sha256 mismatch", func(t *testing.T) {
		list := loadErrors(t, "version: 1\ntools:\n  - name: t\n    bin: "+tool+"\n    sha256: "+strings.Repeat("ab", 32)+"\n    bare: {}\n")
		require.Len(t, list, 1, describe(list))
		assert.Equal(t, 5, list[0].Line)
		assert.Equal(t, "tools[0].sha256", list[0].Path)
		assert.Contains(t, list[0].Message, "does not match the pinned digest")
	})
	t.Run("sha256 match", func(t *testing.T) {
		data, err := os.ReadFile(tool)
		require.NoError(t, err)
		l := mustLoad(t, "version: 1\ntools:\n  - name: t\n    bin: "+tool+"\n    sha256: "+sha256Hex(data)+"\n    bare: {}\n")
		s, _ := l.Allowlist.Lookup("t.run")
		assert.Equal(t, sha256Hex(data), s.SHA256)
	})
	t.Run("not executable", func(t *testing.T) {
		list := loadErrors(t, "version: 1\ntools:\n  - name: t\n    bin: "+filepath.Join(dir, "data")+"\n")
		require.Len(t, list, 1, describe(list))
		assert.Equal(t, 4, list[0].Line)
		assert.Contains(t, list[0].Message, "is not executable")
	})
	t.Run("relative PATH entry", func(t *testing.T) {
		t.Chdir(dir)
		t.Setenv("PATH", ".")
		list := loadErrors(t, "version: 1\ntools:\n  - name: t\n    bin: tool\n")
		require.Len(t, list, 1, describe(list))
		assert.Equal(t, 4, list[0].Line)
		assert.Equal(t, "tools[0].bin", list[0].Path)
		assert.Contains(t, list[0].Message, "relative PATH entry")
	})
	t.Run("working_dir", func(t *testing.T) {
		l := mustLoad(t, "version: 1\ntools:\n  - name: t\n    bin: /bin/echo\n    working_dir: "+dir+"/sub/..\n    bare: {}\n")
		s, _ := l.Allowlist.Lookup("t.run")
		assert.Equal(t, dir, s.Dir)
		wd, err := os.Getwd()
		require.NoError(t, err)
		l = mustLoad(t, "version: 1\ntools:\n  - name: t\n    bin: /bin/echo\n    bare: {}\n")
		s, _ = l.Allowlist.Lookup("t.run")
		assert.Equal(t, wd, s.Dir)
	})
}

func TestReadErrors(t *testing.T) {
	_, err := config.LoadFile(filepath.Join(t.TempDir(), "missing.yaml"))
	assert.ErrorIs(t, err, fs.ErrNotExist)

	big := bytes.Repeat([]byte("# padding\n"), config.MaxFileSize/10+1)
	for name, load := range map[string]func() (*config.Loaded, error){
		"Load":      func() (*config.Loaded, error) { return config.Load(bytes.NewReader(big)) },
		"LoadBytes": func() (*config.Loaded, error) { return config.LoadBytes("big.yaml", big) },
		"LoadFile": func() (*config.Loaded, error) {
			p := filepath.Join(t.TempDir(), "big.yaml")
			require.NoError(t, os.WriteFile(p, big, 0o644))
			return config.LoadFile(p)
		},
	} {
		l, err := load()
		assert.Nil(t, l, name)
		var list config.ErrorList
		require.ErrorAs(t, err, &list, name)
		assert.Contains(t, list[0].Message, "larger than", name)
	}

	_, err = config.Load(strings.NewReader("version: 1\ntools:\n  - {name: t}\n"))
	assert.EqualError(t, err, "<input>:3:5: tools[0].bin: required: the executable's absolute path, or a name found on PATH")
}

// TestStrictYAML covers the YAML features refused beyond the error files.
func TestStrictYAML(t *testing.T) {
	for _, tc := range []struct {
		name, text, path, message string
		line                      int
	}{
		{"integer key", "version: 1\ntools: []\n1: x\n", "", "keys must be strings", 3},
		{"complex key", "version: 1\ntools: []\n? [a]\n: x\n", "", "keys must be strings", 3},
		{"date as string", "version: 1\ntools:\n  - {name: t, bin: /bin/echo, policy_version: 2024-06-01}\n", "tools[0].policy_version", "must be a string, not a date", 3},
		{"float as int", "version: 1\ntools:\n  - {name: t, bin: /bin/echo, bare: {positionals: {max: 1.5}}}\n", "tools[0].bare.positionals.max", "must be an integer, not a number", 3},
		{"int overflow", "version: 1\ntools:\n  - {name: t, bin: /bin/echo, bare: {flags: [{name: n, value: int, max: 99999999999999999999}]}}\n", "tools[0].bare.flags[0].max", "must be an integer", 3},
		{"tool not a mapping", "version: 1\ntools: [echo]\n", "tools[0]", "must be a mapping, not a string", 2},
		{"anchored root", "&r\nversion: 1\ntools: []\n", "", "anchors (&r)", 1},
		{"null bool", "version: 1\ntools:\n  - {name: t, bin: /bin/echo, strict: ~}\n", "tools[0].strict", "has no value", 3},
		{"odd key quoted", "version: 1\ntools:\n  - {name: t, bin: /bin/echo, \"a b\": 1}\n", `tools[0]["a b"]`, `unknown key "a b"`, 3},
		{"unknown flag key", "version: 1\ntools:\n  - {name: t, bin: /bin/echo, bare: {flags: [{name: x, kind: int}]}}\n", "tools[0].bare.flags[0].kind", `unknown key "kind"`, 3},
		{"annotations type", "version: 1\ntools:\n  - {name: t, bin: /bin/echo, bare: {annotations: {read_only: yes}}}\n", "tools[0].bare.annotations.read_only", "must be true or false, not a string", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list := loadErrors(t, tc.text)
			require.Len(t, list, 1, describe(list))
			assert.Equal(t, tc.line, list[0].Line)
			assert.Equal(t, tc.path, list[0].Path)
			assert.Contains(t, list[0].Message, tc.message)
		})
	}
}

func TestErrorsAreCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\ntools:\n")
	for range 150 {
		b.WriteString("  - {name: t, bin: /bin/echo, nope: 1}\n")
	}
	list := loadErrors(t, b.String())
	require.Len(t, list, 101)
	assert.Contains(t, list[100].Message, "more problems not listed")
}

func TestErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		e    config.Error
		want string
	}{
		{config.Error{File: "a.yaml", Line: 3, Column: 5, Path: "tools[0].bin", Message: "required"}, "a.yaml:3:5: tools[0].bin: required"},
		{config.Error{File: "a.yaml", Line: 3, Message: "invalid YAML: x"}, "a.yaml:3: invalid YAML: x"},
		{config.Error{File: "a.yaml", Message: "empty"}, "a.yaml: empty"},
	} {
		assert.Equal(t, tc.want, tc.e.Error())
	}
	list := config.ErrorList{{File: "a", Line: 1, Message: "x"}, {File: "a", Line: 2, Message: "y"}}
	assert.Equal(t, "a:1: x\na:2: y", list.Error())
	var e *config.Error
	assert.True(t, errors.As(error(list), &e))
}

// TestOneLinePerProblem pins that a message repeating text from the file
// stays on one line.
func TestOneLinePerProblem(t *testing.T) {
	list := loadErrors(t, "version: 1\ntools:\n  - {name: t, bin: /bin/echo, bare: {positionals: {max: 1, pattern: \"(\\n\"}}}\n")
	require.Len(t, list, 1, describe(list))
	assert.Contains(t, list[0].Message, "does not compile")
	assert.NotContains(t, list.Error(), "\n")
}

func TestDescriptionsAndAnnotations(t *testing.T) {
	l, err := config.LoadFile(filepath.Join(testdataDir, "modes.yaml"))
	require.NoError(t, err)
	specs := make(map[string]execgate.CommandSpec)
	for _, s := range l.Allowlist.Specs() {
		specs[s.Name] = s
	}
	require.Len(t, specs, 7)

	log := specs["repo.log"]
	assert.Equal(t, "Show recent commits", log.Description)
	require.NotNil(t, log.Hints.ReadOnly)
	assert.True(t, *log.Hints.ReadOnly)
	require.NotNil(t, log.Hints.OpenWorld)
	assert.False(t, *log.Hints.OpenWorld)
	assert.Nil(t, log.Hints.Destructive, "an annotation left out claims nothing")

	assert.Empty(t, specs["repo.status"].Description, "a subcommand does not take the tool's description")
	assert.Equal(t, "Echo standard input", specs["cat.run"].Description, "a bare entry takes the tool's description")
	assert.Equal(t, "2024-06", specs["svc"].PolicyVersion)
	assert.True(t, specs["svc"].Dispatch)
	assert.Equal(t, execgate.ActionAllow, specs["svc"].Floor)
	assert.Equal(t, execgate.ActionRequireApproval, specs["pkg"].Floor)
	assert.Equal(t, execgate.ActionAllow, specs["pkg.list"].Floor, "a declared subcommand has no floor")
	assert.Equal(t, 8<<10, specs["cat.run"].MaxOutput)

	p := execgate.NewProposer(l.Allowlist)
	prop, err := p.Check("utc-date.run", nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"-u"}, prop.Args)
	_, err = p.Check("utc-date.run", json.RawMessage(`{"args":["+%s"]}`))
	var ve *execgate.ValidationError
	assert.ErrorAs(t, err, &ve)
	_, err = p.Check("cat.run", json.RawMessage(`{"stdin":"`+strings.Repeat("x", 4<<10+1)+`"}`))
	assert.ErrorAs(t, err, &ve, "stdin over its max")
}

// TestHostileEnv_GitTransportsThatRunPrograms sets GIT_ALLOW_PROTOCOL in
// a tool's environment: a list that lets a URL reach a program (ext runs
// the command the URL spells out, any other name a remote helper found on
// PATH, an empty name the URL "::address") is refused at its value, as a
// hostile variable is, and without repeating it; a list of the transports
// git carries out itself, or -none, is not. Inheriting the variable, whose
// value is not known at load, is refused too.
func TestHostileEnv_GitTransportsThatRunPrograms(t *testing.T) {
	tool := func(env string) string {
		return "version: 1\ntools:\n  - name: t\n    bin: /bin/echo\n    bare: {}\n" + env
	}
	for _, c := range []struct {
		why, value string
		refused    bool
	}{
		{"ext runs the command a URL spells out", "ext", true},
		{"ext among others is still ext", "https:ext", true},
		{"any other name runs a remote helper found on PATH", "https:helper", true},
		{"an empty value allows the empty name", "", true},
		{"an empty name in the list allows it too", "https::ssh", true},
		{"a name differing in case is another name", "HTTPS", true},
		{"git's own transports are allowed", "file:git:ssh:http:https:ftp:ftps", false},
		{"-none allows no transport", "-none", false},
		{"_ allows no transport, and no repository can name a helper alias for it", "_", false},
	} {
		text := tool("    env: {GIT_ALLOW_PROTOCOL: '" + c.value + "'}\n")
		if !c.refused {
			mustLoad(t, text)
			continue
		}
		list := loadErrors(t, text)
		require.Len(t, list, 1, "%s: %s", c.why, describe(list))
		assert.Equal(t, "tools[0].env.GIT_ALLOW_PROTOCOL", list[0].Path, c.why)
		assert.Contains(t, list[0].Message, "runs a program a URL names", c.why)
		mustLoad(t, text+"    allow_hostile_env: true\n")
		def := "version: 1\ndefaults:\n  env: {GIT_ALLOW_PROTOCOL: '" + c.value + "'}\ntools:\n  - {name: t, bin: /bin/echo, bare: {}, allow_hostile_env: true}\n"
		list = loadErrors(t, def)
		require.Len(t, list, 1, "%s, in defaults: %s", c.why, describe(list))
		assert.Contains(t, list[0].Message, "refused in defaults", c.why)
	}
	list := loadErrors(t, tool("    env: {GIT_ALLOW_PROTOCOL: 'https:s3cr3t-name'}\n"))
	assert.NotContains(t, list.Error(), "s3cr3t-name", "the value is never repeated")
	list = loadErrors(t, tool("    inherit_env: [GIT_ALLOW_PROTOCOL]\n"))
	require.Len(t, list, 1, describe(list))
	assert.Equal(t, "tools[0].inherit_env[0]", list[0].Path)
	assert.Contains(t, list[0].Message, "not known here")
	mustLoad(t, tool("    inherit_env: [GIT_ALLOW_PROTOCOL]\n    allow_hostile_env: true\n"))
}
