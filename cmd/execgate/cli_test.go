package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

func TestHelp_EveryCommand(t *testing.T) {
	code, out, _ := runCLI(t, "", "help")
	require.Equal(t, exitOK, code)
	for _, cmd := range commands {
		assert.Contains(t, out, "\t"+cmd.name+" ", "execgate help lists %s", cmd.name)

		code, help, errOut := runCLI(t, "", "help", cmd.name)
		require.Equal(t, exitOK, code, errOut)
		code, dashH, _ := runCLI(t, "", cmd.name, "-h")
		require.Equal(t, exitOK, code)
		assert.Equal(t, help, dashH)
		assert.Contains(t, help, "Usage:")
		if cmd.name != "version" {
			assert.Contains(t, help, "Exit codes:", "%s documents its exit codes", cmd.name)
		}
		fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
		cmd.setup(fs)
		fs.VisitAll(func(f *flag.Flag) {
			assert.Contains(t, help, "-"+f.Name, "%s -h shows --%s", cmd.name, f.Name)
		})
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"help", "frobnicate"},
		{"check"},
		{"check", "--config"},
		{"check", "--nope", "x"},
		{"run", "--config", "x.yaml"},
		{"run", "--config", "x.yaml", "a", "{}", "extra"},
		{"tools"},
		{"serve"},
		{"serve", "--config", "x.yaml", "--approvals", "maybe"},
		{"serve", "--config", "x.yaml", "--http", "127.0.0.1:0", "--principal", "p"},
		{"serve", "--config", "x.yaml", "--insecure"},
		{"audit", "check", "x"},
		{"token", "extra"},
	} {
		code, out, errOut := runCLI(t, "", args...)
		assert.Equal(t, exitUsage, code, "%q", args)
		assert.Empty(t, out, "%q: errors go to stderr", args)
		assert.NotEmpty(t, errOut, "%q", args)
	}
}

func TestCheck_Valid(t *testing.T) {
	path := writeFile(t, "tools.yaml", testConfig)
	code, out, errOut := runCLI(t, "", "check", "--config", path)
	require.Equal(t, exitOK, code, errOut)
	assert.Empty(t, errOut)
	assert.Contains(t, out, path+": ok: 3 tools, 3 commands")
	assert.Regexp(t, `(?m)^  echo +bare +echo\.run$`, out)
	assert.Regexp(t, `(?m)^  deploy +simple +deploy \(dispatcher: deploy\.<subcommand>, default_action require_approval\)$`, out)
	assert.Contains(t, out, "everyone: principal *, 3 rules")
	assert.Contains(t, out, "server: stdio principal local-agent; 1 caller tokens (ci-bot); 1 approver tokens (alice)")
}

func TestCheck_InvalidPrintsEveryProblemWithItsLine(t *testing.T) {
	path := writeFile(t, "bad.yaml", `version: 1
tools:
  - name: echo
    bin: /bin/echo
    timeout: 30
    binary: /bin/cat
server:
  tokens: [{principal: ci-bot, sha256: my-plain-token}]
`)
	code, out, errOut := runCLI(t, "", "check", "--config", path)
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	require.Len(t, lines, 4, errOut)
	assert.Equal(t, path+":5:14: tools[0].timeout: a duration needs a unit, such as 30s, 2m or 1m30s", lines[0])
	assert.True(t, strings.HasPrefix(lines[1], path+":6:5: tools[0].binary: unknown key"), lines[1])
	assert.True(t, strings.HasPrefix(lines[2], path+":8:40: server.tokens[0].sha256: must be the token's SHA-256"), lines[2])
	assert.Equal(t, "execgate check: the configuration has 3 problems", lines[3])
	assert.NotContains(t, errOut, "my-plain-token", "a value that may be a token is never printed")
}

func TestCheck_MissingFile(t *testing.T) {
	code, out, errOut := runCLI(t, "", "check", "--config", filepath.Join(t.TempDir(), "nope.yaml"))
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "no such file")
}

