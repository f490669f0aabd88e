package taskservice

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/writepath"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// This file is the calendar references of non-durable tasks (contract
// §4.2). A non-durable task is not stored, but a calendar it lists must not
// be deleted while it is kept: like a durable task's, its use of each
// calendar is a key under the calendar's users (pending.CalendarLocalRef),
// which DeleteCalendar compares absent. The key is written under the
// node's lease, so that it ends with the node: at Stop (the lease is
// revoked), when the node dies (the lease expires) and when a new
// incarnation registers (it revokes the old lease). The task removes it
// when it is purged, and an UpdateTask moves it with the task's list. A
// node that registers again under a new lease (it lost the old one) writes
// the references of the tasks it still holds under the new one.

// addLocalTasks queues the non-durable tasks of a schedule request, having
// written their calendar references first, each in a Txn that compares the
// calendars still exist. A calendar deleted since validation fails the
// request (and removes the references already written); nothing is queued.
func (n *Node) addLocalTasks(ctx context.Context, recs []*storev1.TaskRecord) error {
	n.localRefMu.Lock()
	defer n.localRefMu.Unlock()
	lease := n.member.Lease()
	var written []*storev1.TaskRecord
	undo := func() {
		for _, r := range written {
			n.dropLocalRefs(r, r.GetSpec().GetCalendars())
		}
	}
	// Before the node is registered there is no lease: register writes the
	// references of every task held by then (restoreLocalRefs).
	for _, r := range recs {
		names := r.GetSpec().GetCalendars()
		if len(names) == 0 || lease == 0 {
			continue
		}
		if err := n.putLocalRefs(ctx, r, names, lease); err != nil {
			undo()
			return err
		}
		written = append(written, r)
	}
	for _, r := range recs {
		n.addLocal(r)
	}
	return nil
}

// putLocalRefs writes rec's references to names under lease, in one Txn
// that compares each calendar exists.
func (n *Node) putLocalRefs(ctx context.Context, rec *storev1.TaskRecord, names []string, lease clientv3.LeaseID) error {
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	resp, err := n.writer.Commit(cctx, n.shapes.LocalRefs(rec, names, writepath.Lease(lease)))
	if err != nil {
		return fmt.Errorf("write the calendar references of a non-durable task: %w", err)
	}
	if !resp.Succeeded {
		for j, name := range names {
			gctx, gcancel := n.etcdCtx(ctx)
			g, err := n.cli.Get(gctx, n.keys.Calendar(name), clientv3.WithCountOnly())
			gcancel()
			if err == nil && g.Count == 0 {
				return invalid(fmt.Sprintf("calendars[%d]", j), "calendar %q was deleted", name)
			}
		}
		return fmt.Errorf("write the calendar references of a non-durable task: %w", ErrConflict)
	}
	return nil
}

// dropLocalRefs removes rec's references to names. Best effort: one left
// behind only keeps its calendar from being deleted until the node's lease
// ends.
func (n *Node) dropLocalRefs(rec *storev1.TaskRecord, names []string) {
	if len(names) == 0 {
		return
	}
	ctx, cancel := n.etcdCtx(n.life)
	defer cancel()
	if _, err := n.writer.Commit(ctx, n.shapes.DropLocalRefs(rec, names)); err != nil {
		n.log.Warn("remove a non-durable task's calendar references; they end with the node's lease", "task", rec.GetId(), "error", err)
	}
}

// updateLocalRefs moves a non-durable task's references from the calendars
// it listed (was) to those it lists now (rec), the new ones compared to
// exist.
func (n *Node) updateLocalRefs(ctx context.Context, rec *storev1.TaskRecord, was []string) error {
	added, removed := diffNames(was, rec.GetSpec().GetCalendars())
	if len(added) == 0 && len(removed) == 0 {
		return nil
	}
	n.localRefMu.Lock()
	defer n.localRefMu.Unlock()
	lease := n.member.Lease()
	if len(added) > 0 && lease != 0 {
		if err := n.putLocalRefs(ctx, rec, added, lease); err != nil {
			return err
		}
	}
	n.dropLocalRefs(rec, removed)
	return nil
}

// restoreLocalRefs writes the references of every non-durable task held
// here under the node's current lease: called by register, once the new
// lease is the node's (the old one's keys are gone, or will be).
func (n *Node) restoreLocalRefs(ctx context.Context) error {
	n.localRefMu.Lock()
	defer n.localRefMu.Unlock()
	n.mu.Lock()
	lease := n.member.Lease()
	var ops []clientv3.Op
	for _, st := range n.local {
		for e := range st.tasks.all() {
			if rec := e.record(); rec != nil {
				ops = append(ops, n.shapes.LocalRefPuts(rec, rec.GetSpec().GetCalendars(), writepath.Lease(lease))...)
			}
		}
	}
	n.mu.Unlock()
	for _, txn := range n.shapes.RestoreLocalRefs(ops, n.cfg.MaxTxnOps) {
		cctx, cancel := n.etcdCtx(ctx)
		_, err := n.writer.Commit(cctx, txn)
		cancel()
		if err != nil {
			return fmt.Errorf("write the calendar references of the non-durable tasks under the new lease: %w", err)
		}
	}
	return nil
}
