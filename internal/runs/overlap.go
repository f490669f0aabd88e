package runs

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/taskspec"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/pending"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is allow_overlap (contract §5.5). A task that allows overlap
// may start the run of its next fire time while its own run is still in
// flight. The overlapping run is started as a task of its own: a one-shot
// copy of the task (kind, payload, data, retry settings) for that fire
// time, labelled OverlapLabel with the task's id, written in one fenced
// Txn with the task's trigger advanced past that fire time. It then runs,
// is recorded, recovered and moved like any task, so every guarantee of a
// run holds for it; the task's own run numbers and history are its own.
//
// While a run of such a task is in flight, the owner keeps a shadow entry
// of it in the timer queue at its next fire time. When the shadow comes due
// and the run is still in flight, the overlapping run starts, unless
// MaxOverlap of them are still unfinished: then the fire time waits (it
// runs when the task's own run ends, or when an overlapping one finishes,
// checked every overlapRecheck).

// OverlapLabel labels an overlapping run's task with the id of the task it
// overlaps.
const OverlapLabel = "taskd.overlap-of"

// overlapRecheck is how often a fire time held back by MaxOverlap is
// looked at again.
const overlapRecheck = 100 * time.Millisecond

// armOverlapLocked queues e's shadow at the next fire time of rec, the
// record of e's run in flight, if the task allows overlap. n.mu held.
func (n *Path) armOverlapLocked(e *held.Entry, rec *storev1.TaskRecord, rev int64, at time.Time) {
	if !rec.GetSpec().GetAllowOverlap() || !e.Ident.Scope.Overlaps() {
		return
	}
	if at.IsZero() {
		var ok bool
		if _, at, ok = record.NextTrigger(rec, n.d.Phase.DispatchStart); !ok {
			return
		}
	}
	s := e.Ex().Shadow
	if s == nil || s.Gone {
		s = &held.Entry{Ident: e.Ident, ID: e.ID, X: &held.Extra{OverlapOf: e}, Idx: -1}
		e.Extra().Shadow = s
	}
	s.Rec, s.Rev = rec, rev
	n.d.Queue.Set(s, at)
	n.d.Kick()
}

// dropShadowLocked takes e's shadow out of the queue (its run ended, or it
// left). n.mu held.
func (n *Path) dropShadowLocked(e *held.Entry) {
	if s := e.Ex().Shadow; s != nil {
		s.Gone = true
		n.d.Queue.Remove(s)
		e.X.Shadow = nil
	}
}