func TestRun_PrintsTheResult(t *testing.T) {
	path := writeFile(t, "tools.yaml", testConfig)
	code, out, errOut := runCLI(t, "", "run", "--config", path, "echo.run", `{"args":["hello","world"]}`)
	require.Equal(t, exitOK, code, errOut)
	assert.Empty(t, errOut)
	var r execgate.Result
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	assert.Equal(t, "echo.run", r.Name)
	assert.Equal(t, "/bin/echo", r.Command)
	assert.Equal(t, []string{"hello", "world"}, r.Args)
	assert.Equal(t, "hello world\n", r.Stdout)
	assert.True(t, r.OK)
	assert.Equal(t, execgate.TerminationExit, r.Termination)
}

func TestRun_InputFromStdin(t *testing.T) {
	path := writeFile(t, "tools.yaml", testConfig)
	code, out, errOut := runCLI(t, `{"args":["from-stdin"]}`, "run", "--config", path, "echo.run", "-")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, `"stdout": "from-stdin\n"`)
}

func TestRun_Refusals(t *testing.T) {
	path := writeFile(t, "tools.yaml", testConfig)
	for _, tc := range []struct {
		name, input, kind, rule string
	}{
		{"rm.run", `{}`, execgate.ErrorKindNotFound, ""},
		{"echo.run", `{"args":["a;b"]}`, execgate.ErrorKindValidation, ""},
		{"echo.run", `{"argz":[]}`, execgate.ErrorKindValidation, ""},
		{"forbidden.run", ``, execgate.ErrorKindPolicy, "everyone/never"},
		{"deploy.prod", ``, execgate.ErrorKindPolicy, "everyone/deploys"},
	} {
		args := []string{"run", "--config", path, tc.name}
		if tc.input != "" {
			args = append(args, tc.input)
		}
		code, out, errOut := runCLI(t, "", args...)
		assert.Equal(t, exitFailed, code, "%s %s", tc.name, tc.input)
		assert.Empty(t, out, "nothing ran, so there is no Result")
		var body refusalBody
		require.NoError(t, json.Unmarshal([]byte(errOut), &body), errOut)
		require.NotNil(t, body.Error)
		assert.Equal(t, tc.kind, body.Error.Kind, errOut)
		assert.NotEmpty(t, body.Error.Message)
		assert.NotEmpty(t, body.TraceID)
		if tc.rule != "" {
			require.NotNil(t, body.Policy, errOut)
			assert.Equal(t, tc.rule, body.Policy.Rule)
		}
	}
}

// TestRun_NonZeroExitIsExitCode1 pins that a command that ran and failed
// makes run exit 1, with its Result, and its own exit code, on stdout.
func TestRun_NonZeroExitIsExitCode1(t *testing.T) {
	path := writeFile(t, "tools.yaml", `version: 1
tools: [{name: fail, bin: /bin/false, bare: {}}]
`)
	code, out, errOut := runCLI(t, "", "run", "--config", path, "fail.run")
	assert.Equal(t, exitFailed, code, errOut)
	var r execgate.Result
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	assert.Equal(t, 1, r.ExitCode)
	assert.False(t, r.OK)
}

func TestRun_PrincipalFlagOverridesTheConfig(t *testing.T) {
	path := writeFile(t, "tools.yaml", strings.Replace(testConfig, `principal: "*"`, `principal: local-agent`, 1))
	code, _, errOut := runCLI(t, "", "run", "--config", path, "echo.run", `{"args":["x"]}`)
	require.Equal(t, exitOK, code, errOut)
	code, _, errOut = runCLI(t, "", "run", "--config", path, "--principal", "someone-else", "echo.run", `{"args":["x"]}`)
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, errOut, `"rule": "default"`, "no policy governs someone-else")
}

