package taskservice

import (
	"time"

	"github.com/taskd/taskd/internal/follow"
	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/writepath"
)

// This file runs tasks of scope EVERY_NODE (contract §6): stored once, at
// keyspace.Keys.Every, and run by every RUNNING node by its triggers, each
// node keeping its own progress (trigger positions, run numbers, last run,
// run marker) at keyspace.Keys.EveryProgress. A node sees such tasks through
// follow.EveryNode (a watch on their prefix), which hands them to
// installEvery, removeEvery and everyListed.
//
// The run machinery is the one of identity tasks: a node merges the shared
// record with its progress into one TaskRecord (record.MergeEvery), plans
// and applies runs on it, and splits the progress back out
// (record.SplitEvery). Its writes are fenced on its own
// registration (the lease of nodes/<name>: a replaced or expired node
// cannot commit), on the shared record's revision (a cancel stops runs) and
// on its progress revision. Fence tokens of these runs are (0, progress
// revision).

// everyFence is the fence of a write of this node's progress on task.
func (n *Node) everyFence(e *held.Entry, sharedRev, progRev int64) writepath.EveryFence {
	lease := n.member.Lease()
	return writepath.EveryFence{Identity: e.Ident.Name, Task: e.ID, SharedRev: sharedRev, ProgressRev: progRev, Lease: writepath.Lease(lease)}
}

// everyListed drops the EVERY_NODE tasks this node knows that a list of
// them (follow.EveryNode's) did not find stored.
func (n *Node) everyListed(stored map[string]bool) {
	n.d.Lock()
	var gone []*held.Entry
	for _, st := range n.d.Every {
		for e := range st.Tasks.All() {
			if !stored[e.ID] {
				gone = append(gone, e)
			}
		}
	}
	n.d.Unlock()
	for _, e := range gone {
		n.removeEvery(e.Ident.Name, e.ID)
	}
}

// installEvery queues (or updates) this node's entry of an EVERY_NODE task,
// as follow.EveryNode read it (with this node's stored progress, or
// without: the entry keeps the progress it has).
func (n *Node) installEvery(t follow.EveryTask) {
	shared, sharedRev := t.Shared, t.Rev
	n.d.Lock()
	st := n.d.Every[t.Identity]
	if st == nil {
		st = &held.Ident{Name: t.Identity, Scope: held.ScopeEvery}
		n.d.Every[t.Identity] = st
	}
	e := st.Tasks.Get(shared.Id)
	if e == nil {
		e = &held.Entry{Ident: st, ID: shared.Id, Idx: -1}
		st.Tasks.Put(e)
	} else if e.Running || (!t.WithProgress && e.Rev >= sharedRev) {
		n.d.Unlock()
		return // a run in flight folds the change in at its commit
	}
	if t.WithProgress {
		e.Extra().Prog, e.X.ProgRev = t.Progress, t.ProgressRev
	}
	e.Rev = sharedRev
	e.Extra().Shared = shared
	e.Rec = record.MergeEvery(shared, sharedRev, e.X.Prog, time.Now(), n.followers.cals.Exclusions(shared.GetSpec().GetCalendars()))
	if n.d.InFlightLocked(e.Ref()) {
		// This node's run is in flight: its commit settles the marker.
		e.Running = true
		n.d.Queue.Remove(e)
	} else {
		n.d.ReschedLocked(e) // a marker is resolved by the entry's next start
	}
	n.d.Unlock()
}

// removeEvery drops an EVERY_NODE task that was deleted, with this node's
// progress on it.
func (n *Node) removeEvery(id, taskID string) {
	n.d.Lock()
	if st := n.d.Every[id]; st != nil {
		if e := st.Tasks.Get(taskID); e != nil {
			n.d.RemoveEntryLocked(e)
		}
	}
	n.d.Unlock()
	ctx, cancel := n.d.EtcdCtx(n.life.ctx)
	defer cancel()
	if _, err := n.cfg.Client.Delete(ctx, n.keys.EveryProgress(n.cfg.Name, taskID)); err != nil && n.life.ctx.Err() == nil {
		n.log.Warn("delete EVERY_NODE progress", "task", taskID, "error", err)
	}
}
