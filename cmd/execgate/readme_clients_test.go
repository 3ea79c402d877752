package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeBlock is a fenced code block of README.md, with its info string
// and the paragraph before it, which says what it is for.
type readmeBlock struct {
	lang, body, before string
}

// readmeBlocks returns the fenced code blocks of the repository's
// README.md, and the README's text.
func readmeBlocks(t *testing.T) ([]readmeBlock, string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	var (
		out   []readmeBlock
		cur   *readmeBlock
		prose []string
	)
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &readmeBlock{lang: strings.TrimPrefix(line, "```"), before: strings.Join(prose, "\n")}
		case cur != nil && line == "```":
			out = append(out, *cur)
			cur, prose = nil, nil
		case cur != nil:
			cur.body += line + "\n"
		case strings.TrimSpace(line) == "":
			if len(prose) > 0 && prose[len(prose)-1] != "" {
				prose = append(prose, "")
			}
		default:
			if len(prose) > 0 && prose[len(prose)-1] == "" {
				prose = nil
			}
			prose = append(prose, line)
		}
	}
	require.Nil(t, cur, "README.md ends inside a code block")
	return out, string(data)
}

// clientServer is one server of an MCP client's configuration file, in
// the fields Claude Desktop, Claude Code, Cursor and VS Code document.
type clientServer struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// clientFile is an MCP client's configuration file: mcpServers (Claude
// Desktop, Claude Code's .mcp.json, Cursor) or servers and inputs (VS
// Code's .vscode/mcp.json).
type clientFile struct {
	MCPServers map[string]clientServer `json:"mcpServers"`
	Servers    map[string]clientServer `json:"servers"`
	Inputs     []struct {
		Type        string `json:"type"`
		ID          string `json:"id"`
		Description string `json:"description"`
		Password    bool   `json:"password"`
	} `json:"inputs"`
}

// clientEntry is one server a README block configures, as a client
// would start or reach it.
type clientEntry struct {
	where   string   // the block, for messages
	command string   // stdio: the program
	args    []string // stdio: its arguments
	url     string   // Streamable HTTP: the endpoint
	auth    string   // Streamable HTTP: the Authorization header, with its variable
}

// readmePlaceholders are what README blocks hold in place of the path
// of a configuration, which only a reader knows.
var readmePlaceholders = []string{"/path/to/tools.yaml", "${workspaceFolder}/tools.yaml"}

// tokenVariable matches the spellings of the token's variable each client
// expands: the shell's and Claude Code's, Cursor's, VS Code's input.
var tokenVariable = regexp.MustCompile(`^Bearer (\$EXECGATE_TOKEN|\$\{EXECGATE_TOKEN\}|\$\{env:EXECGATE_TOKEN\}|\$\{input:([a-z-]+)\})$`)

