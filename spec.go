package execgate

import (
	"bytes"
	"encoding/json"
	"os"
	"time"

	"github.com/execgate/execgate/internal/inputrules"
)

// Defaults applied by [NewAllowlist] to zero fields of a [CommandSpec].
const (
	// DefaultTimeout is the Timeout of a spec that sets none.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxOutput is the per-stream MaxOutput of a spec that sets none.
	DefaultMaxOutput = 64 << 10
	// DefaultPolicyVersion is the PolicyVersion of a spec that sets none.
	DefaultPolicyVersion = "1"
	// MaxInputSize is the largest JSON input, in bytes, that the gate
	// hands to a schema. Larger inputs are refused with a [ValidationError].
	MaxInputSize = inputrules.MaxInputBytes
)

// CommandSpec describes one allowlisted command: the logical name an agent
// asks for, the executable that runs, how JSON input becomes its argv, and
// the fixed conditions it runs under. A CommandSpec is only used through an
// [Allowlist], which checks it and fills in the defaults documented on each
// field.
type CommandSpec struct {
	// Name is the logical name callers use, such as "git.log". It is
	// required, at most 128 bytes, made of ASCII letters, digits, '_', '-'
	// and '.', starts with a letter or digit, and has no empty segment
	// between dots. Names are case-sensitive and unique in an [Allowlist].
	Name string

	// Command is the executable. An absolute path is kept as given
	// (cleaned, not symlink-resolved). A bare name ("git") is looked up on
	// PATH once, when the [Allowlist] is built; a match found through a
	// relative PATH entry is refused, as is a relative path ("./tool",
	// "bin/tool"). The file must exist and be executable at build time.
	// After [NewAllowlist], Lookup reports the resolved absolute path.
	Command string

	// SHA256, if not empty, pins the executable's content: 64 hex digits
	// (either case) of its SHA-256. [NewAllowlist] refuses a pin that does not
	// match the file, and [DefaultExecFn] hashes the file again at every call
	// and refuses to start it on a mismatch. On Linux the hashed file
	// descriptor is the one executed, so another file cannot be renamed or
	// linked into place between check and exec (someone who may write to
	// the file itself can still change it in that window: keep pinned
	// executables where callers cannot write); pinned executables must
	// then be binaries, not "#!" scripts. Empty means no pin.
	SHA256 string

	// Args turns JSON input into the argv and stdin of one call. It is
	// required. See [Struct], [Fixed] and [Flags].
	Args ArgsSchema

	// Description is a human-readable summary shown in tool listings.
	Description string

	// Env is the child's whole environment. Nothing is inherited from the
	// calling process: a nil or empty Env runs the child with an empty
	// environment. Use [InheritEnv] to copy named variables explicitly.
	// Keys must be non-empty and contain neither '=' nor NUL; values must
	// not contain NUL. [NewAllowlist] copies the map.
	Env map[string]string

	// Dir is the child's working directory and must be absolute. If Dir is
	// empty, it is the working directory of the calling process at the
	// time the [Allowlist] is built, captured then.
	Dir string

	// Timeout bounds a call's wall time; when it passes, the child's whole
	// process group is killed and the [Result] says "timeout". Zero means
	// [DefaultTimeout]; negative is refused.
	Timeout time.Duration

	// NoOutputTimeout, if positive, kills the child's process group when
	// neither stdout nor stderr has produced a byte for that long; the
	// [Result] says "no_output_timeout". Zero means off; negative is refused.
	NoOutputTimeout time.Duration

	// MaxOutput is how many bytes of each of stdout and stderr are kept.
	// The rest is read and counted, never buffered, so the child does not
	// block. Zero means [DefaultMaxOutput]; negative is refused.
	MaxOutput int

	// PolicyVersion is bound into every approval's digest. Changing it
	// makes all pending approvals for this command unusable. Empty means
	// [DefaultPolicyVersion].
	PolicyVersion string

	// Dispatch makes this spec a dispatcher: instead of the name itself it
	// serves every requested name Name+"."+sub that has no spec of its own,
	// where sub is a subcommand matching ^[a-z][a-z0-9-]*$ (at most 64
	// bytes). Its Args must be a [Subcommands] schema, which places the
	// subcommand, taken from the requested name only, after fixed leading
	// arguments. The [Policy] decides on the requested name ("git.stash"),
	// and Floor defaults to [ActionDeny]. False means an ordinary spec,
	// served under Name only.
	Dispatch bool

	// Floor is the least strict decision a call to this spec can get. It
	// is applied after the [Policy] and can only make its decision stricter:
	// [ActionRequireApproval] makes every call need an approval (Run refuses,
	// Propose and Execute work) even when the Policy allows it; [ActionDeny]
	// refuses every call. [ActionAllow] means no floor. Empty means
	// ActionAllow for an ordinary spec and ActionDeny for a dispatcher.
	Floor string

	// SensitiveArgs keeps the argv out of audit Events: they carry only its
	// SHA-256. Results and approvals still show the argv to their callers.
	// False means Events carry the argv.
	SensitiveArgs bool

	// Confine, if not nil, is what the command may touch once it runs:
	// files, network and resources, enforced by the kernel (Linux only).
	// See [Confinement]. Nil means the command runs with the caller's
	// access. [NewAllowlist] checks and copies it.
	Confine *Confinement

	// Hints describe the command's effects for tool listings (such as MCP
	// tool annotations). They are advice to callers: the gate does not
	// enforce them, and they are not part of any digest. The zero [Hints]
	// claims nothing. [NewAllowlist] copies them.
	Hints Hints
}

