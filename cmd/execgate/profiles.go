package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/profiles"
)

var profilesCmd = &command{
	name:    "profiles",
	summary: "list the vetted tool profiles a configuration can name",
	usage: `Usage: execgate profiles

Profiles prints the vetted tool profiles built into execgate, one a line:
the name a tools entry gives as profile: NAME, and what the tool does.
execgate init writes a starter configuration from them.

Exit codes: 0 listed; 2 usage error.
`,
	setup: func(fs *flag.FlagSet) func(*cli, context.Context, []string) int {
		return func(c *cli, _ context.Context, args []string) int {
			if len(args) != 0 {
				return c.usageError("profiles takes no arguments")
			}
			for _, n := range profiles.Names() {
				fmt.Fprintf(c.stdout, "%-10s %s\n", n, profiles.Summary(n))
			}
			return exitOK
		}
	},
}

var initCmd = &command{
	name:    "init",
	summary: "print a starter configuration built from profiles (init --profile git,rg --root DIR)",
	usage: `Usage: execgate init --profile NAME[,NAME...] --root DIR [site values] [-o FILE]

Init prints a starter configuration whose tools entries name the given
profiles (see execgate profiles), each working in DIR: the directory its
paths must stay inside and the only one it reads. A profile that needs
what only the site knows is given it by a flag: --hosts for curl (the
hosts it may reach), --namespaces and --kubeconfig for kubectl. The file
is loaded before it is printed, so every bin must be found on PATH here.
With -o it is written to FILE, which must not exist yet.

Exit codes: 0 written; 2 usage error, an unknown profile, a configuration
that does not load here, or -o names a file that exists.
`,
	setup: func(fs *flag.FlagSet) func(*cli, context.Context, []string) int {
		list := fs.String("profile", "", "comma-separated `NAMES` of the profiles to use")
		root := fs.String("root", "", "the `DIR` the tools work in (working_dir)")
		out := fs.String("o", "", "write the configuration to `FILE` instead of stdout; an existing FILE is refused")
		var site siteFlags
		fs.StringVar(&site.hosts, "hosts", "", "comma-separated host `NAMES` a profile that marks hosts may reach (curl)")
		fs.StringVar(&site.namespaces, "namespaces", "", "comma-separated `NAMES` of the namespaces a profile that marks namespaces may read (kubectl)")
		fs.StringVar(&site.kubeconfig, "kubeconfig", "", "the absolute path of the kubeconfig `FILE` a profile that marks kubeconfig uses (kubectl)")
		return func(c *cli, _ context.Context, args []string) int {
			if len(args) != 0 {
				return c.usageError("init takes no arguments besides its flags")
			}
			if *list == "" || *root == "" {
				return c.usageError("want --profile NAME[,NAME...] and --root DIR")
			}
			dir, err := filepath.Abs(*root)
			if err != nil {
				return c.fail(exitUsage, err)
			}
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				return c.usageError("--root %s is not a directory", dir)
			}
			data, err := starterConfig(strings.Split(*list, ","), dir, site)
			if err != nil {
				return c.fail(exitUsage, err)
			}
			if _, err := config.LoadBytes("<init>", data); err != nil {
				fmt.Fprintf(c.stderr, "execgate init: the configuration does not load here:\n%v\n", err)
				return exitUsage
			}
			if *out == "" {
				_, err = c.stdout.Write(data)
			} else {
				err = writeNew(*out, data, false)
			}
			if err != nil {
				return c.fail(exitUsage, err)
			}
			return exitOK
		}
	},
}

// siteFlags are init's site values, each as given on its flag.
type siteFlags struct{ hosts, namespaces, kubeconfig string }

// lines returns the site-value keys, as lines of a tools entry, for the
// profile whose text is profile: those it marks, from the flags given.
// A value it marks and no flag gives is left out, for the load to report.
func (f siteFlags) lines(profile []byte) string {
	var b strings.Builder
	list := func(key, v string) {
		if v == "" || !strings.Contains(string(profile), "${"+key+"}") {
			return
		}
		var q []string
		for _, e := range strings.Split(v, ",") {
			q = append(q, strconv.Quote(strings.TrimSpace(e)))
		}
		fmt.Fprintf(&b, "    %s: [%s]\n", key, strings.Join(q, ", "))
	}
	list("hosts", f.hosts)
	list("namespaces", f.namespaces)
	if f.kubeconfig != "" && strings.Contains(string(profile), "${kubeconfig}") {
		fmt.Fprintf(&b, "    kubeconfig: %s\n", strconv.Quote(f.kubeconfig))
	}
	return b.String()
}

// starterConfig returns a configuration whose tools name the profiles in
// names, each with working_dir dir and the site values it marks.
func starterConfig(names []string, dir string, site siteFlags) ([]byte, error) {
	var b strings.Builder
	b.WriteString(`# A starter execgate configuration built from vetted profiles.
#
#   execgate check --config FILE    validate it and list what it allows
#   execgate profiles               the profiles there are
#
# Each entry takes the profile's grammar, environment and confinement;
# it may set only name, bin, sha256, working_dir, timeout,
# no_output_timeout, max_output, policy_version and the site values its
# profile marks (hosts, namespaces, kubeconfig). Without a policies
# section every call of these tools is allowed: add one to say who may
# run what (go doc github.com/execgate/execgate/config).
version: 1
tools:
`)
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		text, ok := profiles.Lookup(n)
		if !ok {
			return nil, fmt.Errorf("no profile %q; the profiles are %s", n, strings.Join(profiles.Names(), ", "))
		}
		if seen[n] {
			return nil, fmt.Errorf("profile %q is named twice", n)
		}
		seen[n] = true
		fmt.Fprintf(&b, "  # %s\n  - profile: %s\n    working_dir: %s\n%s", profiles.Summary(n), n, strconv.Quote(dir), site.lines(text))
	}
	if len(seen) == 0 {
		return nil, errors.New("want at least one profile")
	}
	return []byte(b.String()), nil
}
