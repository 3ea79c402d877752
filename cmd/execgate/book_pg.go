package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/mcpserver"
	"github.com/execgate/execgate/stores/pgstore"
)

// pgPollEvery is how often a look that waits for a decision reads the
// approval again: a decision made by another replica reaches this one
// through the database only.
const pgPollEvery = 100 * time.Millisecond

// pgOpenTimeout bounds connecting to the database and migrating its
// tables when serve starts.
const pgOpenTimeout = 30 * time.Second

// storeUnavailableError is the refusal of a request that needs the
// approval store when the store cannot be reached. What it says of the
// call depends on the operation: a read changed nothing, a proposal
// stored nothing and ran nothing, a decision recorded after a call ran
// says that the call ran. Its message never holds the connection
// string.
type storeUnavailableError struct {
	// Op says what was asked of the store.
	Op string
	// Then says what is true of the approval and its call meanwhile;
	// "" is "nothing was stored and nothing ran".
	Then string
	// Err is the database's error.
	Err error
}

func (e *storeUnavailableError) Error() string {
	then := cmp.Or(e.Then, "nothing was stored and nothing ran; retry when the database is back")
	return fmt.Sprintf("execgate: the approval store (PostgreSQL) cannot be reached to %s: %s", e.Op, then)
}

// Per operation, what a storeUnavailableError says is true meanwhile.
const (
	thenNotRead    = "the approval's state cannot be read now; nothing changed: ask again when the database is back"
	thenNotListed  = "the pending approvals cannot be read now; nothing changed: ask again when the database is back"
	thenNotDecided = "nothing was decided and nothing ran; decide again when the database is back"
	thenBound      = "the decision was recorded; older outcomes are dropped when the database is back"
	thenUnclaimed  = "the call ran, but its Result could not be put back for another look"
)

// thenSettled is what a storeUnavailableError says of a decision in
// state that could not be recorded: what happened, and that it is
// recorded when the database is back.
func thenSettled(state mcpserver.ApprovalState) string {
	switch state {
	case mcpserver.ApprovalApproved, mcpserver.ApprovalDropped:
		return "the call ran; its outcome is recorded when the database is back"
	case mcpserver.ApprovalRejected:
		return "the approval was rejected and nothing ran; the rejection is recorded when the database is back"
	case mcpserver.ApprovalExpired:
		return "the approval had expired and nothing ran; that is recorded when the database is back"
	}
	return "the call did not run; that is recorded when the database is back"
}

func (e *storeUnavailableError) Unwrap() error { return e.Err }

// pgStore is the PostgreSQL side of a gate whose server section says
// approval_store kind postgres: the pool, the Executor's ApprovalStore
// and the book's table.
type pgStore struct {
	pool   *pgxpool.Pool
	store  *pgstore.Store
	states *pgstore.States
}

// openPGStore connects to the database whose connection string is in the
// variable srv.ApprovalStore names, creates or upgrades the tables (pgstore.Migrate and
// pgstore.MigrateStates, both idempotent) and returns them. getenv reads
// the variable; its value is never repeated in an error.
func openPGStore(srv *config.Server, getenv func(string) string) (*pgStore, error) {
	s := srv.ApprovalStore
	where := fmt.Sprintf("server.approval_store (line %d)", s.Line)
	ctx, cancel := context.WithTimeout(context.Background(), pgOpenTimeout)
	defer cancel()
	pool, cfg, err := openPGPool(ctx, where, getenv, s.DSNEnv)
	if err != nil {
		return nil, err
	}
	p := &pgStore{pool: pool}
	if err := p.migrate(ctx, srv); err != nil {
		pool.Close()
		return nil, fmt.Errorf("%s: %w", where, scrubPassword(err, cfg))
	}
	return p, nil
}

func (p *pgStore) migrate(ctx context.Context, srv *config.Server) error {
	s := srv.ApprovalStore
	if err := pgstore.Migrate(ctx, p.pool, s.Table); err != nil {
		return err
	}
	if err := pgstore.MigrateStates(ctx, p.pool, s.Table); err != nil {
		return err
	}
	var err error
	if p.store, err = pgstore.New(ctx, p.pool, pgstore.Options{Table: s.Table, Capacity: maxPending,
		// The quotas per principal of the server section; zero is the
		// store's default, as for the memory store.
		PerPrincipalCapacity: srv.MaxPendingPerPrincipal, PerPrincipalMaxBytes: srv.MaxPendingBytesPerPrincipal}); err != nil {
		return err
	}
	p.states, err = pgstore.NewStates(ctx, p.pool, s.Table)
	return err
}

