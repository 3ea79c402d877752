package execgatetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/execgate/execgate"
)

// NewStoreFunc returns a new, empty ApprovalStore holding at most capacity
// pending records. Stores judge expiry by the real clock (time.Now, or a
// database's clock); the kit only uses expiry times far from now.
type NewStoreFunc func(t *testing.T, capacity int) execgate.ApprovalStore

// TestApprovalStore checks an ApprovalStore implementation against the
// contract documented on execgate.ApprovalStore: records come back exactly
// as saved; Take is single use, also under 1000 concurrent calls; Take and
// Delete are mutually exclusive; unknown IDs give ErrNoRecord and false;
// duplicate IDs are refused with ErrDuplicateID; expired records are never
// handed out as live and never count against capacity; a full store refuses
// with ErrStoreFull and evicts nothing, also under concurrent saves.
//
// Call it from a test of your own package:
//
//	func TestMyStore(t *testing.T) {
//		execgatetest.TestApprovalStore(t, func(t *testing.T, capacity int) execgate.ApprovalStore {
//			return mystore.New(capacity)
//		})
//	}
func TestApprovalStore(t *testing.T, newStore NewStoreFunc) {
	t.Run("SaveTakeRoundTrip", func(t *testing.T) { testRoundTrip(t, newStore) })
	t.Run("TakeIsSingleUse", func(t *testing.T) { testTakeOnce(t, newStore) })
	t.Run("UnknownID", func(t *testing.T) { testUnknown(t, newStore) })
	t.Run("DuplicateID", func(t *testing.T) { testDuplicate(t, newStore) })
	t.Run("Delete", func(t *testing.T) { testDelete(t, newStore) })
	t.Run("ConcurrentTakes", func(t *testing.T) { testConcurrentTakes(t, newStore) })
	t.Run("TakeDeleteRace", func(t *testing.T) { testTakeDeleteRace(t, newStore) })
	t.Run("Expiry", func(t *testing.T) { testExpiry(t, newStore) })
	t.Run("Capacity", func(t *testing.T) { testCapacity(t, newStore) })
	t.Run("ExpiredDoNotCount", func(t *testing.T) { testExpiredDoNotCount(t, newStore) })
	t.Run("ConcurrentSavesAtCapacity", func(t *testing.T) { testConcurrentSaves(t, newStore) })
}

// record returns a distinct, well-formed record expiring at exp.
func record(exp time.Time) execgate.Record {
	id := uuid.Must(uuid.NewV7()).String()
	created := exp.Add(-15 * time.Minute).UTC().Round(0)
	return execgate.Record{
		Approval: execgate.Approval{
			ID: id, Name: "tool.cmd", Command: "/usr/bin/tool",
			Args:   []string{"--flag", "value with spaces", "ünïcode"},
			Digest: fmt.Sprintf("%064x", uuid.Must(uuid.NewRandom()).ID()), Reason: "kit",
			PolicyVersion: "1", CreatedAt: created, ExpiresAt: exp.UTC().Round(0),
		},
		Input:       json.RawMessage(`{"b": [1, 2.50],  "a":"x"}`),
		Salt:        []byte("0123456789abcdef\x00\xff salt bytes"),
		Fingerprint: "f0" + fmt.Sprintf("%062d", 0),
		StdinSHA256: "ab" + fmt.Sprintf("%062d", 0),
	}
}

func live() execgate.Record    { return record(time.Now().Add(time.Hour)) }
func expired() execgate.Record { return record(time.Now().Add(-time.Hour)) }

func save(t *testing.T, s execgate.ApprovalStore, rec execgate.Record) {
	t.Helper()
	if err := s.Save(context.Background(), rec); err != nil {
		t.Fatalf("Save(%s): %v", rec.Approval.ID, err)
	}
}

func testRoundTrip(t *testing.T, newStore NewStoreFunc) {
	s := newStore(t, 10)
	want := live()
	save(t, s, want)
	got, err := s.Take(context.Background(), want.Approval.ID)
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	if err := sameRecord(got, want); err != nil {
		t.Errorf("Take returned a different record: %v", err)
	}
}

