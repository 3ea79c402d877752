//go:build linux

package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// MinLandlockABI is the lowest Landlock ABI that enforces everything a
// Confinement's paths promise: ABI 3 (Linux 6.2) is the first that also
// controls truncation. A required confinement refuses to start on a kernel
// below it.
const MinLandlockABI = 3

// Names of the parts of a confinement that a best-effort start could not
// apply, as reported in Report.Unapplied.
const (
	// UnappliedFilesystem: no filesystem rules were enforced (the kernel
	// has no Landlock, or it is not enabled).
	UnappliedFilesystem = "filesystem"
	// UnappliedTruncate: filesystem rules were enforced, but files outside
	// the write paths can still be truncated (Landlock ABI 1 or 2).
	UnappliedTruncate = "filesystem.truncate"
	// UnappliedNetwork: the command shares the caller's network, because
	// no user and network namespace could be created.
	UnappliedNetwork = "network"
	// UnappliedProcesses: processes the command starts may outlive the
	// call, because no PID namespace could be created.
	UnappliedProcesses = "processes"
	// UnappliedMetadata: files outside the write paths may have their
	// mode, owner, times or extended attributes changed, because no mount
	// namespace could be made read-only.
	UnappliedMetadata = "filesystem.metadata"
	// UnappliedLimits: no resource limit was set (not Linux).
	UnappliedLimits = "limits"
	// UnappliedNoNewPrivs: no_new_privs was not set (not Linux).
	UnappliedNoNewPrivs = "no_new_privs"
)

// LandlockABI returns the Landlock ABI version of the running kernel, or 0
// if Landlock is not available.
func LandlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// landlockABI is LandlockABI; tests replace it to pretend an older kernel.
var landlockABI = LandlockABI

// Landlock access rights, by what a Rule grants.
const (
	rightsWrite = ll.AccessFSWriteFile | ll.AccessFSTruncate |
		ll.AccessFSRemoveDir | ll.AccessFSRemoveFile |
		ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg |
		ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym |
		ll.AccessFSIoctlDev | ll.AccessFSResolveUnix
	// rightsFile are the rights that apply to a file that is not a
	// directory; the kernel refuses others on such a rule.
	rightsFile = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile |
		ll.AccessFSTruncate | ll.AccessFSIoctlDev
)

// landlockRights turns a Rule's Access into Landlock rights for the
// kernel's ABI and for a directory or a file.
func landlockRights(a Access, abi int, dir bool) landlock.AccessFSSet {
	var r uint64
	if a&AccessReadFile != 0 {
		r |= ll.AccessFSReadFile
	}
	if a&AccessReadDir != 0 {
		r |= ll.AccessFSReadDir
	}
	if a&AccessExecute != 0 {
		r |= ll.AccessFSExecute
	}
	if a&AccessWrite != 0 {
		r |= rightsWrite
		// Renaming and linking between directories. Only asked for where
		// the kernel knows it: in best-effort mode, go-landlock gives up
		// on the whole ruleset rather than drop this right.
		if abi >= 2 {
			r |= ll.AccessFSRefer
		}
	}
	if !dir {
		r &= rightsFile
	}
	return landlock.AccessFSSet(r)
}

// restrictFilesystem builds a Landlock ruleset from the request's rules and
// enforces it on the calling thread, which must be locked and have
// no_new_privs set. It handles every filesystem right the kernel knows, so
// whatever no rule grants is refused, and scopes signals (and, with
// ScopeAbstractUnix, abstract Unix sockets) to the sandbox where the kernel
// supports it. It returns the names of what it could not apply in
// best-effort mode; in required mode that is an error instead.
func restrictFilesystem(req *Request) (unapplied []string, err error) {
	abi := landlockABI()
	if abi < MinLandlockABI {
		if !req.BestEffort {
			if abi == 0 {
				return nil, errors.New("filesystem confinement needs Landlock, which this kernel does not offer (not built in, or not enabled with lsm= at boot)")
			}
			return nil, fmt.Errorf("filesystem confinement needs Landlock ABI %d or later (Linux 6.2); this kernel offers ABI %d", MinLandlockABI, abi)
		}
		if abi == 0 {
			return []string{UnappliedFilesystem}, nil
		}
		unapplied = []string{UnappliedTruncate}
	}
	scoped := landlock.ScopedSet(ll.ScopeSignal)
	if req.ScopeAbstractUnix {
		scoped |= ll.ScopeAbstractUnixSocket
	}
	// Best effort towards the kernel's ABI in both modes: the minimum has
	// been checked above, and whatever newer rights the kernel knows are
	// handled (and so refused unless granted).
	cfg := landlock.Config{HandledAccessFS: landlock.V11.HandledAccessFS, Scoped: scoped}.BestEffort()
	rules := make([]landlock.Rule, 0, len(req.Rules))
	for _, r := range req.Rules {
		fi, err := os.Stat(r.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a missing path grants nothing
		}
		if err != nil {
			return nil, fmt.Errorf("filesystem confinement: %w", err)
		}
		rights := landlockRights(r.Access, abi, fi.IsDir())
		if rights == 0 {
			continue
		}
		rules = append(rules, landlock.PathAccess(rights, r.Path).IgnoreIfMissing())
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return nil, fmt.Errorf("filesystem confinement: %w", err)
	}
	if fd < 0 {
		// Nothing to enforce: only possible without Landlock, which the
		// check above already handled.
		return nil, errors.New("filesystem confinement: the kernel accepted no Landlock ruleset")
	}
	defer unix.Close(fd)
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return nil, fmt.Errorf("filesystem confinement: landlock_restrict_self: %w", err)
	}
	return unapplied, nil
}
