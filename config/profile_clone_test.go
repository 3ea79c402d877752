package config_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/profiles"
)

// TestProfileCopies_ReportWhatTheirEntryAloneWould loads, for each case,
// a file whose second entry expands alike the first but for its name
// (the same profile, site values and overrides), and the same file with
// the first entry changed in one override, so that the second is
// expanded and decoded in full. Every problem and warning found at the
// second entry must be the same in both loads, at the same line, column
// and key path: an entry decoded as a copy of an earlier one reports what
// it would alone, at its own lines, and never at the first's.
func TestProfileCopies_ReportWhatTheirEntryAloneWould(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	empty := t.TempDir()
	withFiles := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(withFiles, "README"), []byte("x\n"), 0o600))
	for _, c := range []struct {
		why          string
		first, other string // the first entry's own lines, and its changed form
		second       string // the second entry's
	}{
		{
			"examples that fail in the site's working directory warn at each entry",
			"profile: tar\nname: a\nbin: " + self + "\nworking_dir: " + empty + "\ntimeout: 7s",
			"profile: tar\nname: a\nbin: " + self + "\nworking_dir: " + empty + "\ntimeout: 8s",
			"profile: tar\nname: b\nbin: " + self + "\nworking_dir: " + empty + "\ntimeout: 7s",
		},
		{
			"an entry in another working directory warns about its own",
			"profile: tar\nname: a\nbin: " + self + "\nworking_dir: " + withFiles + "\ntimeout: 7s",
			"profile: tar\nname: a\nbin: " + self + "\nworking_dir: " + withFiles + "\ntimeout: 8s",
			"profile: tar\nname: b\nbin: " + self + "\nworking_dir: " + empty + "\ntimeout: 7s",
		},
		{
			"an entry in another working directory is refused at its own bin",
			"profile: tar\nname: a\nbin: /bin/sh\nworking_dir: " + empty + "\ntimeout: 7s",
			"profile: tar\nname: a\nbin: /bin/sh\nworking_dir: " + empty + "\ntimeout: 8s",
			"profile: tar\nname: b\nbin: /bin/sh\nworking_dir: " + withFiles + "\ntimeout: 7s",
		},
		{
			"a program that is not there is refused at each entry's bin",
			"profile: rg\nname: a\nbin: /nonexistent/rg\nworking_dir: " + withFiles + "\ntimeout: 7s",
			"profile: rg\nname: a\nbin: /nonexistent/rg\nworking_dir: " + withFiles + "\ntimeout: 8s",
			"profile: rg\nname: b\nbin: /nonexistent/rg\nworking_dir: " + withFiles + "\ntimeout: 7s",
		},
		{
			"a relative working directory is refused at each entry",
			"profile: cat\nname: a\nbin: " + self + "\nworking_dir: relative/dir\ntimeout: 7s",
			"profile: cat\nname: a\nbin: " + self + "\nworking_dir: relative/dir\ntimeout: 8s",
			"profile: cat\nname: b\nbin: " + self + "\nworking_dir: relative/dir\ntimeout: 7s",
		},
		{
			"a shell for bin is refused at each entry's bin",
			"profile: cat\nname: a\nbin: /bin/sh\nworking_dir: " + withFiles + "\ntimeout: 7s",
			"profile: cat\nname: a\nbin: /bin/sh\nworking_dir: " + withFiles + "\ntimeout: 8s",
			"profile: cat\nname: b\nbin: /bin/sh\nworking_dir: " + withFiles + "\ntimeout: 7s",
		},
		{
			"site values written another way are alike, and a problem is still at the second entry",
			"profile: curl\nname: a\nbin: /bin/sh\nworking_dir: " + empty + "\nhosts: [example.com]\ntimeout: 7s",
			"profile: curl\nname: a\nbin: /bin/sh\nworking_dir: " + empty + "\nhosts: [example.com]\ntimeout: 8s",
			"profile: curl\nname: b\nbin: /bin/sh\nworking_dir: " + empty + "\nhosts:\n  - example.com\ntimeout: 7s",
		},
		{
			"a name that is not one is refused at the second entry",
			"profile: ls\nname: a\nbin: " + self + "\nworking_dir: " + withFiles + "\ntimeout: 7s",
			"profile: ls\nname: a\nbin: " + self + "\nworking_dir: " + withFiles + "\ntimeout: 8s",
			"profile: ls\nname: \"no spaces\"\nbin: " + self + "\nworking_dir: " + withFiles + "\ntimeout: 7s",
		},
		{
			"a name that is not a string is refused at the second entry",
			"profile: ls\nname: a\nbin: " + self + "\nworking_dir: " + withFiles + "\ntimeout: 7s",
			"profile: ls\nname: a\nbin: " + self + "\nworking_dir: " + withFiles + "\ntimeout: 8s",
			"profile: ls\nname: [b]\nbin: " + self + "\nworking_dir: " + withFiles + "\ntimeout: 7s",
		},
		{
			"the first entry's name again is a duplicate at the second",
			"profile: ls\nname: a\nbin: " + self + "\nworking_dir: " + withFiles + "\ntimeout: 7s",
			"profile: ls\nname: a\nbin: " + self + "\nworking_dir: " + withFiles + "\ntimeout: 8s",
			"profile: ls\nname: a\nbin: " + self + "\nworking_dir: " + withFiles + "\ntimeout: 7s",
		},
		{
			"an override with no value is refused at the second entry",
			"profile: ls\nname: a\nbin: " + self + "\nworking_dir: " + withFiles + "\ntimeout: 7s\npolicy_version: v1",
			"profile: ls\nname: a\nbin: " + self + "\nworking_dir: " + withFiles + "\ntimeout: 8s\npolicy_version: v1",
			"profile: ls\nname: b\nbin: " + self + "\nworking_dir: " + withFiles + "\ntimeout: 7s\npolicy_version:",
		},
	} {
		t.Run(c.why, func(t *testing.T) {
			copied, copiedAt := loadSecond(t, c.first, c.second)
			alone, aloneAt := loadSecond(t, c.other, c.second)
			require.Equal(t, aloneAt, copiedAt)
			assert.Equal(t, alone, copied, "what is found at the second entry, decoded as a copy and in full")
			assert.NotEmpty(t, alone, "each case has something to report at the second entry")
		})
	}
}