// TestREADME_ClientBlocks: every block of README.md that configures an
// MCP client, the mcp.json files of Claude Desktop, Claude Code, Cursor
// and VS Code and the claude mcp add lines, is what that client documents
// (mcpServers, or servers with a type and inputs for VS Code's
// .vscode/mcp.json; the variable syntax of each) and names the binary's
// real flags: each stdio server is started as the block says, with the
// configuration in place of its path, and each URL is served by serve
// --mcp-http as the README starts it, with a token in place of its
// variable; the official Go SDK's client connects to each and lists the
// tools. The README holds no path of a machine.
func TestREADME_ClientBlocks(t *testing.T) {
	blocks, text := readmeBlocks(t)
	for _, p := range []string{"/tmp/", "/home/", "/Users/", "/root/"} {
		assert.NotContains(t, text, p, "README.md holds a path of a machine")
	}
	var entries []clientEntry
	kinds := map[string]bool{}
	for i, b := range blocks {
		where := fmt.Sprintf("README.md block %d, after %q", i+1, lastLine(b.before))
		switch {
		case b.lang == "json" && (strings.Contains(b.body, `"mcpServers"`) || strings.Contains(b.body, `"servers"`)):
			got := clientEntries(t, where, b)
			entries = append(entries, got...)
			kinds[clientOf(b.before)] = true
		case b.lang == "sh":
			for _, line := range strings.Split(b.body, "\n") {
				if strings.HasPrefix(line, "claude mcp add ") {
					entries = append(entries, claudeAdd(t, where, line))
					kinds["Claude Code"] = true
				}
			}
		}
	}
	for _, k := range []string{"Claude Code", "Claude Desktop", "Cursor", "VS Code"} {
		assert.True(t, kinds[k], "README.md has a block for %s", k)
	}
	var stdio, remote int
	for _, e := range entries {
		if e.url == "" {
			stdio++
		} else {
			remote++
		}
	}
	require.GreaterOrEqual(t, stdio, 4, "the stdio blocks")
	require.GreaterOrEqual(t, remote, 4, "the Streamable HTTP blocks")

	config := writeFile(t, "tools.yaml", testConfig)
	for _, e := range entries {
		if e.url != "" {
			continue
		}
		assert.Equal(t, "execgate", filepath.Base(e.command), "%s: the command is the binary", e.where)
		args := substitute(e.args, config)
		require.NotEmpty(t, args, e.where)
		require.Equal(t, "serve", args[0], e.where)
		checkServeFlags(t, e.where, args[1:])
		cs, stderr := startMCP(t, os.Environ(), args[1:]...)
		assert.Equal(t, []string{"deploy", "echo_run"}, toolNames(t, cs), "%s; stderr: %s", e.where, stderr)
	}

	serveLine := regexp.MustCompile("`execgate serve --config \\S+ --mcp-http (\\S+)`").FindStringSubmatch(strings.ReplaceAll(text, "\n", " "))
	require.NotNil(t, serveLine, "the README starts serve --mcp-http")
	p := startServe(t, "--config", config, "--mcp-http", "127.0.0.1:0")
	base := p.stderr.waitFor(t, mcpHTTPAddrRe)
	for _, e := range entries {
		if e.url == "" {
			continue
		}
		u, err := url.Parse(e.url)
		require.NoError(t, err, e.where)
		assert.Equal(t, "http://"+serveLine[1]+mcpPath, e.url, "%s: the address the README serves at, and the path", e.where)
		m := tokenVariable.FindStringSubmatch(e.auth)
		require.NotNil(t, m, "%s: Authorization: Bearer and the token's variable, not %q", e.where, e.auth)
		endpoint := base + u.Path
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		client := mcp.NewClient(&mcp.Implementation{Name: "readme", Version: "v0"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: withHeader{"Authorization", strings.Replace(e.auth, m[1], callerToken, 1)}}}, nil)
		cancel()
		require.NoError(t, err, e.where)
		assert.Equal(t, []string{"deploy", "echo_run"}, toolNames(t, cs), e.where)
		require.NoError(t, cs.Close())
	}
	p.stop(t)
}

// clientEntries checks a README block that is an MCP client's
// configuration file and returns its servers.
func clientEntries(t *testing.T, where string, b readmeBlock) []clientEntry {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(b.body))
	dec.DisallowUnknownFields()
	var f clientFile
	require.NoError(t, dec.Decode(&f), "%s: valid JSON in the documented fields:\n%s", where, b.body)
	require.False(t, dec.More(), where)
	client := clientOf(b.before)
	servers := f.MCPServers
	if client == "VS Code" {
		assert.Contains(t, b.before, ".vscode/mcp.json", where)
		assert.Nil(t, f.MCPServers, "%s: VS Code takes servers, not mcpServers", where)
		servers = f.Servers
	} else {
		assert.Nil(t, f.Servers, "%s: %s takes mcpServers, not servers", where, client)
		assert.Nil(t, f.Inputs, where)
	}
	require.Len(t, servers, 1, where)
	var out []clientEntry
	for name, s := range servers {
		assert.Regexp(t, `^[a-zA-Z][a-zA-Z0-9_-]*$`, name, where)
		e := clientEntry{where: where, command: s.Command, args: s.Args, url: s.URL, auth: s.Headers["Authorization"]}
		require.NotEqual(t, s.Command == "", s.URL == "", "%s: a command or a url", where)
		switch {
		case s.URL != "":
			assert.Len(t, s.Headers, 1, "%s: the token's header only", where)
			assert.Contains(t, []string{"", "http"}, s.Type, where)
		default:
			assert.Empty(t, s.Headers, where)
			assert.Contains(t, []string{"", "stdio"}, s.Type, where)
		}
		switch client {
		case "VS Code":
			assert.NotEmpty(t, s.Type, "%s: VS Code wants each server's type", where)
			if m := tokenVariable.FindStringSubmatch(e.auth); m != nil {
				require.Len(t, f.Inputs, 1, "%s: the input the header names", where)
				in := f.Inputs[0]
				assert.Equal(t, m[2], in.ID, where)
				assert.Equal(t, "promptString", in.Type, where)
				assert.True(t, in.Password, "%s: the token is typed as a password", where)
			}
		case "Cursor":
			if e.auth != "" {
				assert.Contains(t, e.auth, "${env:", "%s: Cursor's variable syntax", where)
			}
		case "Claude Code":
			if e.auth != "" {
				assert.Contains(t, e.auth, "${EXECGATE_TOKEN}", "%s: Claude Code's variable syntax", where)
			}
		case "Claude Desktop":
			assert.True(t, filepath.IsAbs(s.Command), "%s: Claude Desktop starts it without your PATH", where)
		default:
			t.Errorf("%s: the paragraph before the block names no client: %q", where, b.before)
		}
		out = append(out, e)
	}
	return out
}

