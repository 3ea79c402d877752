package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayout_PgxOnlyInTheBinary pins the module layout (README.md,
// "Layout"): the binary builds stores/pgstore and pgx, which serve its
// approvals from PostgreSQL, while a program that imports only the root
// package, or the root package with config and mcpserver, builds no
// package of pgx. The programs are under testdata/deps, which ./...
// leaves out.
func TestLayout_PgxOnlyInTheBinary(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	deps := func(t *testing.T, pkg string) []string {
		t.Helper()
		out, err := exec.Command(gobin, "list", "-deps", pkg).Output()
		if err != nil {
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr)
		}
		return strings.Fields(string(out))
	}
	has := func(list []string, prefix string) bool {
		for _, p := range list {
			if strings.HasPrefix(p, prefix) {
				return true
			}
		}
		return false
	}
	cases := []struct {
		pkg, why string
		pgx      bool
	}{
		{".", "the binary serves approvals from PostgreSQL, so it builds pgstore and pgx", true},
		{"./testdata/deps/rootonly", "a program that imports only the root package builds no pgx", false},
		{"./testdata/deps/library", "a program that imports the root package, config and mcpserver builds no pgx", false},
	}
	for _, c := range cases {
		t.Run(c.pkg, func(t *testing.T) {
			list := deps(t, c.pkg)
			if !has(list, "github.com/execgate/execgate") {
				t.Fatalf("go list -deps %s lists no package of the module; the program is not what the test thinks", c.pkg)
			}
			if got := has(list, "github.com/jackc/"); got != c.pgx {
				t.Errorf("%s: builds a github.com/jackc package: %v, want %v", c.why, got, c.pgx)
			}
			if got := has(list, "github.com/execgate/execgate/stores/pgstore"); got != c.pgx {
				t.Errorf("%s: builds stores/pgstore: %v, want %v", c.why, got, c.pgx)
			}
		})
	}
}
