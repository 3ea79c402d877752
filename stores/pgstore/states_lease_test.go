package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/stores/pgstore"
)

// TestRecordIsTrue_TakenApprovalIsTheLeaseOwners: an approval taken to
// run is its owner's while the owner's lease runs, however long after
// the approval's expiry its call runs: no read of any replica marks it
// failed, and no other owner settles, renews or releases it. Only once
// the lease lapses unsettled does it read failed, and then its owner's
// late Settle changes nothing (and says so). A row taken by a version
// that gave no lease keeps the old rule.
func TestRecordIsTrue_TakenApprovalIsTheLeaseOwners(t *testing.T) {
	s, sql := newStatesSQL(t)
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Microsecond)
	const id, legacy = "018f0000-0000-7000-8000-0000000000c1", "018f0000-0000-7000-8000-0000000000c2"
	owner := pgstore.Lease{Owner: "replica-a", For: time.Hour}
	other := pgstore.Lease{Owner: "replica-b", For: time.Hour}
	for _, ap := range []string{id, legacy} {
		if err := s.Add(ctx, stateApproval(ap, "bot", t0, 15*time.Minute), t0, 10); err != nil {
			t.Fatalf("Add: %v", err)
		}
		if _, found, err := s.Take(ctx, ap, t0.Add(15*time.Minute-time.Second), "running", owner, func(execgate.Approval) error { return nil }); !found || err != nil {
			t.Fatalf("Take just before expiry: %v, %v", found, err)
		}
	}
	if _, _, err := s.Take(ctx, id, t0, "running", pgstore.Lease{}, func(execgate.Approval) error { return nil }); err == nil {
		t.Fatal("a Take with no lease was accepted")
	}
	sql(`UPDATE $table SET lease_until = NULL WHERE id = $1`, legacy)

	read := func(why string, at time.Duration, want, wantOwner string) {
		t.Helper()
		e, ok, err := s.Get(ctx, id, t0.Add(at))
		if err != nil || !ok || e.State != want || e.Owner != wantOwner {
			t.Fatalf("%s: reads %q owned by %q (%v, %v); want %q owned by %q", why, e.State, e.Owner, ok, err, want, wantOwner)
		}
	}
	// 31 minutes pass for the approvals (their lifetime has passed twice
	// after their expiry); the running call's owner renews its lease.
	sql(`UPDATE $table SET created_at = created_at - interval '31 minutes', expires_at = expires_at - interval '31 minutes'`)
	read("a call still running 16 minutes after expiry, its lease running", 31*time.Minute, "running", owner.Owner)
	if e, _, _ := s.Get(ctx, legacy, t0.Add(31*time.Minute)); e.State != pgstore.StateFailed {
		t.Errorf("a row taken with no lease reads %q a lifetime after expiry; want failed, as before leases", e.State)
	}
	if ok, err := s.Settle(ctx, id, pgstore.Settlement{State: "rejected", At: t0, Owner: other.Owner}); ok || err != nil {
		t.Fatalf("another owner's Settle: %v, %v; want nothing settled", ok, err)
	}
	if ok, err := s.Renew(ctx, id, other); ok || err != nil {
		t.Fatalf("another owner's Renew: %v, %v; want not held", ok, err)
	}
	if err := s.Release(ctx, id, other.Owner); err != nil {
		t.Fatalf("Release: %v", err)
	}
	read("after another owner's Settle, Renew and Release", 31*time.Minute, "running", owner.Owner)
	if ok, err := s.Renew(ctx, id, owner); !ok || err != nil {
		t.Fatalf("the owner's Renew: %v, %v; want held", ok, err)
	}

	// The owner stops: its lease lapses, by the database's clock.
	sql(`UPDATE $table SET lease_until = now() - interval '1 second' WHERE id = $1`, id)
	e, ok, err := s.Get(ctx, id, t0.Add(31*time.Minute))
	if err != nil || !ok || e.State != pgstore.StateFailed || e.Taken || len(e.Err) == 0 {
		t.Fatalf("once the lease lapsed: %+v, %v, %v; want failed, not taken, with why", e, ok, err)
	}
	if ok, err := s.Settle(ctx, id, pgstore.Settlement{State: pgstore.StateApproved, At: t0, Owner: owner.Owner}); ok || err != nil {
		t.Fatalf("the owner's Settle after its lease lapsed: %v, %v; want reported unsettled", ok, err)
	}
	if ok, err := s.Renew(ctx, id, owner); ok || err != nil {
		t.Fatalf("the owner's Renew after its lease lapsed: %v, %v; want not held", ok, err)
	}
}

