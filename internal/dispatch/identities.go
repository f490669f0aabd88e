package dispatch

import (
	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
)

// This file is how identities arrive at and leave this node's queue, once
// internal/ownership has read or moved them: the loading of an identity's
// tasks under an epoch (InstallTasks), the reaction to a failed fence
// (IdentityMoved), and the forgetting of an identity (DropIdentityLocked).
// owned.go is what the ownership calls.

// RemoveEntryLocked takes e out of its identity and the timer queue for
// good (mu held).
func (n *Dispatcher) RemoveEntryLocked(e *held.Entry) {
	e.Gone = true
	n.Queue.Remove(e)
	n.dropWorkerWaitLocked(e)
	n.Runs.DropShadowLocked(e)
	delete(n.parked, e)
	if e.Ident.Tasks.Get(e.ID) == e {
		e.Ident.Tasks.Del(e.ID)
	}
	n.TouchLocked(e)
}

// IdentityMoved reacts to a failed fence: if the identity is still mapped to
// this incarnation under a newer epoch, its tasks are loaded again under
// that epoch; otherwise the identity is no longer this node's.
func (n *Dispatcher) IdentityMoved(st *held.Ident, owner identity.Owner) {
	if owner.Mapped && owner.Node == n.cfg.Name && owner.Incarnation == n.Incarnation {
		n.Spawn(func() {
			ctx, cancel := n.EtcdCtx(n.Life.Ctx)
			defer cancel()
			if err := n.Own.AdoptIdentity(ctx, st.Name, owner.Epoch); err != nil {
				n.Log.Warn("reload identity under its new epoch", "identity", st.Name, "error", err)
				n.Own.Repair(st.Name)
			}
		})
		return
	}
	n.mu.Lock()
	if cur := n.Idents[st.Name]; cur == st {
		n.DropIdentityLocked(st)
	}
	n.mu.Unlock()
	n.Log.Info("identity no longer owned here", "identity", st.Name, "owner", owner.Node, "epoch", owner.Epoch)
	if owner.Mapped && owner.Node == n.cfg.Name {
		// Mapped to an earlier incarnation of this name, which is gone:
		// nothing would run it. Adopt it.
		n.Own.Repair(st.Name)
	}
}

// DropIdentityLocked forgets an identity: its timers stop, and a run that
// tries to start or commit for it afterwards is dropped. Its runs in flight
// go on (their results reach the new owner) and are told it left.
func (n *Dispatcher) DropIdentityLocked(st *held.Ident) {
	st.Lost = true
	for e := range st.Tasks.All() {
		n.Queue.Remove(e)
		n.Runs.DropShadowLocked(e)
		delete(n.parked, e)
		e.Counted = false
	}
	n.forgetWaitingLocked(st)
	if r := st.Active; r != nil {
		r.StartQ, r.GrantQ = nil, nil
	}
	delete(n.Idents, st.Name)
	n.identityLeftFlightsLocked(st.Name)
	n.Voter.Forget(st.Name) // a move clears the old node's votes
}

// InstallTasks puts stored tasks of id, owned under epoch, into the queue.
// With loadRev > 0, stored is every task of the identity as of that
// revision, and entries it lacks are removed unless they were written
// after it (a task scheduled while the load was under way). An entry whose
// task has a run in flight here waits for that run to settle; a run marker
// of no run in flight here is resolved by the entry's next start.
func (n *Dispatcher) InstallTasks(id string, epoch int64, stored []pending.Stored, loadRev int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	st := n.Idents[id]
	if st == nil || st.Lost {
		st = &held.Ident{Name: id, Scope: held.ScopeOwned}
		n.Idents[id] = st
		n.Voter.Track(id)
	}
	if epoch < st.Epoch {
		return // a newer adoption already happened
	}
	adopted := epoch > st.Epoch // loaded by a new owner: at start, adoption, a move
	st.Epoch = epoch
	seen := make(map[string]bool, len(stored))
	for _, s := range stored {
		tid := s.TaskID()
		seen[tid] = true
		e := st.Tasks.Get(tid)
		if e == nil {
			e = &held.Entry{Ident: st, ID: tid, Idx: -1}
			st.Tasks.Put(e)
		}
		if e.Running && s.Rev > e.Rev && !n.UnwaitLocked(e) { // a waiting run takes the change now
			n.TaskChangedLocked(e) // an armed run is not called
		}
		if e.Running || ((e.Rec != nil || e.Raw != "" || e.Cold()) && e.Rev > s.Rev) {
			continue
		}
		if s.Rec == nil && n.installColdLocked(e, &s) {
			continue
		}
		if s.Rec == nil {
			// Glanced at but needed now after all (in flight here, or
			// paused): decoded whole.
			rec, err := pending.Decode(s.Raw)
			if err != nil {
				n.Log.Error("a stored task cannot be decoded; left out", "identity", id, "task", e.ID, "error", err)
				continue
			}
			s.Rec = rec
		}
		e.Rec, e.Raw, e.Rev = s.Rec, "", s.Rev
		// A reload may bring what an entry waits for (a handoff entry comes
		// with a result forwarded by the previous owner): look again now,
		// not at the next recheck.
		if e.X != nil {
			e.X.RecheckAt = 0
		}
		if n.InFlightLocked(e.Ref()) {
			e.Running = true
			n.Queue.Remove(e)
			n.TouchLocked(e)
			continue
		}
		if adopted {
			n.takeLocked(e) // what passed while the identity moved is caught up
		} else {
			n.ReschedLocked(e)
		}
	}
	if loadRev > 0 {
		for e := range st.Tasks.All() {
			if !seen[e.ID] && !e.Running && e.Rev <= loadRev {
				n.RemoveEntryLocked(e)
			}
		}
	}
}
