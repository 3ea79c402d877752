package profiles

import (
	"embed"
	"sort"
	"strings"
)

//go:embed *.yaml
var files embed.FS

// Names returns the names of the embedded profiles, sorted. Each is the
// name of the program the profile is for ("git", "jq", "rg").
func Names() []string {
	entries, err := files.ReadDir(".")
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// Lookup returns the YAML text of the profile called name (one tools
// entry, a mapping) and whether there is one.
func Lookup(name string) ([]byte, bool) {
	if name == "" || strings.ContainsAny(name, "/\\.") {
		return nil, false
	}
	data, err := files.ReadFile(name + ".yaml")
	if err != nil {
		return nil, false
	}
	return data, true
}

// installedAs are the other names distributions install a profile's
// program under, by profile.
var installedAs = map[string][]string{
	"fd": {"fdfind"}, // Debian and Ubuntu's fd-find
}

// Programs returns the names the program of the profile called name is
// installed under, the profile's own bin first: ["fd", "fdfind"] for fd,
// whose Debian package installs it as fdfind. A configuration naming the
// profile without setting bin uses the first of them found on PATH. It
// returns nil when there is no such profile.
func Programs(name string) []string {
	if _, ok := Lookup(name); !ok {
		return nil
	}
	return append([]string{name}, installedAs[name]...)
}

// Summary returns the profile's description, the value of its top-level
// description key on one line, or "" when it has none or there is no
// such profile.
func Summary(name string) string {
	data, ok := Lookup(name)
	if !ok {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "description: "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