func TestRun_AuditFileAndVerify(t *testing.T) {
	path := writeFile(t, "tools.yaml", testConfig)
	trail := filepath.Join(t.TempDir(), "audit.jsonl")
	code, _, errOut := runCLI(t, "", "run", "--config", path, "--audit", trail, "echo.run", `{"args":["one"]}`)
	require.Equal(t, exitOK, code, errOut)
	code, _, _ = runCLI(t, "", "run", "--config", path, "--audit", trail, "forbidden.run")
	require.Equal(t, exitFailed, code)

	code, out, errOut := runCLI(t, "", "audit", "verify", trail)
	require.Equal(t, exitOK, code, errOut)
	assert.Regexp(t, `: ok: 3 entries, head seq 3 sha256 [0-9a-f]{64}\n$`, out)

	data, err := os.ReadFile(trail)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(trail, []byte(strings.Replace(string(data), `"one"`, `"two"`, 1)), 0o600))
	code, out, errOut = runCLI(t, "", "audit", "verify", trail)
	assert.Equal(t, exitFailed, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "broken: audit: line 1")
}

func TestTools_ListsSchemas(t *testing.T) {
	path := writeFile(t, "tools.yaml", testConfig)
	code, out, errOut := runCLI(t, "", "tools", "--config", path)
	require.Equal(t, exitOK, code, errOut)
	var list toolList
	require.NoError(t, json.Unmarshal([]byte(out), &list), out)
	names := make([]string, 0, len(list.Tools))
	byName := map[string]toolInfo{}
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		byName[tool.Name] = tool
		var schema map[string]any
		require.NoError(t, json.Unmarshal(tool.InputSchema, &schema), tool.Name)
		assert.Equal(t, "object", schema["type"], tool.Name)
	}
	assert.Equal(t, []string{"deploy", "echo.run", "forbidden.run"}, names)
	echo := byName["echo.run"]
	assert.Equal(t, "Print the arguments.", echo.Description)
	require.NotNil(t, echo.Annotations)
	assert.Equal(t, true, *echo.Annotations.ReadOnly)
	assert.Contains(t, string(echo.InputSchema), `"args"`)
	deploy := byName["deploy"]
	assert.True(t, deploy.Dispatch)
	assert.Equal(t, "deploy.<subcommand>", deploy.CallAs)
	assert.Equal(t, execgate.ActionRequireApproval, deploy.DefaultAction)
	assert.Contains(t, out, `"mcp_name": "echo_run"`, "the MCP name is in the JSON")
}

func TestTools_ShowsTheMCPNames(t *testing.T) {
	path := writeFile(t, "tools.yaml", testConfig)
	collide := writeFile(t, "collide.yaml", collidingConfig)
	for _, tc := range []struct {
		about string
		args  []string
		want  map[string]string // mcp_name by name
		warn  string
	}{
		{"by default, each '.' is made '_', as serve lists the tools",
			[]string{"--config", path}, map[string]string{"echo.run": "echo_run", "forbidden.run": "forbidden_run", "deploy": "deploy"}, ""},
		{"with --logical-names, the names themselves, as serve --logical-names lists them",
			[]string{"--config", path, "--logical-names"}, map[string]string{"echo.run": "echo.run", "forbidden.run": "forbidden.run", "deploy": "deploy"}, ""},
		{"two commands listed alike are named on stderr",
			[]string{"--config", collide}, map[string]string{"echo.run": "echo_run", "echo_run": "echo_run"},
			`"echo.run" and "echo_run" would both be listed as the MCP tool "echo_run"`},
		{"with --logical-names, they are not listed alike",
			[]string{"--config", collide, "--logical-names"}, map[string]string{"echo.run": "echo.run", "echo_run": "echo_run"}, ""},
	} {
		code, out, errOut := runCLI(t, "", append([]string{"tools"}, tc.args...)...)
		require.Equal(t, exitOK, code, "%s: %s", tc.about, errOut)
		var list toolList
		require.NoError(t, json.Unmarshal([]byte(out), &list), out)
		got := map[string]string{}
		for _, tool := range list.Tools {
			got[tool.Name] = tool.MCPName
		}
		assert.Equal(t, tc.want, got, tc.about)
		if tc.warn == "" {
			assert.Empty(t, errOut, tc.about)
		} else {
			assert.Contains(t, errOut, tc.warn, tc.about)
			assert.Contains(t, errOut, "--logical-names", tc.about)
		}
	}
}

