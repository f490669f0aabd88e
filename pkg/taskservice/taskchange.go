package taskservice

// Changes to a stored task from any node: the one read-change-write loop
// (updateTaskAt) that cancel, run-now, pause and update go through.

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/identity"
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
		// References to calendars follow the task's list (UpdateTask).
		added, removed := diffNames(st.Rec.Spec.GetCalendars(), rec.Spec.GetCalendars())
		var of *writepath.OwnerFence // EVERY_NODE: every node sees the change through its watch
		owner := identity.Owner{}
		if !st.Every {
			owner, err = n.idmap.Get(cctx, id)
			if err != nil {
				cancel()
				return nil, err
			}
			of = &writepath.OwnerFence{Identity: id, Mapped: owner.Mapped, Epoch: owner.Epoch}
			if owner.Mapped && (owner.Node != n.cfg.Name || owner.Incarnation != n.incarnation) {
				of.HandTo = owner.Node // it reloads the task from its handoff area
			}
		}
		txn, b, err := n.shapes.UpdateTask(st.Key, st.Rev, rec, added, removed, of)
		if err != nil {
			cancel()
			return nil, err
		}
		resp, err := n.writer.Commit(cctx, txn)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("update task %s: %w", taskID, err)
		}
		if !resp.Succeeded {
			continue
		}
		rev := resp.Header.Revision
		if st.Every {
			n.everyNode.Learn(id, b, rev)
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