// Close closes the pool.
func (p *pgStore) Close() { p.pool.Close() }

// pgLeaseFor is how long a replica's take of an approval is its own
// from each renewal (see pgstore.Lease): a replica that stops, or
// loses the database for longer, has its approvals read failed by the
// others once it has passed. pgLeaseRenewEvery is how often the owner
// renews it while the call runs, well within pgLeaseFor.
const (
	pgLeaseFor        = 3 * time.Minute
	pgLeaseRenewEvery = 30 * time.Second
)

// pgBook is the approvalBook of a gate whose approvals are in
// PostgreSQL, shared by every replica on the same tables. The
// approvals it takes it holds under a lease of its own owner ID, which
// it renews until it settles or releases them, so that a call that runs
// longer than its approval's lifetime still reads running on every
// replica, and its Result is kept.
type pgBook struct {
	states *pgstore.States
	now    func() time.Time
	notify *notifier
	// owner is the owner of this book's leases: random, made when it
	// is made, so each replica (and each start of one) has its own.
	owner string
	// log tells of a decision the store no longer waited for.
	log *slog.Logger

	mu    sync.Mutex
	waits map[string]int
	// renewing holds, for each approval this book holds, what stops the
	// renewal of its lease.
	renewing map[string]context.CancelFunc
}

func newPGBook(states *pgstore.States, notify *notifier) *pgBook {
	return &pgBook{states: states, now: time.Now, notify: notify, owner: uuid.NewString(), log: slog.Default(),
		waits: make(map[string]int), renewing: make(map[string]context.CancelFunc)}
}

// lease is the lease under which b takes approvals.
func (b *pgBook) lease() pgstore.Lease { return pgstore.Lease{Owner: b.owner, For: pgLeaseFor} }

// hold renews the lease of b's take of the approval with the given ID
// every pgLeaseRenewEvery until b lets it go (see letGo) or the store
// says b no longer holds it.
func (b *pgBook) hold(id string) {
	ctx, cancel := context.WithCancel(context.Background())
	b.mu.Lock()
	if stop, ok := b.renewing[id]; ok {
		stop()
	}
	b.renewing[id] = cancel
	b.mu.Unlock()
	go func() {
		t := time.NewTicker(pgLeaseRenewEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
			held, err := b.states.Renew(rctx, id, b.lease())
			rcancel()
			if err == nil && !held {
				b.log.Warn("execgate: an approval this replica is running is no longer its own in the approval store: its lease lapsed while the database was out of reach, and the approval reads failed", "approval", id)
				b.letGo(id)
				return
			}
		}
	}()
}

// letGo stops renewing the lease of the approval with the given ID.
func (b *pgBook) letGo(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if stop, ok := b.renewing[id]; ok {
		stop()
		delete(b.renewing, id)
	}
}

var _ approvalBook = (*pgBook)(nil)

// Add implements approvalBook.
func (b *pgBook) Add(ctx context.Context, ap execgate.Approval) error {
	switch err := b.states.Add(ctx, ap, b.now(), maxPending); {
	case errors.Is(err, pgstore.ErrTooManyPending):
		return errPendingFull
	case err != nil:
		return &storeUnavailableError{Op: "keep the approval for the approvers", Err: err}
	}
	b.notify.pending(ap)
	return nil
}

// List implements approvalBook.
func (b *pgBook) List(ctx context.Context) ([]execgate.Approval, error) {
	out, err := b.states.List(ctx, b.now())
	if err != nil {
		return nil, &storeUnavailableError{Op: "list the pending approvals", Then: thenNotListed, Err: err}
	}
	return out, nil
}

// Take implements approvalBook.
func (b *pgBook) Take(ctx context.Context, id string, approving bool, check func(execgate.Approval) error) (execgate.Approval, bool, error) {
	state := ""
	if approving {
		state = string(mcpserver.ApprovalRunning)
	}
	var cerr error
	ap, found, err := b.states.Take(ctx, id, b.now(), state, b.lease(), func(ap execgate.Approval) error {
		cerr = check(ap)
		return cerr
	})
	if err != nil && cerr == nil {
		return execgate.Approval{}, false, &storeUnavailableError{Op: "take the approval to decide", Then: thenNotDecided, Err: err}
	}
	if found && err == nil {
		b.hold(id)
	}
	return ap, found, err
}

