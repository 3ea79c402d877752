package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		err  string
	}{
		{in: "1", want: 1},
		{in: "65536", want: 65536},
		{in: "512B", want: 512},
		{in: "64KiB", want: 64 << 10},
		{in: "1 MiB", want: 1 << 20},
		{in: "1GiB", want: 1 << 30},
		{in: "2047MiB", want: 2047 << 20},
		{in: "0", err: "more than zero"},
		{in: "0KiB", err: "more than zero"},
		{in: "-1", err: "negative"},
		{in: "-1KiB", err: "negative"},
		{in: "64KB", err: `write 64KiB`},
		{in: "64K", err: `write 64KiB`},
		{in: "64kb", err: `write 64KiB`},
		{in: "1MB", err: `write 1MiB`},
		{in: "1G", err: `write 1GiB`},
		{in: "1TiB", err: "unit must be"},
		{in: "1.5MiB", err: "unit must be"},
		{in: "0x10", err: "unit must be"},
		{in: "1_000", err: "unit must be"},
		{in: "+5", err: "not a size"},
		{in: "KiB", err: "not a size"},
		{in: "", err: "not a size"},
		{in: "2GiB", err: "too large"},
		{in: "99999999999999999999", err: "too large"},
		{in: "9999999999GiB", err: "too large"},
	} {
		got, err := parseSize(tc.in)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		assert.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in     string
		zeroOK bool
		want   time.Duration
		err    string
	}{
		{in: "30s", want: 30 * time.Second},
		{in: "1m30s", want: 90 * time.Second},
		{in: "500ms", want: 500 * time.Millisecond},
		{in: "2h", want: 2 * time.Hour},
		{in: "0s", zeroOK: true, want: 0},
		{in: "0s", err: "more than zero"},
		{in: "-1s", err: "negative"},
		{in: "-0s", err: "negative"},
		{in: "30", err: "not a duration"},
		{in: "thirty", err: "not a duration"},
		{in: "1d", err: "not a duration"},
		{in: "", err: "not a duration"},
		{in: "9999999999h", err: "not a duration"},
	} {
		got, err := parseDuration(tc.in, tc.zeroOK)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		assert.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestRiskyNames(t *testing.T) {
	for _, name := range []string{"sh", "/bin/bash", "dash", "zsh", "ksh", "env", "xargs", "timeout", "nice",
		"nohup", "busybox", "python", "python3", "python3.11", "python2.7", "node", "perl", "perl5.36.0",
		"ruby", "ruby3.1", "npx", "/usr/bin/awk", "lua5.4"} {
		assert.True(t, isInterpreter(name), name)
	}
	for _, name := range []string{"git", "jq", "echo", "shred", "envsubst", "perldoc", "rubocop", "nodemon", "/usr/bin/terraform"} {
		assert.False(t, isInterpreter(name), name)
	}
}

func TestParseSizeMax(t *testing.T) {
	got, err := parseSizeMax("4GiB", maxLimitBytes)
	assert.NoError(t, err)
	assert.Equal(t, int64(4<<30), got)
	got, err = parseSizeMax("9223372036854775807", maxLimitBytes)
	assert.NoError(t, err)
	assert.Equal(t, int64(maxLimitBytes), got)
	_, err = parseSizeMax("9999999999GiB", maxLimitBytes)
	assert.ErrorContains(t, err, "too large: at most 9223372036854775807 bytes")
	_, err = parseSizeMax("-1GiB", maxLimitBytes)
	assert.ErrorContains(t, err, "negative")
}
