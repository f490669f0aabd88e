package taskservice

import (
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/follow"
	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/schedule"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file runs tasks of scope EVERY_NODE (contract §6): stored once, at
// keyspace.Keys.Every, and run by every RUNNING node by its triggers, each
// node keeping its own progress (trigger positions, run numbers, last run,
// run marker) at keyspace.Keys.EveryProgress. A node sees such tasks through
// follow.EveryNode (a watch on their prefix), which hands them to
// installEvery, removeEvery and everyListed.
//
// The run machinery is the one of identity tasks: a node merges the shared
// record with its progress into one TaskRecord, plans and applies runs on
// it, and splits the progress back out. Its writes are fenced on its own
// registration (the lease of nodes/<name>: a replaced or expired node
// cannot commit), on the shared record's revision (a cancel stops runs) and
// on its progress revision. Fence tokens of these runs are (0, progress
// revision).

// mergeEvery is this node's view of an EVERY_NODE task.
func mergeEvery(shared *storev1.TaskRecord, sharedRev int64, prog *storev1.EveryNodeProgress, now time.Time, cals schedule.Exclusions) *storev1.TaskRecord {
	rec := record.Clone(shared)
	rec.RunCount, rec.Attempt, rec.LastRun, rec.Running, rec.RetryAt = 0, 0, nil, nil, nil
	rec.PendingFire, rec.PendingTrigger, rec.HistorySeq, rec.RecoveryPending, rec.Misfires = nil, 0, 0, nil, 0
	rec.PendingTriggerName = ""
	if prog == nil {
		record.InitTriggers(rec, cals)
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
		record.Settle(rec, now)
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
	record.InitTriggers(fresh, cals)
	for i := range fresh.Triggers {
		j := i
		if len(oldNames) == len(old) && len(oldNames) > 0 {
			j = slices.Index(oldNames, record.TriggerName(shared, i))
		}
		if j >= 0 && j < len(old) && i < len(shared.TriggerVersions) && shared.TriggerVersions[i] <= oldVersion {
			fresh.Triggers[i] = old[j]
		}
	}
	return fresh.Triggers
}

// splitEvery takes this node's progress out of a merged record.
func splitEvery(rec *storev1.TaskRecord, servedRev int64) *storev1.EveryNodeProgress {
	return &storev1.EveryNodeProgress{
		Triggers: rec.Triggers, RunCount: rec.RunCount, LastRun: rec.LastRun, Running: rec.Running,
		Attempt: rec.Attempt, RetryAt: rec.RetryAt, PendingFire: rec.PendingFire, PendingTrigger: rec.PendingTrigger,
		HistorySeq: rec.HistorySeq, RecoveryPending: rec.RecoveryPending, ManualServedRev: servedRev, Misfires: rec.Misfires,
		SpecVersion: rec.SpecVersion, PendingTriggerName: rec.PendingTriggerName, TriggerNames: record.TriggerNames(rec),
	}
}

// everyFence is the fence of a write of this node's progress on task.
func (n *Node) everyFence(e *entry, sharedRev, progRev int64) writepath.EveryFence {
	lease := n.member.Lease()
	return writepath.EveryFence{Identity: e.ident.name, Task: e.id, SharedRev: sharedRev, ProgressRev: progRev, Lease: writepath.Lease(lease)}
}

// everyListed drops the EVERY_NODE tasks this node knows that a list of
// them (follow.EveryNode's) did not find stored.
func (n *Node) everyListed(stored map[string]bool) {
	n.mu.Lock()
	var gone []*entry
	for _, st := range n.every {
		for e := range st.tasks.all() {
			if !stored[e.id] {
				gone = append(gone, e)
			}
		}
	}
	n.mu.Unlock()
	for _, e := range gone {
		n.removeEvery(e.ident.name, e.id)
	}
}

// installEvery queues (or updates) this node's entry of an EVERY_NODE task,
// as follow.EveryNode read it (with this node's stored progress, or
// without: the entry keeps the progress it has).
func (n *Node) installEvery(t follow.EveryTask) {
	shared, sharedRev := t.Shared, t.Rev
	n.mu.Lock()
	st := n.every[t.Identity]
	if st == nil {
		st = &identState{name: t.Identity, scope: everyScope{}}
		n.every[t.Identity] = st
	}
	e := st.tasks.get(shared.Id)
	if e == nil {
		e = &entry{ident: st, id: shared.Id, idx: -1}
		st.tasks.put(e)
	} else if e.running || (!t.WithProgress && e.rev >= sharedRev) {
		n.mu.Unlock()
		return // a run in flight folds the change in at its commit
	}
	if t.WithProgress {
		e.extra().prog, e.x.progRev = t.Progress, t.ProgressRev
	}
	e.rev = sharedRev
	e.extra().shared = shared
	e.rec = mergeEvery(shared, sharedRev, e.x.prog, time.Now(), n.cals.Exclusions(shared.GetSpec().GetCalendars()))
	if n.inFlightLocked(e.ref()) {
		// This node's run is in flight: its commit settles the marker.
		e.running = true
		n.queue.remove(e)
	} else {
		n.reschedLocked(e) // a marker is resolved by the entry's next start
	}
	n.mu.Unlock()
}

// removeEvery drops an EVERY_NODE task that was deleted, with this node's
// progress on it.
func (n *Node) removeEvery(id, taskID string) {
	n.mu.Lock()
	if st := n.every[id]; st != nil {
		if e := st.tasks.get(taskID); e != nil {
			n.removeEntryLocked(e)
		}
	}
	n.mu.Unlock()
	ctx, cancel := n.etcdCtx(n.life)
	defer cancel()
	if _, err := n.cli.Delete(ctx, n.keys.EveryProgress(n.cfg.Name, taskID)); err != nil && n.life.Err() == nil {
		n.log.Warn("delete EVERY_NODE progress", "task", taskID, "error", err)
	}
}
