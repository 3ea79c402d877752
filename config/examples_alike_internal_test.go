package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStrictInput_AnEntryAlikeButForItsNameIsStillReadStrictly loads two
// entries that differ only in their names and in an anchor or an explicit
// tag in the second one's example: the second is refused as it would be
// alone. An entry found alike took the first one's example input without
// its own nodes being read, so the anchor or tag passed unnoticed.
func TestStrictInput_AnEntryAlikeButForItsNameIsStillReadStrictly(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "present"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	entry := func(name, example string) string {
		return fmt.Sprintf(`  - name: %s
    bin: %s
    working_dir: %s
    bare:
      positionals: {max: 4, path: {must: file}}
      examples:
        allow: [%s]
`, name, self, dir, example)
	}
	for _, tc := range []struct {
		why, first, second, want string
	}{
		{"an anchor on the second entry's example", `{args: [present]}`, `&x {args: [present]}`, "anchors (&x) are not supported"},
		{"an anchor deep in the second entry's example", `{args: [present]}`, `{args: &y [present]}`, "anchors (&y) are not supported"},
		{"an explicit tag in the second entry's example", `{args: [present]}`, `{args: [!!str present]}`, "tags (!!str) are not supported"},
		{"an anchor in the first entry's example, as before", `&x {args: [present]}`, `{args: [present]}`, "anchors (&x) are not supported"},
	} {
		t.Run(tc.why, func(t *testing.T) {
			data := "version: 1\ntools:\n" + entry("a", tc.first) + entry("b", tc.second)
			_, err := LoadBytes("tools.yaml", []byte(data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
