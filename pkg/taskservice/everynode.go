package taskservice

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/etcdwatch"
	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/pending"
	"github.com/taskd/taskd/pkg/schedule"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file runs tasks of scope EVERY_NODE (contract §6): stored once, at
// keyspace.Keys.Every, and run by every RUNNING node by its triggers, each
// node keeping its own progress (trigger positions, run numbers, last run,
// run marker) at keyspace.Keys.EveryProgress. A node sees such tasks through
// a watch on their prefix.
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
		SpecVersion: rec.SpecVersion, PendingTriggerName: rec.PendingTriggerName, TriggerNames: labels(rec),
	}
}

// labels are the names of rec's triggers, as record.TriggerName reads them.
func labels(rec *storev1.TaskRecord) []string {
	out := make([]string, len(rec.GetSpec().GetTriggers()))
	for i := range out {
		out[i] = record.TriggerName(rec, i)
	}
	return out
}

// everyFence is the fence of a write of this node's progress on task.
func (n *Node) everyFence(e *entry, sharedRev, progRev int64) writepath.EveryFence {
	lease := n.member.Lease()
	return writepath.EveryFence{Identity: e.ident.name, Task: e.id, SharedRev: sharedRev, ProgressRev: progRev, Lease: writepath.Lease(lease)}
}

// loadEvery reads every EVERY_NODE task and this node's progress on each,
// queues them, and returns the revision read at.
func (n *Node) loadEvery(ctx context.Context) (int64, error) {
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	resp, err := n.writer.Read(cctx,
		clientv3.OpGet(n.keys.AllEvery(), clientv3.WithPrefix()),
		clientv3.OpGet(n.keys.EveryProgressOf(n.cfg.Name), clientv3.WithPrefix()),
	)
	if err != nil {
		return 0, fmt.Errorf("load EVERY_NODE tasks: %w", err)
	}
	progs := map[string]*mvccpb.KeyValue{}
	pp := n.keys.EveryProgressOf(n.cfg.Name)
	for _, kv := range resp.Responses[1].GetResponseRange().GetKvs() {
		progs[string(kv.Key[len(pp):])] = kv
	}
	seen := map[string]bool{}
	for _, kv := range resp.Responses[0].GetResponseRange().GetKvs() {
		id, tid, err := n.keys.SplitEvery(string(kv.Key))
		if err != nil {
			continue
		}
		seen[tid] = true
		n.installEvery(id, kv.Value, kv.ModRevision, progs[tid], true)
	}
	n.mu.Lock()
	var gone []*entry
	for _, st := range n.every {
		for e := range st.tasks.all() {
			if !seen[e.id] {
				gone = append(gone, e)
			}
		}
	}
	n.mu.Unlock()
	for _, e := range gone {
		n.removeEvery(e.ident.name, e.id)
	}
	return resp.Header.Revision, nil
}

// everyLoop follows the EVERY_NODE tasks after loadEvery, which read them
// at rev; after a break of the watch, loadEvery reads them all again.
func (n *Node) everyLoop(ctx context.Context, rev int64) {
	n.follow(ctx, "EVERY_NODE tasks", etcdwatch.Follower{
		Key:     n.keys.AllEvery(),
		Options: []clientv3.OpOption{clientv3.WithPrefix()},
		FromRev: rev,
		List:    n.loadEvery,
		Events: func(_ context.Context, evs []*clientv3.Event) {
			for _, ev := range evs {
				id, tid, err := n.keys.SplitEvery(string(ev.Kv.Key))
				if err != nil {
					continue
				}
				if ev.Type == clientv3.EventTypeDelete {
					n.removeEvery(id, tid)
				} else {
					n.installEvery(id, ev.Kv.Value, ev.Kv.ModRevision, nil, false)
				}
			}
		},
	})
}

// installEvery queues (or updates) this node's entry of an EVERY_NODE task.
// progKV is this node's stored progress when known (withProg).
func (n *Node) installEvery(id string, value []byte, sharedRev int64, progKV *mvccpb.KeyValue, withProg bool) {
	shared, err := pending.Decode(value)
	if err != nil {
		n.log.Error("bad EVERY_NODE task", "identity", id, "error", err)
		return
	}
	var prog *storev1.EveryNodeProgress
	progRev := int64(0)
	if progKV != nil {
		prog = &storev1.EveryNodeProgress{}
		if err := proto.Unmarshal(progKV.Value, prog); err != nil {
			n.log.Error("bad EVERY_NODE progress", "task", shared.Id, "error", err)
			prog = nil
		}
		progRev = progKV.ModRevision
	}
	n.mu.Lock()
	st := n.every[id]
	if st == nil {
		st = &identState{name: id, scope: everyScope{}}
		n.every[id] = st
	}
	e := st.tasks.get(shared.Id)
	if e == nil {
		e = &entry{ident: st, id: shared.Id, idx: -1}
		st.tasks.put(e)
	} else if e.running || (!withProg && e.rev >= sharedRev) {
		n.mu.Unlock()
		return // a run in flight folds the change in at its commit
	}
	if withProg {
		e.extra().prog, e.x.progRev = prog, progRev
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

// reloadEveryProgress reads this node's progress on an EVERY_NODE task
// again after a start write that failed, so that a marker it wrote after
// all is seen (and resolved) rather than written over.
func (n *Node) reloadEveryProgress(e *entry) {
	ctx, cancel := n.etcdCtx(n.life)
	defer cancel()
	resp, err := n.writer.Read(ctx,
		clientv3.OpGet(n.keys.Every(e.ident.name, e.id)),
		clientv3.OpGet(n.keys.EveryProgress(n.cfg.Name, e.id)),
	)
	if err != nil {
		return // the next start's fenced write fails and comes back here
	}
	shared := resp.Responses[0].GetResponseRange().GetKvs()
	if len(shared) == 0 {
		n.removeEvery(e.ident.name, e.id)
		return
	}
	var prog *mvccpb.KeyValue
	if kvs := resp.Responses[1].GetResponseRange().GetKvs(); len(kvs) > 0 {
		prog = kvs[0]
	}
	n.installEvery(e.ident.name, shared[0].Value, shared[0].ModRevision, prog, true)
}