// collidingConfig serves echo.run and the dispatcher echo_run, which are
// listed alike over MCP unless serve is given --logical-names.
const collidingConfig = `version: 1
defaults: {timeout: 10s, env: {PATH: /usr/bin:/bin}}
tools:
  - name: echo
    bin: /bin/echo
    description: Print the arguments.
    bare: {}
  - name: echo_run
    bin: /bin/echo
    description: Print a subcommand.
    default_action: human_approval
`

func TestServe_ToolNamesOverMCP(t *testing.T) {
	path := writeFile(t, "tools.yaml", testConfig)
	collide := writeFile(t, "collide.yaml", collidingConfig)
	for _, tc := range []struct {
		about string
		args  []string
		code  int
		says  []string
	}{
		{"two commands listed alike refuse the start, naming both and what to do",
			[]string{"--config", collide}, exitUsage,
			[]string{collide, `"echo.run" and "echo_run"`, `the MCP tool "echo_run"`, "rename one", "--logical-names"}},
		{"with --logical-names they are served",
			[]string{"--config", collide, "--logical-names"}, exitOK, []string{"serving 2 tools over MCP on stdio"}},
		{"--logical-names is for MCP, which --http does not serve",
			[]string{"--config", path, "--http", "127.0.0.1:0", "--logical-names"}, exitUsage,
			[]string{"--logical-names names the tools served over MCP", "takes a command's name and its MCP name alike"}},
	} {
		code, out, errOut := runCLI(t, "", append([]string{"serve"}, tc.args...)...)
		assert.Equal(t, tc.code, code, "%s: %s", tc.about, errOut)
		assert.Empty(t, out, tc.about)
		for _, want := range tc.says {
			assert.Contains(t, errOut, want, tc.about)
		}
	}
}

func TestServe_RefusesPlainHTTPOffLoopback(t *testing.T) {
	path := writeFile(t, "tools.yaml", testConfig)
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.1:8080", "example.com:8080"} {
		code, out, errOut := runCLI(t, "", "serve", "--config", path, "--http", addr)
		assert.Equal(t, exitUsage, code, addr)
		assert.Empty(t, out)
		assert.Contains(t, errOut, "is not a loopback address", addr)
	}
	code, _, errOut := runCLI(t, "", "serve", "--config", path, "--http", "0.0.0.0:0", "--tls-cert", "c.pem")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "--tls-cert and --tls-key go together")
	code, _, errOut = runCLI(t, "", "serve", "--config", path, "--http", "0.0.0.0:0", "--tls-cert", "nope.pem", "--tls-key", "nope.pem")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "loading the TLS certificate")
}

func TestCheckListen(t *testing.T) {
	for addr, want := range map[string]string{
		":8080":          "127.0.0.1:8080",
		"127.0.0.1:0":    "127.0.0.1:0",
		"127.1.2.3:9":    "127.1.2.3:9",
		"[::1]:8080":     "[::1]:8080",
		"localhost:8080": "localhost:8080",
	} {
		lc, err := checkListen(addr, "", "", false)
		require.NoError(t, err, addr)
		assert.Equal(t, want, lc.addr)
		assert.Nil(t, lc.tls)
	}
	lc, err := checkListen("0.0.0.0:8080", "", "", true)
	require.NoError(t, err, "--insecure allows it")
	assert.Equal(t, "0.0.0.0:8080", lc.addr)
	for _, addr := range []string{"8080", "host", ":http", "127.0.0.1:99999"} {
		_, err := checkListen(addr, "", "", false)
		assert.Error(t, err, addr)
	}
}

