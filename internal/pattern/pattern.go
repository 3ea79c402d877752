// Package pattern compiles the regular expressions a configuration gives
// for flag values and positionals, each of which must match a whole
// argument, and shares them: one compiled [Matcher] per distinct pattern
// text, however many flags, commands or loads of a configuration name it.
//
// # Sharing
//
// [Compile] keeps what it compiled in a table keyed by the pattern's
// text, and hands the same [*Matcher] to every caller of the same text
// while one is still in use. The table holds its matchers weakly: a
// matcher no schema refers to any longer is collected as usual and its
// entry removed, so the table is as large as the set of patterns in use,
// not the set ever seen. A Matcher is immutable and safe for concurrent
// use, as [regexp.Regexp] is.
//
// # Length bounds
//
// A counted repetition such as [A-Za-z0-9._/-]{1,200} costs the regexp
// package one instruction per repetition, so its memory grows with the
// bound (about 71 KiB for that one, against 1.1 KiB for the same class
// with +). A pattern that is a sequence of single-character items (a
// literal character, a character class, . or \C), each taken a fixed
// number of times except at most one, which may take a counted or open
// number, is matched without the regexp package: the argument's length
// in runes decides how many runes the one variable item takes, and each
// rune is then checked against the class it falls on. That is exactly
// what the regular expression means, since the items' positions are then
// fixed by the length, so such a pattern costs the same memory whatever
// its bound. Anything else is compiled by [regexp.Compile].
//
// Runes are counted and decoded as the regexp package does: a byte that
// is not part of valid UTF-8 is one rune, U+FFFD.
package pattern

import (
	"regexp"
	"regexp/syntax"
	"runtime"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"weak"
)

// Matcher reports whether a whole string matches a pattern. Its zero
// value is not usable; [Compile] returns one.
type Matcher struct {
	text string
	re   *regexp.Regexp // the full-match regexp, or nil for a sequence
	seq  *sequence
}

// String returns the pattern as it was given to [Compile].
func (m *Matcher) String() string { return m.text }

// MatchString reports whether all of s matches the pattern, as the
// regular expression ^(?:pattern)$ would.
func (m *Matcher) MatchString(s string) bool {
	if m.seq != nil {
		return m.seq.match(s)
	}
	return m.re.MatchString(s)
}

// usesRegexp reports whether m is matched by the regexp package.
func (m *Matcher) usesRegexp() bool { return m.re != nil }

var table struct {
	mu sync.Mutex
	m  map[string]weak.Pointer[Matcher]
}

// compiled counts the patterns compiled, for [Compiled].
var compiled atomic.Uint64

// Compiled returns how many times [Compile] has compiled a pattern
// rather than handed out one already compiled, since the program
// started.
func Compiled() uint64 { return compiled.Load() }

// Compile returns the matcher of pattern, an RE2 regular expression
// (the syntax of [regexp]) that must match a whole argument. A pattern
// that does not compile on its own, or that does not once wrapped in
// ^(?: and )$, is refused with the error of [regexp.Compile]. The same
// text gives the same *Matcher while that matcher is in use.
func Compile(pattern string) (*Matcher, error) {
	table.mu.Lock()
	if w, ok := table.m[pattern]; ok {
		if m := w.Value(); m != nil {
			table.mu.Unlock()
			return m, nil
		}
	}
	table.mu.Unlock()

	m, err := compile(pattern)
	if err != nil {
		return nil, err
	}
	compiled.Add(1)

	table.mu.Lock()
	defer table.mu.Unlock()
	if w, ok := table.m[pattern]; ok {
		if other := w.Value(); other != nil {
			return other, nil // compiled meanwhile by another caller
		}
	}
	if table.m == nil {
		table.m = make(map[string]weak.Pointer[Matcher])
	}
	table.m[pattern] = weak.Make(m)
	runtime.AddCleanup(m, forget, pattern)
	return m, nil
}

// forget removes the entry of pattern once its matcher is collected,
// unless a newer matcher of the same text has taken its place.
func forget(pattern string) {
	table.mu.Lock()
	defer table.mu.Unlock()
	if w, ok := table.m[pattern]; ok && w.Value() == nil {
		delete(table.m, pattern)
	}
}

// compile compiles pattern without looking in the table.
func compile(pattern string) (*Matcher, error) {
	// Parsing is what fails in regexp.Compile (compiling a parsed
	// expression does not), so a parse is the check of the pattern on
	// its own, with the same error.
	if _, err := syntax.Parse(pattern, syntax.Perl); err != nil {
		return nil, err
	}
	full := `^(?:` + pattern + `)$`
	tree, err := syntax.Parse(full, syntax.Perl)
	if err != nil {
		return nil, err
	}
	if seq := sequenceOf(tree); seq != nil {
		return &Matcher{text: pattern, seq: seq}, nil
	}
	re, err := regexp.Compile(full)
	if err != nil {
		return nil, err
	}
	return &Matcher{text: pattern, re: re}, nil
}

// sequence is a pattern made of single-character items, each taken a
// fixed number of times but at most one.
type sequence struct {
	items []item
	// varAt is the index of the item taken a variable number of times,
	// or -1 when every count is fixed.
	varAt int
	fixed int // the runes the fixed items take in all
	// varMin and varMax bound the runes the variable item takes; varMax
	// is -1 when it has no bound.
	varMin, varMax int
}

// item is one character class taken min to max times (max -1: no bound).
type item struct {
	class    *class
	min, max int
}

