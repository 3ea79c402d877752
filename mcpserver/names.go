package mcpserver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/execgate/execgate"
)

// MaxToolNameBytes is the longest name [ToolName] returns: the most that
// every mainstream MCP client accepts in a tool name.
const MaxToolNameBytes = 64

// toolNameHashDigits is how many hex digits of a SHA-256 end a name that
// [ToolName] shortens.
const toolNameHashDigits = 8

// ToolName returns the name under which a [Server] lists the command name
// (a spec's logical name, such as "git.log") unless [Options.LogicalNames]
// is set. The result matches ^[a-zA-Z0-9_-]{1,64}$, the tool names that
// Claude Desktop and the Anthropic API, GitHub Copilot CLI, Windsurf and
// OpenAI-backed clients accept, for every name a spec can have:
//
//   - ASCII letters (their case kept), digits, '_' and '-' are kept;
//   - each '.' becomes '_': "git.log" is listed as "git_log";
//   - a name still longer than [MaxToolNameBytes] (64) bytes is cut to its
//     first 55 bytes, followed by '-' and the first 8 hex digits of the
//     SHA-256 of the whole name as mapped so far, so that names which
//     share their first 55 bytes stay apart and the name is the same on
//     every start.
//
// Any other byte, which no spec's name holds, becomes '_' too. ToolName
// of "" is "". Two specs whose names map to the same tool name ("a.b" and
// "a_b") cannot be listed together: [New] and [Server.SetAllowlist]
// refuse them with a [*ToolNameCollisionError].
func ToolName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) <= MaxToolNameBytes {
		return string(b)
	}
	sum := sha256.Sum256(b)
	keep := MaxToolNameBytes - 1 - toolNameHashDigits
	return string(b[:keep]) + "-" + hex.EncodeToString(sum[:])[:toolNameHashDigits]
}

// ToolNameCollisionError reports two specs of an allowlist that would be
// listed under the same tool name by [ToolName], so that a client could
// not tell them apart.
type ToolNameCollisionError struct {
	// Tool is the tool name both would be listed under.
	Tool string
	// Names are the logical names of the two specs, sorted.
	Names [2]string
}

// Error implements error.
func (e *ToolNameCollisionError) Error() string {
	return fmt.Sprintf("mcpserver: the commands %q and %q would both be listed as the tool %q (MCP clients take only letters, digits, '_' and '-' in tool names); "+
		"rename one of them, or list tools under their logical names (Options.LogicalNames) for clients that accept dots",
		e.Names[0], e.Names[1], e.Tool)
}

// listedNames returns the name each spec is listed under, by logical
// name: ToolName of it, or with logical set the name itself. It refuses
// two specs listed under one name.
func listedNames(specs []execgate.CommandSpec, logical bool) (map[string]string, error) {
	listed := make(map[string]string, len(specs))
	owner := make(map[string]string, len(specs))
	for _, spec := range specs {
		n := spec.Name
		if !logical {
			n = ToolName(n)
		}
		if other, taken := owner[n]; taken {
			names := [2]string{other, spec.Name}
			if names[1] < names[0] {
				names[0], names[1] = names[1], names[0]
			}
			return nil, &ToolNameCollisionError{Tool: n, Names: names}
		}
		owner[n] = spec.Name
		listed[spec.Name] = n
	}
	return listed, nil
}