// loadSecond loads a file of two tools entries, first and second (each
// given as its lines without indentation), and returns every problem and
// warning on the second's lines, and the line the second starts on.
func loadSecond(t *testing.T, first, second string) ([]string, int) {
	t.Helper()
	indent := func(s string) string {
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			prefix := "    "
			if i == 0 {
				prefix = "  - "
			}
			lines[i] = prefix + l
		}
		return strings.Join(lines, "\n") + "\n"
	}
	data := "version: 1\ntools:\n" + indent(first) + indent(second)
	start := 3 + strings.Count(first, "\n") + 1
	end := start + strings.Count(second, "\n")
	var found []string
	l, err := config.LoadBytes("tools.yaml", []byte(data))
	var list config.ErrorList
	switch {
	case errors.As(err, &list):
		for _, e := range list {
			if e.Line >= start && e.Line <= end {
				found = append(found, fmt.Sprintf("error %d:%d %s: %s", e.Line, e.Column, e.Path, e.Message))
			}
		}
	case err != nil:
		t.Fatal(err)
	default:
		for _, w := range l.Warnings() {
			if w.Line >= start && w.Line <= end {
				found = append(found, fmt.Sprintf("warning %d:%d %s: %s", w.Line, w.Column, w.Path, w.Message))
			}
		}
	}
	slices.Sort(found)
	return found, start
}

// TestStrictInput_AnEntryNamingAProfileIsReadStrictly loads entries
// naming a profile whose own keys or values carry an anchor or an
// explicit tag, alone and as the second of two entries alike: each is
// refused, as the same key would be in an entry written out. The profile
// key's value was read for its text alone, so an anchor or a tag on it
// passed.
func TestStrictInput_AnEntryNamingAProfileIsReadStrictly(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	plain := fmt.Sprintf("  - profile: curl\n    name: a\n    bin: %s\n    working_dir: %s\n    hosts: [example.com]\n", self, dir)
	for _, c := range []struct{ why, entry, want string }{
		{"an anchor on the profile's name", "  - profile: &p curl\n    name: b\n    bin: %s\n    working_dir: %s\n    hosts: [example.com]\n", "anchors (&p) are not supported"},
		{"a tag on the profile's name", "  - profile: !!str curl\n    name: b\n    bin: %s\n    working_dir: %s\n    hosts: [example.com]\n", "tags (!!str) are not supported"},
		{"an anchor on a site value's item", "  - profile: curl\n    name: b\n    bin: %s\n    working_dir: %s\n    hosts: [&h example.com]\n", "anchors (&h) are not supported"},
		{"an anchor on an override's key", "  - profile: curl\n    &k name: b\n    bin: %s\n    working_dir: %s\n    hosts: [example.com]\n", "anchors (&k) are not supported"},
		{"a tag on the name", "  - profile: curl\n    name: !!str b\n    bin: %s\n    working_dir: %s\n    hosts: [example.com]\n", "tags (!!str) are not supported"},
	} {
		entry := fmt.Sprintf(c.entry, self, dir)
		for _, tools := range []string{entry, plain + entry} {
			_, err := config.LoadBytes("tools.yaml", []byte("version: 1\ntools:\n"+tools))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s, in %d entries: got %v, want an error saying %q", c.why, strings.Count(tools, "profile:"), err, c.want)
			}
		}
	}
}

