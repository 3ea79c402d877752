package execgatetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
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
// contract documented on [execgate.ApprovalStore]: records come back exactly
// as saved, each under its own ID, and a caller changing its record after
// Save changes nothing stored; Take is single use, also under 1000
// concurrent calls; Take and Delete are mutually exclusive; unknown IDs
// give ErrNoRecord and false; duplicate IDs are refused with
// ErrDuplicateID; expired records are never handed out as live and never
// count against capacity; a full store refuses with ErrStoreFull and
// evicts nothing, also under concurrent saves.
//
// Each property is a subtest named after it. Call it from a test of your
// own package:
//
//	func TestMyStore(t *testing.T) {
//		execgatetest.TestApprovalStore(t, func(t *testing.T, capacity int) execgate.ApprovalStore {
//			return mystore.New(capacity)
//		})
//	}
func TestApprovalStore(t *testing.T, newStore NewStoreFunc) {
	for _, c := range storeChecks {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, func(capacity int) execgate.ApprovalStore { return newStore(t, capacity) })
		})
	}
}

// reporter is what the checks of a kit report to: the *testing.T of a
// subtest when a user runs the kit, and a recorder when the kit's own
// tests run it against broken implementations. Fatalf must end the
// goroutine that calls it, as testing.T's does; only a check's own
// goroutine calls it.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	TempDir() string
	Setenv(key, value string)
}

// storeMaker is a [NewStoreFunc] bound to the subtest that uses the store.
type storeMaker func(capacity int) execgate.ApprovalStore

// storeCheck is one property of the ApprovalStore contract.
type storeCheck struct {
	name string
	run  func(t reporter, newStore storeMaker)
}

// storeChecks are the properties [TestApprovalStore] checks, in order.
var storeChecks = []storeCheck{
	{"SaveTakeRoundTrip", testRoundTrip},
	{"EachIDHasItsOwnRecord", testOwnRecord},
	{"SaveKeepsItsOwnCopy", testSaveCopies},
	{"TakeIsSingleUse", testTakeOnce},
	{"UnknownID", testUnknown},
	{"DuplicateID", testDuplicate},
	{"Delete", testDelete},
	{"ConcurrentTakes", testConcurrentTakes},
	{"TakeDeleteRace", testTakeDeleteRace},
	{"Expiry", testExpiry},
	{"Capacity", testCapacity},
	{"ExpiredDoNotCount", testExpiredDoNotCount},
	{"ConcurrentSavesAtCapacity", testConcurrentSaves},
}

// record returns a distinct, well-formed record expiring at exp. Each has
// a principal of its own, so that a store's quotas per principal, which
// the contract leaves to the store, are never what fills it here.
func record(exp time.Time) execgate.Record {
	id := uuid.Must(uuid.NewV7()).String()
	created := exp.Add(-15 * time.Minute).UTC().Round(0)
	return execgate.Record{
		Approval: execgate.Approval{
			ID: id, Principal: "agent-" + id[24:], Name: "tool.cmd", Command: "/usr/bin/tool",
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

func save(t reporter, s execgate.ApprovalStore, rec execgate.Record) {
	t.Helper()
	if err := s.Save(context.Background(), rec); err != nil {
		t.Fatalf("Save(%s): %v", rec.Approval.ID, err)
	}
}

func testRoundTrip(t reporter, newStore storeMaker) {
	s := newStore(10)
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

// sameRecord reports the first field in which got differs from want. It
// walks every exported field of Record, so a field added to Record or
// Approval is compared too; times are compared as instants, byte slices
// byte for byte (nil and empty are the same).
func sameRecord(got, want execgate.Record) error {
	return sameValue("Record", reflect.ValueOf(got), reflect.ValueOf(want))
}

var timeType = reflect.TypeFor[time.Time]()

func sameValue(path string, got, want reflect.Value) error {
	t := got.Type()
	switch {
	case t == timeType:
		if g, w := got.Interface().(time.Time), want.Interface().(time.Time); !g.Equal(w) {
			return fmt.Errorf("%s differs: got %v, want %v", path, g, w)
		}
	case t.Kind() == reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				if err := sameValue(path+"."+f.Name, got.Field(i), want.Field(i)); err != nil {
					return err
				}
			}
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			return fmt.Errorf("%s differs: got %q, want %q", path, got.Bytes(), want.Bytes())
		}
	case t.Kind() == reflect.Slice:
		if got.Len() != want.Len() {
			return fmt.Errorf("%s differs: got %d elements, want %d: got %v, want %v", path, got.Len(), want.Len(), got, want)
		}
		for i := range got.Len() {
			if err := sameValue(fmt.Sprintf("%s[%d]", path, i), got.Index(i), want.Index(i)); err != nil {
				return err
			}
		}
	case !reflect.DeepEqual(got.Interface(), want.Interface()):
		return fmt.Errorf("%s differs: got %#v, want %#v", path, got, want)
	}
	return nil
}

func testOwnRecord(t reporter, newStore storeMaker) {
	s := newStore(10)
	recs := []execgate.Record{live(), live(), live()}
	for i := range recs {
		recs[i].Approval.Reason = fmt.Sprintf("record %d", i)
		recs[i].Input = json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))
		save(t, s, recs[i])
	}
	for _, i := range []int{1, 2, 0} {
		got, err := s.Take(context.Background(), recs[i].Approval.ID)
		if err != nil {
			t.Fatalf("Take(%s): %v", recs[i].Approval.ID, err)
		}
		if err := sameRecord(got, recs[i]); err != nil {
			t.Errorf("Take(%s) returned another record: %v", recs[i].Approval.ID, err)
		}
	}
}

