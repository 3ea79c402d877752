package execgatetest

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/execgate/execgate"
)

// flaw is one way an ApprovalStore can break its contract.
type flaw int

const (
	noFlaw            flaw = iota
	takeKeeps              // Take returns the record and leaves it stored
	wrongRecord            // Take returns the first record saved, whatever the ID
	sharesBuffers          // Save keeps the caller's slices instead of copies
	unknownIsOther         // Take of an unknown ID returns an error that is not ErrNoRecord
	deleteUnknown          // Delete reports true for an ID it does not hold
	deleteKeeps            // Delete reports true and leaves the record stored
	replacesDuplicate      // Save of a stored ID replaces the record
	racyTake               // Take reads, lets others run, then deletes
	racyDelete             // Delete reads, lets others run, then deletes
	expiredTakeKeeps       // Take hands out an expired record and keeps it
	deleteExpired          // Delete reports true for an expired record
	ignoresCapacity        // Save never refuses as full
	evicts                 // a full store drops its oldest record to make room
	countsExpired          // expired records are never dropped to make room
	racySave               // Save checks the capacity, lets others run, then stores
	losesPrincipal         // the principal is not kept, as in a table without its column
	truncatesTimes         // times come back in microseconds, as a SQL timestamp keeps them
)

// flawedStore is a small ApprovalStore that keeps the contract except for
// its flaw.
type flawedStore struct {
	flaw     flaw
	capacity int
	mu       sync.Mutex
	recs     map[string]execgate.Record
	order    []string // IDs in the order they were saved
	// takers counts the Takes that found their record: racyTake holds
	// its window open until a second one has, so that its flaw shows
	// on a loaded machine as well.
	takers int
}

func newFlawedStore(f flaw, capacity int) *flawedStore {
	return &flawedStore{flaw: f, capacity: capacity, recs: map[string]execgate.Record{}}
}

// yield lets the goroutines racing a flawed operation catch up with it.
func yield() { time.Sleep(time.Millisecond) }