func sameRecord(got, want execgate.Record) error {
	g, w := got.Approval, want.Approval
	switch {
	case g.ID != w.ID, g.Name != w.Name, g.Command != w.Command, g.Digest != w.Digest,
		g.Reason != w.Reason, g.PolicyVersion != w.PolicyVersion:
		return fmt.Errorf("envelope fields differ: got %+v, want %+v", g, w)
	case !g.CreatedAt.Equal(w.CreatedAt), !g.ExpiresAt.Equal(w.ExpiresAt):
		return fmt.Errorf("times differ: got %v/%v, want %v/%v", g.CreatedAt, g.ExpiresAt, w.CreatedAt, w.ExpiresAt)
	case fmt.Sprint(g.Args) != fmt.Sprint(w.Args) || len(g.Args) != len(w.Args):
		return fmt.Errorf("args differ: got %q, want %q", g.Args, w.Args)
	case string(got.Input) != string(want.Input):
		return fmt.Errorf("input differs: got %q, want %q", got.Input, want.Input)
	case got.Fingerprint != want.Fingerprint, got.StdinSHA256 != want.StdinSHA256:
		return fmt.Errorf("fingerprint or stdin hash differs")
	case string(got.Salt) != string(want.Salt):
		return fmt.Errorf("salt differs")
	}
	return nil
}

func testTakeOnce(t *testing.T, newStore NewStoreFunc) {
	s := newStore(t, 10)
	rec := live()
	save(t, s, rec)
	if _, err := s.Take(context.Background(), rec.Approval.ID); err != nil {
		t.Fatalf("first Take: %v", err)
	}
	if _, err := s.Take(context.Background(), rec.Approval.ID); !errors.Is(err, execgate.ErrNoRecord) {
		t.Errorf("second Take: got %v, want ErrNoRecord", err)
	}
}

func testUnknown(t *testing.T, newStore NewStoreFunc) {
	s := newStore(t, 10)
	id := uuid.NewString()
	if _, err := s.Take(context.Background(), id); !errors.Is(err, execgate.ErrNoRecord) {
		t.Errorf("Take(unknown): got %v, want ErrNoRecord", err)
	}
	ok, err := s.Delete(context.Background(), id)
	if err != nil || ok {
		t.Errorf("Delete(unknown) = %v, %v; want false, nil", ok, err)
	}
}

func testDuplicate(t *testing.T, newStore NewStoreFunc) {
	s := newStore(t, 10)
	rec := live()
	save(t, s, rec)
	other := live()
	other.Approval.ID = rec.Approval.ID
	if err := s.Save(context.Background(), other); !errors.Is(err, execgate.ErrDuplicateID) {
		t.Fatalf("Save(duplicate ID): got %v, want ErrDuplicateID", err)
	}
	got, err := s.Take(context.Background(), rec.Approval.ID)
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	if err := sameRecord(got, rec); err != nil {
		t.Errorf("a refused duplicate replaced the original: %v", err)
	}
}

func testDelete(t *testing.T, newStore NewStoreFunc) {
	s := newStore(t, 10)
	rec := live()
	save(t, s, rec)
	if ok, err := s.Delete(context.Background(), rec.Approval.ID); err != nil || !ok {
		t.Fatalf("Delete = %v, %v; want true, nil", ok, err)
	}
	if ok, err := s.Delete(context.Background(), rec.Approval.ID); err != nil || ok {
		t.Errorf("second Delete = %v, %v; want false, nil", ok, err)
	}
	if _, err := s.Take(context.Background(), rec.Approval.ID); !errors.Is(err, execgate.ErrNoRecord) {
		t.Errorf("Take after Delete: got %v, want ErrNoRecord", err)
	}
	taken := live()
	save(t, s, taken)
	if _, err := s.Take(context.Background(), taken.Approval.ID); err != nil {
		t.Fatalf("Take: %v", err)
	}
	if ok, err := s.Delete(context.Background(), taken.Approval.ID); err != nil || ok {
		t.Errorf("Delete after Take = %v, %v; want false, nil", ok, err)
	}
}

