package execgate

import (
	"fmt"
	"slices"
	"time"
)

// ConfinementInfo shows the person approving a held call what its command
// may touch once it runs: the [Confinement] of its spec, as [NewAllowlist]
// normalized it. An [Approval] carries it when the spec has a
// Confinement. The egress allowlist, for a spec with an [Egress], is
// [Approval.Egress].
type ConfinementInfo struct {
	// Read lists the paths the command may read ([Confinement.Read]).
	// Empty means none but what it needs to start.
	Read []string `json:"read"`
	// Write lists the paths it may write, and read ([Confinement.Write]).
	// Empty means it writes no file.
	Write []string `json:"write"`
	// Exec lists the paths it may execute ([Confinement.Exec]). Empty
	// means nothing but its own executable.
	Exec []string `json:"exec"`
	// Network reports that the command is on the gate's own network
	// ([Confinement.Network]). False means a network namespace of its
	// own: no host at all, or only the hosts of [Approval.Egress] when
	// the approval has one.
	Network bool `json:"network"`
	// UnixSockets reports that the command may create Unix sockets
	// ([Confinement.UnixSockets]).
	UnixSockets bool `json:"unixSockets"`
	// Limits are its resource limits ([Confinement.Limits]).
	Limits LimitsInfo `json:"limits"`
	// BestEffort reports that the command runs even when the kernel lacks
	// a part of the confinement ([Confinement.BestEffort]); false means
	// every part is required.
	BestEffort bool `json:"bestEffort"`
}

// LimitsInfo shows the resource limits of a confined command ([Limits]).
// A zero field sets no limit.
type LimitsInfo struct {
	// CPUSeconds is the processor time the command may use, in seconds
	// ([Limits.CPU], which NewAllowlist rounds up to a whole second).
	CPUSeconds int64 `json:"cpuSeconds,omitempty"`
	// AddressSpace is the largest virtual address space of each process,
	// in bytes ([Limits.AddressSpace]).
	AddressSpace int64 `json:"addressSpace,omitempty"`
	// Files is one more than the highest file descriptor each process
	// may open ([Limits.Files]).
	Files int64 `json:"files,omitempty"`
	// FileSize is the largest file a process may write, in bytes
	// ([Limits.FileSize]).
	FileSize int64 `json:"fileSize,omitempty"`
	// Processes is the number of processes the user may have at once
	// ([Limits.Processes]).
	Processes int64 `json:"processes,omitempty"`
}

// maxShownConfinementBytes bounds what an approval shows of a spec's
// confinement: its read, write and exec paths and its egress entries,
// each counted with one byte more. [NewAllowlist] refuses a larger
// confinement, so that every approval it leads to fits maxApprovalJSON.
const maxShownConfinementBytes = 256 << 10

// checkShownConfinement refuses a confinement that an approval could not
// carry. c is normalized.
func checkShownConfinement(spec string, c *Confinement) error {
	n := 0
	for _, l := range [][]string{c.Read, c.Write, c.Exec} {
		for _, p := range l {
			n += len(p) + 1
		}
	}
	if e := c.Egress; e != nil {
		for _, h := range slices.Concat(e.Allow, e.Deny) {
			n += len(h) + 1
		}
	}
	if n > maxShownConfinementBytes {
		return &ConfigError{Spec: spec, Field: "Confine", Message: fmt.Sprintf(
			"its paths and egress entries hold %d bytes, more than the %d an approval can show its approver; list directories rather than their files", n, maxShownConfinementBytes)}
	}
	return nil
}

// confinementInfo shows the confinement of s, or returns nil when it has
// none.
func confinementInfo(s *CommandSpec) *ConfinementInfo {
	c := s.Confine
	if c == nil {
		return nil
	}
	// Empty lists rather than nil ones, so that the JSON form shows []
	// ("nothing") rather than null.
	return &ConfinementInfo{
		Read:        append([]string{}, c.Read...),
		Write:       append([]string{}, c.Write...),
		Exec:        append([]string{}, c.Exec...),
		Network:     c.Network,
		UnixSockets: c.UnixSockets,
		Limits: LimitsInfo{
			CPUSeconds:   wholeSeconds(c.Limits.CPU),
			AddressSpace: c.Limits.AddressSpace,
			Files:        c.Limits.Files,
			FileSize:     c.Limits.FileSize,
			Processes:    c.Limits.Processes,
		},
		BestEffort: c.BestEffort,
	}
}

// wholeSeconds is d in seconds, rounded up.
func wholeSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second > 0 {
		s++
	}
	return s
}

// clone returns a deep copy of c, or nil.
func (c *ConfinementInfo) clone() *ConfinementInfo {
	if c == nil {
		return nil
	}
	out := *c
	out.Read = slices.Clone(c.Read)
	out.Write = slices.Clone(c.Write)
	out.Exec = slices.Clone(c.Exec)
	return &out
}
