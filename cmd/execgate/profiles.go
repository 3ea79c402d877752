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
	usage: `Usage: execgate init --profile NAME[,NAME...] --root DIR [-o FILE]

Init prints a starter configuration whose tools entries name the given
profiles (see execgate profiles), each working in DIR: the directory its
paths must stay inside and the only one it reads. The file is loaded
before it is printed, so every bin must be found on PATH here. With -o it
is written to FILE, which must not exist yet.

Exit codes: 0 written; 2 usage error, an unknown profile, a configuration
that does not load here, or -o names a file that exists.
`,
	setup: func(fs *flag.FlagSet) func(*cli, context.Context, []string) int {
		list := fs.String("profile", "", "comma-separated `NAMES` of the profiles to use")
		root := fs.String("root", "", "the `DIR` the tools work in (working_dir)")
		out := fs.String("o", "", "write the configuration to `FILE` instead of stdout; an existing FILE is refused")
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
			data, err := starterConfig(strings.Split(*list, ","), dir)
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

// starterConfig returns a configuration whose tools name the profiles in
// names, each with working_dir dir.
func starterConfig(names []string, dir string) ([]byte, error) {
	var b strings.Builder
	b.WriteString(`# A starter execgate configuration built from vetted profiles.
#
#   execgate check --config FILE    validate it and list what it allows
#   execgate profiles               the profiles there are
#
# Each entry takes the profile's grammar, environment and confinement;
# it may set only name, bin, sha256, working_dir, timeout,
# no_output_timeout, max_output and policy_version. Without a policies
# section every call of these tools is allowed: add one to say who may
# run what (go doc github.com/execgate/execgate/config).
version: 1
tools:
`)
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if _, ok := profiles.Lookup(n); !ok {
			return nil, fmt.Errorf("no profile %q; the profiles are %s", n, strings.Join(profiles.Names(), ", "))
		}
		if seen[n] {
			return nil, fmt.Errorf("profile %q is named twice", n)
		}
		seen[n] = true
		fmt.Fprintf(&b, "  # %s\n  - profile: %s\n    working_dir: %s\n", profiles.Summary(n), n, strconv.Quote(dir))
	}
	if len(seen) == 0 {
		return nil, errors.New("want at least one profile")
	}
	return []byte(b.String()), nil
}
