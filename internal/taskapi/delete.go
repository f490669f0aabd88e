package taskapi

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/outcome"
	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/writepath"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// This file deletes a finished task on request (DeleteTask), before its
// --retention would: the same keys go as when the retention purge takes
// it (writepath.Shapes.DeleteTaskOps, DeleteEveryOps), from any node.

// DeleteTask removes a task in a final state (COMPLETED, DEAD, CANCELED).
func (a *Service) DeleteTask(ctx context.Context, id, taskID string) error {
	if rec, ok := a.cfg.Engine.LocalTask(id, taskID); ok {
		return a.deleteLocal(rec)
	}
	for {
		cctx, cancel := a.etcdCtx(ctx)
		done, err := a.deleteStored(cctx, ctx, id, taskID)
		cancel()
		if err != nil || done {
			return err
		}
	}
}

// notFinal is the refusal of a delete of a live task.
func notFinal(rec *storev1.TaskRecord) error {
	return fmt.Errorf("task %s is %s, not finished: cancel it first (CancelTask), then delete it: %w",
		rec.GetId(), rec.GetState(), outcome.ErrFailedPrecondition)
}

// deleteLocal removes a non-durable task this node holds.
func (a *Service) deleteLocal(rec *storev1.TaskRecord) error {
	if !record.IsFinal(rec.State) {
		return notFinal(rec)
	}
	a.cfg.Engine.LocalDeleted(rec.Spec.GetIdentity(), rec.Id)
	a.cfg.LocalRefs.Drop(rec, rec.Spec.GetCalendars())
	return nil
}

// deleteStored makes one attempt at deleting a stored task; done is false
// when the task changed since it was read (read it again).
func (a *Service) deleteStored(cctx, ctx context.Context, id, taskID string) (done bool, err error) {
	f, ok, err := a.cfg.Store.Find(cctx, id, taskID)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, fmt.Errorf("task %s of identity %q: %w", taskID, id, outcome.ErrNotFound)
	}
	if !record.IsFinal(f.Rec.State) {
		return false, notFinal(f.Rec)
	}
	var ops []clientv3.Op
	var of *writepath.OwnerFence
	if f.Every {
		if ops, err = a.EveryDeleteOps(ctx, f.Rec); err != nil {
			return false, err
		}
	} else {
		ops = a.cfg.Shapes.DeleteTaskOps(f.Rec)
		owner, err := a.cfg.Map.Get(cctx, id)
		if err != nil {
			return false, err
		}
		of = a.ownerFence(id, owner) // the owner drops its copy when it finds the task gone
	}
	txn, err := a.cfg.Shapes.DeleteTask(f.Key, f.Rev, taskID, ops, of)
	if err != nil {
		return false, err
	}
	resp, err := a.cfg.Writer.Commit(cctx, txn)
	if err != nil {
		return false, fmt.Errorf("delete task %s: %w", taskID, err)
	}
	if !resp.Succeeded {
		return false, nil
	}
	if f.Every {
		a.cfg.Engine.EveryDeleted(id, taskID)
		return true, nil
	}
	a.cfg.Engine.StoredDeleted(id, taskID)
	return true, nil
}

// EveryDeleteOps are the operations that delete an EVERY_NODE task, with
// the progress of as many nodes as the Txn has room for (a node left out
// drops its own when it sees the task go).
func (a *Service) EveryDeleteOps(ctx context.Context, rec *storev1.TaskRecord) ([]clientv3.Op, error) {
	nodes, err := a.cfg.Cluster.NamesUnder(ctx, a.cfg.Keys.AllEveryProgress())
	if err != nil {
		return nil, err
	}
	if room := a.cfg.MaxTxnOps - len(a.cfg.Shapes.DeleteEveryOps(rec, nil)) - 2; len(nodes) > room {
		nodes = nodes[:max(room, 0)]
	}
	return a.cfg.Shapes.DeleteEveryOps(rec, nodes), nil
}
