package config

import (
	"slices"
	"sort"
	"strings"

	"github.com/execgate/execgate"
)

// This file finds what a configuration that loads may still not mean:
// a policy tools pattern that no call can match, and a tool served
// without a description. Neither stops a load; both are reported by
// Loaded.Warnings.

// Warning is something in a configuration that loads but that is likely
// not what its author meant, such as a policy rule whose tools pattern
// matches no command the file serves. A warning never stops a load.
type Warning struct {
	// File is the name of the configuration, as in [Error].
	File string
	// Line and Column locate the value the warning is about, starting
	// at 1.
	Line, Column int
	// Path is the key path of that value, such as
	// "policies[0].rules[1].tools[0]" or "tools[2].commands.status".
	Path string
	// Message says what is likely wrong and what to write instead.
	Message string
}

// String returns the warning in the form of (*Error).Error:
// "file:line:col: path: message".
func (w Warning) String() string {
	e := Error{File: w.File, Line: w.Line, Column: w.Column, Path: w.Path, Message: w.Message}
	return e.Error()
}

// Warnings returns what the configuration holds that loads but is likely
// a mistake, sorted by line and column, or nil when there is nothing to
// say. See "Warnings" in the package documentation. The slice is l's
// own copy for the caller.
func (l *Loaded) Warnings() []Warning {
	if l == nil {
		return nil
	}
	return slices.Clone(l.warnings)
}

// warnings returns the warnings of a configuration that loaded: sec is
// its policies section (nil when it has none). The specs are those b
// built, which the Allowlist serves (under the same names, with the same
// descriptions), without copying each one out of it again.
func (b *builder) warnings(sec *policySection) []Warning {
	specs := b.specs
	out := slices.Clone(b.problems.warned)
	add := func(at position, msg string) {
		out = append(out, Warning{File: b.problems.file, Line: at.line, Column: at.col, Path: at.path, Message: oneLine.Replace(msg)})
	}
	if sec != nil {
		for _, p := range sec.patterns {
			if msg := unservedPattern(p.pattern, specs); msg != "" {
				add(p.at, msg)
			}
		}
	}
	for _, s := range specs {
		if strings.TrimSpace(s.Description) != "" {
			continue
		}
		if at, msg := b.undescribed(s); msg != "" {
			add(at, msg)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Line != out[j].Line {
			return out[i].Line < out[j].Line
		}
		return out[i].Column < out[j].Column
	})
	return out
}

// undescribed returns where the spec s, served without a description,
// comes from and what to tell about it.
func (b *builder) undescribed(s execgate.CommandSpec) (position, string) {
	o, ok := b.origins[s.Name]
	if !ok {
		return position{}, ""
	}
	r := o.tool.reloc
	switch {
	case o.cmd == nil:
		return r.position(positionOf(o.tool.node, o.tool.path)),
			"the dispatcher " + quote(s.Name) + " is served without a description: the model sees only how to name a subcommand; add description to this tool"
	case o.cmd.name == "":
		return r.position(positionOf(o.cmd.key, o.cmd.path)),
			quote(s.Name) + " is served without a description, so the model sees none; add description here or on the tool"
	default:
		return r.position(positionOf(o.cmd.key, o.cmd.path)),
			quote(s.Name) + " is served without a description, so the model sees none; add description to this command (it does not take the tool's)"
	}
}

// unservedPattern returns a message when no call to the commands of
// specs can match the tools pattern pat, and "" when one can. A call
// names an ordinary spec, or "<dispatcher>.<subcommand>"; a dispatcher's
// own name is never requested.
func unservedPattern(pat string, specs []execgate.CommandSpec) string {
	if len(specs) == 0 {
		return quote(pat) + " matches no command, so this rule never applies: the tools list serves none"
	}
	var alone string // a dispatcher whose own name pat matches
	candidates := make([]string, 0, len(specs))
	for _, s := range specs {
		if !s.Dispatch {
			if globsMeet(pat, s.Name) {
				return ""
			}
			candidates = append(candidates, s.Name)
			continue
		}
		if globsMeet(pat, s.Name+".?*") {
			return ""
		}
		if alone == "" && globsMeet(pat, s.Name) {
			alone = s.Name
		}
		candidates = append(candidates, s.Name+".*")
	}
	if alone != "" {
		return quote(pat) + " matches only the dispatcher's own name, which no call requests: the dispatcher " + quote(alone) +
			" serves " + quote(alone+".<subcommand>") + "; did you mean " + quote(alone+".*") + "?"
	}
	return quote(pat) + " matches no command this file serves, so this rule never applies; did you mean " + quote(closest(pat, candidates)) + "?"
}

// closest returns the candidate nearest to s in edit distance, the first
// in sorted order among equals. candidates is not empty.
func closest(s string, candidates []string) string {
	sort.Strings(candidates)
	best, bestD := "", -1
	for _, c := range candidates {
		if d := editDistance(s, c); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes:
// the fewest insertions, deletions and substitutions that turn a into b.
// Command names and tool patterns are ASCII.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// globsMeet reports whether some string matches both p and q, two
// patterns in the syntax of the policy package's tool patterns: '*'
// matches any run of characters, '?' one character, and every other
// character itself. A name without wildcards as q asks whether p matches
// it. Tool patterns and names are ASCII, so '?' matches one byte.
func globsMeet(p, q string) bool {
	n, m := len(p), len(q)
	// meet[i][j] reports whether some string matches both p[i:] and
	// q[j:].
	meet := make([][]bool, n+1)
	for i := range meet {
		meet[i] = make([]bool, m+1)
	}
	for i := n; i >= 0; i-- {
		for j := m; j >= 0; j-- {
			switch {
			case i < n && p[i] == '*':
				// The star matches nothing more, or takes in what
				// q[j] matches (a character, or a run for a star).
				meet[i][j] = meet[i+1][j] || j < m && meet[i][j+1]
			case j < m && q[j] == '*':
				meet[i][j] = meet[i][j+1] || i < n && meet[i+1][j]
			case i == n || j == m:
				meet[i][j] = i == n && j == m
			default:
				meet[i][j] = (p[i] == '?' || q[j] == '?' || p[i] == q[j]) && meet[i+1][j+1]
			}
		}
	}
	return meet[0][0]
}
