package main

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// skipRecorder is a testing.TB that records whether a test was failed or
// skipped, and stops neither.
type skipRecorder struct {
	testing.TB
	failed, skipped string
}

func (r *skipRecorder) Helper()                        {}
func (r *skipRecorder) Fatalf(format string, a ...any) { r.failed = fmt.Sprintf(format, a...) }
func (r *skipRecorder) Skip(a ...any)                  { r.skipped = fmt.Sprint(a...) }

// TestSkipUnlessCI_FailsUnderCI: a proof that the machine cannot run (a
// kernel without Landlock or user namespaces) is skipped on a developer's
// machine and fails under CI, whatever value CI services give the
// variable.
func TestSkipUnlessCI_FailsUnderCI(t *testing.T) {
	for _, c := range []struct {
		ci   string
		fail bool
	}{
		{"true", true},
		{"1", true},
		{"yes", true},
		{"", false},
		{"false", false},
		{"0", false},
	} {
		t.Run("CI="+c.ci, func(t *testing.T) {
			t.Setenv("CI", c.ci)
			r := &skipRecorder{TB: t}
			skipUnlessCI(r, "this kernel lacks it")
			if c.fail {
				assert.Contains(t, r.failed, "this kernel lacks it")
				assert.Contains(t, r.failed, "CI must run")
				assert.Empty(t, r.skipped)
			} else {
				assert.Equal(t, "this kernel lacks it", r.skipped)
				assert.Empty(t, r.failed)
			}
		})
	}
}
