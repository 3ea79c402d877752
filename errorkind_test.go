package execgate_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/execgate/execgate"
)

// TestKindOf_EveryErrorOfTheGateHasOneKind pins the one classifier every
// surface uses: each typed error the gate returns, plain and wrapped, has
// exactly the kind the documentation gives it.
func TestKindOf_EveryErrorOfTheGateHasOneKind(t *testing.T) {
	cases := []struct {
		why  string
		err  error
		kind execgate.ErrorKind
	}{
		{"a call that was not refused has no kind", nil, ""},
		{"a name outside the allowlist is not_found", &execgate.NotFoundError{Name: "rm"}, execgate.ErrorKindNotFound},
		{"refused input is validation", &execgate.ValidationError{Name: "git.log", Issues: []execgate.Issue{{Field: "n", Message: "bad"}}}, execgate.ErrorKindValidation},
		{"a policy deny is policy", &execgate.PolicyError{Name: "x", Action: execgate.ActionDeny}, execgate.ErrorKindPolicy},
		{"a rate limit is policy, its action says which", &execgate.PolicyError{Name: "x", Action: execgate.ActionRateLimited}, execgate.ErrorKindPolicy},
		{"an approval Run does not take is policy", &execgate.PolicyError{Name: "x", Action: execgate.ActionRequireApproval}, execgate.ErrorKindPolicy},
		{"an approval that cannot execute is approval", &execgate.ApprovalError{ID: "i", Reason: execgate.ReasonExpired}, execgate.ErrorKindApproval},
		{"an Auditor that cannot record is audit", &execgate.AuditError{Err: errors.New("disk full")}, execgate.ErrorKindAudit},
		{"a concurrency bound is busy", &execgate.BusyError{Name: "x", Scope: execgate.BusyPrincipal, Limit: 1}, execgate.ErrorKindBusy},
		{"a full store is store_full", execgate.ErrStoreFull, execgate.ErrorKindStoreFull},
		{"a duplicate ID is the store's bug, internal", execgate.ErrDuplicateID, execgate.ErrorKindInternal},
		{"a missing record reaching a caller is internal (Execute turns it into approval)", execgate.ErrNoRecord, execgate.ErrorKindInternal},
		{"a configuration error is internal", &execgate.ConfigError{Field: "Allowlist", Message: "required"}, execgate.ErrorKindInternal},
		{"a canceled context is internal", context.Canceled, execgate.ErrorKindInternal},
		{"a Policy's own error is internal", errors.New("policy backend down"), execgate.ErrorKindInternal},

		{"a wrapped not_found keeps its kind", fmt.Errorf("serving: %w", &execgate.NotFoundError{Name: "rm"}), execgate.ErrorKindNotFound},
		{"a wrapped validation keeps its kind", fmt.Errorf("a: %w", fmt.Errorf("b: %w", &execgate.ValidationError{Name: "x"})), execgate.ErrorKindValidation},
		{"a wrapped policy error keeps its kind", fmt.Errorf("x: %w", &execgate.PolicyError{Name: "x", Action: execgate.ActionDeny}), execgate.ErrorKindPolicy},
		{"a wrapped approval error keeps its kind", fmt.Errorf("x: %w", &execgate.ApprovalError{Reason: execgate.ReasonUnknown}), execgate.ErrorKindApproval},
		{"a wrapped audit error keeps its kind", fmt.Errorf("x: %w", &execgate.AuditError{Err: errors.New("e")}), execgate.ErrorKindAudit},
		{"a wrapped busy error keeps its kind", fmt.Errorf("x: %w", &execgate.BusyError{Scope: execgate.BusyExecutor}), execgate.ErrorKindBusy},
		{"a store that wraps ErrStoreFull is store_full", fmt.Errorf("pgstore: %w", execgate.ErrStoreFull), execgate.ErrorKindStoreFull},
		{"an Auditor's error inside an AuditError does not change its kind", &execgate.AuditError{Err: execgate.ErrStoreFull}, execgate.ErrorKindAudit},
		{"of joined errors the first kind in the documented order wins", errors.Join(&execgate.BusyError{}, &execgate.AuditError{Err: errors.New("e")}), execgate.ErrorKindAudit},
		{"a typed error joined with a plain one keeps its kind", errors.Join(errors.New("x"), &execgate.NotFoundError{}), execgate.ErrorKindNotFound},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			assert.Equal(t, c.kind, execgate.KindOf(c.err))
		})
	}
}

// TestErrorKind_DeprecatedNamesEqualTheirSuccessors keeps the old constant
// names compiling and meaning what their successors mean.
func TestErrorKind_DeprecatedNamesEqualTheirSuccessors(t *testing.T) {
	assert.Equal(t, execgate.ErrorKindStoreFull, execgate.ErrorKindStore)
	assert.Equal(t, execgate.ErrorKindInternal, execgate.ErrorKindOther)
	// The constants are untyped: they fit the string fields that carry a
	// kind as well as an ErrorKind.
	ev := execgate.Event{Error: execgate.ErrorKindNotFound}
	assert.Equal(t, execgate.ErrorKind(ev.Error), execgate.KindOf(&execgate.NotFoundError{}))
}