func TestServe_HTTPNeedsTokens(t *testing.T) {
	path := writeFile(t, "tools.yaml", "version: 1\ntools: [{name: echo, bin: /bin/echo, bare: {}}]\n")
	code, _, errOut := runCLI(t, "", "serve", "--config", path, "--http", "127.0.0.1:0")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "lists no tokens")
}

func TestToken(t *testing.T) {
	code, out, errOut := runCLI(t, "", "token", "--principal", "ci-bot")
	require.Equal(t, exitOK, code, errOut)
	m := regexp.MustCompile(`^token: (\S+)\nentry: \{principal: "ci-bot", sha256: "([0-9a-f]{64})"\}\n$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	assert.Equal(t, tokenHash(m[1]), m[2])
	assert.GreaterOrEqual(t, len(m[1]), 26)

	code, out, _ = runCLI(t, " existing-token\n", "token", "--stdin", "--principal", "alice")
	require.Equal(t, exitOK, code)
	assert.Equal(t, `entry: {principal: "alice", sha256: "`+tokenHash("existing-token")+"\"}\n", out)

	// The entry it prints is what the server section reads.
	path := writeFile(t, "tools.yaml", "version: 1\ntools: []\nserver:\n  tokens:\n    - "+strings.TrimPrefix(strings.TrimSpace(out), "entry: ")+"\n")
	code, _, errOut = runCLI(t, "", "check", "--config", path)
	assert.Equal(t, exitOK, code, errOut)
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "", "version")
	assert.Equal(t, exitOK, code)
	assert.True(t, strings.HasPrefix(out, "execgate "), out)
}

func TestCheckListen_TLSAllowsAnyAddress(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "execgate test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile := writeFile(t, "cert.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	keyFile := writeFile(t, "key.pem", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))

	lc, err := checkListen("0.0.0.0:8443", certFile, keyFile, false)
	require.NoError(t, err)
	require.NotNil(t, lc.tls)
	assert.Equal(t, uint16(tls.VersionTLS12), lc.tls.MinVersion)
}

// confineCheckConfig has one tool whose confinement is required, one
// that is best effort, and one with network left on.
const confineCheckConfig = `version: 1
tools:
  - name: strictcat
    bin: /bin/cat
    description: Print files, confined.
    commands:
      show: {description: Print a file., confine: {read: [/usr]}}
      loose: {description: Print a file., confine: {read: [/usr], require: false}}
  - name: loose
    bin: /bin/cat
    description: Print files, confined if the kernel can.
    confine: {read: [/usr], require: false}
  - name: online
    bin: /bin/cat
    description: Print files, with the network on.
    confine: {network: true}
`

