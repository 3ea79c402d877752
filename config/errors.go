package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Error is one problem found in a configuration. [Load] and its variants
// never return an *Error alone: problems come together in an [ErrorList].
type Error struct {
	// File is the name of the configuration: the path given to [LoadFile],
	// the name given to [LoadBytes], or "<input>" for [Load].
	File string
	// Line and Column locate the problem, starting at 1. They are 0 when
	// the problem concerns the file as a whole (it is empty, too large, or
	// holds several documents) and the YAML parser gave no position.
	Line, Column int
	// Path is the key path of the offending value, such as
	// "tools[1].commands.log.flags[2].pattern", or "" for the file as a
	// whole. List elements are counted from 0.
	Path string
	// Message says what is wrong and, where it helps, what to write
	// instead. It never repeats an environment variable's value.
	Message string
}

// Error implements error. It reads "file:line:col: path: message", leaving
// out the position when Line is 0 and the path when Path is empty.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":")
		b.WriteString(strconv.Itoa(e.Line))
		if e.Column > 0 {
			b.WriteString(":")
			b.WriteString(strconv.Itoa(e.Column))
		}
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// ErrorList is every problem found in a configuration, sorted by line and
// column; problems that concern the file as a whole (Line 0) come first. [Load] returns it as its error; match it
// with errors.As. It holds at least one [*Error].
type ErrorList []*Error

// Error implements error: one line per problem, each in the form of
// (*Error).Error.
func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "config: no errors"
	case 1:
		return l[0].Error()
	}
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems as errors, so that errors.As also finds the
// first [*Error].
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// maxErrors bounds how many problems one load reports; the rest are
// counted in a final entry.
const maxErrors = 100

// maxQuoted bounds how much of a value from the file a message repeats.
const maxQuoted = 64

// quote quotes s for a message, shortened to maxQuoted bytes.
func quote(s string) string {
	if len(s) > maxQuoted {
		cut := maxQuoted
		for cut > 0 && s[cut]&0xc0 == 0x80 {
			cut--
		}
		return strconv.Quote(s[:cut]) + "..."
	}
	return strconv.Quote(s)
}

// problems collects the errors of one load.
type problems struct {
	file    string
	list    ErrorList
	dropped int
	// expansions are the entries expanded from profiles, see origin;
	// open is the one being recorded, hint the one searched first.
	expansions []*expansion
	open       *expansion
	hint       int
	unranged   bool // an expansion's lines are not known

	// reloc, when it is set, places every problem and warning recorded:
	// those of a tools entry decoded as a copy of another (see cloneTool).
	reloc *relocation

	examplesRun int       // examples of commands checked, for tests
	warned      []Warning // found while checking, reported with Loaded.Warnings
}

// at records a problem at line and column.
func (p *problems) at(line, col int, path, format string, args ...any) {
	if len(p.list) >= maxErrors {
		p.dropped++
		return
	}
	if p.reloc != nil {
		line, col, path = p.reloc.apply(line, col, path)
	}
	msg := oneLine.Replace(fmt.Sprintf(format, args...))
	p.list = append(p.list, &Error{File: p.file, Line: line, Column: col, Path: path, Message: msg})
}

// oneLine keeps every message on one line, whatever text from the file
// (a regular expression, say) it repeats.
var oneLine = strings.NewReplacer("\n", "\\n", "\r", "\\r")

// count is how many problems were recorded so far.
func (p *problems) count() int {
	return len(p.list) + p.dropped
}

// err returns the collected problems as an error, or nil.
func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	out := p.list
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Line != out[j].Line {
			return out[i].Line < out[j].Line
		}
		return out[i].Column < out[j].Column
	})
	if p.dropped > 0 {
		out = append(out, &Error{File: p.file, Message: fmt.Sprintf("and %d more problems not listed", p.dropped)})
	}
	return out
}
