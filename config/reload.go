package config

import (
	"errors"
	"sync"
	"time"

	"github.com/execgate/execgate/policy"
)

// reloadable is what a load and all its reloads share: the options of
// their Engine and the IDs of the grants the last applied file created.
type reloadable struct {
	mu         sync.Mutex // serializes applying reloads
	opts       policy.Options
	fileGrants []string // guarded by mu
}

// Reload reads the configuration at path and applies it to l's Engine,
// for a program that picks up a changed file without restarting. The
// Engine's rate-limit state, the grants made through its API and the
// approvals pending in the Executor survive. See ReloadBytes.
func (l *Loaded) Reload(path string) (*Loaded, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return l.ReloadBytes(path, data)
}

// ReloadBytes checks and builds the configuration in data, as [LoadBytes]
// does with the options l was loaded with, and applies its policies and
// grants to l.Engine. It returns the new configuration, whose Engine and
// Policy are l's; hand its Allowlist to the Executor:
//
//	next, err := cur.Reload(path)
//	if err != nil {
//		log.Print(err)
//	}
//	if next == nil {
//		return // nothing changed; cur stays in force
//	}
//	x.SetAllowlist(next.Allowlist) // next's rules are in force
//	cur = next
//
// Nothing is changed unless the whole file passes every check of a load,
// its grants included (they are created in a scratch Engine with l's
// clock first). Then, holding a lock that serializes reloads of the same
// Engine: the grants the previous file created are revoked; the new
// policies are swapped in (Engine.Swap), so that the next decision uses
// them; and the new file's grants are created. Every state in between is
// at most as permissive as the old or the new rules, since grants only
// loosen them. Decisions made concurrently are race-free: each uses
// either the old rules or the new ones.
//
// The rules are swapped before the caller's SetAllowlist, so for a moment
// the new rules judge calls to the old allowlist. A call still needs both
// an allowlist entry and an allow; to remove a tool without any moment in
// which it could be called, deny it in one reload and remove it in the
// next.
//
// A reload cannot add or remove the policies section, since the
// Executor's Policy is fixed when it is built: if l has no Engine and the
// file has policies, or l has an Engine and the file has none, ReloadBytes
// refuses it. Write policies: [] to deny every call.
//
// Once applying has started, it can fail only if a grant expired in the
// meantime or grants made concurrently through the Engine's API took its
// capacity. The new rules are then in force with the grants that could be
// created, which is stricter than the file, and ReloadBytes returns the
// new configuration together with the [ErrorList] of the others: a
// caller that gets a non-nil *Loaded with its error hands its Allowlist
// to the Executor as after a success, since its rules already judge the
// calls. On every other error the *Loaded is nil and nothing changed.
// The next reload revokes the grants created.
func (l *Loaded) ReloadBytes(name string, data []byte) (*Loaded, error) {
	if l == nil {
		return nil, errors.New("config: Reload on a nil *Loaded")
	}
	st := l.state
	if st == nil {
		if l.Engine != nil {
			return nil, errors.New("config: Reload needs a *Loaded returned by LoadFile, Load, LoadBytes or Reload")
		}
		st = &reloadable{}
	}
	next, err := load(name, data, st.opts)
	if err != nil {
		return nil, err
	}
	next.state = st
	switch {
	case l.Engine == nil && next.Engine == nil:
		return next, nil
	case l.Engine == nil:
		at := next.policiesKey
		return nil, ErrorList{{File: next.file, Line: at.line, Column: at.col, Path: at.path,
			Message: "a reload cannot add policies: the running configuration has none, so its Executor has no Policy to swap rules into; restart the program to add them"}}
	case next.Engine == nil:
		return nil, ErrorList{{File: next.file, Path: "policies",
			Message: "a reload cannot remove the policies section: the running configuration has one, and without it every allowlisted call would be allowed; write the rules you want (policies: [] denies every call), or restart the program"}}
	}

	st.mu.Lock()
	defer st.mu.Unlock()
	eng := l.Engine
	p := &problems{file: next.file}

	checkLiveGrants(st, eng, next, p)
	if err := p.err(); err != nil {
		return nil, err
	}

	// Apply. Revoking first means no moment has the old grants with the
	// new rules.
	for _, id := range st.fileGrants {
		eng.Revoke(id)
	}
	st.fileGrants = nil
	if err := eng.Swap(next.Policies); err != nil {
		// policy.New accepted the same policies, so this does not
		// happen; the old rules stay in force.
		at := next.policiesKey
		p.at(at.line, at.col, at.path, "%v", err)
		return nil, p.err()
	}
	if beforeFileGrants != nil {
		beforeFileGrants(eng)
	}
	var ids []string
	for i, g := range next.Grants {
		g.Created = time.Time{}
		id, err := eng.Grant(g)
		if err != nil {
			at := next.grantAt[i].entry
			p.at(at.line, at.col, at.path, "not created: %v", err)
			continue
		}
		ids = append(ids, id)
		st.fileGrants = append(st.fileGrants, id)
	}
	next.Policy, next.Engine = eng, eng
	next.Grants = grantsByID(eng, ids)
	// The rules are in force whether or not every grant could be made.
	return next, p.err()
}

// beforeFileGrants, when set (by tests), is called by ReloadBytes with
// the Engine after it swapped the new rules in and before it creates the
// file's grants: what a concurrent caller of the Engine's API may do then.
var beforeFileGrants func(*policy.Engine)

// checkLiveGrants records in p what the scratch Engine of next could not
// know: the grants made through the live Engine's API, whose ids the
// file's grants must not take and which count against the same capacity.
// The caller holds st.mu.
func checkLiveGrants(st *reloadable, eng *policy.Engine, next *Loaded, p *problems) {
	fromFile := make(map[string]bool, len(st.fileGrants))
	for _, id := range st.fileGrants {
		fromFile[id] = true
	}
	others := make(map[string]bool)
	for _, g := range eng.Grants() {
		if !fromFile[g.ID] {
			others[g.ID] = true
		}
	}
	for i, g := range next.Grants {
		if others[g.ID] {
			at := next.grantAt[i].id
			p.at(at.line, at.col, at.path, "a grant with id %s was made through the Engine and is live; choose another id, or revoke that grant first", quote(g.ID))
		}
	}
	if limit := maxGrants(st.opts); len(others)+len(next.Grants) > limit {
		at := next.grants
		p.at(at.line, at.col, at.path, "%d grants here and %d live grants made through the Engine are more than the %d it holds (LoadOptions.Policy.MaxGrants)", len(next.Grants), len(others), limit)
	}
}
