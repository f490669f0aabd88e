package runs

import (
	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/writepath"
)

// This file runs tasks of scope EVERY_NODE (contract §6): stored once, at
// keyspace.Keys.Every, and run by every RUNNING node by its triggers, each
// node keeping its own progress (trigger positions, run numbers, last run,
// run marker) at keyspace.Keys.EveryProgress. A node sees such tasks through
// follow.EveryNode (a watch on their prefix), which hands them to
// the dispatcher (internal/dispatch/every.go), RemoveEvery and EveryListed.
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
func (n *Path) everyFence(e *held.Entry, sharedRev, progRev int64) writepath.EveryFence {
	lease := n.member.Lease()
	return writepath.EveryFence{Identity: e.Ident.Name, Task: e.ID, SharedRev: sharedRev, ProgressRev: progRev, Lease: writepath.Lease(lease)}
}

// EveryListed drops the EVERY_NODE tasks this node knows that a list of
// them (follow.EveryNode's) did not find stored.
func (n *Path) EveryListed(stored map[string]bool) {
	for _, e := range n.d.EveryNotIn(stored) {
		n.RemoveEvery(e.Ident.Name, e.ID)
	}
}

// RemoveEvery drops an EVERY_NODE task that was deleted, with this node's
// progress on it.
func (n *Path) RemoveEvery(id, taskID string) {
	n.d.DropEvery(id, taskID)
	ctx, cancel := n.d.EtcdCtx(n.life.Ctx)
	defer cancel()
	if _, err := n.cfg.Client.Delete(ctx, n.keys.EveryProgress(n.cfg.Name, taskID)); err != nil && n.life.Ctx.Err() == nil {
		n.log.Warn("delete EVERY_NODE progress", "task", taskID, "error", err)
	}
}
