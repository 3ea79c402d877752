package inputrules

import (
	"sort"
	"unicode"
)

// runeRange is an inclusive range of code points.
type runeRange struct{ lo, hi rune }

// runeSet is a set of code points as sorted, disjoint, non-adjacent
// ranges. The operations return new sets and never change their operands.
type runeSet []runeRange

// setOf returns the code points of t.
func setOf(t *unicode.RangeTable) runeSet {
	var s runeSet
	add := func(lo, hi, stride rune) {
		if stride == 1 {
			s = append(s, runeRange{lo, hi})
			return
		}
		for r := lo; r <= hi; r += stride {
			s = append(s, runeRange{r, r})
		}
	}
	for _, r := range t.R16 {
		add(rune(r.Lo), rune(r.Hi), rune(r.Stride))
	}
	for _, r := range t.R32 {
		add(rune(r.Lo), rune(r.Hi), rune(r.Stride))
	}
	return s.normalize()
}

// normalize sorts s and merges overlapping and adjacent ranges.
func (s runeSet) normalize() runeSet {
	s = append(runeSet(nil), s...)
	sort.Slice(s, func(i, j int) bool { return s[i].lo < s[j].lo })
	out := s[:0]
	for _, r := range s {
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

// union returns the code points in s or t.
func (s runeSet) union(t runeSet) runeSet {
	return append(append(runeSet(nil), s...), t...).normalize()
}

// minus returns the code points in s and not in t.
func (s runeSet) minus(t runeSet) runeSet {
	var out runeSet
	for _, r := range s {
		lo := r.lo
		for _, cut := range t {
			if cut.hi < lo || cut.lo > r.hi {
				continue
			}
			if cut.lo > lo {
				out = append(out, runeRange{lo, cut.lo - 1})
			}
			lo = cut.hi + 1
			if lo > r.hi {
				break
			}
		}
		if lo <= r.hi {
			out = append(out, runeRange{lo, r.hi})
		}
	}
	return out
}