// TestProfileCopies_BuildWhatTheirEntryAloneWould loads, for each shipped
// profile, two entries alike but for their names (and, in a second
// round, their working directories), and the same two with the first
// changed in one override: the second entry's tool and specs (every
// field, its working directory and confinement included, and the argument
// schema the model is shown) are the same in both loads, whether it was
// decoded and built as a copy of the first or in full.
func TestProfileCopies_BuildWhatTheirEntryAloneWould(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	dir, other := t.TempDir(), t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte("x\n"), 0o600))
	for _, secondDir := range []string{dir, other} {
		for _, name := range profiles.Names() {
			data, _ := profiles.Lookup(name)
			site := ""
			if strings.Contains(string(data), "${hosts}") {
				site += "    hosts: [example.com, api.example.org]\n"
			}
			if strings.Contains(string(data), "${namespaces}") {
				site += "    namespaces: [default, team-a]\n"
			}
			if strings.Contains(string(data), "${kubeconfig}") {
				site += "    kubeconfig: " + kubeconfig + "\n"
			}
			entry := func(tool, wd, timeout string) string {
				return fmt.Sprintf("  - profile: %s\n    name: %s\n    bin: %s\n    working_dir: %s\n    timeout: %s\n%s", name, tool, self, wd, timeout, site)
			}
			second := func(first string) (config.Tool, []string) {
				t.Helper()
				l, err := config.LoadBytes("tools.yaml", []byte("version: 1\ntools:\n"+first+entry("b", secondDir, "7s")))
				require.NoError(t, err, name)
				var specs []string
				for _, s := range l.Allowlist.Specs() {
					if s.Name != "b" && !strings.HasPrefix(s.Name, "b.") {
						continue
					}
					schema := string(s.Args.JSONSchema())
					s.Args = nil
					text, err := json.Marshal(s)
					require.NoError(t, err)
					specs = append(specs, string(text)+" "+schema)
				}
				require.Len(t, l.Tools, 2)
				return l.Tools[1], specs
			}
			copyTool, copySpecs := second(entry("a", dir, "7s"))
			fullTool, fullSpecs := second(entry("a", dir, "8s"))
			assert.Equal(t, fullTool, copyTool, name)
			assert.Equal(t, fullSpecs, copySpecs, name)
			assert.NotEmpty(t, copySpecs, name)
			for _, s := range copySpecs {
				assert.Contains(t, s, `"Dir":"`+secondDir+`"`, name)
			}
		}
	}
}

// problemsOf loads data and returns every problem as "line:col path: message".
func problemsOf(t *testing.T, data string) []string {
	t.Helper()
	_, err := config.LoadBytes("tools.yaml", []byte(data))
	var list config.ErrorList
	require.True(t, errors.As(err, &list), "want an ErrorList, got %v", err)
	var out []string
	for _, e := range list {
		out = append(out, fmt.Sprintf("%d:%d %s: %s", e.Line, e.Column, e.Path, e.Message))
	}
	slices.Sort(out)
	return out
}