// TestStates_SettleAndReleaseTheOwnersTake: the owner's Settle records
// its decision under a lease, and its Release puts the approval back
// for the next taker, whose lease it then is.
func TestStates_SettleAndReleaseTheOwnersTake(t *testing.T) {
	s := newStates(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	const id = "018f0000-0000-7000-8000-0000000000c3"
	a := pgstore.Lease{Owner: "replica-a", For: time.Hour}
	b := pgstore.Lease{Owner: "replica-b", For: time.Hour}
	if err := s.Add(ctx, stateApproval(id, "bot", now, time.Hour), now, 10); err != nil {
		t.Fatalf("Add: %v", err)
	}
	for _, l := range []pgstore.Lease{a, b} {
		if _, found, err := s.Take(ctx, id, now, "running", l, func(execgate.Approval) error { return nil }); !found || err != nil {
			t.Fatalf("Take by %s: %v, %v", l.Owner, found, err)
		}
		if err := s.Release(ctx, id, l.Owner); err != nil {
			t.Fatalf("Release by %s: %v", l.Owner, err)
		}
	}
	if _, found, err := s.Take(ctx, id, now, "running", b, func(execgate.Approval) error { return nil }); !found || err != nil {
		t.Fatalf("Take by b: %v, %v", found, err)
	}
	if ok, err := s.Settle(ctx, id, pgstore.Settlement{State: "rejected", At: now, Owner: a.Owner}); ok || err != nil {
		t.Fatalf("a's Settle of b's take: %v, %v; want nothing", ok, err)
	}
	if ok, err := s.Settle(ctx, id, pgstore.Settlement{State: "rejected", At: now, Owner: b.Owner}); !ok || err != nil {
		t.Fatalf("b's Settle: %v, %v; want settled", ok, err)
	}
	if e, _, _ := s.Get(ctx, id, now); e.State != "rejected" || e.Taken || e.Owner != "" {
		t.Fatalf("after b's Settle: %+v; want rejected, not taken", e)
	}
}

// TestStates_GetOnlyReads: a poll's Get writes nothing, yet reads an
// approval whose time has passed as the expiry marks it, and does not
// find an outcome whose time has passed; the expiry's DELETE of those
// outcomes has an index (made again harmlessly by MigrateStates).
func TestStates_GetOnlyReads(t *testing.T) {
	s, sql := newStatesSQL(t)
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Microsecond)
	const open, taken = "018f0000-0000-7000-8000-0000000000d1", "018f0000-0000-7000-8000-0000000000d2"
	for _, id := range []string{open, taken} {
		if err := s.Add(ctx, stateApproval(id, "bot", t0, time.Minute), t0, 10); err != nil {
			t.Fatalf("Add: %v", err)
		}
	}
	if _, found, err := s.Take(ctx, taken, t0, "running", lease, func(execgate.Approval) error { return nil }); !found || err != nil {
		t.Fatalf("Take: %v, %v", found, err)
	}
	sql(`UPDATE $table SET lease_until = now() - interval '1 second' WHERE id = $1`, taken)
	unwritten := `DO $$ BEGIN IF EXISTS (SELECT 1 FROM $table WHERE finished IS NOT NULL) THEN RAISE EXCEPTION 'a Get wrote'; END IF; END $$`
	// Time passes for the rows, as the database's clock moves on.
	var elapsed time.Duration
	for _, tc := range []struct {
		why  string
		id   string
		at   time.Duration
		want string // "" for not found
	}{
		{"an approval no one took reads expired once its time has passed", open, 90 * time.Second, pgstore.StateExpired},
		{"a taken approval whose lease lapsed reads failed", taken, 90 * time.Second, pgstore.StateFailed},
		{"an expired approval is forgotten a lifetime after its expiry", open, 2 * time.Minute, ""},
	} {
		sql(`UPDATE $table SET created_at = created_at - $1::interval, expires_at = expires_at - $1::interval`, tc.at-elapsed)
		elapsed = tc.at
		e, ok, err := s.Get(ctx, tc.id, t0.Add(tc.at))
		switch {
		case err != nil:
			t.Fatalf("%s: Get: %v", tc.why, err)
		case tc.want == "" && ok:
			t.Errorf("%s: found %q", tc.why, e.State)
		case tc.want != "" && (!ok || e.State != tc.want || e.Finished.IsZero() || e.Taken):
			t.Errorf("%s: %+v, %v; want %q, finished, not taken", tc.why, e, ok, tc.want)
		}
		sql(unwritten)
	}
	// The expiry writes what Get read.
	if _, err := s.List(ctx, t0.Add(2*time.Minute)); err != nil {
		t.Fatalf("List: %v", err)
	}
	if e, ok, err := s.Get(ctx, taken, t0.Add(2*time.Minute)); err != nil || !ok || e.State != pgstore.StateFailed {
		t.Errorf("after the expiry the taken one reads %q (%v, %v); want failed", e.State, ok, err)
	}
	if _, ok, err := s.Get(ctx, open, t0.Add(2*time.Minute)); err != nil || ok {
		t.Errorf("after the expiry the expired one is still there (%v, %v); want it forgotten", ok, err)
	}
	sql(`DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_index WHERE indrelid = '$table'::regclass
		AND pg_get_indexdef(indexrelid) LIKE '%(forget)%') THEN RAISE EXCEPTION 'no index on forget'; END IF; END $$`)
}

