package execgate

import (
	"fmt"
	"strings"
	"time"
)

// DefaultDescribeBytes bounds the text [Approval.Describe] writes when
// [DescribeOptions.MaxBytes] is zero.
const DefaultDescribeBytes = 16 << 10

// maxShownListBytes bounds each list of a confinement, and each egress
// list, in the text Describe writes: the lists are the operator's, the
// envelope holds them whole, and the text says how many it leaves out.
const maxShownListBytes = 1 << 10

// DescribeOptions says how [Approval.Describe] writes an approval.
type DescribeOptions struct {
	// MaxBytes bounds the text. Zero means [DefaultDescribeBytes].
	MaxBytes int
	// NoStdinPreview leaves the preview of stdin out, and shows only its
	// size and SHA-256: for a channel that must never carry what the
	// command reads, such as a webhook to a chat service.
	NoStdinPreview bool
}

// Describe writes what the person approving ap must read before deciding,
// as lines of plain text: the tool call, who proposed it, the executable
// and its arguments, stdin (its size, SHA-256 and escaped preview, see
// [StdinInfo]), the confinement (paths, limits, whether every part is
// required) and the network, the reason, the approval's ID and expiry.
// It is the one rendering every surface shows a person (the MCP question,
// a notification), so that they cannot drift. It never shows the
// environment, which an Approval does not carry.
//
// Every value is escaped as [StdinInfo.Preview] is, and the executable,
// the arguments, the paths and the principal are quoted, so that nothing
// a call or a spec holds can break a line, start a line of its own or
// hide a character.
//
// Describe reports false, with "", when the text would be longer than
// opts.MaxBytes: a call is never shown shortened to someone asked to
// approve it. Only the confinement's lists are bounded, each to about
// 1 KiB, saying how many entries they leave out; they come from the
// operator's configuration, and the envelope holds them whole.
func (ap Approval) Describe(opts DescribeOptions) (string, bool) {
	limit := opts.MaxBytes
	if limit <= 0 {
		limit = DefaultDescribeBytes
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Tool call: %s\n", escapeShown(ap.Name, false))
	if ap.Principal != "" {
		fmt.Fprintf(&b, "Proposed by: %s\n", quoteShown(ap.Principal))
	}
	fmt.Fprintf(&b, "Executable: %s\n", quoteShown(ap.Command))
	b.WriteString("Arguments:")
	if len(ap.Args) == 0 {
		b.WriteString(" (none)")
	}
	for _, a := range ap.Args {
		b.WriteString(" " + quoteShown(a))
		if b.Len() > limit {
			return "", false
		}
	}
	b.WriteString("\n")
	describeStdin(&b, ap.Stdin, opts.NoStdinPreview)
	describeConfinement(&b, ap.Confine)
	describeNetwork(&b, ap.Confine, ap.Egress)
	fmt.Fprintf(&b, "Reason: %s\n", escapeShown(ap.Reason, false))
	fmt.Fprintf(&b, "Approval %s, valid until %s.\n", escapeShown(ap.ID, false), ap.ExpiresAt.UTC().Format(time.RFC3339))
	if b.Len() > limit {
		return "", false
	}
	return b.String(), true
}

// quoteShown is s escaped and quoted, as Describe shows a value.
func quoteShown(s string) string { return `"` + escapeShown(s, true) + `"` }

// describeStdin writes the stdin line.
func describeStdin(b *strings.Builder, in *StdinInfo, noPreview bool) {
	if in == nil {
		b.WriteString("Standard input: none.\n")
		return
	}
	// What the command will read, as the approval digest binds it.
	fmt.Fprintf(b, "Standard input: %d bytes, SHA-256 %s", in.Bytes, escapeShown(in.SHA256, false))
	switch {
	case noPreview:
		b.WriteString(" (its content is not shown here)\n")
	case in.Preview == "":
		b.WriteString(" (not text: no preview)\n")
	case in.PreviewCut:
		// The preview is escaped already: it is the body of a quoted
		// string.
		fmt.Fprintf(b, "; it starts (control characters escaped): \"%s\"...\n", in.Preview)
	default:
		fmt.Fprintf(b, "; it is (control characters escaped): \"%s\"\n", in.Preview)
	}
}

// describeConfinement writes the confinement line.
func describeConfinement(b *strings.Builder, c *ConfinementInfo) {
	if c == nil {
		b.WriteString("Confinement: none: the command runs with the gate's own rights.\n")
		return
	}
	b.WriteString("Confinement: ")
	describePaths(b, "reads", c.Read, "nothing but what it needs to start")
	b.WriteString("; ")
	describePaths(b, "writes", c.Write, "no file")
	b.WriteString("; ")
	describePaths(b, "executes", c.Exec, "nothing but its own executable")
	if c.UnixSockets {
		b.WriteString("; may create Unix sockets")
	} else {
		b.WriteString("; no Unix sockets")
	}
	b.WriteString("; ")
	describeLimits(b, c.Limits)
	if c.BestEffort {
		b.WriteString("; best effort: it runs even where the kernel lacks a part of this.\n")
	} else {
		b.WriteString("; every part required.\n")
	}
}

// describePaths writes a verb and its paths, quoted, or none.
func describePaths(b *strings.Builder, verb string, paths []string, none string) {
	b.WriteString(verb + " ")
	if len(paths) == 0 {
		b.WriteString(none)
		return
	}
	shownList(b, paths, true)
}

// shownList writes the entries of list separated by spaces, quoted or
// not, until about maxShownListBytes are written, and then how many it
// left out.
func shownList(b *strings.Builder, list []string, quoted bool) {
	n := 0
	for i, e := range list {
		if i > 0 && n > maxShownListBytes {
			fmt.Fprintf(b, " and %d more (the approval lists them all)", len(list)-i)
			return
		}
		s := escapeShown(e, quoted)
		if quoted {
			s = `"` + s + `"`
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s)
		n += len(s) + 1
	}
}

// describeLimits writes the resource limits, or that there are none.
func describeLimits(b *strings.Builder, l LimitsInfo) {
	if l == (LimitsInfo{}) {
		b.WriteString("no resource limits")
		return
	}
	var parts []string
	for _, p := range []struct {
		v    int64
		form string
	}{
		{l.CPUSeconds, "CPU %d s"},
		{l.AddressSpace, "address space %d bytes"},
		{l.Files, "files %d"},
		{l.FileSize, "file size %d bytes"},
		{l.Processes, "processes %d"},
	} {
		if p.v != 0 {
			parts = append(parts, fmt.Sprintf(p.form, p.v))
		}
	}
	b.WriteString("limits: " + strings.Join(parts, ", "))
}

// describeNetwork writes the network line: for a confined command always,
// otherwise only when there is an Egress (which a spec has only with a
// confinement).
func describeNetwork(b *strings.Builder, c *ConfinementInfo, e *Egress) {
	switch {
	case e != nil:
		b.WriteString("Network: only through the gate's proxy, to: ")
		if len(e.Allow) == 0 {
			b.WriteString("(nothing)")
		}
		shownList(b, e.Allow, false)
		if len(e.Deny) > 0 {
			b.WriteString("; never to: ")
			shownList(b, e.Deny, false)
		}
		b.WriteString("\n")
	case c == nil:
	case c.Network:
		b.WriteString("Network: the gate's own, not confined.\n")
	default:
		b.WriteString("Network: none.\n")
	}
}
