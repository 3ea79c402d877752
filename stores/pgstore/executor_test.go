package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/internal/fakeclock"
)

func wantApprovalError(t *testing.T, err error, reason string) {
	t.Helper()
	var ae *execgate.ApprovalError
	if !errors.As(err, &ae) || ae.Reason != reason {
		t.Fatalf("got %v; want an ApprovalError with reason %s", err, reason)
	}
}

// TestTwoExecutors: an approval proposed through one Executor runs through
// another with a pool of its own and the same allowlist, and is refused by
// one whose allowlist changed.
func TestTwoExecutors(t *testing.T) {
	ctx := context.Background()
	table := newTable(t)
	proposer, _ := newExecutor(t, newStore(t, newPool(t, nil), table, 0, nil), "1", nil)
	same, ran := newExecutor(t, newStore(t, newPool(t, nil), table, 0, nil), "1", nil)
	changed, ranChanged := newExecutor(t, newStore(t, newPool(t, nil), table, 0, nil), "2", nil)

	ap, err := proposer.Propose(ctx, "deploy", deployInput, "ship it")
	if err != nil {
		t.Fatal(err)
	}
	res, err := same.Execute(ctx, ap)
	if err != nil || !res.OK || res.ApprovalID != ap.ID {
		t.Fatalf("Execute through the other Executor = %+v, %v", res, err)
	}
	if calls := ran.Calls(); len(calls) != 1 || len(calls[0].Args) != 2 || calls[0].Args[1] != "api" {
		t.Errorf("ran %+v", calls)
	}
	_, err = same.Execute(ctx, ap)
	wantApprovalError(t, err, execgate.ReasonUnknown)

	ap, err = proposer.Propose(ctx, "deploy", deployInput, "ship it again")
	if err != nil {
		t.Fatal(err)
	}
	_, err = changed.Execute(ctx, ap)
	wantApprovalError(t, err, execgate.ReasonPolicyChanged)
	if ranChanged.Count() != 0 {
		t.Error("an Executor with a changed allowlist spawned")
	}
	_, err = same.Execute(ctx, ap)
	wantApprovalError(t, err, execgate.ReasonUnknown) // the refusal consumed it
}

// TestPendingApprovalsSurviveReconnect: approvals proposed through one
// pool run after that pool is closed, through a new pool and a new Store.
func TestPendingApprovalsSurviveReconnect(t *testing.T) {
	ctx := context.Background()
	table := newTable(t)
	first := newPool(t, nil)
	x, _ := newExecutor(t, newStore(t, first, table, 0, nil), "1", nil)
	var aps []execgate.Approval
	for range 3 {
		ap, err := x.Propose(ctx, "deploy", deployInput, "before the restart")
		if err != nil {
			t.Fatal(err)
		}
		aps = append(aps, ap)
	}
	rejected := aps[2]
	first.Close()

	store := newStore(t, newPool(t, nil), table, 0, nil)
	x, ran := newExecutor(t, store, "1", nil)
	if ok, err := x.Reject(ctx, rejected.ID); err != nil || !ok {
		t.Errorf("Reject after reconnecting = %v, %v; want true", ok, err)
	}
	for _, ap := range aps[:2] {
		if res, err := x.Execute(ctx, ap); err != nil || !res.OK {
			t.Errorf("Execute after reconnecting = %+v, %v", res, err)
		}
	}
	_, err := x.Execute(ctx, rejected)
	wantApprovalError(t, err, execgate.ReasonUnknown)
	if ran.Count() != 2 {
		t.Errorf("%d spawns; want 2", ran.Count())
	}
	if n, err := store.Len(ctx); err != nil || n != 0 {
		t.Errorf("Len = %d, %v; want 0", n, err)
	}
}

// TestExpiryUsesTheInjectedClock pins expiry at the boundary, judged with
// the clock handed to both the Executor and the Store: an approval runs
// one nanosecond before ExpiresAt and is refused at ExpiresAt. PostgreSQL
// keeps microseconds and ExpiresAt has nanoseconds, so the "unaligned"
// case checks that the rounding never prunes a pending record early (a
// Save into the full table one nanosecond before expiry is refused) and
// that Reject judges the exact ExpiresAt.
func TestExpiryUsesTheInjectedClock(t *testing.T) {
	for _, tc := range []struct {
		name string
		base time.Time
	}{
		{"unaligned", time.Date(2031, 5, 6, 7, 8, 9, 123_456_789, time.UTC)},
		{"aligned", time.Date(2031, 5, 6, 7, 8, 9, 123_457_000, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			const ttl = execgate.DefaultApprovalTTL
			clk := fakeclock.New(tc.base)
			store := newStore(t, newPool(t, nil), newTable(t), 1, clk.Now)
			x, ran := newExecutor(t, store, "1", clk.Now)
			propose := func() execgate.Approval {
				t.Helper()
				clk.Set(tc.base)
				ap, err := x.Propose(ctx, "deploy", deployInput, "")
				if err != nil {
					t.Fatalf("Propose: %v", err)
				}
				if want := tc.base.Add(ttl); !ap.ExpiresAt.Equal(want) {
					t.Fatalf("ExpiresAt = %v; want %v", ap.ExpiresAt, want)
				}
				return ap
			}
			exp := tc.base.Add(ttl)

			// One nanosecond before: still pending, so the full table
			// refuses another, and it runs.
			ap := propose()
			clk.Set(exp.Add(-time.Nanosecond))
			if _, err := x.Propose(ctx, "deploy", deployInput, ""); !errors.Is(err, execgate.ErrStoreFull) {
				t.Fatalf("Propose into a full table 1ns before expiry: %v; want ErrStoreFull", err)
			}
			if res, err := x.Execute(ctx, ap); err != nil || !res.OK {
				t.Fatalf("Execute 1ns before expiry = %+v, %v", res, err)
			}

			// At ExpiresAt: refused as expired, and consumed.
			ap = propose()
			clk.Set(exp)
			_, err := x.Execute(ctx, ap)
			wantApprovalError(t, err, execgate.ReasonExpired)
			if n, err := store.Len(ctx); err != nil || n != 0 {
				t.Fatalf("Len after an expired Execute = %d, %v; want 0", n, err)
			}

			// Reject reports the exact expiry.
			ap = propose()
			clk.Set(exp.Add(-time.Nanosecond))
			if ok, err := x.Reject(ctx, ap.ID); err != nil || !ok {
				t.Errorf("Reject 1ns before expiry = %v, %v; want true", ok, err)
			}
			ap = propose()
			clk.Set(exp)
			if ok, err := x.Reject(ctx, ap.ID); err != nil || ok {
				t.Errorf("Reject at expiry = %v, %v; want false", ok, err)
			}

			// Pruning: an expired record makes room, at the latest at
			// the first whole microsecond at or after ExpiresAt.
			ap = propose()
			clk.Set(exp.Add(time.Microsecond - 1).Truncate(time.Microsecond))
			if _, err := x.Propose(ctx, "deploy", deployInput, ""); err != nil {
				t.Fatalf("Propose after expiry into a table holding only an expired record: %v", err)
			}
			_, err = x.Execute(ctx, ap)
			wantApprovalError(t, err, execgate.ReasonUnknown) // pruned

			if ran.Count() != 1 {
				t.Errorf("%d spawns; want 1", ran.Count())
			}
		})
	}
}
