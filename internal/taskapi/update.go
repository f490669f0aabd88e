package taskapi

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/outcome"
	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/taskspec"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// UpdateTask replaces an existing task's spec (Quartz's rescheduleJob): its
// triggers, calendars, payload, priority, retry settings, timeout, labels.
func (a *Service) UpdateTask(ctx context.Context, id, taskID string, spec *taskdv1.TaskSpec, wantRev int64) (*taskdv1.Task, error) {
	if spec == nil {
		return nil, taskspec.Invalid("spec", "is required (or add_triggers and remove_triggers, to change some triggers only)")
	}
	kinds := a.clusterKinds(ctx)
	var oldKind string
	t, err := a.updateTaskAt(ctx, id, taskID, func(rec *storev1.TaskRecord, rev int64) error {
		if wantRev != 0 && rev != wantRev {
			return fmt.Errorf("task %s is at revision %d, not %d as read: read it again: %w", taskID, rev, wantRev, outcome.ErrConflict)
		}
		if record.IsFinal(rec.State) {
			return fmt.Errorf("task %s is %s; schedule a new task instead: %w", taskID, rec.State, outcome.ErrFailedPrecondition)
		}
		taskspec.NameLegacyTriggers(rec) // so that its triggers can be kept by name
		old := rec.Spec
		oldKind = old.Kind
		if err := taskspec.CheckUnchangeable("spec", old, spec); err != nil {
			return err
		}
		view := a.specView(func(k string) bool { return kinds[k] || k == old.Kind || a.cfg.Engine.ServesKind(k) })
		if err := taskspec.CheckTask("spec", spec, view); err != nil {
			return err
		}
		if err := taskspec.CheckServerNames("spec.triggers", spec.Triggers, func(name string) bool {
			return taskspec.IndexOfTrigger(old.Triggers, name) >= 0
		}); err != nil {
			return err
		}
		now := time.Now()
		fresh, err := a.newRecord("spec", spec, now) // resolves delays and starts as for a new task
		if err != nil {
			return err
		}
		next := fresh.Spec
		if spec.Data == nil {
			next.Data = old.Data
		}
		next.RequestsRecovery = fresh.Spec.RequestsRecovery
		version := rec.SpecVersion + 1
		states := make([]*storev1.TriggerState, len(next.Triggers))
		versions := make([]int64, len(next.Triggers))
		match, keep := taskspec.MatchTriggers(old.Triggers, spec.Triggers)
		used := map[string]bool{}
		for i := range next.Triggers {
			next.Triggers[i].Name = spec.Triggers[i].Name // not the index newRecord gave it
			if j := match[i]; j >= 0 {
				next.Triggers[i].Name = old.Triggers[j].Name
				if keep[i] && j < len(rec.Triggers) {
					next.Triggers[i] = old.Triggers[j]
					states[i] = rec.Triggers[j]
					versions[i] = triggerVersion(rec, j)
					used[next.Triggers[i].Name] = true
					continue
				}
			}
			states[i] = fresh.Triggers[i]
			versions[i] = version
			if next.Triggers[i].Name != "" {
				used[next.Triggers[i].Name] = true
			}
		}
		for _, t := range next.Triggers {
			if t.Name == "" {
				t.Name = taskspec.NextTriggerName(rec, used)
			}
		}
		if size := proto.Size(next); size > taskspec.MaxTaskBytes {
			return taskspec.Invalid("spec", "is %d bytes encoded with the task's data, the limit is %d", size, taskspec.MaxTaskBytes)
		}
		rec.Spec, rec.Triggers, rec.TriggerVersions, rec.SpecVersion = next, states, versions, version
		if rec.Running == nil {
			rec.State = taskdv1.TaskState_TASK_STATE_SCHEDULED
			record.Settle(rec, now)
		}
		return nil
	})
	if err == nil {
		a.cfg.Engine.Announce(Updated, id, taskID, oldKind)
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
