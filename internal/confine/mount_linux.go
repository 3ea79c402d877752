//go:build linux

package confine

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// readOnlyTree makes, in the helper's own mount namespace, every mount
// read-only but the write paths, which it binds onto themselves writable
// first. Landlock decides what may be opened, created, removed and renamed;
// it does not cover a file's mode, owner, times or extended attributes,
// which a read-only mount refuses (EROFS) to everyone, root included. A
// device node stays usable on a read-only mount (/dev/null), and a rename
// or link between a write path and the rest crosses mounts (EXDEV).
//
// Nothing propagates out: the tree is made private first. In a user
// namespace of its own, the flags the parent namespace locked (nosuid,
// nodev, noexec, the atime flags) are kept, as the kernel requires.
func readOnlyTree(writePaths []string) error {
	// The working directory was entered through the old mounts; it is
	// entered again at the end, through the new ones, so that a write
	// path that is (or holds) it is writable through relative paths too.
	wd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("reading the working directory: %w", err)
	}
	sealed, err := sealTree()
	if err != nil {
		return err
	}
	if err := bindWritePaths(sealed, writePaths); err != nil {
		return err
	}
	return chdir(wd)
}

// sealing is how sealTree made the tree read-only, which is how
// bindWritePaths makes a write path writable again.
type sealing int

const (
	sealedBySetattr sealing = iota + 1 // mount_setattr(2), every mount at once
	sealedByRemount                    // one read-only remount per mount
)

// sealTree makes the mount tree private, so that nothing propagates in or
// out, and every mount of it read-only.
func sealTree() (sealing, error) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return 0, fmt.Errorf("making the mount tree private: %w", err)
	}
	switch err := setattrTree(); {
	case err == nil:
		return sealedBySetattr, nil
	case !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM):
		return 0, err
	}
	// A kernel before 5.12, without mount_setattr, or a filter around the
	// gate that refuses it: one remount per mount.
	mounts, err := readMountInfo()
	if err != nil {
		return 0, err
	}
	// Deepest first, so that a mount's read-only remount is not hidden
	// by one below it in the same place.
	for i := len(mounts) - 1; i >= 0; i-- {
		m := mounts[i]
		if m.flags&unix.MS_RDONLY != 0 {
			continue
		}
		err := unix.Mount("", m.point, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|m.flags, "")
		switch {
		case err == nil:
		case errors.Is(err, unix.EINVAL) && hidden(m, mounts[i+1:]):
			// A mount hidden under another mount in the same place:
			// nothing reaches it through a path.
		default:
			// A mount point this process cannot reach now (a directory
			// above it renamed or made unsearchable, perhaps by an
			// earlier command in a write path) is not skipped: it
			// would stay writable.
			return 0, fmt.Errorf("making %s read-only: %w", m.point, err)
		}
	}
	return sealedByRemount, nil
}

// bindWritePaths binds each write path that exists onto itself, in a tree
// that sealTree sealed, and makes that one mount, not the mounts nested
// below it, writable again, keeping what the kernel locked.
func bindWritePaths(sealed sealing, writePaths []string) error {
	rw := &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
	for _, p := range writePaths {
		if _, err := os.Stat(p); err != nil {
			continue // grants nothing, as in the Landlock rules
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("binding the write path %s: %w", p, err)
		}
		if sealed == sealedBySetattr {
			if err := unix.MountSetattr(unix.AT_FDCWD, p, 0, rw); err != nil {
				return fmt.Errorf("making the write path %s writable: %w", p, err)
			}
			continue
		}
		// The new bind copied the read-only flag: clear it on that
		// mount alone, keeping what the kernel locked.
		flags, err := mountFlagsAt(p)
		if err != nil {
			return err
		}
		if err := unix.Mount("", p, "", unix.MS_REMOUNT|unix.MS_BIND|(flags&^unix.MS_RDONLY), ""); err != nil {
			return fmt.Errorf("making the write path %s writable: %w", p, err)
		}
	}
	return nil
}

// chdir enters the working directory wd again, through the new mounts.
func chdir(wd string) error {
	if err := unix.Chdir(wd); err != nil {
		return fmt.Errorf("entering the working directory %s again: %w", wd, err)
	}
	return nil
}

// setattrTree makes every mount of the tree read-only with
// mount_setattr(2) (Linux 5.12), in one call, however mounts are stacked
// or hidden under others and whatever flags the kernel has locked (adding
// read-only is always allowed). It returns ENOSYS or EPERM, having changed
// nothing, when the kernel has no such call or a filter refuses it.
func setattrTree() error {
	ro := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, ro); err != nil {
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
			return err
		}
		return fmt.Errorf("making the mount tree read-only: %w", err)
	}
	return nil
}

// hidden reports whether another mount of later (that is, above) lies on
// m's mount point.
func hidden(m mountInfo, later []mountInfo) bool {
	for _, o := range later {
		if o.point == m.point {
			return true
		}
	}
	return false
}

// mountInfo is one line of /proc/self/mountinfo: the mount point and the
// per-mount flags, as mount(2) flags.
type mountInfo struct {
	point string
	flags uintptr
}

var mountOptionFlags = map[string]uintptr{
	"ro":          unix.MS_RDONLY,
	"nosuid":      unix.MS_NOSUID,
	"nodev":       unix.MS_NODEV,
	"noexec":      unix.MS_NOEXEC,
	"noatime":     unix.MS_NOATIME,
	"nodiratime":  unix.MS_NODIRATIME,
	"relatime":    unix.MS_RELATIME,
	"strictatime": unix.MS_STRICTATIME,
	"nosymfollow": unix.MS_NOSYMFOLLOW,
}

// readMountInfo reads the mounts of this mount namespace, in the kernel's
// order (a mount after its parent).
func readMountInfo() ([]mountInfo, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	defer f.Close()
	var out []mountInfo
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			return nil, errors.New("reading the mount table: a malformed line")
		}
		m := mountInfo{point: unescapeMountPath(fields[4])}
		for _, o := range strings.Split(fields[5], ",") {
			m.flags |= mountOptionFlags[o]
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	return out, nil
}

// mountFlagsAt returns the flags of the topmost mount at point.
func mountFlagsAt(point string) (uintptr, error) {
	mounts, err := readMountInfo()
	if err != nil {
		return 0, err
	}
	clean := filepath.Clean(point)
	if resolved, err := filepath.EvalSymlinks(point); err == nil {
		clean = resolved
	}
	for i := len(mounts) - 1; i >= 0; i-- {
		if mounts[i].point == clean {
			return mounts[i].flags, nil
		}
	}
	return 0, fmt.Errorf("the write path %s is not in the mount table after binding it", point)
}

// unescapeMountPath undoes the octal escapes (\040 for a space) of a path
// in /proc/self/mountinfo.
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
