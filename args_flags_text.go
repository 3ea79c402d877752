package execgate

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/execgate/execgate/internal/inputrules"
)

// argShellMeta are the bytes refused in string values and in positionals
// without a pattern. No shell ever sees them; refusing them is defense in
// depth against a command that hands its arguments to one.
const argShellMeta = ";&|$`<>(){}\n"

// maxArgInMessage bounds how much of a caller's token a message repeats.
const maxArgInMessage = 64

// checkArgText returns why s may not appear in an argv, or "". The message
// starts with s quoted. The rule is [inputrules.TokenProblem].
func checkArgText(s string) string {
	if msg := inputrules.TokenProblem(s); msg != "" {
		return quoteArg(s) + ": " + msg
	}
	return ""
}

// quoteArg quotes a caller's token for a message, shortened to
// [maxArgInMessage] bytes at a character boundary.
func quoteArg(s string) string {
	if len(s) <= maxArgInMessage {
		return strconv.Quote(s)
	}
	cut := maxArgInMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}

// shellMetaIn returns the first shell metacharacter in s, or -1.
func shellMetaIn(s string) int {
	if i := strings.IndexAny(s, argShellMeta); i >= 0 {
		return int(s[i])
	}
	return -1
}

// plainArgProblem applies the rules for text no pattern vouches for.
func plainArgProblem(v string) string {
	switch {
	case v == "":
		return "must not be empty"
	case v[0] == '-':
		return "must not start with '-'"
	case v[0] == '@':
		return "must not start with '@'"
	}
	if c := shellMetaIn(v); c >= 0 {
		return fmt.Sprintf("must not contain the shell metacharacter %q", rune(c))
	}
	return ""
}
