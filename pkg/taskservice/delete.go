package taskservice

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/writepath"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// This file deletes a finished task on request (DeleteTask), before its
// --retention would: the same keys go as when the retention purge takes
// it (writepath.Shapes.DeleteTaskOps, DeleteEveryOps), from any node.

// DeleteTask removes a task in a final state (COMPLETED, DEAD, CANCELED)
// with its run history, idempotency key and calendar references. A task in
// another state is ErrFailedPrecondition: a task is stopped by CancelTask,
// which says so in its state and its events, never by vanishing while it
// may run.
//
// The delete is one Txn conditional on the revision of the task it read in
// its final state, so it never removes a task that changed since (a run
// that was in flight when it was cancelled commits first, and the delete
// is tried again on what it wrote); a run whose commit comes after finds
// the task gone and is dropped, its result with it. For an IDENTITY task
// the Txn is fenced like any task change from a non-owner (the mapping
// read, and a handoff entry telling the owner to drop its copy); an
// EVERY_NODE task goes with every node's history and progress on it.
func (n *Node) DeleteTask(ctx context.Context, id, taskID string) error {
	if rec, ok := n.localTask(id, taskID); ok {
		return n.deleteLocal(rec)
	}
	for {
		cctx, cancel := n.etcdCtx(ctx)
		done, err := n.deleteStored(cctx, ctx, id, taskID)
		cancel()
		if err != nil || done {
			return err
		}
	}
}

// notFinal is the refusal of a delete of a live task.
func notFinal(rec *storev1.TaskRecord) error {
	return fmt.Errorf("task %s is %s, not finished: cancel it first (CancelTask), then delete it: %w",
		rec.GetId(), rec.GetState(), ErrFailedPrecondition)
}

// deleteLocal removes a non-durable task this node holds.
func (n *Node) deleteLocal(rec *storev1.TaskRecord) error {
	if !record.IsFinal(rec.State) {
		return notFinal(rec)
	}
	id := rec.Spec.GetIdentity()
	n.mu.Lock()
	if e := n.local[id].task(rec.Id); e != nil {
		n.removeEntryLocked(e)
	}
	n.mu.Unlock()
	n.dropLocalRefs(rec, rec.Spec.GetCalendars())
	return nil
}

// deleteStored makes one attempt at deleting a stored task; done is false
// when the task changed since it was read (read it again).
func (n *Node) deleteStored(cctx, ctx context.Context, id, taskID string) (done bool, err error) {
	f, ok, err := n.store.Find(cctx, id, taskID)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, fmt.Errorf("task %s of identity %q: %w", taskID, id, ErrNotFound)
	}
	if !record.IsFinal(f.Rec.State) {
		return false, notFinal(f.Rec)
	}
	var ops []clientv3.Op
	var of *writepath.OwnerFence
	if f.Every {
		if ops, err = n.everyDeleteOps(ctx, f.Rec); err != nil {
			return false, err
		}
	} else {
		ops = n.shapes.DeleteTaskOps(f.Rec)
		owner, err := n.idmap.Get(cctx, id)
		if err != nil {
			return false, err
		}
		of = &writepath.OwnerFence{Identity: id, Mapped: owner.Mapped, Epoch: owner.Epoch}
		if owner.Mapped && (owner.Node != n.cfg.Name || owner.Incarnation != n.incarnation) {
			of.HandTo = owner.Node // the owner drops its copy when it finds the task gone
		}
	}
	txn, err := n.shapes.DeleteTask(f.Key, f.Rev, taskID, ops, of)
	if err != nil {
		return false, err
	}
	resp, err := n.writer.Commit(cctx, txn)
	if err != nil {
		return false, fmt.Errorf("delete task %s: %w", taskID, err)
	}
	if !resp.Succeeded {
		return false, nil
	}
	if f.Every {
		n.removeEvery(id, taskID)
		return true, nil
	}
	n.mu.Lock()
	if e := n.idents[id].task(taskID); e != nil && !e.running {
		n.removeEntryLocked(e)
	}
	n.mu.Unlock()
	return true, nil
}

// everyDeleteOps are the operations that delete an EVERY_NODE task, with
// the progress of as many nodes as the Txn has room for (a node left out
// drops its own when it sees the task go).
func (n *Node) everyDeleteOps(ctx context.Context, rec *storev1.TaskRecord) ([]clientv3.Op, error) {
	nodes, err := n.cluster.NamesUnder(ctx, n.keys.AllEveryProgress())
	if err != nil {
		return nil, err
	}
	if room := n.cfg.MaxTxnOps - len(n.shapes.DeleteEveryOps(rec, nil)) - 2; len(nodes) > room {
		nodes = nodes[:max(room, 0)]
	}
	return n.shapes.DeleteEveryOps(rec, nodes), nil
}