// match reports whether all of s matches the sequence.
func (q *sequence) match(s string) bool {
	n := utf8.RuneCountInString(s)
	v := n - q.fixed
	switch {
	case q.varAt < 0 && v != 0:
		return false
	case q.varAt >= 0 && (v < q.varMin || (q.varMax >= 0 && v > q.varMax)):
		return false
	}
	at, left := -1, 0
	for _, r := range s {
		for left == 0 {
			at++
			if at == q.varAt {
				left = v
			} else {
				left = q.items[at].min
			}
		}
		if !q.items[at].class.has(r) {
			return false
		}
		left--
	}
	return true
}

// sequenceOf returns the sequence that tree, the parse of a full-match
// pattern, is, or nil when it is none.
func sequenceOf(tree *syntax.Regexp) *sequence {
	var nodes []*syntax.Regexp
	flatten(tree, &nodes)
	// The full-match form starts with ^ and ends with $; further ones
	// next to them, from the pattern's own anchors, assert nothing more.
	i, j := 0, len(nodes)
	for i < j && nodes[i].Op == syntax.OpBeginText {
		i++
	}
	for j > i && nodes[j-1].Op == syntax.OpEndText {
		j--
	}
	if i == 0 || j == len(nodes) {
		return nil
	}
	q := &sequence{varAt: -1}
	for _, n := range nodes[i:j] {
		if !q.add(n) {
			return nil
		}
	}
	if q.varAt < 0 && q.fixed == 0 {
		return nil // matches only "": rare, and the regexp is small
	}
	return q
}

// flatten appends the items of the concatenation tree to nodes.
func flatten(tree *syntax.Regexp, nodes *[]*syntax.Regexp) {
	if tree.Op == syntax.OpConcat {
		for _, s := range tree.Sub {
			flatten(s, nodes)
		}
		return
	}
	*nodes = append(*nodes, tree)
}

// add appends the node n to q, reporting false when n is no
// single-character item or a second variable one.
func (q *sequence) add(n *syntax.Regexp) bool {
	switch n.Op {
	case syntax.OpEmptyMatch:
		return true
	case syntax.OpLiteral:
		if n.Flags&syntax.FoldCase != 0 || hasSurrogate(n.Rune) {
			return false
		}
		for _, r := range n.Rune {
			q.items = append(q.items, item{class: newClass([]rune{r, r}), min: 1, max: 1})
			q.fixed++
		}
		return true
	case syntax.OpStar:
		return q.addRepeat(n.Sub[0], 0, -1)
	case syntax.OpPlus:
		return q.addRepeat(n.Sub[0], 1, -1)
	case syntax.OpQuest:
		return q.addRepeat(n.Sub[0], 0, 1)
	case syntax.OpRepeat:
		return q.addRepeat(n.Sub[0], n.Min, n.Max)
	}
	c := classOf(n)
	if c == nil {
		return false
	}
	q.items = append(q.items, item{class: c, min: 1, max: 1})
	q.fixed++
	return true
}

// addRepeat appends the node n taken min to max times (max -1: no bound).
func (q *sequence) addRepeat(n *syntax.Regexp, min, max int) bool {
	c := classOf(n)
	if c == nil {
		return false
	}
	if min == max {
		q.items = append(q.items, item{class: c, min: min, max: max})
		q.fixed += min
		return true
	}
	if q.varAt >= 0 {
		return false // two variable items: the length no longer places them
	}
	q.varAt = len(q.items)
	q.varMin, q.varMax = min, max
	q.items = append(q.items, item{class: c, min: min, max: max})
	return true
}

// classOf returns the class of runes the node n matches when it matches
// exactly one character, or nil.
func classOf(n *syntax.Regexp) *class {
	switch n.Op {
	case syntax.OpLiteral:
		if n.Flags&syntax.FoldCase != 0 || len(n.Rune) != 1 || hasSurrogate(n.Rune) {
			return nil
		}
		return newClass([]rune{n.Rune[0], n.Rune[0]})
	case syntax.OpCharClass:
		if len(n.Rune) == 0 {
			return nil // matches nothing; the regexp says so as cheaply
		}
		return newClass(n.Rune)
	case syntax.OpAnyCharNotNL:
		return newClass([]rune{0, '\n' - 1, '\n' + 1, utf8.MaxRune})
	case syntax.OpAnyChar:
		return newClass([]rune{0, utf8.MaxRune})
	}
	return nil
}

// class is a set of runes: sorted, disjoint, inclusive ranges lo, hi.
type class struct {
	ascii  [2]uint64 // the members below utf8.RuneSelf, one bit each
	ranges []rune    // lo, hi pairs of the members at or above it
}

// newClass returns the class of the lo, hi pairs of ranges, which are
// sorted and disjoint, as the parser leaves them.
func newClass(ranges []rune) *class {
	c := &class{}
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		for r := lo; r <= hi && r < utf8.RuneSelf; r++ {
			c.ascii[r/64] |= 1 << (r % 64)
		}
		if hi >= utf8.RuneSelf {
			c.ranges = append(c.ranges, max(lo, utf8.RuneSelf), hi)
		}
	}
	return c
}

// has reports whether r is in c.
func (c *class) has(r rune) bool {
	if r < utf8.RuneSelf {
		return c.ascii[r/64]&(1<<(r%64)) != 0
	}
	lo, hi := 0, len(c.ranges)/2
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case r < c.ranges[2*m]:
			hi = m
		case r > c.ranges[2*m+1]:
			lo = m + 1
		default:
			return true
		}
	}
	return false
}

// hasSurrogate reports whether runes holds a surrogate half, which no
// text decodes to: the regexp package compares such a literal as the
// bytes of U+FFFD in some places and as the rune in others, so a pattern
// that names one is left to it, to match exactly as it does.
func hasSurrogate(runes []rune) bool {
	for _, r := range runes {
		if 0xD800 <= r && r <= 0xDFFF {
			return true
		}
	}
	return false
}
