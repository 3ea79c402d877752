//go:build linux

package main

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUsernsFrom(t *testing.T) {
	sysctls := func(m map[string]string) func(string) ([]byte, error) {
		return func(name string) ([]byte, error) {
			v, ok := m[name]
			if !ok {
				return nil, fs.ErrNotExist
			}
			return []byte(v + "\n"), nil
		}
	}
	const (
		maxNS    = "/proc/sys/user/max_user_namespaces"
		clone    = "/proc/sys/kernel/unprivileged_userns_clone"
		apparmor = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
	)
	for _, tc := range []struct {
		m    map[string]string
		euid int
		ok   bool
		why  string
	}{
		{m: map[string]string{maxNS: "63000"}, euid: 1000, ok: true},
		{m: map[string]string{maxNS: "63000", clone: "1", apparmor: "0"}, euid: 1000, ok: true},
		{m: map[string]string{maxNS: "0"}, euid: 1000, why: "user.max_user_namespaces is 0"},
		{m: map[string]string{}, euid: 1000, why: "cannot be read"},
		{m: map[string]string{maxNS: "10", clone: "0"}, euid: 1000, why: "unprivileged_userns_clone is 0"},
		{m: map[string]string{maxNS: "10", clone: "0"}, euid: 0, ok: true},
		{m: map[string]string{maxNS: "10", apparmor: "1"}, euid: 1000, why: "AppArmor"},
	} {
		ok, why := usernsFrom(sysctls(tc.m), tc.euid)
		assert.Equal(t, tc.ok, ok, "%v", tc.m)
		if tc.why != "" {
			assert.Contains(t, why, tc.why)
		} else {
			assert.Empty(t, why)
		}
	}
}
