package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
)

// TestTypedGrammars_SearchProfilesReadNoIgnoreFileOutsideEvenUnconfined
// runs rg and fd, outside any confinement, in a working directory whose
// ignore file is a symbolic link to a file outside it, whose .git is a
// file naming a git directory elsewhere (whose info/exclude lists
// README), and which holds a FIFO under an ignore file's name: no line
// of a file outside is printed, no file is hidden by one, and the call
// ends on its own instead of blocking on the FIFO.
func TestTypedGrammars_SearchProfilesReadNoIgnoreFileOutsideEvenUnconfined(t *testing.T) {
	for _, c := range []struct{ profile, ignore, fifo, input string }{
		{"rg", ".ignore", ".rgignore", `{"args":["--files"]}`},
		{"rg", ".rgignore", ".ignore", `{"args":["-e","hello"]}`},
		{"fd", ".fdignore", ".ignore", `{}`},
		{"fd", ".ignore", ".fdignore", `{}`},
	} {
		t.Run(c.profile+" "+c.ignore, func(t *testing.T) {
			s := newProofScratch(t, c.profile, "")
			require.NoError(t, os.WriteFile(filepath.Join(s.base, "secret.ini"), []byte("token=[z-a"+proofCanary+"\n"+proofCanary+"\n"), 0o600))
			require.NoError(t, os.Symlink("../secret.ini", filepath.Join(s.root, c.ignore)))
			require.NoError(t, syscall.Mkfifo(filepath.Join(s.root, "src", c.fifo), 0o644))
			other := filepath.Join(s.base, "other", ".git")
			require.NoError(t, os.MkdirAll(filepath.Join(other, "worktrees", "w"), 0o755))
			require.NoError(t, os.MkdirAll(filepath.Join(other, "info"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(other, "worktrees", "w", "commondir"), []byte("../..\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(other, "info", "exclude"), []byte("{a,{b"+proofCanary+"\nREADME\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(s.root, ".git"), []byte("gitdir: "+filepath.Join(other, "worktrees", "w")+"\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(s.root, proofCanary), []byte("hello\n"), 0o644))
			r, err := unconfinedExecutor(t, s).Run(context.Background(), c.profile+".run", json.RawMessage(c.input))
			require.NoError(t, err)
			assert.Equal(t, execgate.TerminationExit, r.Termination, "the call ends on its own: %s", r.Stderr)
			assert.NotContains(t, r.Stderr, proofCanary, "no line of a file outside is printed")
			assert.Contains(t, r.Stdout, proofCanary, "a file outside hides nothing")
			assert.Contains(t, r.Stdout, "README", "the info/exclude outside hides nothing")
		})
	}
}

// TestTypedGrammars_JqProfilesImportNothingEvenUnconfined runs jq and yq,
// outside any confinement, with filters whose module directives would
// load the JSON file beside the working directory: each is refused, or
// reads nothing of it.
func TestTypedGrammars_JqProfilesImportNothingEvenUnconfined(t *testing.T) {
	for _, profile := range []string{"jq", "yq"} {
		s := newProofScratch(t, profile, "")
		require.NoError(t, os.WriteFile(filepath.Join(s.base, "secret.json"), []byte(`{"c":"`+proofCanary+`"}`+"\n"), 0o600))
		x := unconfinedExecutor(t, s)
		for _, filter := range []string{
			`import "../secret" as $s; $s`,
			`import "secret" as $s {search: ".."}; $s`,
			`  import"secret" as $s {search: "../"}; $s`,
			`include "secret" {search: ".."}; .`,
			`module {}; import "../secret" as $s; $s`,
		} {
			t.Run(profile+" "+filter, func(t *testing.T) {
				in, err := json.Marshal(map[string]any{"args": []string{"-n", filter}, "stdin": "{}"})
				require.NoError(t, err)
				r, err := x.Run(context.Background(), profile+".run", in)
				var ve *execgate.ValidationError
				require.ErrorAs(t, err, &ve, "the filter is refused; it ran: %+v", r)
			})
		}
	}
}

// TestTypedGrammars_JqProfilesLoadNoModuleMetaEvenUnconfined runs jq and
// yq, outside any confinement, with filters that call the builtin
// modulemeta anywhere in them, beside a lib/jq directory of *.jq files
// that jq's default search path reaches (for jq installed in a bin
// directory beside it, and for yq, which starts jq by name): no module
// is found, so none of the files is read.
func TestTypedGrammars_JqProfilesLoadNoModuleMetaEvenUnconfined(t *testing.T) {
	for _, profile := range []string{"jq", "yq"} {
		s := newProofScratch(t, profile, "")
		if profile == "jq" {
			// jq beside an operator's lib/jq: base/bin/jq, base/lib/jq.
			bin := filepath.Join(s.base, "bin", "jq")
			require.NoError(t, os.MkdirAll(filepath.Dir(bin), 0o755))
			data, err := os.ReadFile(requireProgram(t, "jq"))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(bin, data, 0o755))
			s.config = writeFile(t, "tools.yaml", "version: 1\ntools:\n  - profile: jq\n    bin: "+bin+"\n    working_dir: "+s.root+"\n")
		}
		lib := filepath.Join(s.base, "lib", "jq")
		require.NoError(t, os.MkdirAll(filepath.Join(lib, "dir"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(lib, "secret.jq"), []byte(`module {"c":"`+proofCanary+`"};`+"\n"), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(lib, "bad.jq"), []byte(proofCanary+" ; (\n"), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(lib, "dir", "dir.jq"), []byte(`import "`+proofCanary+`" as x;`+"\n"), 0o600))
		x := unconfinedExecutor(t, s)
		for _, filter := range []string{
			`"secret" | modulemeta`,
			`"bad" | modulemeta`,
			`"dir" | modulemeta`,
			`["secret", "bad"][] | try modulemeta catch .`,
			`. as $m | "secret" | modulemeta`,
			` "secret"|modulemeta`,
			`"` + lib + `/secret" | modulemeta`,
		} {
			t.Run(profile+" "+filter, func(t *testing.T) {
				in, err := json.Marshal(map[string]any{"args": []string{"-n", "-c", filter}, "stdin": "{}"})
				require.NoError(t, err)
				r, err := x.Run(context.Background(), profile+".run", in)
				require.NoError(t, err)
				assert.NotContains(t, r.Stdout+r.Stderr, proofCanary, "a module outside the working directory is read")
				assert.Contains(t, r.Stdout+r.Stderr, "module not found", "jq looked and found nothing")
			})
		}
	}
}