// startOverlap starts the overlapping run of a due shadow, if its task's
// run is still in flight.
func (n *Path) startOverlap(s *held.Entry) {
	n.d.Lock()
	s.Running = false
	parent := s.Ex().OverlapOf
	st := parent.Ident
	cur, rev := s.Rec, s.Rev
	if parent.Rev > rev {
		cur, rev = parent.Record(), parent.Rev
	}
	if s.Gone || parent.Gone || st.Lost || !parent.Running || cur == nil || cur.Running == nil ||
		!cur.Spec.GetAllowOverlap() || record.IsFinal(cur.State) {
		n.d.Unlock()
		return
	}
	now := time.Now()
	if n.d.Phase.Draining || !n.member.Fresh() || n.d.PausedByLocked(cur, st.Name) != nil {
		n.armOverlapLocked(parent, cur, rev, now.Add(overlapRecheck))
		n.d.Unlock()
		return
	}
	tm := n.d.TimingLocked(cur, now)
	i, fire, due, ok := record.NextFire(cur, tm.DispatchStart)
	if !ok {
		n.d.Unlock()
		return
	}
	if due.After(now) {
		n.armOverlapLocked(parent, cur, rev, due)
		n.d.Unlock()
		return
	}
	var live []string // overlapping runs not finished
	for _, id := range cur.OverlapRuns {
		if c := st.Tasks.Get(id); c != nil && !c.Gone {
			// A cold task waits for a fire time: it is not final.
			if r := c.Record(); c.Running || c.Cold() || (r != nil && !record.IsFinal(r.State)) {
				live = append(live, id)
			}
		}
	}
	if len(live) >= n.cfg.MaxOverlap {
		n.armOverlapLocked(parent, cur, rev, now.Add(overlapRecheck))
		n.d.Unlock()
		return
	}
	snap := n.snapLocked(parent)
	snap.rev = rev
	n.d.Unlock()

	rec := record.Clone(cur)
	plan := record.PlanDue(rec.Spec.Triggers[i], fire, due, rec.Spec.Misfire, tm)
	record.AdvanceTrigger(rec, i, plan, now)
	rec.OverlapRuns = live
	var child *storev1.TaskRecord
	if plan.Run {
		child = n.overlapRun(cur, plan.Fire, now)
		rec.OverlapRuns = append(rec.OverlapRuns, child.Id)
	}
	txn, err := n.writes.Shapes.Overlap(writepath.RunFence{Identity: st.Name, Task: parent.ID, Epoch: snap.epoch, TaskRev: snap.rev},
		writepath.Lease(snap.lease), writepath.Pauses{Identity: st.Name, Kind: rec.Spec.Kind}, rec, child)
	if err != nil {
		n.log.Error("encode task for an overlapping run", "task", parent.ID, "error", err)
		return
	}
	ctx, cancel := n.startCtx()
	out := n.writes.Batch.Do(ctx, txn)
	cancel()
	n.d.Lock()
	defer n.d.Unlock()
	switch {
	case out.Err != nil:
		// Maybe applied: the next look finds the task changed, and the
		// identity is read again so that an overlapping run stored after
		// all is loaded and runs.
		n.log.Warn("start an overlapping run: etcd write failed; will look again", "task", parent.ID, "error", out.Err)
		n.armOverlapLocked(parent, cur, rev, now.Add(overlapRecheck))
		if !out.NotSent {
			n.d.Unlock()
			n.own.Repair(st.Name)
			n.own.RepairAfter(st.Name, n.cfg.EtcdTimeout)
			n.d.Lock()
		}
	case !out.OK:
		// The task changed (a run-now, a pause, its run's commit) or the
		// identity moved: take the record read in Else and look again.
		if kvs := out.Refusal.Task.Kvs; len(kvs) > 0 {
			if fresh, err := pending.Decode(kvs[0].Value); err == nil && fresh.Running != nil {
				n.armOverlapLocked(parent, fresh, kvs[0].ModRevision, now.Add(overlapRecheck))
			}
		}
	default:
		n.armOverlapLocked(parent, rec, out.Rev, time.Time{})
		if child != nil {
			n.d.Unlock()
			n.d.AddOwned(st.Name, snap.epoch, []*storev1.TaskRecord{child}, out.Rev)
			n.d.Lock()
		}
	}
}

// overlapRun is the task of an overlapping run of parent for fire time
// fire: a one-shot copy of it, labelled with its id.
func (n *Path) overlapRun(parent *storev1.TaskRecord, fire, now time.Time) *storev1.TaskRecord {
	spec := record.Clone(parent).Spec
	spec.Triggers = []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{At: timestamppb.New(fire)}}}}
	spec.AllowOverlap, spec.IdempotencyKey, spec.Calendars = false, "", nil
	spec.Misfire = taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW // the task's policy already decided
	if spec.Labels == nil {
		spec.Labels = map[string]string{}
	}
	spec.Labels[OverlapLabel] = parent.Id
	rec := &storev1.TaskRecord{
		Id:        n.ids.New(),
		Spec:      spec,
		State:     taskdv1.TaskState_TASK_STATE_SCHEDULED,
		CreatedAt: timestamppb.New(now),
		// Its runs link to the request that scheduled the parent, as the
		// parent's own runs do.
		Traceparent: parent.Traceparent,
	}
	taskspec.NameNewTriggers(rec)
	record.InitTriggers(rec, nil)
	record.Settle(rec, now)
	return rec
}