func TestCheck_ReportsKernelSupport(t *testing.T) {
	path := writeFile(t, "confine.yaml", confineCheckConfig)
	for _, tc := range []struct {
		name     string
		k        kernelSupport
		line     string
		warnings []string
	}{{
		name: "everything",
		k:    kernelSupport{landlockABI: 6, minABI: 3, userns: true},
		line: "confinement: Landlock ABI 6 (confine paths enforced); user namespaces available (network: false, and the PID and mount namespaces, enforced)",
	}, {
		name: "no user namespaces",
		k:    kernelSupport{landlockABI: 4, minABI: 3, usernsWhy: "user.max_user_namespaces is 0"},
		line: "confinement: Landlock ABI 4 (confine paths enforced); no user namespaces: user.max_user_namespaces is 0 (network: false, and the PID and mount namespaces, cannot be enforced)",
		warnings: []string{
			"execgate check: warning: tool strictcat requires confinement this kernel cannot give: network: false (user namespaces), the PID and mount namespaces (user namespaces, or running as root); its calls will fail to start here (set require: false to run them less confined)",
			"execgate check: warning: tool online requires confinement this kernel cannot give: the PID and mount namespaces (user namespaces, or running as root); its calls will fail to start here (set require: false to run them less confined)",
		},
	}, {
		name: "no user namespaces, as root",
		k:    kernelSupport{landlockABI: 4, minABI: 3, usernsWhy: "user.max_user_namespaces is 0", root: true},
		line: "confinement: Landlock ABI 4 (confine paths enforced); no user namespaces: user.max_user_namespaces is 0 (network: false cannot be enforced; the PID and mount namespaces are, as root)",
		warnings: []string{
			"execgate check: warning: tool strictcat requires confinement this kernel cannot give: network: false (user namespaces); its calls will fail to start here (set require: false to run them less confined)",
		},
	}, {
		name: "old Landlock",
		k:    kernelSupport{landlockABI: 2, minABI: 3, userns: true},
		line: "confinement: Landlock ABI 2 (too old: confine paths need ABI 3 or later); user namespaces available (network: false, and the PID and mount namespaces, enforced)",
		warnings: []string{
			"execgate check: warning: tool strictcat requires confinement this kernel cannot give: filesystem rules (Landlock ABI 3 or later); its calls will fail to start here (set require: false to run them less confined)",
			"execgate check: warning: tool online requires confinement this kernel cannot give: filesystem rules (Landlock ABI 3 or later); its calls will fail to start here (set require: false to run them less confined)",
		},
	}, {
		name: "nothing",
		k:    kernelSupport{minABI: 3, usernsWhy: "kernel.unprivileged_userns_clone is 0"},
		line: "confinement: no Landlock (confine paths cannot be enforced; ABI 3 or later needed); no user namespaces: kernel.unprivileged_userns_clone is 0 (network: false, and the PID and mount namespaces, cannot be enforced)",
		warnings: []string{
			"execgate check: warning: tool strictcat requires confinement this kernel cannot give: filesystem rules (Landlock ABI 3 or later), network: false (user namespaces), the PID and mount namespaces (user namespaces, or running as root); its calls will fail to start here (set require: false to run them less confined)",
			"execgate check: warning: tool online requires confinement this kernel cannot give: filesystem rules (Landlock ABI 3 or later), the PID and mount namespaces (user namespaces, or running as root); its calls will fail to start here (set require: false to run them less confined)",
		},
	}, {
		name: "other platform",
		k:    kernelSupport{os: "darwin"},
		line: "confinement: not supported on darwin (confine with require: true refuses every call)",
		warnings: []string{
			"execgate check: warning: tool strictcat requires confinement this kernel cannot give: confinement (not supported on darwin); its calls will fail to start here (set require: false to run them less confined)",
			"execgate check: warning: tool online requires confinement this kernel cannot give: confinement (not supported on darwin); its calls will fail to start here (set require: false to run them less confined)",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			saved := probeKernel
			probeKernel = func() kernelSupport { return tc.k }
			t.Cleanup(func() { probeKernel = saved })
			code, out, errOut := runCLI(t, "", "check", "--config", path)
			require.Equal(t, exitOK, code, errOut)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			assert.Equal(t, tc.line, lines[len(lines)-1], "the kernel's line comes last, after the summary")
			assert.True(t, strings.HasPrefix(lines[0], path+": ok: 3 tools"), out)
			var warnings []string
			if errOut != "" {
				warnings = strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
			}
			assert.Equal(t, tc.warnings, warnings)
		})
	}
}

// TestCheck_ProbesThisKernel: without a stand-in, check reports the real
// kernel in the same format.
func TestCheck_ProbesThisKernel(t *testing.T) {
	path := writeFile(t, "tools.yaml", testConfig)
	code, out, errOut := runCLI(t, "", "check", "--config", path)
	require.Equal(t, exitOK, code, errOut)
	assert.Regexp(t, `(?m)^confinement: (no Landlock|Landlock ABI \d+|not supported on \w+)[^\n]*$`, out)
}
