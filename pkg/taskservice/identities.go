package taskservice

import (
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
)

// This file is how identities arrive at and leave this node's queue, once
// internal/ownership has read or moved them: the loading of an identity's
// tasks under an epoch (installTasks), the reaction to a failed fence
// (identityMoved), and the forgetting of an identity (dropIdentityLocked).
// ownerside.go is what the ownership calls.

func (n *Node) removeEntryLocked(e *entry) {
	e.gone = true
	n.queue.remove(e)
	n.dropWorkerWaitLocked(e)
	n.dropShadowLocked(e)
	delete(n.parked, e)
	if e.ident.tasks.get(e.id) == e {
		e.ident.tasks.del(e.id)
	}
	n.touchLocked(e)
}

// identityMoved reacts to a failed fence: if the identity is still mapped to
// this incarnation under a newer epoch, its tasks are loaded again under
// that epoch; otherwise the identity is no longer this node's.
func (n *Node) identityMoved(st *identState, owner identity.Owner) {
	if owner.Mapped && owner.Node == n.cfg.Name && owner.Incarnation == n.incarnation {
		n.spawn(func() {
			ctx, cancel := n.etcdCtx(n.life.ctx)
			defer cancel()
			if err := n.own.AdoptIdentity(ctx, st.name, owner.Epoch); err != nil {
				n.log.Warn("reload identity under its new epoch", "identity", st.name, "error", err)
				n.own.Repair(st.name)
			}
		})
		return
	}
	n.mu.Lock()
	if cur := n.idents[st.name]; cur == st {
		n.dropIdentityLocked(st)
	}
	n.mu.Unlock()
	n.log.Info("identity no longer owned here", "identity", st.name, "owner", owner.Node, "epoch", owner.Epoch)
	if owner.Mapped && owner.Node == n.cfg.Name {
		// Mapped to an earlier incarnation of this name, which is gone:
		// nothing would run it. Adopt it.
		n.own.Repair(st.name)
	}
}

// dropIdentityLocked forgets an identity: its timers stop, and a run that
// tries to start or commit for it afterwards is dropped. Its runs in flight
// go on (their results reach the new owner) and are told it left.
func (n *Node) dropIdentityLocked(st *identState) {
	st.lost = true
	for e := range st.tasks.all() {
		n.queue.remove(e)
		n.dropShadowLocked(e)
		delete(n.parked, e)
		e.counted = false
	}
	n.forgetWaitingLocked(st)
	if r := st.run; r != nil {
		r.startQ, r.grantQ = nil, nil
	}
	delete(n.idents, st.name)
	n.identityLeftFlightsLocked(st.name)
	n.voter.Forget(st.name) // a move clears the old node's votes
}

// installTasks puts stored tasks of id, owned under epoch, into the queue.
// With loadRev > 0, stored is every task of the identity as of that
// revision, and entries it lacks are removed unless they were written
// after it (a task scheduled while the load was under way). An entry whose
// task has a run in flight here waits for that run to settle; a run marker
// of no run in flight here is resolved by the entry's next start.
func (n *Node) installTasks(id string, epoch int64, stored []pending.Stored, loadRev int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	st := n.idents[id]
	if st == nil || st.lost {
		st = &identState{name: id, scope: scopeOwned}
		n.idents[id] = st
		n.voter.Track(id)
	}
	if epoch < st.epoch {
		return // a newer adoption already happened
	}
	adopted := epoch > st.epoch // loaded by a new owner: at start, adoption, a move
	st.epoch = epoch
	seen := make(map[string]bool, len(stored))
	for _, s := range stored {
		tid := s.TaskID()
		seen[tid] = true
		e := st.tasks.get(tid)
		if e == nil {
			e = &entry{ident: st, id: tid, idx: -1}
			st.tasks.put(e)
		}
		if e.running && s.Rev > e.rev && !n.unwaitLocked(e) { // a waiting run takes the change now
			n.taskChangedLocked(e) // an armed run is not called
		}
		if e.running || ((e.rec != nil || e.raw != "" || e.cold()) && e.rev > s.Rev) {
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
				n.log.Error("a stored task cannot be decoded; left out", "identity", id, "task", e.id, "error", err)
				continue
			}
			s.Rec = rec
		}
		e.rec, e.raw, e.rev = s.Rec, "", s.Rev
		// A reload may bring what an entry waits for (a handoff entry comes
		// with a result forwarded by the previous owner): look again now,
		// not at the next recheck.
		if e.x != nil {
			e.x.recheckAt = 0
		}
		if n.inFlightLocked(e.ref()) {
			e.running = true
			n.queue.remove(e)
			n.touchLocked(e)
			continue
		}
		if adopted {
			n.takeLocked(e) // what passed while the identity moved is caught up
		} else {
			n.reschedLocked(e)
		}
	}
	if loadRev > 0 {
		for e := range st.tasks.all() {
			if !seen[e.id] && !e.running && e.rev <= loadRev {
				n.removeEntryLocked(e)
			}
		}
	}
}