func testConcurrentTakes(t *testing.T, newStore NewStoreFunc) {
	s := newStore(t, 10)
	rec := live()
	save(t, s, rec)
	const n = 1000
	var wins atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := s.Take(context.Background(), rec.Approval.ID)
			switch {
			case err == nil:
				wins.Add(1)
			case !errors.Is(err, execgate.ErrNoRecord):
				t.Errorf("Take: %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if got := wins.Load(); got != 1 {
		t.Errorf("%d of %d concurrent Takes succeeded; want exactly 1", got, n)
	}
}

func testTakeDeleteRace(t *testing.T, newStore NewStoreFunc) {
	s := newStore(t, 10)
	for i := range 100 {
		rec := live()
		save(t, s, rec)
		var took, deleted bool
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := s.Take(context.Background(), rec.Approval.ID)
			took = err == nil
		}()
		go func() {
			defer wg.Done()
			ok, err := s.Delete(context.Background(), rec.Approval.ID)
			deleted = ok && err == nil
		}()
		wg.Wait()
		if took == deleted {
			t.Fatalf("round %d: Take succeeded=%v, Delete succeeded=%v; want exactly one", i, took, deleted)
		}
	}
}

func testExpiry(t *testing.T, newStore NewStoreFunc) {
	s := newStore(t, 10)
	rec := expired()
	save(t, s, rec)
	got, err := s.Take(context.Background(), rec.Approval.ID)
	switch {
	case errors.Is(err, execgate.ErrNoRecord):
	case err != nil:
		t.Fatalf("Take(expired): %v", err)
	case time.Now().Before(got.Approval.ExpiresAt):
		t.Errorf("Take(expired) returned a record that looks live: expires %v", got.Approval.ExpiresAt)
	}
	if _, err := s.Take(context.Background(), rec.Approval.ID); !errors.Is(err, execgate.ErrNoRecord) {
		t.Errorf("an expired record survived Take: %v", err)
	}
	rec = expired()
	save(t, s, rec)
	if ok, err := s.Delete(context.Background(), rec.Approval.ID); err != nil || ok {
		t.Errorf("Delete(expired) = %v, %v; want false, nil", ok, err)
	}
}

func testCapacity(t *testing.T, newStore NewStoreFunc) {
	s := newStore(t, 3)
	var ids []string
	for range 3 {
		rec := live()
		save(t, s, rec)
		ids = append(ids, rec.Approval.ID)
	}
	if err := s.Save(context.Background(), live()); !errors.Is(err, execgate.ErrStoreFull) {
		t.Fatalf("Save into a full store: got %v, want ErrStoreFull", err)
	}
	for _, id := range ids[1:] {
		if _, err := s.Take(context.Background(), id); err != nil {
			t.Errorf("a full store lost pending record %s: %v", id, err)
		}
	}
	save(t, s, live()) // room again
}

func testExpiredDoNotCount(t *testing.T, newStore NewStoreFunc) {
	s := newStore(t, 2)
	save(t, s, expired())
	save(t, s, expired())
	fresh := live()
	if err := s.Save(context.Background(), fresh); err != nil {
		t.Fatalf("Save with only expired records stored: %v", err)
	}
	if _, err := s.Take(context.Background(), fresh.Approval.ID); err != nil {
		t.Errorf("Take: %v", err)
	}
}

func testConcurrentSaves(t *testing.T, newStore NewStoreFunc) {
	const capacity, n = 10, 50
	s := newStore(t, capacity)
	var saved, full atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Save(context.Background(), live())
			switch {
			case err == nil:
				saved.Add(1)
			case errors.Is(err, execgate.ErrStoreFull):
				full.Add(1)
			default:
				t.Errorf("Save: %v", err)
			}
		}()
	}
	wg.Wait()
	if saved.Load() != capacity || full.Load() != n-capacity {
		t.Errorf("concurrent saves: %d saved, %d refused as full; want %d and %d", saved.Load(), full.Load(), capacity, n-capacity)
	}
}