// clientOf names the client whose file the paragraph before a block
// describes: the last one it names.
func clientOf(before string) string {
	last, at := "", -1
	for _, c := range []string{"Claude Code", "Claude Desktop", "Cursor", "VS Code"} {
		if i := strings.LastIndex(before, c); i > at {
			last, at = c, i
		}
	}
	return last
}

// claudeAdd checks a README line "claude mcp add ..." against Claude
// Code's usage (claude mcp add [options] <name> <commandOrUrl> [args...])
// and returns the server it adds.
func claudeAdd(t *testing.T, where, line string) clientEntry {
	t.Helper()
	words := shellWords(t, line)[3:]
	e := clientEntry{where: where + ": " + line}
	transport := "stdio"
	for len(words) > 0 && strings.HasPrefix(words[0], "-") && words[0] != "--" {
		require.GreaterOrEqual(t, len(words), 2, e.where)
		switch words[0] {
		case "--transport", "-t":
			transport = words[1]
		case "--header", "-H":
			name, value, ok := strings.Cut(words[1], ": ")
			require.True(t, ok, e.where)
			require.Equal(t, "Authorization", name, e.where)
			e.auth = value
		case "--scope", "-s":
		default:
			t.Fatalf("%s: an option claude mcp add does not take: %s", e.where, words[0])
		}
		words = words[2:]
	}
	require.NotEmpty(t, words, "%s: a name", e.where)
	words = words[1:]
	if transport == "http" {
		require.Len(t, words, 3, "%s: a URL and its header", e.where)
		e.url = words[0]
		require.Equal(t, "--header", words[1], e.where)
		name, value, ok := strings.Cut(words[2], ": ")
		require.True(t, ok && name == "Authorization", e.where)
		e.auth = value
		return e
	}
	require.Equal(t, "stdio", transport, e.where)
	require.GreaterOrEqual(t, len(words), 2, e.where)
	require.Equal(t, "--", words[0], "%s: -- before the command", e.where)
	e.command, e.args = words[1], words[2:]
	return e
}

// shellWords splits a line of sh into its words, as sh would before it
// expands variables: unquoted white space separates, and double quotes
// keep what they enclose together.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var (
		out    []string
		cur    strings.Builder
		quoted bool
		inWord bool
	)
	for _, r := range line {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	require.False(t, quoted, "unbalanced quotes: %s", line)
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// substitute puts config in place of a block's configuration path. The
// command is the built binary, whatever the block calls it.
func substitute(args []string, config string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		for _, p := range readmePlaceholders {
			if a == p {
				a = config
			}
		}
		out[i] = a
	}
	return out
}

// checkServeFlags parses args as serve parses its flags, so that a block
// can name no flag serve does not have, nor an argument it refuses.
func checkServeFlags(t *testing.T, where string, args []string) {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	serveCmd.setup(fs)
	require.NoError(t, fs.Parse(args), "%s: %s", where, out.String())
	assert.Empty(t, fs.Args(), "%s: serve takes no arguments", where)
}

