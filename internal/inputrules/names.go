package inputrules

import (
	"errors"
	"fmt"
	"strings"
)

// Bounds on names.
const (
	// MaxNameBytes bounds a logical command name (CommandSpec.Name).
	MaxNameBytes = 128
	// MaxSubcommandBytes bounds a dispatched subcommand.
	MaxSubcommandBytes = 64
	// MaxToolNameBytes bounds a tool name of a configuration file, so
	// that "<tool>.<subcommand>" fits in MaxNameBytes.
	MaxToolNameBytes = MaxNameBytes - 1 - MaxSubcommandBytes
	// MaxFlagNameBytes bounds a flag's name.
	MaxFlagNameBytes = 64
)

// SubcommandPattern is what a dispatched subcommand must look like, in a
// syntax RE2 and ECMA-262 share.
const SubcommandPattern = "^[a-z][a-z0-9-]*$"

// NameProblem reports why name is not a well-formed logical command name:
// 1 to MaxNameBytes bytes of ASCII letters, digits, '_', '-' and '.',
// starting with a letter or digit, with no empty segment between dots.
func NameProblem(name string) error {
	if name == "" {
		return errors.New("required")
	}
	if len(name) > MaxNameBytes {
		return fmt.Errorf("longer than %d bytes", MaxNameBytes)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case isAlnum(c):
		case c == '_' || c == '-':
			if i == 0 {
				return errors.New("must start with a letter or digit")
			}
		case c == '.':
			if i == 0 || i == len(name)-1 || name[i-1] == '.' {
				return errors.New("has an empty segment between dots")
			}
		default:
			return fmt.Errorf("may hold only ASCII letters, digits, '_', '-' and '.'; found %q", c)
		}
	}
	return nil
}

// ValidSubcommand reports whether sub is a subcommand a dispatcher
// serves: 1 to MaxSubcommandBytes bytes matching SubcommandPattern.
// Adapters that build a requested name from a separate subcommand (as the
// MCP server does) check it before joining name and subcommand, so that
// it never adds a '.' that would make the gate look up another spec.
func ValidSubcommand(sub string) bool {
	if len(sub) == 0 || len(sub) > MaxSubcommandBytes || sub[0] < 'a' || sub[0] > 'z' {
		return false
	}
	for i := 1; i < len(sub); i++ {
		c := sub[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// SubcommandProblem returns why sub is not a subcommand a dispatcher
// serves, or "".
func SubcommandProblem(sub string) string {
	if ValidSubcommand(sub) {
		return ""
	}
	return fmt.Sprintf("must be 1 to %d bytes matching %s", MaxSubcommandBytes, SubcommandPattern)
}

// ValidWord reports whether s matches [A-Za-z0-9][A-Za-z0-9_-]*, the
// shape of tool and flag names.
func ValidWord(s string) bool {
	if s == "" || !isAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// ToolNameProblem returns why name is not a tool name of a configuration
// file, or "": 1 to MaxToolNameBytes ASCII letters, digits, '_' and '-',
// starting with a letter or digit. A tool name has no dots: it is the
// first segment of the command names made from it.
func ToolNameProblem(name string) string {
	switch {
	case name == "":
		return "must not be empty"
	case len(name) > MaxToolNameBytes || !ValidWord(name):
		return fmt.Sprintf("a tool name is 1 to %d ASCII letters, digits, '_' and '-', starting with a letter or digit (no dots)", MaxToolNameBytes)
	}
	return ""
}

// FlagNameProblem returns why name is not a flag's name, or "": it must
// match [A-Za-z0-9][A-Za-z0-9_-]*, at most MaxFlagNameBytes bytes. The
// message follows the word "Name" or the name itself.
func FlagNameProblem(name string) string {
	switch {
	case name == "":
		return "is required"
	case len(name) > MaxFlagNameBytes:
		return fmt.Sprintf("is longer than %d bytes", MaxFlagNameBytes)
	case !ValidWord(name):
		return "must match [A-Za-z0-9][A-Za-z0-9_-]*: ASCII letters, digits, '_' and '-', starting with a letter or digit, without dashes in front"
	}
	return ""
}

// ShortProblem returns why s is not a flag's one-character alias, or "".
func ShortProblem(s string) string {
	if len(s) != 1 || !isAlnum(s[0]) {
		return "must be one ASCII letter or digit"
	}
	return ""
}

// EnvKeyProblem returns why key is not an environment variable name the
// child can be given, or "". The message follows the key.
func EnvKeyProblem(key string) string {
	if key == "" || strings.ContainsAny(key, "=\x00") {
		return "must be non-empty and contain neither '=' nor NUL"
	}
	return ""
}

// EnvValueProblem returns why v is not a value an environment variable
// can have, or "". The message follows a phrase naming the variable and
// never repeats the value, which may be a secret.
func EnvValueProblem(v string) string {
	if strings.IndexByte(v, 0) >= 0 {
		return "contains NUL"
	}
	return ""
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
