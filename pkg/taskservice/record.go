package taskservice

import (
	"math/rand/v2"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/specdefaults"
	"github.com/taskd/taskd/pkg/schedule"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is the task record's state machine: pure functions from a
// record (and the clock's reading) to the next record. The node applies
// them and commits the result in a fenced Txn.

const defaultMaxAttempts = specdefaults.MaxAttempts

func isFinal(s taskdv1.TaskState) bool {
	return s == taskdv1.TaskState_TASK_STATE_COMPLETED || s == taskdv1.TaskState_TASK_STATE_DEAD ||
		s == taskdv1.TaskState_TASK_STATE_CANCELED
}

func cloneRec(r *storev1.TaskRecord) *storev1.TaskRecord { return proto.Clone(r).(*storev1.TaskRecord) }

func ts(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }

// timing is what the record's state machine reads besides the record: the
// clock, the dispatching node's start, the misfire settings and the task's
// calendars.
type timing struct {
	now time.Time
	// dispatchStart is when this node began dispatching (zero before it is
	// RUNNING, and for views that fire nothing): on-start-up triggers fire
	// once per dispatch start.
	dispatchStart time.Time
	threshold     time.Duration
	maxCatchUp    int
	cals          schedule.Exclusions // nil: the task lists no calendar
	// takenAt is when this node took the task, or began dispatching if
	// later: fire times before it are caught up (takeover.go). Zero for
	// plans of views.
	takenAt time.Time
}

// initTriggers sets the trigger states of a new record: each trigger's
// first fire time that no calendar of the task excludes.
func initTriggers(rec *storev1.TaskRecord, cals schedule.Exclusions) {
	rec.Triggers = make([]*storev1.TriggerState, len(rec.Spec.Triggers))
	for i, t := range rec.Spec.Triggers {
		st := &storev1.TriggerState{}
		if at, ok := schedule.First(t, cals); ok {
			st.Next = ts(at)
		}
		rec.Triggers[i] = st
	}
}

// nextTrigger returns the trigger with the earliest next fire time. An
// on-start-up trigger counts when it is due on a node that began
// dispatching at dispatchStart: its fire time is that start (or the task's
// creation, if later).
func nextTrigger(rec *storev1.TaskRecord, dispatchStart time.Time) (idx int, at time.Time, ok bool) {
	idx = -1
	for i, st := range rec.Triggers {
		var t time.Time
		switch {
		case st.GetNext() != nil:
			t = st.Next.AsTime()
		case i < len(rec.GetSpec().GetTriggers()) && schedule.IsOnStartup(rec.Spec.Triggers[i]) &&
			!dispatchStart.IsZero() && schedule.OnStartupDue(optTime(st.GetLastStart()), dispatchStart):
			t = maxTime(dispatchStart, rec.GetCreatedAt().AsTime())
		default:
			continue
		}
		if idx < 0 || t.Before(at) {
			idx, at = i, t
		}
	}
	return idx, at, idx >= 0
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

// dueTime is when the record next needs the node: a run, or (purge) the end
// of its retention; ok is false when it needs nothing (a DEAD task).
func dueTime(rec *storev1.TaskRecord, retention time.Duration, tm timing) (at time.Time, purge, ok bool) {
	now := tm.now
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
	_, at, ok = nextTrigger(rec, tm.dispatchStart)
	return at, false, ok
}

// settle sets the state a record is in once no run is in flight.
func settle(rec *storev1.TaskRecord, now time.Time) {
	if isFinal(rec.State) {
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
// failure); a task whose attempts run out is made DEAD by applyResult
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

// startPlan is a run about to start, or (run false) a trigger advance
// without a run (a skipped misfire).
type startPlan struct {
	run       bool
	rec       *storev1.TaskRecord // the record to write
	marker    *storev1.RunMarker
	recovery  bool
	misfired  int64
	fire      time.Time
	manual    bool
	attempt   int
	runNumber int64
	ready     time.Time // when the run became due on this node (Event.Ready)
	// before is, for a run armed ahead of its fire time, the record before
	// its start: written back if its handler is not called (arming.go).
	before *storev1.TaskRecord
}

// planStart decides what a due record does now and returns the record to
// write before the handler is called (its run marker set).
func planStart(cur *storev1.TaskRecord, node, inc string, epoch int64, tm timing) startPlan {
	now := tm.now
	rec := cloneRec(cur)
	p := startPlan{rec: rec, run: true}
	trigger, triggerName := int32(-1), ""
	switch {
	case rec.RecoveryPending != nil:
		m := rec.RecoveryPending
		rec.RecoveryPending = nil
		p.recovery, p.runNumber, p.fire, p.manual, p.attempt = true, m.RunNumber, m.FireTime.AsTime(), m.Manual, int(m.Attempt)
		trigger, triggerName = m.Trigger, m.TriggerName
	case rec.ManualRequested:
		rec.ManualRequested = false
		rec.RunCount++
		p.runNumber, p.fire, p.manual, p.attempt = rec.RunCount, now, true, 1
	case rec.RetryAt != nil:
		rec.RetryAt = nil
		rec.Attempt++
		rec.RunCount++
		p.runNumber, p.fire, p.attempt = rec.RunCount, rec.PendingFire.AsTime(), int(rec.Attempt)
		trigger, triggerName = rec.PendingTrigger, rec.PendingTriggerName
	default:
		i, due, ok := nextTrigger(rec, tm.dispatchStart)
		if !ok {
			p.run = false
			return p
		}
		tr, st := rec.Spec.Triggers[i], rec.Triggers[i]
		startup := schedule.IsOnStartup(tr)
		if !startup && tm.cals != nil && tm.cals.Excludes(due) {
			// A calendar created or replaced since this fire time was
			// computed excludes it: skipped, not misfired.
			st.Next = nil
			if at, ok := schedule.Next(tr, due, tm.cals); ok {
				st.Next = ts(at)
			}
			p.run = false
			settle(rec, now)
			return p
		}
		plan := planDue(tr, due, rec.Spec.Misfire, tm)
		advanceTrigger(rec, i, plan, now)
		p.misfired = plan.Misfired
		if !plan.Run {
			p.run = false
			settle(rec, now)
			return p
		}
		rec.RunCount++
		rec.Attempt = 1
		rec.PendingFire = ts(plan.Fire)
		rec.PendingTrigger, rec.PendingTriggerName = int32(i), triggerLabel(rec, i)
		p.runNumber, p.fire, p.attempt = rec.RunCount, plan.Fire, 1
		trigger, triggerName = int32(i), rec.PendingTriggerName
	}
	if triggerName == "" && trigger >= 0 {
		// Pending since before names were given: named as it is read.
		triggerName = triggerLabel(rec, int(trigger))
	}
	p.marker = &storev1.RunMarker{
		RunNumber:   p.runNumber,
		Node:        node,
		Incarnation: inc,
		StartedAt:   ts(now),
		FireTime:    ts(p.fire),
		Trigger:     trigger,
		TriggerName: triggerName,
		Manual:      p.manual,
		Attempt:     int32(p.attempt),
		Epoch:       epoch,
	}
	rec.Running = p.marker
	rec.State = taskdv1.TaskState_TASK_STATE_RUNNING
	return p
}

// advanceTrigger records in rec that trigger i's due fire time was planned
// (run or misfired) at now.
func advanceTrigger(rec *storev1.TaskRecord, i int, plan schedule.Plan, now time.Time) {
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

// runResult is how a run ended.
type runResult struct {
	outcome  taskdv1.Outcome
	message  string
	retry    bool      // retryable failure
	retryAt  time.Time // retryable failure: the earliest retry (RetryAt); zero: the backoff's
	snooze   time.Time // run the same fire time again then
	cancel   bool      // the handler cancelled the task
	again    bool      // run again now
	data     []byte
	dataSet  bool
	started  time.Time
	ended    time.Time
	fence    Fence
	recovery bool
	// notCalled: the handler was never called; the fire time runs again
	// whatever requests_recovery says (nothing ran).
	notCalled bool
	// stale: the outcome of a marker that no run reported (recorded by
	// whoever resolved it, not by the run's node).
	stale bool
	// encodeFailed: this is the ERROR recorded because the handler's result
	// could not be stored.
	encodeFailed bool
}

// applyResult folds a finished run into rec (the record as it stands now,
// still carrying the run's marker) and returns the history entry and the
// next event. Concurrent changes in rec survive: a cancel stays cancelled
// and a requested manual run stays requested.
func applyResult(rec *storev1.TaskRecord, m *storev1.RunMarker, res runResult, node string, backoffRnd float64) (*taskdv1.Run, EventType) {
	rec.Running = nil
	if res.dataSet {
		rec.Spec.Data = res.data
	}
	run := &taskdv1.Run{
		TaskId:    rec.Id,
		RunNumber: m.RunNumber,
		Attempt:   m.Attempt,
		FireTime:  m.FireTime,
		StartedAt: ts(res.started),
		EndedAt:   ts(res.ended),
		Node:      node,
		Outcome:   res.outcome,
		Message:   res.message,
		Fence:     res.fence.String(),
		Manual:    m.Manual,
		Recovery:  res.recovery,
		Trigger:   m.Trigger,
		// The name the trigger had when the run was fired: an update
		// while it ran may have moved or removed the trigger.
		TriggerName: m.TriggerName,
	}
	if run.TriggerName == "" && m.Trigger >= 0 {
		run.TriggerName = triggerLabel(rec, int(m.Trigger)) // a marker of an earlier release
	}
	rec.LastRun = &taskdv1.RunSummary{
		RunNumber: m.RunNumber, Outcome: res.outcome, StartedAt: run.StartedAt,
		EndedAt: run.EndedAt, Node: node, Message: res.message,
	}
	now := res.ended
	// A run-now of a task that had ended (DEAD or COMPLETED, kept): if it
	// fails the task stays DEAD whatever fire times its triggers still
	// hold; if it succeeds the task comes back (with fire times left it
	// goes on with them).
	reran := m.Manual && rec.FinishedAt != nil
	doneWithFire := func() {
		if !m.Manual {
			rec.Attempt = 0
			rec.PendingFire = nil
			rec.RetryAt = nil
		}
	}
	switch {
	case rec.State == taskdv1.TaskState_TASK_STATE_CANCELED:
		// Cancelled while running: the result is kept, the task stays cancelled.
	case res.cancel:
		rec.State = taskdv1.TaskState_TASK_STATE_CANCELED
		rec.FinishedAt = ts(now)
	case !res.snooze.IsZero() && !m.Manual:
		rec.RetryAt = ts(res.snooze)
		if res.snooze.Before(now) {
			rec.RetryAt = ts(now) // a past snooze time: again at once
		}
		rec.Attempt = m.Attempt - 1 // a snooze uses no attempt
	case res.outcome == taskdv1.Outcome_OUTCOME_INTERRUPTED:
		if res.notCalled || rec.Spec.RequestsRecovery == nil || rec.Spec.GetRequestsRecovery() {
			rec.RecoveryPending = m
		} else {
			doneWithFire()
		}
	case res.retry && !m.Manual:
		max := rec.Spec.MaxAttempts
		if max <= 0 {
			max = defaultMaxAttempts
		}
		switch {
		case m.Attempt >= max && rec.Spec.GetScope() == taskdv1.Scope_SCOPE_EVERY_NODE && hasFuture(rec):
			// Each node keeps its own progress on a task that all of them
			// share: one node's failures end the fire time, not the task,
			// and the node goes on with its next one.
			doneWithFire()
		case m.Attempt >= max:
			rec.State = taskdv1.TaskState_TASK_STATE_DEAD
			rec.FinishedAt = ts(now)
			rec.RetryAt = nil
		default:
			b := rec.Spec.GetBackoff()
			wait := schedule.Backoff(int(m.Attempt), b.GetInitial().AsDuration(), maxBackoff(b.GetMax().AsDuration()), backoffRnd)
			at := now.Add(wait)
			if res.retryAt.After(at) {
				at = res.retryAt // the handler asked for no earlier retry
			}
			rec.RetryAt = ts(at)
			rec.Attempt = m.Attempt
		}
	default:
		doneWithFire()
	}
	if res.again && !isFinal(rec.State) {
		rec.ManualRequested = true
	}
	if !isFinal(rec.State) {
		rec.State = taskdv1.TaskState_TASK_STATE_SCHEDULED
		switch {
		case !reran || rec.RecoveryPending != nil:
		case runFailed(res.outcome):
			rec.State, rec.FinishedAt = taskdv1.TaskState_TASK_STATE_DEAD, ts(now)
		default:
			rec.FinishedAt = nil // back from the end; settle says where to
		}
	}
	settle(rec, now)
	switch {
	case rec.State == taskdv1.TaskState_TASK_STATE_RETRYING:
		return run, EventRetryScheduled
	case isFinal(rec.State):
		return run, EventFinalized
	}
	return run, EventNextScheduled
}

func maxBackoff(d time.Duration) time.Duration {
	if d <= 0 {
		return specdefaults.BackoffMax
	}
	return d
}

// resolveStale settles a run marker left by a run that will not report (its
// node died or restarted, or its start was written but its handler never
// called) with res, from staleResult: the run is recorded, and with
// requests_recovery (always, for a run never called) its fire time runs
// again with the same run number.
func resolveStale(rec *storev1.TaskRecord, res runResult) *taskdv1.Run {
	m := rec.Running
	run, _ := applyResult(rec, m, res, m.Node, rand.Float64())
	run.Fence = ""
	if res.notCalled {
		run.Outcome, rec.LastRun.Outcome = taskdv1.Outcome_OUTCOME_DROPPED, taskdv1.Outcome_OUTCOME_DROPPED
	}
	return run
}