// TestProfileCopies_WrittenOnTheFirstsLinesReportAtTheirOwnNodes loads an
// entry decoded as a copy of an earlier one and written on a line the
// first entry spans (flow style): a problem with its own name is reported
// at its name, as when it is decoded in full, and not moved to its
// profile key as a node of the profile would be.
func TestProfileCopies_WrittenOnTheFirstsLinesReportAtTheirOwnNodes(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	common := fmt.Sprintf("bin: %s, working_dir: %s", self, dir)
	for _, c := range []struct{ why, tmpl string }{
		{"both entries on one line",
			"version: 1\ntools: [{profile: ls, name: a, %[1]s, timeout: %[2]s}, {profile: ls, name: 'no spaces', %[1]s, timeout: 7s}]\n"},
		{"the copy's name on the first's last line, its profile key on the next",
			"version: 1\ntools: [{profile: ls, name: a, %[1]s, timeout: %[2]s}, {name: 'no spaces',\n    profile: ls, %[1]s, timeout: 7s}]\n"},
	} {
		copied := problemsOf(t, fmt.Sprintf(c.tmpl, common, "7s")) // the second is a copy of the first
		alone := problemsOf(t, fmt.Sprintf(c.tmpl, common, "8s"))  // the second is decoded in full
		assert.Equal(t, alone, copied, c.why)
	}
}

// TestProfileCopies_AnEmptyNameIsTheCopysOwn loads an entry decoded as a
// copy of an earlier one whose name has no value: it is refused for that
// alone, as when it is decoded in full, and not also as a duplicate of
// the first entry's name, which it never wrote.
func TestProfileCopies_AnEmptyNameIsTheCopysOwn(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	tmpl := "version: 1\ntools:\n  - profile: ls\n    name: a\n    bin: %[1]s\n    working_dir: %[2]s\n    timeout: %[3]s\n" +
		"  - profile: ls\n    name:\n    bin: %[1]s\n    working_dir: %[2]s\n    timeout: 7s\n"
	copied := problemsOf(t, fmt.Sprintf(tmpl, self, dir, "7s"))
	alone := problemsOf(t, fmt.Sprintf(tmpl, self, dir, "8s"))
	assert.Equal(t, alone, copied)
	for _, p := range copied {
		assert.NotContains(t, p, `duplicate tool name "a"`)
	}
}

// TestStrictInput_AnEntryNamingAProfileRefusesDuplicateKeys loads entries
// naming a profile with a key written twice: each is refused, as a key
// written twice in any mapping of the file is. A second profile key was
// ignored (the first entry below loaded as ls, where a reader taking the
// last value, as many YAML tools do, sees cat), and a second override
// silently replaced the first.
func TestStrictInput_AnEntryNamingAProfileRefusesDuplicateKeys(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	for _, entry := range []string{
		"  - profile: ls\n    profile: cat\n    name: a\n",
		"  - profile: ls\n    name: a\n    timeout: 7s\n    timeout: 8s\n",
		"  - profile: ls\n    name: a\n    name: b\n",
		"  - profile: curl\n    name: a\n    hosts: [example.com]\n    hosts: [example.org]\n",
	} {
		data := "version: 1\ntools:\n" + entry + fmt.Sprintf("    bin: %s\n    working_dir: %s\n", self, dir)
		_, err := config.LoadBytes("tools.yaml", []byte(data))
		if err == nil || !strings.Contains(err.Error(), "duplicate key") {
			t.Errorf("%q: got %v, want a duplicate key error", entry, err)
		}
	}
}

// TestProfileCopies_EachInItsOwnWorkingDirectory loads entries naming the
// same profile, alike but for their names and working directories, some
// directories repeated: every spec of every entry has its own entry's
// working directory as its Dir and among its confinement's read paths,
// and no other entry's, whichever earlier entry it was copied from.
func TestProfileCopies_EachInItsOwnWorkingDirectory(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	order := []int{0, 1, 2, 1, 0, 2, 2}
	var sb strings.Builder
	sb.WriteString("version: 1\ntools:\n")
	for i, d := range order {
		fmt.Fprintf(&sb, "  - profile: git\n    name: g%d\n    bin: %s\n    working_dir: %s\n", i, self, dirs[d])
	}
	l, err := config.LoadBytes("tools.yaml", []byte(sb.String()))
	require.NoError(t, err)
	specs := l.Allowlist.Specs()
	for i, d := range order {
		n := 0
		for _, s := range specs {
			if !strings.HasPrefix(s.Name, fmt.Sprintf("g%d.", i)) && s.Name != fmt.Sprintf("g%d", i) {
				continue
			}
			n++
			assert.Equal(t, dirs[d], s.Dir, s.Name)
			require.NotNil(t, s.Confine, s.Name)
			assert.Contains(t, s.Confine.Read, dirs[d], s.Name)
			for _, other := range dirs {
				if other != dirs[d] {
					assert.NotContains(t, s.Confine.Read, other, "%s reads no other entry's directory", s.Name)
				}
			}
		}
		assert.Positive(t, n, "g%d has specs", i)
	}
}
