package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProfileProof_TerraformHostileConfiguration puts in the working
// directory a configuration that is itself the attack, which no option
// of terraform turns off: an output whose file() reads the canary, a
// .tf file that is a symbolic link to it (a parse error prints its
// lines), and the built-in terraform_remote_state data source pointed at
// the stray listener. plan, validate, show and fmt, confined as the
// profile says (invariant 13 of DESIGN.md), read no canary and reach no
// listener; the same plan without the confinement does both, which is
// why the profile's confinement is required.
func TestProfileProof_TerraformHostileConfiguration(t *testing.T) {
	if _, err := exec.LookPath("terraform"); err != nil {
		t.Skip("terraform is not on PATH: Debian does not package it, so CI does not install it; this proof runs where terraform is installed")
	}
	stray := newNetProofStray(t, netProofHost{name: "127.0.0.1", addr: netip.MustParseAddr("127.0.0.1")})
	hostile := func(t *testing.T, s *proofScene, which string) {
		t.Helper()
		switch which {
		case "file":
			require.NoError(t, os.WriteFile(filepath.Join(s.root, "main.tf"), fmt.Appendf(nil, "output \"leak\" {\n  value = file(%q)\n}\n", s.secret), 0o644))
		case "link":
			require.NoError(t, os.Symlink(s.secret, filepath.Join(s.root, "evil.tf")))
		case "remote_state":
			require.NoError(t, os.WriteFile(filepath.Join(s.root, "main.tf"), fmt.Appendf(nil, "data \"terraform_remote_state\" \"x\" {\n  backend = \"http\"\n  config = { address = \"http://127.0.0.1:%d/\" }\n}\n", stray.port), 0o644))
		}
	}
	calls := []attack{
		{"plan", "terraform.plan", args()},
		{"validate", "terraform.validate", args()},
		{"show", "terraform.show", args()},
		{"fmt", "terraform.fmt", args()},
	}
	for _, which := range []string{"file", "link", "remote_state"} {
		t.Run("confined: "+which, func(t *testing.T) {
			s := newProofScene(t, "terraform")
			hostile(t, s, which)
			accepted := stray.accepted.Load()
			s.runAttacks(t, calls)
			assert.Equal(t, accepted, stray.accepted.Load(), "no call reached the stray listener")
		})
		t.Run("the scene is live unconfined: "+which, func(t *testing.T) {
			s := newProofScratch(t, "terraform", "")
			hostile(t, s, which)
			accepted := stray.accepted.Load()
			r, err := unconfinedExecutor(t, s).Run(context.Background(), "terraform.plan", json.RawMessage(`{}`))
			require.NoError(t, err)
			if which == "remote_state" {
				assert.Greater(t, stray.accepted.Load(), accepted, "only the confinement stops this: %s", r.Stderr)
			} else {
				assert.Contains(t, r.Stdout+r.Stderr, proofCanary, "only the confinement stops this")
			}
		})
	}
}