// lastLine is the last line of a paragraph.
func lastLine(p string) string {
	p = strings.TrimSpace(p)
	if i := strings.LastIndexByte(p, '\n'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// withHeader is an http.RoundTripper that sends one header.
type withHeader struct{ name, value string }

func (h withHeader) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set(h.name, h.value)
	return http.DefaultTransport.RoundTrip(req)
}

// claudeCodeDir holds the pinned version of Claude Code that
// TestREADME_ClaudeCode runs; "npm ci --prefix
// cmd/execgate/testdata/claudecode" installs it.
const claudeCodeDir = "testdata/claudecode"

// TestREADME_ClaudeCode tries the README's Claude Code lines and its
// .mcp.json block with Claude Code itself: in a home of its own, claude
// mcp add adds each server, and claude mcp list, which starts or reaches
// each one, reports it connected; with a wrong token, the URL fails to
// connect. It needs no API key. It runs the program EXECGATE_CLAUDE
// names, else the one installed in claudeCodeDir, else claude on PATH,
// and is skipped only where there is none of them and npm is not
// installed to install it.
func TestREADME_ClaudeCode(t *testing.T) {
	claude := os.Getenv("EXECGATE_CLAUDE")
	if claude == "" {
		pinned, _ := filepath.Abs(filepath.Join(claudeCodeDir, "node_modules", ".bin", "claude"))
		_, err := os.Stat(pinned)
		switch onPath, pathErr := exec.LookPath("claude"); {
		case err == nil:
			claude = pinned
		case pathErr == nil:
			claude = onPath
		default:
			if _, npmErr := exec.LookPath("npm"); npmErr != nil {
				t.Skip("Claude Code is not installed, nor npm to install it (set EXECGATE_CLAUDE to its claude program)")
			}
			t.Fatalf("Claude Code is not installed: run npm ci --prefix cmd/execgate/%s (%v)", claudeCodeDir, err)
		}
	}
	blocks, _ := readmeBlocks(t)
	var adds []string
	var projectFile string
	for _, b := range blocks {
		switch {
		case b.lang == "sh":
			for _, line := range strings.Split(b.body, "\n") {
				if strings.HasPrefix(line, "claude mcp add ") {
					adds = append(adds, line)
				}
			}
		case b.lang == "json" && clientOf(b.before) == "Claude Code" && strings.Contains(b.before, ".mcp.json"):
			projectFile = b.body
		}
	}
	require.Len(t, adds, 2, "a stdio line and a Streamable HTTP line")
	require.NotEmpty(t, projectFile)

	config := writeFile(t, "tools.yaml", testConfig)
	p := startServe(t, "--config", config, "--mcp-http", "127.0.0.1:0")
	base := p.stderr.waitFor(t, mcpHTTPAddrRe)
	defer p.stop(t)
	bin := filepath.Dir(binary(t))
	home, project := t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".claude"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(`{"enableAllProjectMcpServers": true}`), 0o600))
	run := func(token string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, claude, args...)
		cmd.Dir = project
		cmd.Env = append(os.Environ(), "HOME="+home, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "EXECGATE_TOKEN="+token)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "claude %s: %s", strings.Join(args, " "), out)
		return string(out)
	}
	addr := strings.TrimPrefix(base, "http://")
	for i, line := range adds {
		words := shellWords(t, strings.NewReplacer("127.0.0.1:8765", addr, "$EXECGATE_TOKEN", callerToken, "/path/to/tools.yaml", config).Replace(line))
		words[3+indexOfName(words[3:])] = fmt.Sprintf("readme-%d", i)
		run(callerToken, words[1:]...)
	}
	project2 := strings.NewReplacer("127.0.0.1:8765", addr, `"execgate"`, `"readme-project"`).Replace(projectFile)
	require.NoError(t, os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(project2), 0o600))

	out := run(callerToken, "mcp", "list")
	for _, name := range []string{"readme-0", "readme-1", "readme-project"} {
		assert.Regexp(t, `(?m)^`+name+`: .* - ✔ Connected$`, out)
	}
	out = run("wrong-token", "mcp", "list")
	// Later versions say why after the status, as 2.1.332 does.
	assert.Regexp(t, `(?m)^readme-project: .* - ✘ Failed to connect( .*)?$`, out, "the token comes from the environment")
}

// indexOfName returns the index, in the words after "claude mcp add", of
// the server's name: the first word that is no option or option value.
func indexOfName(words []string) int {
	for i := 0; i < len(words); i++ {
		if strings.HasPrefix(words[i], "-") {
			i++
			continue
		}
		return i
	}
	return len(words)
}
