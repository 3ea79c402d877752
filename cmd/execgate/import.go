package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/config/flux7"
)

var importCmd = &command{
	name:    "import",
	summary: "convert a flux7-mesh cli_tools and policies file (import flux7 FILE)",
	usage: `Usage: execgate import flux7 [-o FILE [--force]] [--kind KIND]... FILE

Import converts the cli_tools and policies sections of a flux7-mesh
configuration (FILE, or stdin for "-") into a configuration of this
format, written on stdout or, with -o, to a new file (an existing one is
refused unless --force is given, which replaces it whole). See package
config/flux7 for the mapping.

Carried over: each tool's name, bin, working_dir and env (and PATH, HOME
and LANG, which flux7 passes to every command); its mode (simple,
fine-tuned, strict, bare); default_action where a dispatcher has it;
commands with their timeouts; allowed_args flags whose value kind is
given with --kind (none, string or int); stdin on every declared command
and bare entry; policies, with agent as principal, rules in their order,
and human_approval as require_approval.

Not carried over, each a TODO(flux7) comment in the output and a line on
stderr (FILE:LINE:COLUMN: KEY.PATH: MESSAGE): allowed_args flags without
a --kind, the positional arguments every flux7 command accepts, the "any
flag" of a command without allowed_args, flags and command names this
format cannot spell, policies whose agent holds '*' or '?' or has more
than one policy, and rule patterns this format might match differently.
The output allows no more than FILE did: every tool with a TODO is held
at human_approval until a person finishes it: its dispatcher's
default_action, human_approval: true on each of its commands and its
bare entry (which no policy or grant lifts), and a floor-N policy rule
before each allow rule that matches its commands. A file without
policies becomes policies: [], which denies every call, as flux7 does.
Dispatchers take no stdin here.

Input that is not a flux7 file stops the conversion, every problem on
its own line: invalid YAML, anchors, aliases, tags, unknown or duplicate
keys, values of the wrong type, what flux7 itself refuses, a relative
bin or working_dir, a tool name this format refuses.

The output is then loaded as execgate check would, on this machine: each
bin must exist here, and shells, interpreters and the environment
variables package config refuses are reported. Run execgate check where
the file will be served.

Exit codes: 0 converted, and the output loads here; 1 converted (and
written), but the output does not load here (the problems are on
stderr); 2 usage error, FILE cannot be read or converted, or -o names a
file that exists.
`,
	setup: func(fs *flag.FlagSet) func(*cli, context.Context, []string) int {
		out := fs.String("o", "", "write the configuration to `FILE` instead of stdout; an existing FILE is refused without --force")
		force := fs.Bool("force", false, "let -o replace an existing file")
		var kinds []flux7.Kind
		fs.Func("kind", "the value `KIND` of an allowed_args flag: [TOOL[.COMMAND]:]FLAG=none|string|int, such as kubectl:--namespace=string; repeatable", func(s string) error {
			k, err := flux7.ParseKind(s)
			if err != nil {
				return errors.New(strings.TrimPrefix(err.Error(), "flux7: "))
			}
			kinds = append(kinds, k)
			return nil
		})
		return func(c *cli, _ context.Context, args []string) int {
			if len(args) == 0 || args[0] != "flux7" {
				return c.usageError("want: import flux7 FILE (flux7-mesh is the only format import reads)")
			}
			// Flags may also follow "flux7".
			if code := c.parse(c.cmd, fs, args[1:]); code >= 0 {
				return code
			}
			rest := fs.Args()
			if len(rest) != 1 {
				return c.usageError("want one FILE, or - for stdin")
			}
			name, data, err := c.readImport(rest[0])
			if err != nil {
				return c.fail(exitUsage, err)
			}
			res, err := flux7.Convert(name, data, flux7.Options{Kinds: kinds})
			if err != nil {
				return c.importError(err)
			}
			for _, n := range res.Notes {
				fmt.Fprintln(c.stderr, n.String())
			}
			if *out == "" {
				_, err = c.stdout.Write(res.YAML)
			} else {
				err = writeNew(*out, res.YAML, *force)
			}
			if err != nil {
				return c.fail(exitUsage, err)
			}
			return c.importSummary(*out, res)
		}
	},
}

// readImport reads the file to import, or stdin for "-", at most one
// byte over config.MaxFileSize so that Convert can refuse a larger one.
func (c *cli) readImport(file string) (string, []byte, error) {
	r := c.stdin
	name := "<stdin>"
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return "", nil, err
		}
		defer f.Close()
		r, name = f, file
	}
	data, err := io.ReadAll(io.LimitReader(r, config.MaxFileSize+1))
	if err != nil {
		return "", nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return name, data, nil
}

// importError reports a file that does not convert: every problem on its
// own line.
func (c *cli) importError(err error) int {
	var list config.ErrorList
	if !errors.As(err, &list) {
		return c.fail(exitUsage, err)
	}
	for _, e := range list {
		fmt.Fprintln(c.stderr, e.Error())
	}
	noun := "problems"
	if len(list) == 1 {
		noun = "problem"
	}
	fmt.Fprintf(c.stderr, "execgate import: the flux7 file has %d %s; nothing was written\n", len(list), noun)
	return exitUsage
}

// importSummary loads the output as check would, reports what does not
// load, and ends with one line on what the conversion left to a person.
func (c *cli) importSummary(out string, res *flux7.Result) int {
	name := out
	if name == "" {
		name = "<stdout>"
	}
	todos := 0
	for _, n := range res.Notes {
		if n.TODO {
			todos++
		}
	}
	floored := "none"
	if len(res.Floored) > 0 {
		floored = strings.Join(res.Floored, ", ")
	}
	code := exitOK
	_, err := config.LoadBytes(name, res.YAML)
	var list config.ErrorList
	switch {
	case errors.As(err, &list):
		for _, e := range list {
			fmt.Fprintln(c.stderr, e.Error())
		}
		fmt.Fprintf(c.stderr, "execgate import: the output does not load on this machine (%d problems above); fix them here or check it where it is served\n", len(list))
		code = exitFailed
	case err != nil:
		fmt.Fprintf(c.stderr, "execgate import: the output does not load on this machine: %v\n", err)
		code = exitFailed
	}
	fmt.Fprintf(c.stderr, "execgate import: wrote %s: %d notes, %d of them TODO(flux7); held at human_approval until done: %s\n", name, len(res.Notes), todos, floored)
	return code
}

// writeNew writes data to path, which must not exist unless force is
// set; then it is replaced whole, by a rename, so that a reader never
// sees half a file and a symlink at path is replaced, not followed.
func writeNew(path string, data []byte, force bool) error {
	if !force {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s exists; use --force to replace it", path)
		}
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".execgate-import-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, there is nothing to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
