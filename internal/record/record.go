package record

import (
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/pkg/schedule"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is what a record says about itself: whether it is final, its
// triggers' fire times, when it is next due, and the state it settles in
// with no run in flight.

// IsFinal reports whether s is a state a task does not leave by itself:
// COMPLETED, DEAD or CANCELED.
func IsFinal(s taskdv1.TaskState) bool {
	return s == taskdv1.TaskState_TASK_STATE_COMPLETED || s == taskdv1.TaskState_TASK_STATE_DEAD ||
		s == taskdv1.TaskState_TASK_STATE_CANCELED
}

// Clone is a deep copy of r.
func Clone(r *storev1.TaskRecord) *storev1.TaskRecord { return proto.Clone(r).(*storev1.TaskRecord) }

func ts(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }

// Timing is what the record's state machine reads besides the record: the
// clock, the dispatching node's start, the misfire settings and the task's
// calendars.
type Timing struct {
	Now time.Time
	// DispatchStart is when this node began dispatching (zero before it is
	// RUNNING, and for views that fire nothing): on-start-up triggers fire
	// once per dispatch start.
	DispatchStart time.Time
	Threshold     time.Duration       // --misfire-threshold
	MaxCatchUp    int                 // --max-catch-up
	Calendars     schedule.Exclusions // nil: the task lists no calendar
	// TakenAt is when this node took the task, or began dispatching if
	// later: fire times before it are caught up (contract §4.4). Zero for
	// plans of views.
	TakenAt time.Time
}

// InitTriggers sets the trigger states of a new record: each trigger's
// first fire time that no calendar of the task excludes.
func InitTriggers(rec *storev1.TaskRecord, cals schedule.Exclusions) {
	rec.Triggers = make([]*storev1.TriggerState, len(rec.Spec.Triggers))
	for i, t := range rec.Spec.Triggers {
		st := &storev1.TriggerState{}
		if at, ok := schedule.First(t, cals); ok {
			st.Next = ts(at)
		}
		rec.Triggers[i] = st
	}
}

// NextTrigger returns the trigger that is due first, and when: its next
// fire time delayed by its jitter (jitter.go). An on-start-up trigger
// counts when it is due on a node that began dispatching at dispatchStart:
// its fire time is that start (or the task's creation, if later).
func NextTrigger(rec *storev1.TaskRecord, dispatchStart time.Time) (idx int, due time.Time, ok bool) {
	idx, _, due, ok = NextFire(rec, dispatchStart)
	return idx, due, ok
}

// NextFire is NextTrigger with the trigger's fire time itself (fire, which
// a run carries) beside the instant it is due.
func NextFire(rec *storev1.TaskRecord, dispatchStart time.Time) (idx int, fire, due time.Time, ok bool) {
	idx = -1
	for i, st := range rec.Triggers {
		var f, d time.Time
		switch {
		case st.GetNext() != nil:
			f = st.Next.AsTime()
			d = DueOf(rec.GetId(), rec.GetSpec().GetTriggers(), i, f)
		case i < len(rec.GetSpec().GetTriggers()) && schedule.IsOnStartup(rec.Spec.Triggers[i]) &&
			!dispatchStart.IsZero() && schedule.OnStartupDue(optTime(st.GetLastStart()), dispatchStart):
			f = maxTime(dispatchStart, rec.GetCreatedAt().AsTime())
			d = f
		default:
			continue
		}
		if idx < 0 || d.Before(due) {
			idx, fire, due = i, f, d
		}
	}
	return idx, fire, due, idx >= 0
}

// hasFuture reports whether the record's triggers can fire again: one has
// a next fire time, or it has an on-start-up trigger (which fires at every
// start, so such a task never completes on its own).
func hasFuture(rec *storev1.TaskRecord) bool {
	for i, st := range rec.Triggers {
		if st.GetNext() != nil || (i < len(rec.GetSpec().GetTriggers()) && schedule.IsOnStartup(rec.Spec.Triggers[i])) {
			return true
		}
	}
	return false
}

// optTime is the time t holds, zero for unset.
func optTime(t *timestamppb.Timestamp) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.AsTime()
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Due is when the record next needs the node: a run, or (purge) the end of
// its retention; ok is false when it needs nothing (a DEAD task).
func Due(rec *storev1.TaskRecord, retention time.Duration, tm Timing) (at time.Time, purge, ok bool) {
	now := tm.Now
	if rec.ManualRequested && rec.State != taskdv1.TaskState_TASK_STATE_CANCELED {
		return now, false, true
	}
	switch rec.State {
	case taskdv1.TaskState_TASK_STATE_COMPLETED, taskdv1.TaskState_TASK_STATE_CANCELED:
		return rec.GetFinishedAt().AsTime().Add(retention), true, true
	case taskdv1.TaskState_TASK_STATE_DEAD:
		return time.Time{}, false, false
	}
	if rec.RecoveryPending != nil {
		return rec.RecoveryPending.GetFireTime().AsTime(), false, true
	}
	if rec.RetryAt != nil {
		return rec.RetryAt.AsTime(), false, true
	}
	_, at, ok = NextTrigger(rec, tm.DispatchStart)
	return at, false, ok
}

// Settle sets the state a record is in once no run is in flight.
func Settle(rec *storev1.TaskRecord, now time.Time) {
	if IsFinal(rec.State) {
		if rec.FinishedAt == nil {
			rec.FinishedAt = ts(now)
		}
		return
	}
	switch {
	case rec.RetryAt != nil:
		rec.State = taskdv1.TaskState_TASK_STATE_RETRYING
	case rec.RecoveryPending != nil || rec.ManualRequested:
		rec.State = taskdv1.TaskState_TASK_STATE_SCHEDULED
	default:
		if hasFuture(rec) {
			rec.State = taskdv1.TaskState_TASK_STATE_SCHEDULED
		} else {
			rec.State = endState(rec)
			rec.FinishedAt = ts(now)
		}
	}
}

// endState is the state of a task that has no run to come: DEAD when its
// last run failed, COMPLETED otherwise. A task whose last attempt failed
// never reads COMPLETED (contract §5.2): it is kept, DEAD, for inspection
// and run-now. This decides it for every task that runs out of fire times
// (a permanent error on the last one, an interrupted run not recovered, a
// failed run-now of a finished task, a last fire time skipped after a
// failure); a task whose attempts run out is made DEAD by ApplyResult
// whatever fire times it has left.
func endState(rec *storev1.TaskRecord) taskdv1.TaskState {
	if runFailed(rec.GetLastRun().GetOutcome()) {
		return taskdv1.TaskState_TASK_STATE_DEAD
	}
	return taskdv1.TaskState_TASK_STATE_COMPLETED
}

// runFailed reports whether a run's outcome is a failure: ERROR, or
// INTERRUPTED (the run did not finish). DROPPED and VETOED runs did not
// run; CANCELED ends the task on its own.
func runFailed(o taskdv1.Outcome) bool {
	return o == taskdv1.Outcome_OUTCOME_ERROR || o == taskdv1.Outcome_OUTCOME_INTERRUPTED
}

// ServerNamePrefix starts every trigger name the server gives (pkg/taskservice
// names unnamed triggers "#<n>").
const ServerNamePrefix = "#"

// TriggerName is the name of trigger i of rec: its stored name, or the one
// a legacy record's unnamed trigger is read with ("#<i>"); "" when rec has
// no trigger i.
func TriggerName(rec *storev1.TaskRecord, i int) string {
	ts := rec.GetSpec().GetTriggers()
	if i < 0 || i >= len(ts) {
		return ""
	}
	return nameIn(ts, i)
}

// TriggerNames are the names of rec's triggers, as TriggerName reads them.
func TriggerNames(rec *storev1.TaskRecord) []string {
	out := make([]string, len(rec.GetSpec().GetTriggers()))
	for i := range out {
		out[i] = TriggerName(rec, i)
	}
	return out
}

// ArmedFire is the fire time of rec's run if it is armed and not yet due
// at now: the task's next fire time, although its start is written (none
// once the task is cancelled: the armed run will not be called).
func ArmedFire(rec *storev1.TaskRecord, now time.Time) (time.Time, bool) {
	if m := rec.GetRunning(); m != nil && m.GetFireTime() != nil && !IsFinal(rec.GetState()) {
		if at := m.GetFireTime().AsTime(); at.After(now) {
			return at, true
		}
	}
	return time.Time{}, false
}
