package record

import (
	"fmt"
	"time"

	"github.com/taskd/taskd/internal/specdefaults"
	"github.com/taskd/taskd/pkg/schedule"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is a run's end: how its result folds into the record.

const defaultMaxAttempts = specdefaults.MaxAttempts

// Result is how a run ended, as the state machine reads it.
type Result struct {
	Outcome taskdv1.Outcome
	Message string
	Retry   bool      // retryable failure
	RetryAt time.Time // retryable failure: the earliest retry (RetryAt); zero: the backoff's
	Snooze  time.Time // run the same fire time again then
	Cancel  bool      // the handler cancelled the task
	Again   bool      // run again now
	Data    []byte    // the task's new data, when DataSet
	DataSet bool
	Started time.Time
	Ended   time.Time // the clock's reading the result is folded in at
	// Fence is the run's fence token as its history entry shows it
	// ("<epoch>.<revision>").
	Fence    string
	Recovery bool // the run was a recovery of an interrupted one
	// NotCalled: the handler was never called; the fire time runs again
	// whatever requests_recovery says (nothing ran).
	NotCalled bool
}

// Next is what a record waits for after ApplyResult: the event a node
// tells of the result.
type Next int

const (
	// NextScheduled: the task waits for a fire time, a recovery or a
	// requested run.
	NextScheduled Next = iota
	// RetryScheduled: the task is RETRYING (a retry, or a snooze).
	RetryScheduled
	// Finalized: the task is final (COMPLETED, DEAD or CANCELED).
	Finalized
)

// ApplyResult folds a finished run into rec (the record as it stands now,
// still carrying the run's marker m) and returns the history entry and
// what the record waits for next. Concurrent changes in rec survive: a
// cancel stays cancelled and a requested manual run stays requested.
// backoffRnd in [0,1) places a retry within its backoff's jitter.
func ApplyResult(rec *storev1.TaskRecord, m *storev1.RunMarker, res Result, node string, backoffRnd float64) (*taskdv1.Run, Next) {
	rec.Running = nil
	if res.DataSet {
		rec.Spec.Data = res.Data
	}
	run := &taskdv1.Run{
		TaskId:    rec.Id,
		RunNumber: m.RunNumber,
		Attempt:   m.Attempt,
		FireTime:  m.FireTime,
		StartedAt: ts(res.Started),
		EndedAt:   ts(res.Ended),
		Node:      node,
		Outcome:   res.Outcome,
		Message:   res.Message,
		Fence:     res.Fence,
		Manual:    m.Manual,
		Recovery:  res.Recovery,
		Trigger:   m.Trigger,
		// The name the trigger had when the run was fired: an update
		// while it ran may have moved or removed the trigger.
		TriggerName: m.TriggerName,
	}
	if run.TriggerName == "" && m.Trigger >= 0 {
		run.TriggerName = TriggerName(rec, int(m.Trigger)) // a marker of an earlier release
	}
	rec.LastRun = &taskdv1.RunSummary{
		RunNumber: m.RunNumber, Outcome: res.Outcome, StartedAt: run.StartedAt,
		EndedAt: run.EndedAt, Node: node, Message: res.Message,
	}
	now := res.Ended
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
	case res.Cancel:
		rec.State = taskdv1.TaskState_TASK_STATE_CANCELED
		rec.FinishedAt = ts(now)
	case !res.Snooze.IsZero() && !m.Manual:
		rec.RetryAt = ts(res.Snooze)
		if res.Snooze.Before(now) {
			rec.RetryAt = ts(now) // a past snooze time: again at once
		}
		rec.Attempt = m.Attempt - 1 // a snooze uses no attempt
	case res.Outcome == taskdv1.Outcome_OUTCOME_INTERRUPTED:
		if res.NotCalled || rec.Spec.RequestsRecovery == nil || rec.Spec.GetRequestsRecovery() {
			rec.RecoveryPending = m
		} else {
			doneWithFire()
		}
	case res.Retry && !m.Manual:
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
			if res.RetryAt.After(at) {
				at = res.RetryAt // the handler asked for no earlier retry
			}
			rec.RetryAt = ts(at)
			rec.Attempt = m.Attempt
		}
	default:
		doneWithFire()
	}
	if res.Again && !IsFinal(rec.State) {
		rec.ManualRequested = true
	}
	if !IsFinal(rec.State) {
		rec.State = taskdv1.TaskState_TASK_STATE_SCHEDULED
		switch {
		case !reran || rec.RecoveryPending != nil:
		case runFailed(res.Outcome):
			rec.State, rec.FinishedAt = taskdv1.TaskState_TASK_STATE_DEAD, ts(now)
		default:
			rec.FinishedAt = nil // back from the end; Settle says where to
		}
	}
	Settle(rec, now)
	return run, NextOf(rec)
}

// NextOf is what a settled record waits for.
func NextOf(rec *storev1.TaskRecord) Next {
	switch {
	case rec.State == taskdv1.TaskState_TASK_STATE_RETRYING:
		return RetryScheduled
	case IsFinal(rec.State):
		return Finalized
	}
	return NextScheduled
}

func maxBackoff(d time.Duration) time.Duration {
	if d <= 0 {
		return specdefaults.BackoffMax
	}
	return d
}

// ResolveStale settles a run marker left by a run that will not report (its
// node died or restarted, or its start was written but its handler never
// called) with res: the run is recorded, without a fence (the revision it
// ran under is not known here), and with requests_recovery (always, for a
// run never called, which is recorded DROPPED) its fire time runs again
// with the same run number. The marker's node is the run's.
func ResolveStale(rec *storev1.TaskRecord, res Result, backoffRnd float64) *taskdv1.Run {
	m := rec.Running
	run, _ := ApplyResult(rec, m, res, m.Node, backoffRnd)
	run.Fence = ""
	if res.NotCalled {
		run.Outcome, rec.LastRun.Outcome = taskdv1.Outcome_OUTCOME_DROPPED, taskdv1.Outcome_OUTCOME_DROPPED
	}
	return run
}

// String names n as the event that tells it.
func (n Next) String() string {
	switch n {
	case NextScheduled:
		return "NEXT_SCHEDULED"
	case RetryScheduled:
		return "RETRY_SCHEDULED"
	case Finalized:
		return "FINALIZED"
	}
	return fmt.Sprintf("Next(%d)", int(n))
}