// Hints describe what a command does, for tool listings. A nil field makes
// no claim, and a listing then uses its own default (MCP, for example,
// assumes a tool may be destructive and open-world unless told otherwise).
type Hints struct {
	// ReadOnly claims the command does not change its environment.
	ReadOnly *bool
	// Destructive claims the command may delete or overwrite data.
	Destructive *bool
	// Idempotent claims that repeating a call with the same arguments has
	// no further effect.
	Idempotent *bool
	// OpenWorld claims the command may reach outside systems (network,
	// other services).
	OpenWorld *bool
}

// clone returns a copy of h that shares no memory with it.
func (h Hints) clone() Hints {
	return Hints{
		ReadOnly:    cloneBool(h.ReadOnly),
		Destructive: cloneBool(h.Destructive),
		Idempotent:  cloneBool(h.Idempotent),
		OpenWorld:   cloneBool(h.OpenWorld),
	}
}

func cloneBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}

// Argv is what a schema builds from one accepted input: the arguments
// after the executable's name, and the bytes given to the child on stdin.
// A nil or empty Stdin gives the child an empty stdin.
type Argv struct {
	Args  []string
	Stdin []byte
}

// ArgsSchema turns a caller's JSON input into an [Argv].
//
// Parse must be strict: it must refuse anything it does not fully
// understand with a [*ValidationError] naming the offending field, and must
// not retain or modify input. JSONSchema returns the JSON Schema of the
// inputs Parse accepts, for tool listings; the returned bytes must not be
// modified. Both methods may be called concurrently.
type ArgsSchema interface {
	Parse(input json.RawMessage) (Argv, error)
	JSONSchema() json.RawMessage
}

// Fixed returns a schema for a command that always runs with the same
// arguments. It accepts only empty input: no bytes, only white space, JSON
// null or the empty object {}. Anything else is refused.
func Fixed(args ...string) ArgsSchema {
	return fixedSchema{args: append([]string(nil), args...)}
}

type fixedSchema struct{ args []string }

var fixedJSONSchema = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)

func (f fixedSchema) Parse(input json.RawMessage) (Argv, error) {
	if !isEmptyInput(input) {
		return Argv{}, &ValidationError{Issues: []Issue{{Message: "this command takes no arguments; send {} or nothing"}}}
	}
	return Argv{Args: append([]string(nil), f.args...)}, nil
}

func (fixedSchema) JSONSchema() json.RawMessage { return fixedJSONSchema }

// isEmptyInput reports whether input is absent, white space, null or {}.
func isEmptyInput(input json.RawMessage) bool {
	t := trimJSONSpace(input)
	if len(t) == 0 || string(t) == "null" {
		return true
	}
	if len(t) < 2 || t[0] != '{' || t[len(t)-1] != '}' {
		return false
	}
	return len(trimJSONSpace(t[1:len(t)-1])) == 0
}

// trimJSONSpace trims the four white-space bytes JSON allows, and no others.
func trimJSONSpace(b []byte) []byte {
	return bytes.Trim(b, " \t\r\n")
}

// InheritEnv returns the named variables of the calling process's
// environment, read when InheritEnv is called, as a map for
// [CommandSpec.Env]. Variables that are not set are left out. Merge the result
// with other entries to build the child's whole environment.
func InheritEnv(keys ...string) map[string]string {
	env := make(map[string]string, len(keys))
	for _, k := range keys {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	return env
}