// Settle implements approvalBook.
func (b *pgBook) Settle(ctx context.Context, id, approver string, state mcpserver.ApprovalState, res *execgate.Result, err error) error {
	var ae *execgate.ApprovalError
	if state == mcpserver.ApprovalFailed && errors.As(err, &ae) && ae.Reason == execgate.ReasonExpired {
		state, err = mcpserver.ApprovalExpired, nil
	}
	cur, ok, gerr := b.states.Get(ctx, id, b.now())
	if gerr != nil {
		return &storeUnavailableError{Op: "record the decision", Then: thenSettled(state), Err: gerr}
	}
	if !ok || !cur.Finished.IsZero() || !cur.Taken || cur.Owner != b.owner {
		b.letGo(id)
		b.lateDecision(id, state, cur)
		return nil
	}
	st := pgstore.Settlement{State: string(state), At: b.now(), Owner: b.owner}
	if state == mcpserver.ApprovalApproved {
		st.State = string(mcpserver.ApprovalDropped)
		if res != nil {
			st.TraceID = res.ID
			if raw, merr := json.Marshal(res); merr == nil {
				st.Result, st.ResultSize, st.State = raw, int64(len(raw)), string(state)
			}
		}
	}
	if err != nil {
		st.Err = encodeRefusal(err)
	}
	settled, serr := b.states.Settle(ctx, id, st)
	if serr != nil {
		return &storeUnavailableError{Op: "record the decision", Then: thenSettled(state), Err: serr}
	}
	b.letGo(id)
	if !settled {
		cur, _, _ = b.states.Get(ctx, id, b.now())
		b.lateDecision(id, state, cur)
		return nil
	}
	b.notify.decided(cur.Approval, decisionNote{approver: approver, approve: cur.State == string(mcpserver.ApprovalRunning),
		state: mcpserver.ApprovalState(st.State), at: st.At, res: res, err: err})
	if berr := b.states.Bound(ctx, maxFinished, maxResultBytes); berr != nil {
		return &storeUnavailableError{Op: "bound the outcomes kept", Then: thenBound, Err: berr}
	}
	return nil
}

// lateDecision tells, at warn, of a decision on the approval with the
// given ID that is not b's to record: b's lease on it lapsed (b lost the
// database for longer) and another replica marked it failed, or it is
// gone, or another replica holds it. cur is what the store holds of it.
func (b *pgBook) lateDecision(id string, state mcpserver.ApprovalState, cur pgstore.StateEntry) {
	b.log.Warn("execgate: a decision was not recorded in the approval store: the approval is not this replica's to settle (its lease lapsed and the approval was marked failed, it is gone, or another replica holds it); the store keeps what it holds",
		"approval", id, "decision", string(state), "stored", cur.State)
}

// Look implements approvalBook. While the approval is open it reads it
// again every pgPollEvery, up to wait.
func (b *pgBook) Look(ctx context.Context, id, principal string, approver bool, wait time.Duration) (approvalView, claimAnswer, error) {
	unavailable := func(err error) (approvalView, claimAnswer, error) {
		return approvalView{}, 0, &storeUnavailableError{Op: "read the approval", Then: thenNotRead, Err: err}
	}
	e, ok, err := b.states.Get(ctx, id, b.now())
	switch {
	case err != nil:
		return unavailable(err)
	case !ok:
		return approvalView{}, claimUnknown, nil
	case e.Approval.Principal != principal && !approver:
		return approvalView{}, claimOthers, nil
	}
	for deadline := time.Now().Add(wait); e.Finished.IsZero() && ctx.Err() == nil && time.Now().Before(deadline); {
		await(ctx, nil, min(pgPollEvery, time.Until(deadline)))
		if ctx.Err() != nil {
			break
		}
		if e, ok, err = b.states.Get(ctx, id, b.now()); err != nil {
			return unavailable(err)
		} else if !ok {
			return approvalView{}, claimUnknown, nil
		}
	}
	v := pgViewOf(e)
	if e.Approval.Principal == principal && v.state == mcpserver.ApprovalApproved && ctx.Err() == nil {
		raw, got, err := b.states.Claim(ctx, id, principal)
		if err != nil {
			return unavailable(err)
		}
		if !got {
			// Another look claimed it meanwhile.
			v.state = mcpserver.ApprovalClaimed
			return v, claimFound, nil
		}
		// The answer that carries the Result reads approved, as the
		// memory book's does; every later one reads claimed.
		if raw != nil {
			var res execgate.Result
			if json.Unmarshal(raw, &res) == nil {
				v.result = &res
			}
		}
	}
	return v, claimFound, nil
}

