package pattern

import (
	"math/rand/v2"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// profilePatterns are patterns of the shipped profiles and of their
// shapes, with the way each is expected to be matched.
var profilePatterns = []struct {
	pattern string
	regexp  bool // matched by the regexp package, not as a sequence
	why     string
}{
	{`^[A-Za-z0-9._/-]{1,200}$`, false, "one class with a counted repetition is the length and the class"},
	{`^[ -~]{1,1000}$`, false, "the largest bound a pattern may give costs nothing more"},
	{`^[^\x00-\x1f\x7f]{1,256}$`, false, "a negated class, which holds U+FFFD, the rune of an invalid byte"},
	{`^[A-Za-z_][A-Za-z0-9_]{0,63}$`, false, "a fixed first character, then a counted class"},
	{`^[1-9][0-9]{0,9}$`, false, "a number without a leading zero"},
	{`[a-z]{3}`, false, "no anchors: the full-match form adds them"},
	{`^^[a-z]+$$`, false, "repeated anchors at the ends assert nothing more"},
	{`^v[0-9]{1,3}\.x$`, false, "literal characters around the variable item are fixed items"},
	{`\x{D800}x`, true, "a surrogate literal, which the regexp package matches as U+FFFD's bytes, is left to it"},
	{`(?:\x{D800}){1,5}`, true, "a repeated surrogate literal is left to the regexp package too"},
	{`^.{2,5}$`, false, "dot is every rune but newline"},
	{`^(?s:.){2,5}$`, false, "dot with s is every rune"},
	{`^[a-z]?$`, false, "an optional class is a variable item of zero or one"},
	{`^a{0}b$`, false, "an item taken zero times takes no rune"},
	{`^[+-]?[0-9]{1,12}[cwbkMG]?$`, true, "two variable items: the length does not place them"},
	{`^(?:@me|[A-Za-z0-9][A-Za-z0-9-]{0,38})$`, true, "an alternation"},
	{`(?m)^[a-z]{1,5}$`, true, "multi-line anchors match at a newline inside the string"},
	{`(?i)^k[a-z]{1,5}$`, true, "a case-folded literal"},
	{`^a^b$`, true, "an anchor between items"},
	{`^[a-z]{1,5}|[0-9]$`, true, "the alternation takes the anchors apart"},
	{``, true, "the empty pattern matches only the empty string"},
}

// TestCompile_MatchesAsTheFullMatchRegexp checks each pattern against
// ^(?:pattern)$ on strings near its bounds and on random ones, and that
// the patterns of the shape with a length bound are not handed to the
// regexp package.
func TestCompile_MatchesAsTheFullMatchRegexp(t *testing.T) {
	for _, c := range profilePatterns {
		t.Run(c.pattern, func(t *testing.T) {
			m, err := Compile(c.pattern)
			require.NoError(t, err)
			assert.Equal(t, c.regexp, m.usesRegexp(), c.why)
			assert.Equal(t, c.pattern, m.String())
			want := regexp.MustCompile(`^(?:` + c.pattern + `)$`)
			rng := rand.New(rand.NewPCG(1, uint64(len(c.pattern))))
			for _, s := range samples(rng, 2000) {
				require.Equal(t, want.MatchString(s), m.MatchString(s), "%q on %q (%s)", c.pattern, s, c.why)
			}
		})
	}
}

// samples returns strings of lengths around the bounds the patterns
// above use, drawn from ASCII, newline, other runes and invalid bytes.
func samples(rng *rand.Rand, n int) []string {
	pieces := []string{"\uFFFD", "a", "z", "A", "_", "0", "9", "1", "-", ".", "/", " ", "~", "\n", "\x00", "\x7f", "é", "\u2028", "\U0001F600", "\xff", "\xc3", "v", "x", "k", "K", "b", "@", "+"}
	out := []string{"", "a", "ab", "abc", "v1.x", "v123.x", "b"}
	for _, l := range []int{199, 200, 201, 255, 256, 257, 999, 1000, 1001} {
		out = append(out, strings.Repeat("a", l), strings.Repeat("é", l), strings.Repeat("\xff", l))
	}
	for range n {
		var sb strings.Builder
		l := rng.IntN(12)
		if rng.IntN(8) == 0 {
			l = rng.IntN(1100)
		}
		for range l {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		out = append(out, sb.String())
	}
	return out
}

// TestCompile_RefusesWhatRegexpRefuses checks that a pattern that does
// not compile gives the error of regexp.Compile, and that one that
// compiles alone but not inside the full-match wrapping is refused too.
func TestCompile_RefusesWhatRegexpRefuses(t *testing.T) {
	for _, c := range []struct{ pattern, why string }{
		{`[a-z`, "an unclosed class"},
		{`a{1,1001}`, "a repetition beyond the regexp package's bound"},
		{`a)|(b`, "text that would close the wrapping group early"},
	} {
		_, want := regexp.Compile(c.pattern)
		require.Error(t, want, c.why)
		_, err := Compile(c.pattern)
		require.Error(t, err, c.why)
		assert.Equal(t, want.Error(), err.Error(), c.why)
	}
	_, err := regexp.Compile(`\Qab`)
	require.NoError(t, err, "alone, \\Q quotes to the end")
	_, err = Compile(`\Qab`)
	assert.Error(t, err, "wrapped, \\Q swallows the closing parenthesis")
}

// TestCompile_SameTextSameMatcher checks that a pattern is compiled once
// while its matcher is in use, and compiled again after it is collected.
func TestCompile_SameTextSameMatcher(t *testing.T) {
	const p = `^[a-z]{1,7}-shared-once$`
	before := Compiled()
	m1, err := Compile(p)
	require.NoError(t, err)
	m2, err := Compile(p)
	require.NoError(t, err)
	assert.Same(t, m1, m2, "the same text gives the same matcher")
	assert.Equal(t, before+1, Compiled(), "compiled once")
	runtime.KeepAlive(m1)
	m1, m2 = nil, nil
	for range 10 {
		runtime.GC()
		table.mu.Lock()
		_, held := table.m[p]
		table.mu.Unlock()
		if !held {
			break
		}
		runtime.Gosched()
	}
	table.mu.Lock()
	_, held := table.m[p]
	table.mu.Unlock()
	assert.False(t, held, "the entry of a collected matcher is removed")
	_, err = Compile(p)
	require.NoError(t, err)
	assert.Equal(t, before+2, Compiled(), "compiled again once collected")
}

// TestCompile_LengthBoundCostsNoMoreThanPlus compares the heap compiling
// a pattern with a length bound allocates (an upper bound of what its
// matcher keeps) to the same class with +, and to what the regexp package
// allocates for the bounded one.
func TestCompile_LengthBoundCostsNoMoreThanPlus(t *testing.T) {
	const bounded, plus = `^[A-Za-z0-9._/-]{1,200}$`, `^[A-Za-z0-9._/-]+$`
	b := allocated(t, func() { _, _ = compile(bounded) })
	p := allocated(t, func() { _, _ = compile(plus) })
	re := allocated(t, func() { _, _ = regexp.Compile(`^(?:` + bounded + `)$`) })
	// The bounded text is six bytes longer, which its copies may round up.
	assert.LessOrEqual(t, b, p+64, "bounded %d B, + %d B", b, p)
	assert.Less(t, b*10, re, "bounded %d B, as a regexp %d B", b, re)
}

// allocated returns the bytes one call of f allocates, on average over
// 50 calls.
func allocated(t *testing.T, f func()) uint64 {
	t.Helper()
	const runs = 50
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / runs
}

// FuzzCompile compares the matcher of a pattern to ^(?:pattern)$ on any
// input, for patterns built from classes, literals and counted
// repetitions.
func FuzzCompile(f *testing.F) {
	for _, c := range profilePatterns {
		f.Add(c.pattern, "abc")
	}
	f.Add(`^[a-z]{2,4}x$`, "abx")
	f.Add(`^[^a]{1,3}$`, "\xff\n")
	f.Fuzz(func(t *testing.T, pattern, s string) {
		want, err := regexp.Compile(`^(?:` + pattern + `)$`)
		if _, rawErr := regexp.Compile(pattern); rawErr != nil || err != nil {
			_, got := Compile(pattern)
			if got == nil {
				t.Fatalf("%q compiles here but not as regexp", pattern)
			}
			return
		}
		m, err := Compile(pattern)
		if err != nil {
			t.Fatalf("%q: %v", pattern, err)
		}
		if !utf8.ValidString(pattern) {
			return
		}
		if got := m.MatchString(s); got != want.MatchString(s) {
			t.Fatalf("%q on %q: %v, regexp says %v", pattern, s, got, !got)
		}
	})
}

// TestCompile_ConcurrentCallersShareOneMatcher compiles one pattern from
// several goroutines at once: each gets the same matcher, which matches
// as the pattern says (run with -race).
func TestCompile_ConcurrentCallersShareOneMatcher(t *testing.T) {
	const p = `^[0-9]{1,4}-concurrent$`
	const n = 8
	got := make([]*Matcher, n)
	done := make(chan int)
	for i := range n {
		go func() {
			m, err := Compile(p)
			if err == nil && m.MatchString("123-concurrent") && !m.MatchString("12345-concurrent") {
				got[i] = m
			}
			done <- i
		}()
	}
	for range n {
		<-done
	}
	for i := range n {
		require.NotNil(t, got[i], "goroutine %d got a working matcher", i)
		assert.Same(t, got[0], got[i], "goroutine %d shares the first one's matcher", i)
	}
}
