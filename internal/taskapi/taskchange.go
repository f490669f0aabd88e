package taskapi

// Changes to a stored task from any node: the one read-change-write loop
// (updateTaskAt) that cancel, run-now, pause and update go through.

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/outcome"
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
func (a *Service) updateTask(ctx context.Context, id, taskID string, change func(*storev1.TaskRecord) error) (*taskdv1.Task, error) {
	return a.updateTaskAt(ctx, id, taskID, func(rec *storev1.TaskRecord, _ int64) error { return change(rec) })
}

// updateTaskAt is updateTask whose change also sees the revision of the
// record it changes (0 for a non-durable task).
func (a *Service) updateTaskAt(ctx context.Context, id, taskID string, change func(*storev1.TaskRecord, int64) error) (*taskdv1.Task, error) {
	if rec, ok := a.cfg.Engine.LocalTask(id, taskID); ok {
		was := rec.GetSpec().GetCalendars()
		if err := change(rec, 0); err != nil {
			return nil, err
		}
		added, removed := diffNames(was, rec.GetSpec().GetCalendars())
		if err := a.cfg.LocalRefs.Move(ctx, rec, added, removed); err != nil {
			return nil, err
		}
		a.cfg.Engine.LocalChanged(id, taskID, rec)
		return a.view(rec, 0), nil
	}
	for {
		cctx, cancel := a.etcdCtx(ctx)
		st, ok, err := a.cfg.Store.Find(cctx, id, taskID)
		if err != nil {
			cancel()
			return nil, err
		}
		if !ok {
			cancel()
			return nil, fmt.Errorf("task %s of identity %q: %w", taskID, id, outcome.ErrNotFound)
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
			owner, err = a.cfg.Map.Get(cctx, id)
			if err != nil {
				cancel()
				return nil, err
			}
			of = a.ownerFence(id, owner)
		}
		txn, b, err := a.cfg.Shapes.UpdateTask(st.Key, st.Rev, rec, added, removed, of)
		if err != nil {
			cancel()
			return nil, err
		}
		resp, err := a.cfg.Writer.Commit(cctx, txn)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("update task %s: %w", taskID, err)
		}
		if !resp.Succeeded {
			continue
		}
		rev := resp.Header.Revision
		if st.Every {
			a.cfg.EveryNode.Learn(id, b, rev)
			return a.view(rec, rev), nil
		}
		applied := a.cfg.Engine.StoredChanged(id, taskID, st.Rev, rec, rev)
		if !applied && owner.Mapped && a.mine(owner) {
			// This node owns the identity but its entry could not take the
			// change (it is being adopted, or holds another revision): no
			// handoff entry tells it, so it reads the identity again.
			a.cfg.Engine.Repair(id, 0)
		}
		return a.view(rec, rev), nil
	}
}

// CancelTask cancels a task: no further runs.
func (a *Service) CancelTask(ctx context.Context, id, taskID string) (*taskdv1.Task, error) {
	changed := false
	t, err := a.updateTask(ctx, id, taskID, func(rec *storev1.TaskRecord) error {
		switch rec.State {
		case taskdv1.TaskState_TASK_STATE_CANCELED:
			return errUnchanged
		case taskdv1.TaskState_TASK_STATE_COMPLETED:
			return fmt.Errorf("task %s has already completed: %w", taskID, outcome.ErrFailedPrecondition)
		}
		rec.State = taskdv1.TaskState_TASK_STATE_CANCELED
		rec.FinishedAt = timestamppb.Now()
		rec.ManualRequested, rec.RetryAt, rec.RecoveryPending = false, nil, nil
		changed = true
		return nil
	})
	if errors.Is(err, errUnchanged) {
		return a.GetTask(ctx, id, taskID)
	}
	if err == nil && changed {
		a.cfg.Engine.Announce(Canceled, id, taskID, t.Spec.GetKind())
	}
	return t, err
}

var errUnchanged = errors.New("unchanged")

// RunTaskNow asks for one manual run at once; the schedule stays as it was.
func (a *Service) RunTaskNow(ctx context.Context, id, taskID string) (*taskdv1.Task, error) {
	return a.updateTask(ctx, id, taskID, func(rec *storev1.TaskRecord) error {
		if rec.State == taskdv1.TaskState_TASK_STATE_CANCELED {
			return fmt.Errorf("task %s is cancelled: %w", taskID, outcome.ErrFailedPrecondition)
		}
		rec.ManualRequested = true
		return nil
	})
}
