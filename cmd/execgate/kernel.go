package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
)

// kernelSupport is what the running kernel offers for execgate's
// Confinement, as execgate check reports it.
type kernelSupport struct {
	// os is "" on Linux, otherwise the GOOS, where nothing is supported.
	os string
	// landlockABI is the Landlock ABI version, 0 when there is none;
	// minABI is the lowest one that enforces a Confinement's paths.
	landlockABI, minABI int
	// userns reports whether an unprivileged process can create a user
	// namespace (and so a network namespace, for network: false);
	// usernsWhy says why not.
	userns    bool
	usernsWhy string
	// root reports whether this process runs as root, which makes the
	// PID and mount namespaces of a call with the network on without a
	// user namespace.
	root bool
}

// probeKernel looks at the running kernel; tests replace it.
var probeKernel = probe

// line is the report of execgate check, one line.
func (k kernelSupport) line() string {
	if k.os != "" {
		return "confinement: not supported on " + k.os + " (confine with require: true refuses every call)"
	}
	var b strings.Builder
	b.WriteString("confinement: ")
	switch {
	case k.landlockABI == 0:
		fmt.Fprintf(&b, "no Landlock (confine paths cannot be enforced; ABI %d or later needed)", k.minABI)
	case k.landlockABI < k.minABI:
		fmt.Fprintf(&b, "Landlock ABI %d (too old: confine paths need ABI %d or later)", k.landlockABI, k.minABI)
	default:
		fmt.Fprintf(&b, "Landlock ABI %d (confine paths enforced)", k.landlockABI)
	}
	b.WriteString("; ")
	switch {
	case k.userns:
		b.WriteString("user namespaces available (network: false, and the PID and mount namespaces, enforced)")
	case k.root:
		fmt.Fprintf(&b, "no user namespaces: %s (network: false cannot be enforced; the PID and mount namespaces are, as root)", k.usernsWhy)
	default:
		fmt.Fprintf(&b, "no user namespaces: %s (network: false, and the PID and mount namespaces, cannot be enforced)", k.usernsWhy)
	}
	return b.String()
}

// lacks names what c asks for that this kernel cannot give.
func (k kernelSupport) lacks(c *execgate.Confinement) []string {
	if k.os != "" {
		return []string{"confinement (not supported on " + k.os + ")"}
	}
	var out []string
	if k.landlockABI < k.minABI {
		out = append(out, "filesystem rules (Landlock ABI "+strconv.Itoa(k.minABI)+" or later)")
	}
	if !c.Network && !k.userns {
		out = append(out, "network: false (user namespaces)")
	}
	if !k.userns && !k.root {
		out = append(out, "the PID and mount namespaces (user namespaces, or running as root)")
	}
	return out
}

// reportKernel prints k's line on w, and on warn a warning for every tool
// with a required confinement that k cannot give: its calls would fail to
// start.
func reportKernel(w, warn io.Writer, k kernelSupport, l *config.Loaded) {
	fmt.Fprintln(w, k.line())
	specs := make(map[string]execgate.CommandSpec) // dispatchers included
	for _, s := range l.Allowlist.Specs() {
		specs[s.Name] = s
	}
	for _, t := range l.Tools {
		var missing []string
		seen := make(map[string]bool)
		for _, name := range t.Specs {
			s, ok := specs[name]
			if !ok || s.Confine == nil || s.Confine.BestEffort {
				continue
			}
			for _, m := range k.lacks(s.Confine) {
				if !seen[m] {
					seen[m] = true
					missing = append(missing, m)
				}
			}
		}
		if len(missing) > 0 {
			fmt.Fprintf(warn, "execgate check: warning: tool %s requires confinement this kernel cannot give: %s; its calls will fail to start here (set require: false to run them less confined)\n",
				t.Name, strings.Join(missing, ", "))
		}
	}
}
