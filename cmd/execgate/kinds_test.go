package main

import (
	"bytes"
	"context"
	"encoding/json"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit"
	"github.com/execgate/execgate/mcpserver"
)

// TestSameTruth_OneRefusalVocabularyOnEverySurface makes the same
// refused call on every surface of the binary (the HTTP API, MCP, execgate
// run, explain) and checks that each names the same kind, and that the
// audit trail records that kind for each.
//
// Invariant 14 of DESIGN.md.
func TestSameTruth_OneRefusalVocabularyOnEverySurface(t *testing.T) {
	const principal = "ci-bot" // the caller token's principal
	cases := []struct {
		why   string
		tool  string
		input string
		kind  string
	}{
		{"a name no command serves is not_found", "rm.run", `{}`, execgate.ErrorKindNotFound},
		{"input the schema refuses is validation", "echo.run", `{"args":["a;b"]}`, execgate.ErrorKindValidation},
		{"a field the schema does not know is validation", "echo.run", `{"argz":[]}`, execgate.ErrorKindValidation},
		{"a call the policy denies is policy", "forbidden.run", `{}`, execgate.ErrorKindPolicy},
	}
	f := newAuditedAPI(t)
	ms, err := mcpserver.New(f.gate.x, mcpserver.Options{Principal: principal, Allowlist: f.gate.loaded.Allowlist})
	require.NoError(t, err)
	cs := connectMCP(t, ms)
	configPath := writeFile(t, "tools.yaml", testConfig)

	lastKind := func(t *testing.T) string {
		t.Helper()
		lines := f.lines(t)
		require.NotEmpty(t, lines)
		var e audit.Entry
		require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &e))
		return e.Error
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			got := map[string]string{}

			resp, r := httpCall(t, f, c.tool, c.input)
			require.NotNil(t, r.Error)
			assert.GreaterOrEqual(t, resp.StatusCode, 400)
			got["HTTP API"] = r.Error.Kind
			got["audit trail, after the HTTP API"] = lastKind(t)

			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcpserver.ToolName(c.tool), Arguments: json.RawMessage(c.input)})
			require.NoError(t, err)
			var st mcpserver.CallStatus
			b, err := json.Marshal(res.StructuredContent)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &st))
			got["MCP"] = st.Kind
			got["audit trail, after MCP"] = lastKind(t)

			code, _, stderr := runCLI(t, "", "run", "--config", configPath, "--principal", principal, c.tool, c.input)
			assert.Equal(t, exitFailed, code)
			var body refusalBody
			require.NoError(t, json.Unmarshal([]byte(stderr), &body), stderr)
			require.NotNil(t, body.Error)
			got["execgate run"] = body.Error.Kind

			ex := explain(context.Background(), f.gate.loaded, c.tool, principal, json.RawMessage(c.input))
			assert.Equal(t, verdictRefused, ex.Verdict)
			got["explain"] = ex.Kind

			for surface, kind := range got {
				assert.Equal(t, c.kind, kind, surface)
			}
		})
	}
	assert.Zero(t, f.rec.Count(), "nothing ran")
}

// httpCall makes a call through the HTTP API of f with the caller token.
func httpCall(t *testing.T, f *auditedAPI, name, input string) (*http.Response, response) {
	t.Helper()
	req, err := http.NewRequest("POST", f.srv.URL+"/v1/tools/"+name, strings.NewReader(input))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+callerToken)
	resp, err := f.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var r response
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	return resp, r
}

// connectMCP connects an MCP client to ms in this process.
func connectMCP(t *testing.T, ms *mcpserver.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := ms.MCPServer().Connect(ctx, st, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return cs
}

// TestBinary_ImportsNoTestDouble checks that no file of the binary but its
// tests imports execgatetest: the binary decides calls with the gate
// itself (Executor.Decide), never with a stand-in for processes.
func TestBinary_ImportsNoTestDouble(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			assert.NotEqual(t, "github.com/execgate/execgate/execgatetest", path, "%s imports the test double", name)
		}
	}
	// And nothing the binary links imports it either.
	if testing.Short() {
		return
	}
	out, err := goList(t, "-deps", ".")
	require.NoError(t, err, "%s", out)
	assert.NotContains(t, strings.Fields(string(out)), "github.com/execgate/execgate/execgatetest")
}

// goList runs go list with args in this package's directory.
func goList(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := goCommand(append([]string{"list"}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// goCommand is the go tool of the toolchain running the tests.
func goCommand(args ...string) *exec.Cmd {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	return exec.Command(goTool, args...)
}