func (s *flawedStore) Save(_ context.Context, rec execgate.Record) error {
	if s.flaw != sharesBuffers {
		rec.Input = slices.Clone(rec.Input)
		rec.Salt = slices.Clone(rec.Salt)
		rec.Approval.Args = slices.Clone(rec.Approval.Args)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.recs[rec.Approval.ID]; ok && s.flaw != replacesDuplicate {
		return execgate.ErrDuplicateID
	}
	if len(s.recs) >= s.capacity && s.flaw != countsExpired {
		for id, r := range s.recs {
			if !time.Now().Before(r.Approval.ExpiresAt) {
				s.removeLocked(id)
			}
		}
	}
	if len(s.recs) >= s.capacity {
		switch s.flaw {
		case ignoresCapacity:
		case evicts:
			s.removeLocked(s.order[0])
		default:
			return execgate.ErrStoreFull
		}
	}
	if s.flaw == racySave {
		s.mu.Unlock()
		yield()
		s.mu.Lock()
	}
	s.recs[rec.Approval.ID] = rec
	s.order = append(s.order, rec.Approval.ID)
	return nil
}

func (s *flawedStore) removeLocked(id string) {
	delete(s.recs, id)
	s.order = slices.DeleteFunc(s.order, func(o string) bool { return o == id })
}

func (s *flawedStore) Take(_ context.Context, id string) (execgate.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.recs[id]
	if s.flaw == wrongRecord && ok {
		rec = s.recs[s.order[0]]
	}
	switch {
	case !ok && s.flaw == unknownIsOther:
		return execgate.Record{}, errors.New("not found")
	case !ok:
		return execgate.Record{}, execgate.ErrNoRecord
	case s.flaw == takeKeeps:
		return rec, nil
	case s.flaw == expiredTakeKeeps && !time.Now().Before(rec.Approval.ExpiresAt):
		return rec, nil
	case s.flaw == racyTake:
		s.takers++
		for range 1000 { // a second at most
			s.mu.Unlock()
			yield()
			s.mu.Lock()
			if s.takers > 1 {
				break
			}
		}
	case s.flaw == losesPrincipal:
		rec.Approval.Principal = ""
	case s.flaw == truncatesTimes:
		rec.Approval.CreatedAt = rec.Approval.CreatedAt.Truncate(time.Microsecond)
		rec.Approval.ExpiresAt = rec.Approval.ExpiresAt.Truncate(time.Microsecond)
	}
	s.removeLocked(id)
	return rec, nil
}

func (s *flawedStore) Delete(_ context.Context, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.recs[id]
	switch {
	case s.flaw == deleteUnknown:
		s.removeLocked(id)
		return true, nil
	case !ok:
		return false, nil
	case s.flaw == deleteKeeps:
		return true, nil
	case s.flaw == racyDelete:
		s.mu.Unlock()
		yield()
		s.mu.Lock()
	}
	s.removeLocked(id)
	return s.flaw == deleteExpired || time.Now().Before(rec.Approval.ExpiresAt), nil
}

// brokenStores are the broken ApprovalStores the kit must catch.
var brokenStores = []brokenCase[flaw]{
	{"the principal is lost", "Execute asks the policy about the principal that proposed the call",
		losesPrincipal, []string{"SaveTakeRoundTrip", "EachIDHasItsOwnRecord"}},
	{"times lose their nanoseconds", "a stored approval still matches the digest that binds its times",
		truncatesTimes, []string{"SaveTakeRoundTrip", "EachIDHasItsOwnRecord", "SaveKeepsItsOwnCopy"}},
	{"Take does not delete", "an approval runs at most once: a second Take of the same ID finds nothing",
		takeKeeps, []string{"TakeIsSingleUse", "ConcurrentTakes", "Delete"}},
	{"Take returns the record of another ID", "Execute runs the call that was approved under its ID, not another pending one",
		wrongRecord, []string{"EachIDHasItsOwnRecord"}},
	{"Save shares the caller's buffers", "a caller that reuses its input buffer after Propose cannot change what runs",
		sharesBuffers, []string{"SaveKeepsItsOwnCopy"}},
	{"an unknown ID is not ErrNoRecord", "Execute can tell an unknown approval from a store that failed",
		unknownIsOther, []string{"UnknownID", "TakeIsSingleUse", "ConcurrentTakes"}},
	{"Delete of an unknown ID reports true", "Reject says false for what was never pending",
		deleteUnknown, []string{"UnknownID", "Delete"}},
	{"Delete leaves the record", "a rejected approval cannot run afterwards",
		deleteKeeps, []string{"Delete"}},
	{"a duplicate ID replaces the record", "nobody can overwrite a pending approval by saving another under its ID",
		replacesDuplicate, []string{"DuplicateID"}},
	{"Take is not atomic", "of many concurrent Executes of one approval, exactly one runs",
		racyTake, []string{"ConcurrentTakes"}},
	{"Delete is not atomic", "Reject and Execute racing for one approval cannot both win",
		racyDelete, []string{"TakeDeleteRace"}},
	{"an expired record survives Take", "an expired approval is consumed by the Execute that finds it, never run later",
		expiredTakeKeeps, []string{"Expiry"}},
	{"Delete of an expired record reports true", "Reject says false for an approval that had already expired",
		deleteExpired, []string{"Expiry"}},
	{"Save ignores the capacity", "the number of pending approvals stays bounded",
		ignoresCapacity, []string{"Capacity", "ConcurrentSavesAtCapacity"}},
	{"a full store evicts its oldest record", "a flood of proposals cannot push out an approval someone is about to grant",
		evicts, []string{"Capacity"}},
	{"expired records count against the capacity", "a store full of expired approvals still takes new ones",
		countsExpired, []string{"ExpiredDoNotCount"}},
	{"the capacity check races with Save", "the bound holds under concurrent proposals too",
		racySave, []string{"ConcurrentSavesAtCapacity"}},
}

func storeCheckNames() []string {
	var names []string
	for _, c := range storeChecks {
		names = append(names, c.name)
	}
	return names
}

// runStoreKit runs every check of the ApprovalStore kit on stores made by
// make and returns the failures of each check that failed.
func runStoreKit(t *testing.T, make func(capacity int) execgate.ApprovalStore) map[string][]string {
	failed := map[string][]string{}
	for _, c := range storeChecks {
		if f := runCheck(t, func(r reporter) { c.run(r, make) }); len(f) > 0 {
			failed[c.name] = f
		}
	}
	return failed
}

func TestApprovalStoreKit_PassesConformingStores(t *testing.T) {
	for name, make := range map[string]func(int) execgate.ApprovalStore{
		"MemoryStore": func(capacity int) execgate.ApprovalStore {
			return execgate.NewMemoryStore(execgate.MemoryStoreOptions{Capacity: capacity})
		},
		"the flawed store without its flaw": func(capacity int) execgate.ApprovalStore { return newFlawedStore(noFlaw, capacity) },
	} {
		t.Run(name, func(t *testing.T) {
			for check, failures := range runStoreKit(t, make) {
				t.Errorf("%s failed on a conforming store: %q", check, failures)
			}
		})
	}
}

func TestApprovalStoreKit_ReportsEachBrokenProperty(t *testing.T) {
	for _, c := range brokenStores {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			failed := runStoreKit(t, func(capacity int) execgate.ApprovalStore { return newFlawedStore(c.impl, capacity) })
			for _, want := range c.want {
				if failed[want] == nil {
					t.Errorf("%s passed a store in which %s; it protects that %s", want, c.name, c.protects)
				}
			}
			t.Logf("failed: %s", strings.Join(slices.Sorted(maps.Keys(failed)), ", "))
		})
	}
}

func TestApprovalStoreKit_EveryCheckCanFail(t *testing.T) {
	requireEveryCheckCanFail(t, storeCheckNames(), brokenStores)
}
