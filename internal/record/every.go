package record

import (
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/pkg/schedule"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// MergeEvery is one node's view of an EVERY_NODE task: the shared record
// (its spec, its state, a run-now request at sharedRev) with the node's own
// progress (prog; nil before its first run) folded in, settled as of now.
// SplitEvery takes the progress back out; a node plans and applies its runs
// on the merged record as on an identity task's.
func MergeEvery(shared *storev1.TaskRecord, sharedRev int64, prog *storev1.EveryNodeProgress, now time.Time, cals schedule.Exclusions) *storev1.TaskRecord {
	rec := Clone(shared)
	rec.RunCount, rec.Attempt, rec.LastRun, rec.Running, rec.RetryAt = 0, 0, nil, nil, nil
	rec.PendingFire, rec.PendingTrigger, rec.HistorySeq, rec.RecoveryPending, rec.Misfires = nil, 0, 0, nil, 0
	rec.PendingTriggerName = ""
	if prog == nil {
		InitTriggers(rec, cals)
	} else {
		p := proto.Clone(prog).(*storev1.EveryNodeProgress)
		rec.Triggers, rec.RunCount, rec.Attempt, rec.LastRun = p.Triggers, p.RunCount, p.Attempt, p.LastRun
		rec.Running, rec.RetryAt, rec.PendingFire, rec.PendingTrigger = p.Running, p.RetryAt, p.PendingFire, p.PendingTrigger
		rec.HistorySeq, rec.RecoveryPending, rec.Misfires = p.HistorySeq, p.RecoveryPending, p.Misfires
		rec.PendingTriggerName = p.PendingTriggerName
		if p.SpecVersion != shared.SpecVersion {
			rec.Triggers = updatedTriggers(p.Triggers, p.TriggerNames, p.SpecVersion, shared, cals)
		}
	}
	rec.ManualRequested = shared.ManualRequested && (prog == nil || sharedRev > prog.ManualServedRev)
	if shared.State != taskdv1.TaskState_TASK_STATE_CANCELED {
		rec.State, rec.FinishedAt = taskdv1.TaskState_TASK_STATE_SCHEDULED, nil
		Settle(rec, now)
	}
	if rec.Running != nil {
		rec.State = taskdv1.TaskState_TASK_STATE_RUNNING
	}
	return rec
}

// updatedTriggers is a node's trigger progress on an EVERY_NODE task
// after UpdateTask changed it: a trigger set since the progress's version
// starts afresh, as on a newly scheduled task; one no update changed keeps
// its progress, found by its name (oldNames, the names the old states
// follow) or, in progress of an earlier release, by its position.
func updatedTriggers(old []*storev1.TriggerState, oldNames []string, oldVersion int64, shared *storev1.TaskRecord, cals schedule.Exclusions) []*storev1.TriggerState {
	fresh := &storev1.TaskRecord{Spec: shared.Spec}
	InitTriggers(fresh, cals)
	for i := range fresh.Triggers {
		j := i
		if len(oldNames) == len(old) && len(oldNames) > 0 {
			j = slices.Index(oldNames, TriggerName(shared, i))
		}
		if j >= 0 && j < len(old) && i < len(shared.TriggerVersions) && shared.TriggerVersions[i] <= oldVersion {
			fresh.Triggers[i] = old[j]
		}
	}
	return fresh.Triggers
}

// SplitEvery takes this node's progress out of a merged
func SplitEvery(rec *storev1.TaskRecord, servedRev int64) *storev1.EveryNodeProgress {
	return &storev1.EveryNodeProgress{
		Triggers: rec.Triggers, RunCount: rec.RunCount, LastRun: rec.LastRun, Running: rec.Running,
		Attempt: rec.Attempt, RetryAt: rec.RetryAt, PendingFire: rec.PendingFire, PendingTrigger: rec.PendingTrigger,
		HistorySeq: rec.HistorySeq, RecoveryPending: rec.RecoveryPending, ManualServedRev: servedRev, Misfires: rec.Misfires,
		SpecVersion: rec.SpecVersion, PendingTriggerName: rec.PendingTriggerName, TriggerNames: TriggerNames(rec),
	}
}