// pgViewOf is what a look reports of e.
func pgViewOf(e pgstore.StateEntry) approvalView {
	v := approvalView{ap: e.Approval, state: mcpserver.ApprovalState(e.State), traceID: e.TraceID, finished: e.Finished, forget: e.Forget}
	if e.Err != nil {
		v.err = decodeRefusal(e.Err)
	}
	return v
}

// Release implements approvalBook.
func (b *pgBook) Release(ctx context.Context, id string) error {
	if err := b.states.Release(ctx, id, b.owner); err != nil {
		return &storeUnavailableError{Op: "put the approval back for the approvers", Then: "the call did not run; the approval is put back for the approvers when the database is back", Err: err}
	}
	b.letGo(id)
	return nil
}

// Unclaim implements approvalBook.
func (b *pgBook) Unclaim(ctx context.Context, id string, res *execgate.Result) error {
	if res == nil {
		return nil
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return err
	}
	if err := b.states.Unclaim(ctx, id, raw); err != nil {
		return &storeUnavailableError{Op: "put back the result", Then: thenUnclaimed, Err: err}
	}
	return nil
}

// StartWait implements approvalBook: the waits are counted in this
// process, so a principal has maxWaitsPerPrincipal waits open on each
// replica.
func (b *pgBook) StartWait(principal string) (func(), bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waits[principal] >= maxWaitsPerPrincipal {
		return nil, false
	}
	b.waits[principal]++
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.waits[principal]--; b.waits[principal] <= 0 {
			delete(b.waits, principal)
		}
	}, true
}

// Claim implements mcpserver.Outcomes. A store it cannot reach reads as
// unavailable, never pending (no approver may be able to decide it
// either): the caller is refused and told to call again later.
func (b *pgBook) Claim(ctx context.Context, id, principal string, wait time.Duration) mcpserver.ApprovalOutcome {
	v, found, err := b.Look(ctx, id, principal, false, wait)
	switch {
	case err != nil:
		b.log.Warn("execgate: what became of an approval could not be read from the approval store", "approval", id, "error", err)
		return mcpserver.ApprovalOutcome{State: mcpserver.ApprovalUnavailable, Err: err}
	case found != claimFound:
		return mcpserver.ApprovalOutcome{State: mcpserver.ApprovalUnknown}
	}
	return mcpserver.ApprovalOutcome{State: v.state, Result: v.result, Err: v.err}
}

// storedRefusal is a refusal as the book keeps it: enough to rebuild
// the typed error its readers match with errors.As, never stdin or an
// environment value (the gate's messages hold neither).
type storedRefusal struct {
	Kind    string           `json:"kind"`
	Message string           `json:"message"`
	Name    string           `json:"name,omitempty"`
	ID      string           `json:"id,omitempty"`
	Reason  string           `json:"reason,omitempty"`
	Action  string           `json:"action,omitempty"`
	Rule    string           `json:"rule,omitempty"`
	Scope   string           `json:"scope,omitempty"`
	Limit   int              `json:"limit,omitempty"`
	Issues  []execgate.Issue `json:"issues,omitempty"`
}

// encodeRefusal keeps err as JSON.
func encodeRefusal(err error) json.RawMessage {
	r := storedRefusal{Kind: string(execgate.KindOf(err)), Message: err.Error()}
	var (
		nf *execgate.NotFoundError
		ve *execgate.ValidationError
		pe *execgate.PolicyError
		ae *execgate.ApprovalError
		be *execgate.BusyError
	)
	switch {
	case errors.As(err, &nf):
		r.Name = nf.Name
	case errors.As(err, &ve):
		r.Name, r.Issues = ve.Name, ve.Issues
	case errors.As(err, &pe):
		r.Name, r.Action, r.Rule = pe.Name, pe.Action, pe.Rule
	case errors.As(err, &ae):
		r.ID, r.Reason = ae.ID, ae.Reason
	case errors.As(err, &be):
		r.Name, r.Scope, r.Limit = be.Name, be.Scope, be.Limit
	}
	b, _ := json.Marshal(r)
	return b
}

// decodeRefusal rebuilds a refusal encodeRefusal kept, as the typed
// error of its kind.
func decodeRefusal(raw json.RawMessage) error {
	var r storedRefusal
	if json.Unmarshal(raw, &r) != nil {
		return errors.New("execgate: the approved call did not run")
	}
	switch r.Kind {
	case execgate.ErrorKindNotFound:
		return &execgate.NotFoundError{Name: r.Name}
	case execgate.ErrorKindValidation:
		return &execgate.ValidationError{Name: r.Name, Issues: r.Issues}
	case execgate.ErrorKindPolicy:
		return &execgate.PolicyError{Name: r.Name, Action: r.Action, Rule: r.Rule}
	case execgate.ErrorKindApproval:
		return &execgate.ApprovalError{ID: r.ID, Reason: r.Reason}
	case execgate.ErrorKindBusy:
		return &execgate.BusyError{Name: r.Name, Scope: r.Scope, Limit: r.Limit}
	case execgate.ErrorKindStoreFull:
		return fmt.Errorf("%s: %w", r.Message, execgate.ErrStoreFull)
	}
	return errors.New(r.Message)
}

