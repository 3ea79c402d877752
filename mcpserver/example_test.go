package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/execgatetest"
	"github.com/execgate/execgate/mcpserver"
)

// An Executor served as MCP tools, driven by an SDK client over an
// in-memory transport. A real server would call
// srv.Run(ctx, mcpserver.StdioTransport(os.Stdin, os.Stdout)) instead.
func ExampleNew() {
	ctx := context.Background()
	allow, err := execgate.NewAllowlist(execgate.CommandSpec{
		Name:        "git.status",
		Command:     "/bin/echo", // stands in for git: the Recorder starts nothing
		Args:        execgate.Fixed("status", "--short"),
		Description: "Show the working tree status.",
		Hints:       execgate.Hints{ReadOnly: new(true)},
	})
	if err != nil {
		panic(err)
	}
	rec := execgatetest.NewRecorder().On("git.status", execgate.Outcome{Stdout: []byte(" M main.go\n")})
	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow, ExecFn: rec.Exec})
	if err != nil {
		panic(err)
	}
	srv, err := mcpserver.New(x, mcpserver.Options{Allowlist: allow, Principal: "local-agent"})
	if err != nil {
		panic(err)
	}

	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	ss, err := srv.MCPServer().Connect(ctx, serverEnd, nil)
	if err != nil {
		panic(err)
	}
	defer ss.Wait()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent"}, nil).Connect(ctx, clientEnd, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()

	// The spec "git.status" is listed as the tool "git_status" (see
	// mcpserver.ToolName); the gate, its policy and its audit trail see
	// "git.status".
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		panic(err)
	}
	for _, t := range tools.Tools {
		fmt.Printf("tool %s: %s (read-only: %v)\n", t.Name, t.Description, t.Annotations.ReadOnlyHint)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "git_status", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		panic(err)
	}
	fmt.Print(res.Content[0].(*mcp.TextContent).Text)

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "git_status", Arguments: json.RawMessage(`{"all":true}`)})
	if err != nil {
		panic(err)
	}
	fmt.Println("error:", res.IsError, res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// tool git_status: Show the working tree status. (read-only: true)
	// git.status exited with status 0.
	// stdout:
	//  M main.go
	// stderr: (empty)
	// error: true execgate: invalid input for "git.status": this command takes no arguments; send {} or nothing; nothing ran.
}
