//go:build linux

package main

import (
	"os"
	"strconv"
	"strings"

	"github.com/execgate/execgate/internal/confine"
)

// probe reads the Landlock ABI and whether user namespaces can be
// created. It starts no process.
func probe() kernelSupport {
	k := kernelSupport{landlockABI: confine.LandlockABI(), minABI: confine.MinLandlockABI}
	k.userns, k.usernsWhy = usernsFrom(os.ReadFile, os.Geteuid())
	k.root = os.Geteuid() == 0
	return k
}

// usernsFrom judges from the kernel's sysctls, read with read, whether a
// process with effective user euid can create a user namespace, and if
// not, why.
func usernsFrom(read func(string) ([]byte, error), euid int) (bool, string) {
	value := func(name string) (int64, bool) {
		b, err := read(name)
		if err != nil {
			return 0, false
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return v, err == nil
	}
	const maxNS = "/proc/sys/user/max_user_namespaces"
	if v, ok := value(maxNS); !ok {
		return false, maxNS + " cannot be read"
	} else if v <= 0 {
		return false, "user.max_user_namespaces is 0"
	}
	if euid == 0 {
		return true, ""
	}
	if v, ok := value("/proc/sys/kernel/unprivileged_userns_clone"); ok && v == 0 {
		return false, "kernel.unprivileged_userns_clone is 0"
	}
	if v, ok := value("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); ok && v != 0 {
		return false, "kernel.apparmor_restrict_unprivileged_userns is 1 (AppArmor denies them capabilities)"
	}
	return true, ""
}