// TestStates_ExpiryByTheDatabasesClock: replicas whose clocks differ
// judge expiry alike, by the database's clock: a replica two hours
// ahead neither reads a live approval expired, nor expires it for the
// others, and can take it; a replica two hours behind cannot take one
// that has expired.
func TestStates_ExpiryByTheDatabasesClock(t *testing.T) {
	s, sql := newStatesSQL(t)
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Microsecond)
	ahead, behind := t0.Add(2*time.Hour), t0.Add(-2*time.Hour)
	const live, dead = "018f0000-0000-7000-8000-0000000000e1", "018f0000-0000-7000-8000-0000000000e2"
	for _, id := range []string{live, dead} {
		if err := s.Add(ctx, stateApproval(id, "bot", t0, time.Hour), ahead, 10); err != nil {
			t.Fatalf("Add through the replica ahead: %v", err)
		}
	}
	if list, err := s.List(ctx, ahead); err != nil || len(list) != 2 {
		t.Fatalf("List through the replica ahead: %v, %v; want both approvals", list, err)
	}
	if e, _, err := s.Get(ctx, live, ahead); err != nil || e.State != pgstore.StatePending {
		t.Fatalf("Get through the replica ahead: %q, %v; want pending", e.State, err)
	}
	if _, found, err := s.Take(ctx, live, ahead, "running", lease, func(execgate.Approval) error { return nil }); !found || err != nil {
		t.Fatalf("Take through the replica ahead: %v, %v; want it taken", found, err)
	}
	// An hour and more passes for the other approval.
	sql(`UPDATE $table SET created_at = created_at - interval '61 minutes', expires_at = expires_at - interval '61 minutes' WHERE id = $1`, dead)
	if _, found, err := s.Take(ctx, dead, behind, "running", lease, func(execgate.Approval) error { return nil }); found || err != nil {
		t.Fatalf("Take of an expired approval through the replica behind: %v, %v; want nothing", found, err)
	}
	if e, _, err := s.Get(ctx, dead, behind); err != nil || e.State != pgstore.StateExpired {
		t.Fatalf("Get through the replica behind: %q, %v; want expired", e.State, err)
	}
}