// approvalStoreOf opens the PostgreSQL side of srv's approval store, or
// returns nil for the memory store.
func approvalStoreOf(srv *config.Server) (*pgStore, error) {
	if !srv.ApprovalStore.IsPostgres() {
		return nil, nil
	}
	return openPGStore(srv, os.Getenv)
}

// storeRefusal is the refusal of a request the approval store could not
// serve (503): err's message, which says what is true meanwhile (see
// storeUnavailableError), for the command name, if any.
func storeRefusal(err error, name string) *errorInfo {
	return &errorInfo{Kind: execgate.ErrorKindInternal, Name: name, Status: http.StatusServiceUnavailable, Message: err.Error(), retryAfter: busyRetryAfter}
}

// storeRefusalOf returns the refusal of an Executor error that the
// PostgreSQL approval store caused, or nil: a Propose whose record
// could not be stored, an Execute or Reject whose record could not be
// taken. Nothing ran.
func storeRefusalOf(err error) *errorInfo {
	var se *pgstore.StateError
	if !errors.As(err, &se) {
		return nil
	}
	msg := "execgate: the approval store (PostgreSQL) cannot be reached: nothing ran; retry when the database is back"
	if se.State != pgstore.NotApplied && se.Op != pgstore.OpSave {
		msg = "execgate: the approval store (PostgreSQL) was lost while the approval was being taken: the call did not run, and, if the store took it, it can no longer run; ask for the call again"
	}
	return &errorInfo{Kind: execgate.ErrorKindInternal, Status: http.StatusServiceUnavailable, Message: msg, retryAfter: busyRetryAfter}
}

// settleRetries bounds how long a decision the approval store could not
// record is tried again: every settleRetryEvery for settleRetries
// attempts (about two minutes). An approval whose decision is never
// recorded reads running until the replica's lease on it lapses (see
// pgLeaseFor), then failed.
const (
	settleRetries    = 240
	settleRetryEvery = 500 * time.Millisecond
)

// settleLater records a decision that the approval store could not
// record when it was made (a database that was unreachable), trying
// again until it is recorded, so that an approved call that ran while
// the database was going away reads approved, with its Result, once the
// database is back.
func (a *api) settleLater(id, approver string, state mcpserver.ApprovalState, res *execgate.Result, err error) {
	for range settleRetries {
		time.Sleep(settleRetryEvery)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		serr := a.pending.Settle(ctx, id, approver, state, res, err)
		cancel()
		if serr == nil {
			a.log.Info("execgate: the decision on an approval was recorded in the approval store", "approval", id, "state", string(state))
			return
		}
	}
	letGo(a.pending, id)
	a.log.Error("execgate: the decision on an approval could not be recorded in the approval store; it reads running until this replica's lease on it lapses, then failed", "approval", id, "state", string(state))
}

// letGo stops the renewal of book's lease on the approval with the
// given ID, when book is a pgBook: its decision is given up on.
func letGo(book approvalBook, id string) {
	if b, ok := book.(*pgBook); ok {
		b.letGo(id)
	}
}

// recordLeftPending reports whether err is the failure of an Execute
// whose record the PostgreSQL store is known not to have taken
// (pgstore.NotApplied): the record is still pending, and may still run.
func recordLeftPending(err error) bool {
	var se *pgstore.StateError
	return errors.As(err, &se) && se.Op == pgstore.OpTake && se.State == pgstore.NotApplied
}

// release puts the approval with the given ID back for the approvers,
// trying again until the store takes it, as settleLater does.
func (a *api) release(id string) {
	try := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return a.pending.Release(ctx, id)
	}
	if try() == nil {
		return
	}
	go func() {
		for range settleRetries {
			time.Sleep(settleRetryEvery)
			if try() == nil {
				a.log.Info("execgate: an approval whose record was not taken is pending again", "approval", id)
				return
			}
		}
		letGo(a.pending, id)
		a.log.Error("execgate: an approval whose record was not taken could not be put back for the approvers; it reads running until this replica's lease on it lapses, then failed", "approval", id)
	}()
}
