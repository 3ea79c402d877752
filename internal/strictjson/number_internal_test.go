package strictjson

import (
	"fmt"
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestParseIntegersMatchStrconv checks parseInt and parseUint, which read
// integer tokens without allocating, against strconv on every size and
// around every boundary.
func TestParseIntegersMatchStrconv(t *testing.T) {
	toks := []string{
		"0", "-0", "1", "-1", "9", "10", "99", "100", "12345",
		"18446744073709551615", "18446744073709551616", "18446744073709551620",
		"99999999999999999999", "-99999999999999999999", "184467440737095516150",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
	}
	for _, bits := range []int{8, 16, 32, 64} {
		lo, hi := int64(-1)<<(bits-1), int64(math.MaxInt64)>>(64-bits)
		uhi := uint64(math.MaxUint64) >> (64 - bits)
		for _, v := range []int64{lo - 1, lo, lo + 1, hi - 1, hi, hi + 1} {
			if bits == 64 && (v == lo-1 || v == hi+1) {
				continue // wrapped; the literal tokens above cover them
			}
			toks = append(toks, strconv.FormatInt(v, 10))
		}
		toks = append(toks, strconv.FormatUint(uhi, 10), strconv.FormatUint(uhi-1, 10))
		if bits < 64 {
			toks = append(toks, strconv.FormatUint(uhi+1, 10))
		}
	}
	for _, bits := range []int{8, 16, 32, 64} {
		for _, tok := range toks {
			t.Run(fmt.Sprintf("%d/%s", bits, tok), func(t *testing.T) {
				wantI, errI := strconv.ParseInt(tok, 10, bits)
				gotI, okI := parseInt([]byte(tok), bits)
				assert.Equal(t, errI == nil, okI, "parseInt ok")
				if okI {
					assert.Equal(t, wantI, gotI, "parseInt")
				}
				wantU, errU := strconv.ParseUint(tok, 10, bits)
				gotU, okU := parseUint([]byte(tok), bits)
				assert.Equal(t, errU == nil, okU, "parseUint ok")
				if okU {
					assert.Equal(t, wantU, gotU, "parseUint")
				}
			})
		}
	}
}
