package taskservice

// Changes to a stored task from any node: the one read-change-write loop
// (updateTaskAt) that cancel, run-now, pause and update go through.

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// updateTask applies change to a task's record in a Txn guarded by its
// revision (no mapping fence: any node may cancel or request a run). If
// another node owns the identity, the same Txn writes it a handoff entry
// for the task, so it sees the change at once (contract §3.6).
func (n *Node) updateTask(ctx context.Context, id, taskID string, change func(*storev1.TaskRecord) error) (*taskdv1.Task, error) {
	return n.updateTaskAt(ctx, id, taskID, func(rec *storev1.TaskRecord, _ int64) error { return change(rec) })
}

// updateTaskAt is updateTask whose change also sees the revision of the
// record it changes (0 for a non-durable task).
func (n *Node) updateTaskAt(ctx context.Context, id, taskID string, change func(*storev1.TaskRecord, int64) error) (*taskdv1.Task, error) {
	if rec, ok := n.localTask(id, taskID); ok {
		was := rec.GetSpec().GetCalendars()
		if err := change(rec, 0); err != nil {
			return nil, err
		}
		if err := n.updateLocalRefs(ctx, rec, was); err != nil {
			return nil, err
		}
		n.mu.Lock()
		// (The identity may have left since localTask: task is nil-safe.)
		if e := n.local[id].task(taskID); e != nil && !e.running {
			e.rec = rec
			n.reschedLocked(e)
		} else if e != nil {
			e.rec.State, e.rec.ManualRequested = rec.State, rec.ManualRequested
		}
		n.mu.Unlock()
		return n.view(rec, 0), nil
	}
	for {
		cctx, cancel := n.etcdCtx(ctx)
		st, ok, err := n.store.Find(cctx, id, taskID)
		if err != nil {
			cancel()
			return nil, err
		}
		if !ok {
			cancel()
			return nil, fmt.Errorf("task %s of identity %q: %w", taskID, id, ErrNotFound)
		}
		rec := record.Clone(st.Rec)
		if err := change(rec, st.Rev); err != nil {
			cancel()
			return nil, err
		}
		b, err := pending.Encode(rec)
		if err != nil {
			cancel()
			return nil, err
		}
		ops := []clientv3.Op{clientv3.OpPut(st.Key, string(b))}
		// References to calendars follow the task's list (UpdateTask).
		added, removed := diffNames(st.Rec.Spec.GetCalendars(), rec.Spec.GetCalendars())
		ops = append(ops, n.keys.CalendarRefOps(rec, added, false)...)
		ops = append(ops, n.keys.CalendarRefOps(rec, removed, true)...)
		owner := identity.Owner{}
		if !st.Every { // every node sees an EVERY_NODE task change through its watch
			owner, err = n.idmap.Get(cctx, id)
			if err != nil {
				cancel()
				return nil, err
			}
		}
		cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(st.Key), "=", st.Rev)}
		cmps = append(cmps, n.calendarCmps(added)...)
		if !st.Every {
			// The handoff entry goes to the owner read above: the Txn holds
			// only while it still is the owner, so a move in between cannot
			// leave the change with a node that no longer looks.
			if owner.Mapped {
				cmps = append(cmps, n.idmap.Fence(id, owner.Epoch))
			} else {
				cmps = append(cmps, n.idmap.Unmapped(id))
			}
		}
		if owner.Mapped && (owner.Node != n.cfg.Name || owner.Incarnation != n.incarnation) {
			// Tell the owner: it reloads the task from its handoff area.
			op, err := n.handoffOp(owner.Node, id, taskID)
			if err != nil {
				cancel()
				return nil, err
			}
			ops = append(ops, op)
		}
		resp, err := n.cli.Txn(cctx).If(cmps...).Then(ops...).Commit()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("update task %s: %w", taskID, err)
		}
		if !resp.Succeeded {
			continue
		}
		rev := resp.Header.Revision
		if st.Every {
			n.installEvery(id, b, rev, nil, false)
			return n.view(rec, rev), nil
		}
		applied := false
		n.mu.Lock()
		if s := n.idents[id]; s != nil && !s.lost {
			if e := s.tasks.get(taskID); e != nil {
				waited := n.unwaitLocked(e) // a run waiting for a worker takes the change now
				switch {
				case e.running:
					applied = true         // the run's commit folds the change in
					n.taskChangedLocked(e) // an armed run is not called
				case e.rev == st.Rev:
					e.rec, e.raw, e.rev = rec, "", rev
					n.reschedLocked(e)
					applied = true
				case waited:
					n.reschedLocked(e) // queued again; the repair below reads it anew
				}
			}
		}
		n.mu.Unlock()
		if !applied && owner.Mapped && owner.Node == n.cfg.Name && owner.Incarnation == n.incarnation {
			// This node owns the identity but its entry could not take the
			// change (it is being adopted, or holds another revision): no
			// handoff entry tells it, so it reads the identity again.
			n.repair(id)
		}
		return n.view(rec, rev), nil
	}
}

// CancelTask cancels a task: no further runs. A run in flight finishes and
// is recorded, but does not reschedule the task.
func (n *Node) CancelTask(ctx context.Context, id, taskID string) (*taskdv1.Task, error) {
	changed := false
	t, err := n.updateTask(ctx, id, taskID, func(rec *storev1.TaskRecord) error {
		switch rec.State {
		case taskdv1.TaskState_TASK_STATE_CANCELED:
			return errUnchanged
		case taskdv1.TaskState_TASK_STATE_COMPLETED:
			return fmt.Errorf("task %s has already completed: %w", taskID, ErrFailedPrecondition)
		}
		rec.State = taskdv1.TaskState_TASK_STATE_CANCELED
		rec.FinishedAt = timestamppb.Now()
		rec.ManualRequested, rec.RetryAt, rec.RecoveryPending = false, nil, nil
		changed = true
		return nil
	})
	if errors.Is(err, errUnchanged) {
		return n.GetTask(ctx, id, taskID)
	}
	if err == nil && changed {
		n.emit(Event{Type: EventCanceled, Identity: id, TaskID: taskID, Kind: t.Spec.GetKind()})
	}
	return t, err
}

var errUnchanged = errors.New("unchanged")

// RunTaskNow asks for one manual run at once; the schedule stays as it was.
func (n *Node) RunTaskNow(ctx context.Context, id, taskID string) (*taskdv1.Task, error) {
	return n.updateTask(ctx, id, taskID, func(rec *storev1.TaskRecord) error {
		if rec.State == taskdv1.TaskState_TASK_STATE_CANCELED {
			return fmt.Errorf("task %s is cancelled: %w", taskID, ErrFailedPrecondition)
		}
		rec.ManualRequested = true
		return nil
	})
}
