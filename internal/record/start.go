package record

import (
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/pkg/schedule"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is a run's start: which of a due record's fire times runs (or
// misfires), the record written before its handler is called, and the
// undo of a start whose handler never was.

// Start is a run about to start, or (Runs false) a trigger advance without
// a run (a skipped misfire, a fire time a calendar excludes).
type Start struct {
	Runs      bool
	Rec       *storev1.TaskRecord // the record to write
	Marker    *storev1.RunMarker  // Rec.Running, when the plan runs
	Recovery  bool                // the run is a recovery of an interrupted one
	Misfired  int64               // fire times misfired by this plan
	Fire      time.Time           // the fire time the run serves
	Manual    bool                // a run-now
	Attempt   int                 // 1 for the first attempt of a fire time
	RunNumber int64
}

// PlanStart decides what a due record does now and returns the record to
// write before the handler is called (its run marker set). cur is not
// changed. PlanStart does not compare the clock with the record's due
// time: its caller calls it only once Due(cur) has come (a run armed
// ahead is planned as of its fire time, Timing.Now being that time).
func PlanStart(cur *storev1.TaskRecord, node, inc string, epoch int64, tm Timing) Start {
	now := tm.Now
	rec := Clone(cur)
	p := Start{Rec: rec, Runs: true}
	trigger, triggerName := int32(-1), ""
	switch {
	case rec.RecoveryPending != nil:
		m := rec.RecoveryPending
		rec.RecoveryPending = nil
		p.Recovery, p.RunNumber, p.Fire, p.Manual, p.Attempt = true, m.RunNumber, m.FireTime.AsTime(), m.Manual, int(m.Attempt)
		trigger, triggerName = m.Trigger, m.TriggerName
	case rec.ManualRequested:
		rec.ManualRequested = false
		rec.RunCount++
		p.RunNumber, p.Fire, p.Manual, p.Attempt = rec.RunCount, now, true, 1
	case rec.RetryAt != nil:
		rec.RetryAt = nil
		rec.Attempt++
		rec.RunCount++
		p.RunNumber, p.Fire, p.Attempt = rec.RunCount, rec.PendingFire.AsTime(), int(rec.Attempt)
		trigger, triggerName = rec.PendingTrigger, rec.PendingTriggerName
	default:
		i, fire, due, ok := NextFire(rec, tm.DispatchStart)
		if !ok {
			p.Runs = false
			return p
		}
		tr, st := rec.Spec.Triggers[i], rec.Triggers[i]
		startup := schedule.IsOnStartup(tr)
		if !startup && tm.Calendars != nil && tm.Calendars.Excludes(fire) {
			// A calendar created or replaced since this fire time was
			// computed excludes it: skipped, not misfired.
			st.Next = nil
			if at, ok := schedule.Next(tr, fire, tm.Calendars); ok {
				st.Next = ts(at)
			}
			p.Runs = false
			Settle(rec, now)
			return p
		}
		plan := planDue(tr, fire, due, rec.Spec.Misfire, tm)
		AdvanceTrigger(rec, i, plan, now)
		p.Misfired = plan.Misfired
		if !plan.Run {
			p.Runs = false
			Settle(rec, now)
			return p
		}
		rec.RunCount++
		rec.Attempt = 1
		rec.PendingFire = ts(plan.Fire)
		rec.PendingTrigger, rec.PendingTriggerName = int32(i), TriggerName(rec, i)
		p.RunNumber, p.Fire, p.Attempt = rec.RunCount, plan.Fire, 1
		trigger, triggerName = int32(i), rec.PendingTriggerName
	}
	if triggerName == "" && trigger >= 0 {
		// Pending since before names were given: named as it is read.
		triggerName = TriggerName(rec, int(trigger))
	}
	p.Marker = &storev1.RunMarker{
		RunNumber:   p.RunNumber,
		Node:        node,
		Incarnation: inc,
		StartedAt:   ts(now),
		FireTime:    ts(p.Fire),
		Trigger:     trigger,
		TriggerName: triggerName,
		Manual:      p.Manual,
		Attempt:     int32(p.Attempt),
		Epoch:       epoch,
	}
	rec.Running = p.Marker
	rec.State = taskdv1.TaskState_TASK_STATE_RUNNING
	return p
}

// planDue plans trigger tr's fire time fire, due at due (delayed by its
// jitter), which has come, in the timing tm (contract §4.4): caught up if
// it came due before the task was taken here
// (tm.TakenAt: the fire times passed while nobody could run them, and
// follow the misfire policy whatever the threshold says), else judged by
// the threshold.
func planDue(tr *taskdv1.Trigger, fire, due time.Time, taskPolicy taskdv1.MisfirePolicy, tm Timing) schedule.Plan {
	if due.Before(tm.TakenAt) {
		return schedule.CatchUp(tr, fire, tm.Now.Add(-due.Sub(fire)), tm.Threshold, taskPolicy, tm.MaxCatchUp, tm.Calendars)
	}
	return PlanDue(tr, fire, due, taskPolicy, tm)
}

// PlanDue is schedule.Due of trigger tr's fire time fire, due at due (fire
// delayed by its jitter), which has come: its lateness counts from due,
// so a jitter longer than the misfire threshold is no misfire.
func PlanDue(tr *taskdv1.Trigger, fire, due time.Time, taskPolicy taskdv1.MisfirePolicy, tm Timing) schedule.Plan {
	return schedule.Due(tr, fire, tm.Now.Add(-due.Sub(fire)), tm.Threshold, taskPolicy, tm.MaxCatchUp, tm.Calendars)
}

// AdvanceTrigger records in rec that trigger i's due fire time was planned
// (run or misfired) at now.
func AdvanceTrigger(rec *storev1.TaskRecord, i int, plan schedule.Plan, now time.Time) {
	st, startup := rec.Triggers[i], schedule.IsOnStartup(rec.Spec.Triggers[i])
	st.Next = nil
	if plan.NextOK && !startup {
		st.Next = ts(plan.Next)
	}
	st.Fired += plan.Misfired // fire times consumed: those misfired and the one run
	if plan.Run {
		st.Fired++
	}
	if startup {
		st.LastStart = ts(now)
	}
	rec.Misfires += plan.Misfired
}

// UndoStart takes back from cur (the task as it stands, still carrying an
// armed run's marker) what the run's start changed, going from before to
// started, wherever nothing else changed it since: a field that still holds
// the started value gets its value from before; one changed meanwhile (a
// cancel, a pause, an update) keeps the change. The run then leaves no
// trace: no run number used, no trigger advanced. cur is not changed.
func UndoStart(cur, before, started *storev1.TaskRecord) *storev1.TaskRecord {
	rec := Clone(cur)
	rec.Running = nil
	if rec.State == started.State {
		rec.State = before.State
	}
	if rec.RunCount == started.RunCount {
		rec.RunCount = before.RunCount
	}
	if rec.Attempt == started.Attempt {
		rec.Attempt = before.Attempt
	}
	if rec.PendingTrigger == started.PendingTrigger && rec.PendingTriggerName == started.PendingTriggerName {
		rec.PendingTrigger, rec.PendingTriggerName = before.PendingTrigger, before.PendingTriggerName
	}
	if rec.ManualRequested == started.ManualRequested {
		rec.ManualRequested = before.ManualRequested
	}
	if rec.Misfires == started.Misfires {
		rec.Misfires = before.Misfires
	}
	if proto.Equal(rec.RetryAt, started.RetryAt) {
		rec.RetryAt = cloneTS(before.RetryAt)
	}
	if proto.Equal(rec.PendingFire, started.PendingFire) {
		rec.PendingFire = cloneTS(before.PendingFire)
	}
	if proto.Equal(rec.RecoveryPending, started.RecoveryPending) && before.RecoveryPending != nil {
		rec.RecoveryPending = proto.Clone(before.RecoveryPending).(*storev1.RunMarker)
	}
	if len(rec.Triggers) == len(started.Triggers) && len(before.Triggers) == len(started.Triggers) {
		for i, t := range rec.Triggers {
			if proto.Equal(t, started.Triggers[i]) {
				rec.Triggers[i] = proto.Clone(before.Triggers[i]).(*storev1.TriggerState)
			}
		}
	}
	return rec
}

func cloneTS(t *timestamppb.Timestamp) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return &timestamppb.Timestamp{Seconds: t.Seconds, Nanos: t.Nanos}
}
