package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// parseDuration parses a duration as time.ParseDuration spells it ("30s",
// "1m30s", "500ms"). Negative durations are refused, and so is zero
// unless zeroOK.
func parseDuration(s string, zeroOK bool) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "-") {
		return 0, errors.New("must not be negative")
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("%s is not a duration: write a number with a unit (ns, us, ms, s, m, h), such as 30s or 1m30s", quote(s))
	}
	if d < 0 {
		return 0, errors.New("must not be negative")
	}
	if d == 0 && !zeroOK {
		return 0, errors.New("must be more than zero; leave the key out for the default")
	}
	return d, nil
}

// sizeUnits are the units a size may carry: bytes and powers of 1024.
var sizeUnits = map[string]int{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}

// decimalUnits are spellings refused because their meaning (1000 or 1024)
// is ambiguous.
var decimalUnits = map[string]string{
	"K": "KiB", "k": "KiB", "KB": "KiB", "kB": "KiB", "kb": "KiB", "Kb": "KiB", "kib": "KiB", "KIB": "KiB",
	"M": "MiB", "m": "MiB", "MB": "MiB", "mB": "MiB", "mb": "MiB", "Mb": "MiB", "mib": "MiB", "MIB": "MiB",
	"G": "GiB", "g": "GiB", "GB": "GiB", "gB": "GiB", "gb": "GiB", "Gb": "GiB", "gib": "GiB", "GIB": "GiB",
	"b": "B",
}

// parseSize parses a byte count: a decimal integer, optionally followed
// (with or without one space) by B, KiB, MiB or GiB. It must be positive.
func parseSize(s string) (int, error) {
	n, err := parseSizeMax(s, math.MaxInt32)
	return int(n), err
}

// parseSizeMax is parseSize with max as the largest size accepted.
func parseSizeMax(s string, max int64) (int64, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "-") {
		return 0, errors.New("must not be negative")
	}
	i := 0
	for i < len(t) && '0' <= t[i] && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%s is not a size: write a whole number of bytes, optionally with a unit B, KiB, MiB or GiB, such as 65536 or 64KiB", quote(s))
	}
	num, unit := t[:i], strings.TrimPrefix(t[i:], " ")
	mult, ok := sizeUnits[unit]
	if !ok {
		if want, known := decimalUnits[unit]; known {
			return 0, fmt.Errorf("unit %s is ambiguous: write %s%s (multiples of 1024)", quote(unit), num, want)
		}
		return 0, fmt.Errorf("%s is not a size: the unit must be B, KiB, MiB or GiB", quote(s))
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > max/int64(mult) {
		if max == math.MaxInt32 {
			return 0, fmt.Errorf("%s is too large: at most 2147483647 bytes (just under 2GiB)", quote(s))
		}
		return 0, fmt.Errorf("%s is too large: at most %d bytes", quote(s), max)
	}
	if n == 0 {
		return 0, errors.New("must be more than zero; leave the key out for the default")
	}
	return n * int64(mult), nil
}
