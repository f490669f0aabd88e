package taskservice

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// UpdateTask replaces an existing task's spec (Quartz's rescheduleJob): its
// triggers, calendars, payload, priority, retry settings, timeout, labels.
// The task keeps its id, run numbers, history and (unless spec.data is
// set) its data. A trigger equal to the one at the same position before
// keeps its progress; any other starts as on a newly scheduled task. The
// write is fenced like every task write and, when wantRev is not 0,
// conditional on the task still being at that revision (ErrConflict:
// ABORTED). A run in flight finishes; its result is folded into the
// updated task.
func (n *Node) UpdateTask(ctx context.Context, id, taskID string, spec *taskdv1.TaskSpec, wantRev int64) (*taskdv1.Task, error) {
	if spec == nil {
		return nil, invalid("spec", "is required")
	}
	kinds := n.clusterKinds(ctx)
	var oldKind string
	t, err := n.updateTaskAt(ctx, id, taskID, func(rec *storev1.TaskRecord, rev int64) error {
		if wantRev != 0 && rev != wantRev {
			return fmt.Errorf("task %s is at revision %d, not %d as read: read it again: %w", taskID, rev, wantRev, ErrConflict)
		}
		if isFinal(rec.State) {
			return fmt.Errorf("task %s is %s; schedule a new task instead: %w", taskID, rec.State, ErrFailedPrecondition)
		}
		old := rec.Spec
		oldKind = old.Kind
		for _, f := range []struct {
			name     string
			same     bool
			was, now any
		}{
			{"identity", spec.Identity == old.Identity, old.Identity, spec.Identity},
			{"kind", spec.Kind == old.Kind, old.Kind, spec.Kind},
			{"scope", spec.Scope == old.Scope, old.Scope, spec.Scope},
			{"non_durable", spec.NonDurable == old.NonDurable, old.NonDurable, spec.NonDurable},
			{"idempotency_key", spec.IdempotencyKey == old.IdempotencyKey, old.IdempotencyKey, spec.IdempotencyKey},
		} {
			if !f.same {
				return invalid("spec."+f.name, "cannot change (it is %v, the update has %v); schedule a new task instead", f.was, f.now)
			}
		}
		if err := n.validateSpec("spec", spec, func(k string) bool { return kinds[k] || k == old.Kind || n.servesKind(k) }); err != nil {
			return err
		}
		now := time.Now()
		fresh, err := n.newRecord("spec", spec, now) // resolves delays and starts as for a new task
		if err != nil {
			return err
		}
		next := fresh.Spec
		if spec.Data == nil {
			next.Data = old.Data
		}
		next.RequestsRecovery = fresh.Spec.RequestsRecovery
		if size := proto.Size(next); size > MaxTaskBytes {
			return invalid("spec", "is %d bytes encoded with the task's data, the limit is %d", size, MaxTaskBytes)
		}
		version := rec.SpecVersion + 1
		states := make([]*storev1.TriggerState, len(next.Triggers))
		versions := make([]int64, len(next.Triggers))
		for i := range next.Triggers {
			if i < len(old.Triggers) && i < len(rec.Triggers) && proto.Equal(old.Triggers[i], spec.Triggers[i]) {
				// Unchanged (compared as the caller sent it against as
				// stored: a trigger given with a delay or without a start
				// was resolved when stored, so it counts as changed).
				next.Triggers[i] = old.Triggers[i]
				states[i] = rec.Triggers[i]
				versions[i] = triggerVersion(rec, i)
				continue
			}
			states[i] = fresh.Triggers[i]
			versions[i] = version
		}
		rec.Spec, rec.Triggers, rec.TriggerVersions, rec.SpecVersion = next, states, versions, version
		if rec.Running == nil {
			rec.State = taskdv1.TaskState_TASK_STATE_SCHEDULED
			settle(rec, now)
		}
		return nil
	})
	if err == nil {
		n.emit(Event{Type: EventUpdated, Identity: id, TaskID: taskID, Kind: oldKind})
	}
	return t, err
}

// triggerVersion is the spec version that set trigger i of rec.
func triggerVersion(rec *storev1.TaskRecord, i int) int64 {
	if i < len(rec.TriggerVersions) {
		return rec.TriggerVersions[i]
	}
	return 0
}
