package taskapi

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/outcome"
	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/taskspec"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file changes a task's spec: UpdateTask replaces it whole,
// EditTriggers adds and removes triggers by name. Both go through the one
// read-change-write loop (taskchange.go), on any node.

// UpdateTask replaces an existing task's spec (Quartz's rescheduleJob): its
// triggers, calendars, payload, priority, retry settings, timeout, labels.
func (a *Service) UpdateTask(ctx context.Context, id, taskID string, spec *taskdv1.TaskSpec, wantRev int64) (*taskdv1.Task, error) {
	if spec == nil {
		return nil, taskspec.Invalid("spec", "is required (or add_triggers and remove_triggers, to change some triggers only)")
	}
	kinds := a.clusterKinds(ctx)
	var oldKind string
	t, err := a.updateTaskAt(ctx, id, taskID, func(rec *storev1.TaskRecord, rev int64) error {
		if err := respecifiable(rec, rev, wantRev); err != nil {
			return err
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
		respecify(rec, next, states, versions, version, now)
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

// EditTriggers adds triggers to a task and removes some of its triggers by
// name (Quartz's scheduleJob of one more trigger and unscheduleJob of one),
// in one write: the triggers it does not name keep their names, their
// progress and their version, so they neither fire again nor skip a fire
// time.
func (a *Service) EditTriggers(ctx context.Context, id, taskID string, add []*taskdv1.Trigger, remove []string, wantRev int64) (*taskdv1.Task, error) {
	if err := taskspec.CheckTriggerEdit(add, remove); err != nil {
		return nil, err
	}
	var kind string
	t, err := a.updateTaskAt(ctx, id, taskID, func(rec *storev1.TaskRecord, rev int64) error {
		if err := respecifiable(rec, rev, wantRev); err != nil {
			return err
		}
		kind = rec.Spec.Kind
		taskspec.NameLegacyTriggers(rec)
		return a.editTriggers(rec, add, remove, time.Now())
	})
	if err == nil {
		a.cfg.Engine.Announce(Updated, id, taskID, kind)
	}
	return t, err
}

// editTriggers applies an edit to rec, whose triggers all have names.
func (a *Service) editTriggers(rec *storev1.TaskRecord, add []*taskdv1.Trigger, remove []string, now time.Time) error {
	old := rec.Spec.Triggers
	gone := make([]bool, len(old))
	for i, name := range remove {
		j := taskspec.IndexOfTrigger(old, name)
		if j < 0 {
			return taskspec.Invalid(fmt.Sprintf("remove_triggers[%d]", i), "task %s has no trigger %q; its triggers are %s",
				rec.Id, name, strings.Join(record.TriggerNames(rec), ", "))
		}
		gone[j] = true
	}
	count := len(old) - len(remove) + len(add)
	if count == 0 {
		return fmt.Errorf("removing every trigger of task %s would leave it none: cancel it instead (CancelTask), or add a trigger in the same update: %w",
			rec.Id, outcome.ErrFailedPrecondition)
	}
	if count > taskspec.MaxTriggers {
		return taskspec.Invalid("add_triggers", "the task would have %d triggers, the limit is %d", count, taskspec.MaxTriggers)
	}
	used := map[string]bool{}
	for j, t := range old {
		if !gone[j] {
			used[t.Name] = true
		}
	}
	for i, t := range add {
		f := fmt.Sprintf("add_triggers[%d].name", i)
		if used[t.GetName()] {
			return taskspec.Invalid(f, "%q is already the name of a trigger of the task (remove it in the same update to replace it)", t.Name)
		}
		if taskspec.IsServerName(t.GetName()) {
			return taskspec.Invalid(f, "names beginning with %q are given by the server to unnamed triggers: leave the name empty, or choose another", taskspec.ServerNamePrefix)
		}
	}
	// The added triggers are resolved and started as a new task's.
	fresh := &storev1.TaskRecord{Spec: &taskdv1.TaskSpec{Triggers: make([]*taskdv1.Trigger, len(add))}}
	for i, t := range add {
		fresh.Spec.Triggers[i] = proto.Clone(t).(*taskdv1.Trigger)
	}
	if err := taskspec.ResolveTriggers("add_triggers", fresh.Spec, now); err != nil {
		return err
	}
	record.InitTriggers(fresh, a.cfg.Calendars.Exclusions(rec.Spec.Calendars))

	version := rec.SpecVersion + 1
	ts := make([]*taskdv1.Trigger, 0, count)
	states := make([]*storev1.TriggerState, 0, count)
	versions := make([]int64, 0, count)
	for j, t := range old {
		if gone[j] {
			continue
		}
		st := &storev1.TriggerState{}
		if j < len(rec.Triggers) {
			st = rec.Triggers[j]
		}
		ts, states, versions = append(ts, t), append(states, st), append(versions, triggerVersion(rec, j))
	}
	for i, t := range fresh.Spec.Triggers {
		if t.Name == "" {
			t.Name = taskspec.NextTriggerName(rec, used)
		}
		used[t.Name] = true
		ts, states, versions = append(ts, t), append(states, fresh.Triggers[i]), append(versions, version)
	}
	spec := proto.Clone(rec.Spec).(*taskdv1.TaskSpec)
	spec.Triggers = ts
	if size := proto.Size(spec); size > taskspec.MaxTaskBytes {
		return taskspec.Invalid("add_triggers", "would make the task %d bytes encoded, the limit is %d", size, taskspec.MaxTaskBytes)
	}
	respecify(rec, spec, states, versions, version, now)
	return nil
}

// respecifiable refuses a change of the spec of rec, read at revision
// rev: one made over another revision than the caller read (wantRev, 0
// for any), or of a finished task.
func respecifiable(rec *storev1.TaskRecord, rev, wantRev int64) error {
	if wantRev != 0 && rev != wantRev {
		return fmt.Errorf("task %s is at revision %d, not %d as read: read it again: %w", rec.GetId(), rev, wantRev, outcome.ErrConflict)
	}
	if record.IsFinal(rec.State) {
		return fmt.Errorf("task %s is %s; schedule a new task instead: %w", rec.GetId(), rec.State, outcome.ErrFailedPrecondition)
	}
	return nil
}

// respecify puts spec in rec, with its triggers' states and the spec
// versions that set them; a task not running is scheduled again from them.
func respecify(rec *storev1.TaskRecord, spec *taskdv1.TaskSpec, states []*storev1.TriggerState, versions []int64, version int64, now time.Time) {
	rec.Spec, rec.Triggers, rec.TriggerVersions, rec.SpecVersion = spec, states, versions, version
	if rec.Running == nil {
		rec.State = taskdv1.TaskState_TASK_STATE_SCHEDULED
		record.Settle(rec, now)
	}
}