func testSaveCopies(t reporter, newStore storeMaker) {
	s := newStore(10)
	rec := live()
	want := live()
	want.Approval.ID, want.Approval.Principal = rec.Approval.ID, rec.Approval.Principal
	want.Approval.Digest = rec.Approval.Digest
	want.Approval.CreatedAt, want.Approval.ExpiresAt = rec.Approval.CreatedAt, rec.Approval.ExpiresAt
	save(t, s, rec)
	// The caller reuses its buffers after Save.
	for i := range rec.Input {
		rec.Input[i] = ' '
	}
	rec.Approval.Args[0] = "--changed"
	for i := range rec.Salt {
		rec.Salt[i] = 0
	}
	got, err := s.Take(context.Background(), rec.Approval.ID)
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	if err := sameRecord(got, want); err != nil {
		t.Errorf("changing the saved record's buffers after Save changed the stored record: %v", err)
	}
}

func testTakeOnce(t reporter, newStore storeMaker) {
	s := newStore(10)
	rec := live()
	save(t, s, rec)
	if _, err := s.Take(context.Background(), rec.Approval.ID); err != nil {
		t.Fatalf("first Take: %v", err)
	}
	if _, err := s.Take(context.Background(), rec.Approval.ID); !errors.Is(err, execgate.ErrNoRecord) {
		t.Errorf("second Take: got %v, want ErrNoRecord", err)
	}
}

func testUnknown(t reporter, newStore storeMaker) {
	s := newStore(10)
	id := uuid.NewString()
	if _, err := s.Take(context.Background(), id); !errors.Is(err, execgate.ErrNoRecord) {
		t.Errorf("Take(unknown): got %v, want ErrNoRecord", err)
	}
	ok, err := s.Delete(context.Background(), id)
	if err != nil || ok {
		t.Errorf("Delete(unknown) = %v, %v; want false, nil", ok, err)
	}
}

func testDuplicate(t reporter, newStore storeMaker) {
	s := newStore(10)
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

func testDelete(t reporter, newStore storeMaker) {
	s := newStore(10)
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

func testConcurrentTakes(t reporter, newStore storeMaker) {
	s := newStore(10)
	rec := live()
	save(t, s, rec)
	const n = 1000
	var wins atomic.Int64
	var others errorCount
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
				others.note(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	others.report(t, "concurrent Takes failed with an error other than ErrNoRecord")
	if got := wins.Load(); got != 1 {
		t.Errorf("%d of %d concurrent Takes succeeded; want exactly 1", got, n)
	}
}

func testTakeDeleteRace(t reporter, newStore storeMaker) {
	s := newStore(10)
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

func testExpiry(t reporter, newStore storeMaker) {
	s := newStore(10)
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

func testCapacity(t reporter, newStore storeMaker) {
	s := newStore(3)
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

func testExpiredDoNotCount(t reporter, newStore storeMaker) {
	s := newStore(2)
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

func testConcurrentSaves(t reporter, newStore storeMaker) {
	const capacity, n = 10, 50
	s := newStore(capacity)
	var saved, full atomic.Int64
	var others errorCount
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
				others.note(err)
			}
		}()
	}
	wg.Wait()
	others.report(t, "concurrent Saves failed with an error other than ErrStoreFull")
	if saved.Load() != capacity || full.Load() != n-capacity {
		t.Errorf("concurrent saves: %d saved, %d refused as full; want %d and %d", saved.Load(), full.Load(), capacity, n-capacity)
	}
}

// errorCount counts the unexpected errors of concurrent calls, so that a
// check reports them once, not once per goroutine.
type errorCount struct {
	mu    sync.Mutex
	n     int
	first error
}

func (c *errorCount) note(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		c.first = err
	}
	c.n++
}

func (c *errorCount) report(t reporter, what string) {
	t.Helper()
	if c.n > 0 {
		t.Errorf("%d %s, the first: %v", c.n, what, c.first)
	}
}
