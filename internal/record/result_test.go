package record

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/pkg/schedule"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestApplyResultOutcomes: how each outcome a handler can ask for folds
// into the record.
func TestApplyResultOutcomes(t *testing.T) {
	end := rt0.Add(time.Second)
	onceTask := func() *storev1.TaskRecord { return newRecord(nil, rOnce(rt0)) }
	periodicTask := func() *storev1.TaskRecord { return newRecord(nil, rEvery(rt0, time.Minute, 0)) }
	// Backoff of retry 1 with initial 1s, rnd 0.5: half of 1s plus half of the rest.
	backoff1 := schedule.Backoff(1, time.Second, 10*time.Second, 0.5)
	// cancelledMeanwhile cancels the task while its run is in flight.
	cancelledMeanwhile := func(r *storev1.TaskRecord) {
		r.State, r.FinishedAt = stCanceled, timestamppb.New(rt0.Add(500*time.Millisecond))
	}
	// retryAt is a retryable error whose handler asks for the retry no
	// earlier than at.
	retryAt := func(at time.Time) func() Result {
		return func() Result {
			r := retryable(end)
			r.RetryAt = at
			return r
		}
	}
	// snoozeTo is a warning that snoozes the task to at.
	snoozeTo := func(at time.Time) func() Result {
		return func() Result {
			r := ended(taskdv1.Outcome_OUTCOME_WARNING, end)
			r.Snooze = at
			return r
		}
	}
	// runAgainNow is a success that asks for another run at once.
	runAgainNow := func() Result {
		r := ended(taskdv1.Outcome_OUTCOME_SUCCESS, end)
		r.Again = true
		return r
	}
	for _, tc := range []struct {
		name        string
		rec         func() *storev1.TaskRecord
		meanwhile   func(*storev1.TaskRecord) // a concurrent change while the run is in flight
		res         func() Result
		wantState   taskdv1.TaskState
		wantNext    Next
		wantAttempt int32
		wantRetryAt time.Time
		wantPending bool // pending_fire still set
		wantManual  bool // a manual run requested
		wantFinish  bool
		wantOutcome taskdv1.Outcome
	}{
		{name: "success, once", rec: onceTask,
			res:       func() Result { return ended(taskdv1.Outcome_OUTCOME_SUCCESS, end) },
			wantState: stCompleted, wantNext: Finalized, wantFinish: true, wantOutcome: taskdv1.Outcome_OUTCOME_SUCCESS},
		{name: "success, periodic", rec: periodicTask,
			res:       func() Result { return ended(taskdv1.Outcome_OUTCOME_SUCCESS, end) },
			wantState: stScheduled, wantNext: NextScheduled, wantOutcome: taskdv1.Outcome_OUTCOME_SUCCESS},
		{name: "warning is a success", rec: onceTask,
			res:       func() Result { return ended(taskdv1.Outcome_OUTCOME_WARNING, end) },
			wantState: stCompleted, wantNext: Finalized, wantFinish: true, wantOutcome: taskdv1.Outcome_OUTCOME_WARNING},
		{name: "retryable error", rec: onceTask,
			res:       func() Result { return retryable(end) },
			wantState: stRetrying, wantNext: RetryScheduled, wantAttempt: 1, wantRetryAt: end.Add(backoff1),
			wantPending: true, wantOutcome: taskdv1.Outcome_OUTCOME_ERROR},
		{name: "permanent error, once: DEAD, not COMPLETED", rec: onceTask,
			res:       func() Result { return ended(taskdv1.Outcome_OUTCOME_ERROR, end) },
			wantState: stDead, wantNext: Finalized, wantFinish: true, wantOutcome: taskdv1.Outcome_OUTCOME_ERROR},
		{name: "permanent error on the last fire time of a periodic task: DEAD", rec: func() *storev1.TaskRecord {
			return newRecord(nil, rEvery(rt0, time.Minute, 1))
		},
			res:       func() Result { return ended(taskdv1.Outcome_OUTCOME_ERROR, end) },
			wantState: stDead, wantNext: Finalized, wantFinish: true, wantOutcome: taskdv1.Outcome_OUTCOME_ERROR},
		{name: "retryable error, the handler's earliest retry after the backoff", rec: onceTask,
			res:       retryAt(end.Add(time.Hour)),
			wantState: stRetrying, wantNext: RetryScheduled, wantAttempt: 1, wantRetryAt: end.Add(time.Hour),
			wantPending: true, wantOutcome: taskdv1.Outcome_OUTCOME_ERROR},
		{name: "retryable error, the handler's earliest retry before the backoff", rec: onceTask,
			res:       retryAt(end.Add(time.Millisecond)),
			wantState: stRetrying, wantNext: RetryScheduled, wantAttempt: 1, wantRetryAt: end.Add(backoff1),
			wantPending: true, wantOutcome: taskdv1.Outcome_OUTCOME_ERROR},
		{name: "attempts used up, periodic: DEAD", rec: func() *storev1.TaskRecord {
			return newRecord(func(s *taskdv1.TaskSpec) { s.MaxAttempts = 1 }, rEvery(rt0, time.Minute, 0))
		},
			res:       func() Result { return retryable(end) },
			wantState: stDead, wantNext: Finalized, wantAttempt: 1, wantPending: true, wantFinish: true,
			wantOutcome: taskdv1.Outcome_OUTCOME_ERROR},
		{name: "attempts used up, EVERY_NODE periodic: the node goes on with the next fire time", rec: func() *storev1.TaskRecord {
			return newRecord(func(s *taskdv1.TaskSpec) { s.MaxAttempts, s.Scope = 1, taskdv1.Scope_SCOPE_EVERY_NODE }, rEvery(rt0, time.Minute, 0))
		},
			res:       func() Result { return retryable(end) },
			wantState: stScheduled, wantNext: NextScheduled, wantOutcome: taskdv1.Outcome_OUTCOME_ERROR},
		{name: "attempts used up, EVERY_NODE once: DEAD", rec: func() *storev1.TaskRecord {
			return newRecord(func(s *taskdv1.TaskSpec) { s.MaxAttempts, s.Scope = 1, taskdv1.Scope_SCOPE_EVERY_NODE }, rOnce(rt0))
		},
			res:       func() Result { return retryable(end) },
			wantState: stDead, wantNext: Finalized, wantAttempt: 1, wantPending: true, wantFinish: true,
			wantOutcome: taskdv1.Outcome_OUTCOME_ERROR},
		{name: "permanent error, periodic: next fire time", rec: periodicTask,
			res:       func() Result { return ended(taskdv1.Outcome_OUTCOME_ERROR, end) },
			wantState: stScheduled, wantNext: NextScheduled, wantOutcome: taskdv1.Outcome_OUTCOME_ERROR},
		{name: "cancel from the handler, periodic", rec: periodicTask,
			res: func() Result {
				r := ended(taskdv1.Outcome_OUTCOME_CANCELED, end)
				r.Cancel = true
				return r
			},
			wantState: stCanceled, wantNext: Finalized, wantAttempt: 1, wantPending: true, wantFinish: true,
			wantOutcome: taskdv1.Outcome_OUTCOME_CANCELED},
		{name: "cancelled while running: stays cancelled", rec: periodicTask,
			meanwhile: cancelledMeanwhile,
			res:       func() Result { return retryable(end) }, // a retry must not revive it
			wantState: stCanceled, wantNext: Finalized, wantAttempt: 1, wantPending: true, wantFinish: true,
			wantOutcome: taskdv1.Outcome_OUTCOME_ERROR},
		{name: "cancelled while running, run again now: stays cancelled", rec: onceTask,
			meanwhile: cancelledMeanwhile,
			res:       runAgainNow,
			wantState: stCanceled, wantNext: Finalized, wantAttempt: 1, wantPending: true, wantFinish: true,
			wantOutcome: taskdv1.Outcome_OUTCOME_SUCCESS},
		{name: "run-now requested while running: stays requested", rec: onceTask,
			meanwhile: func(r *storev1.TaskRecord) { r.ManualRequested = true },
			res:       func() Result { return ended(taskdv1.Outcome_OUTCOME_SUCCESS, end) },
			wantState: stScheduled, wantNext: NextScheduled, wantManual: true, wantOutcome: taskdv1.Outcome_OUTCOME_SUCCESS},
		{name: "run again now", rec: onceTask,
			res:       runAgainNow,
			wantState: stScheduled, wantNext: NextScheduled, wantManual: true, wantOutcome: taskdv1.Outcome_OUTCOME_SUCCESS},
		{name: "snooze to a future time", rec: onceTask,
			res:       snoozeTo(end.Add(time.Hour)),
			wantState: stRetrying, wantNext: RetryScheduled, wantAttempt: 0, wantRetryAt: end.Add(time.Hour),
			wantPending: true, wantOutcome: taskdv1.Outcome_OUTCOME_WARNING},
		{name: "snooze to a past time: again at once", rec: onceTask,
			res:       snoozeTo(rt0.Add(-time.Hour)),
			wantState: stRetrying, wantNext: RetryScheduled, wantAttempt: 0, wantRetryAt: end,
			wantPending: true, wantOutcome: taskdv1.Outcome_OUTCOME_WARNING},
		{name: "interrupted, recovery requested (default)", rec: onceTask,
			res:       func() Result { return ended(taskdv1.Outcome_OUTCOME_INTERRUPTED, end) },
			wantState: stScheduled, wantNext: NextScheduled, wantAttempt: 1, wantPending: true,
			wantOutcome: taskdv1.Outcome_OUTCOME_INTERRUPTED},
		{name: "interrupted, no recovery: the fire time is done, the task DEAD", rec: func() *storev1.TaskRecord {
			return newRecord(func(s *taskdv1.TaskSpec) { f := false; s.RequestsRecovery = &f }, rOnce(rt0))
		},
			res:       func() Result { return ended(taskdv1.Outcome_OUTCOME_INTERRUPTED, end) },
			wantState: stDead, wantNext: Finalized, wantFinish: true, wantOutcome: taskdv1.Outcome_OUTCOME_INTERRUPTED},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustStart(t, tc.rec(), rt0)
			if tc.meanwhile != nil {
				tc.meanwhile(p.Rec)
			}
			res := tc.res()
			rec, run, next := finish(p, res)
			if rec.State != tc.wantState || next != tc.wantNext {
				t.Fatalf("state %s event %s, want %s %s", rec.State, next, tc.wantState, tc.wantNext)
			}
			if rec.Running != nil {
				t.Errorf("the run marker is still set")
			}
			if rec.Attempt != tc.wantAttempt || !tsEq(rec.RetryAt, tc.wantRetryAt) || (rec.PendingFire != nil) != tc.wantPending {
				t.Errorf("attempt %d retry_at %s pending_fire %s, want %d, %s, pending %v",
					rec.Attempt, fmtTS(rec.RetryAt), fmtTS(rec.PendingFire), tc.wantAttempt, tc.wantRetryAt, tc.wantPending)
			}
			if rec.ManualRequested != tc.wantManual {
				t.Errorf("manual_requested %v, want %v", rec.ManualRequested, tc.wantManual)
			}
			if (rec.FinishedAt != nil) != tc.wantFinish {
				t.Errorf("finished_at %s, want set: %v", fmtTS(rec.FinishedAt), tc.wantFinish)
			}
			// The history entry and last run describe this run.
			if run.RunNumber != p.RunNumber || run.Attempt != int32(p.Attempt) || !run.FireTime.AsTime().Equal(p.Fire) ||
				run.Outcome != tc.wantOutcome || run.Node != rNode || run.Fence != res.Fence ||
				!tsEq(run.StartedAt, res.Started) || !tsEq(run.EndedAt, res.Ended) {
				t.Errorf("history entry %v does not describe the run (plan run %d attempt %d fire %s, outcome %s)",
					run, p.RunNumber, p.Attempt, p.Fire, tc.wantOutcome)
			}
			if rec.LastRun.GetRunNumber() != p.RunNumber || rec.LastRun.GetOutcome() != tc.wantOutcome {
				t.Errorf("last_run %v, want run %d %s", rec.LastRun, p.RunNumber, tc.wantOutcome)
			}
			// The event says what the next due time is about.
			at, purge, ok := Due(rec, time.Hour, Timing{Now: end})
			switch tc.wantNext {
			case RetryScheduled:
				if !ok || purge || !at.Equal(tc.wantRetryAt) {
					t.Errorf("due %s purge %v ok %v, want the retry at %s", at, purge, ok, tc.wantRetryAt)
				}
			case Finalized:
				if rec.State == stDead && ok {
					t.Errorf("due %s purge %v: a DEAD task is never due", at, purge)
				} else if rec.State != stDead && (!ok || !purge) {
					t.Errorf("due %s purge %v ok %v: a final task is due only for its purge", at, purge, ok)
				}
			case NextScheduled:
				if !ok || purge || at.Before(end) && !tc.wantManual && rec.RecoveryPending == nil {
					t.Errorf("due %s purge %v ok %v, want a next run", at, purge, ok)
				}
			}
		})
	}
}

// TestRetryBackoffUntilDead: a retryable error is retried with growing
// backoff for the same fire time; each retry is a new run number and the
// next attempt; at max_attempts the task is DEAD and never due again.
func TestRetryBackoffUntilDead(t *testing.T) {
	for _, tc := range []struct {
		name string
		max  int32
		want int // attempts made
	}{
		{name: "max_attempts 4", max: 4, want: 4},
		{name: "max_attempts 1", max: 1, want: 1},
		{name: "max_attempts unset is the default", max: 0, want: defaultMaxAttempts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecord(func(s *taskdv1.TaskSpec) { s.MaxAttempts = tc.max }, rOnce(rt0))
			now := rt0
			for attempt := 1; ; attempt++ {
				p := mustStart(t, rec, now)
				if p.Attempt != attempt || p.RunNumber != int64(attempt) || !p.Fire.Equal(rt0) || p.Marker.Trigger != 0 {
					t.Fatalf("attempt %d: plan attempt %d run %d fire %s trigger %d, want attempt %d run %d of the fire time %s",
						attempt, p.Attempt, p.RunNumber, p.Fire, p.Marker.Trigger, attempt, attempt, rt0)
				}
				res := retryable(now.Add(time.Second))
				var next Next
				rec, _, next = finish(p, res)
				if attempt == tc.want {
					if rec.State != stDead || next != Finalized || rec.RetryAt != nil || !tsEq(rec.FinishedAt, res.Ended) {
						t.Fatalf("after attempt %d: state %s event %s retry_at %s finished_at %s, want DEAD",
							attempt, rec.State, next, fmtTS(rec.RetryAt), fmtTS(rec.FinishedAt))
					}
					if _, _, ok := Due(rec, time.Hour, Timing{Now: res.Ended}); ok {
						t.Fatalf("a DEAD task is due again")
					}
					return
				}
				wait := schedule.Backoff(attempt, time.Second, 10*time.Second, 0.5)
				if rec.State != stRetrying || next != RetryScheduled || !tsEq(rec.RetryAt, res.Ended.Add(wait)) ||
					rec.Attempt != int32(attempt) {
					t.Fatalf("after attempt %d: state %s event %s retry_at %s attempt %d, want RETRYING at %s",
						attempt, rec.State, next, fmtTS(rec.RetryAt), rec.Attempt, res.Ended.Add(wait))
				}
				if attempt > 1 && wait < schedule.Backoff(attempt-1, time.Second, 10*time.Second, 0.5) {
					t.Fatalf("backoff shrank at attempt %d", attempt)
				}
				now = rec.RetryAt.AsTime()
			}
		})
	}
}

// TestManualRunsLeaveAttemptsAlone: a manual run (RunTaskNow) while a fire
// time is being retried does not count as an attempt, is not retried, and
// leaves the pending retry as it was.
func TestManualRunsLeaveAttemptsAlone(t *testing.T) {
	rec := newRecord(func(s *taskdv1.TaskSpec) { s.MaxAttempts = 3 }, rOnce(rt0))
	p := mustStart(t, rec, rt0)
	rec, _, _ = finish(p, retryable(rt0.Add(time.Second)))
	retryAt := rec.RetryAt.AsTime()
	rec.ManualRequested = true // RunTaskNow
	now := rt0.Add(2 * time.Second)
	if at, _, _ := Due(rec, 0, Timing{Now: now}); !at.Equal(now) {
		t.Fatalf("a requested manual run is due at %s, want now %s", at, now)
	}
	m := mustStart(t, rec, now)
	if !m.Manual || m.Attempt != 1 || m.RunNumber != 2 || !m.Fire.Equal(now) || m.Marker.Trigger != -1 {
		t.Fatalf("manual plan: manual %v attempt %d run %d fire %s trigger %d", m.Manual, m.Attempt, m.RunNumber, m.Fire, m.Marker.Trigger)
	}
	if m.Rec.Attempt != 1 || !tsEq(m.Rec.RetryAt, retryAt) || !tsEq(m.Rec.PendingFire, rt0) || m.Rec.ManualRequested {
		t.Fatalf("manual start touched the retry: attempt %d retry_at %s pending %s requested %v",
			m.Rec.Attempt, fmtTS(m.Rec.RetryAt), fmtTS(m.Rec.PendingFire), m.Rec.ManualRequested)
	}
	for _, outcome := range []struct {
		name string
		res  func() Result
	}{
		{"error", func() Result { return retryable(now.Add(time.Second)) }},
		{"success", func() Result { return ended(taskdv1.Outcome_OUTCOME_SUCCESS, now.Add(time.Second)) }},
		{"snooze", func() Result {
			r := ended(taskdv1.Outcome_OUTCOME_WARNING, now.Add(time.Second))
			r.Snooze = now.Add(time.Hour)
			return r
		}},
	} {
		got, run, next := finish(m, outcome.res())
		if got.Attempt != 1 || !tsEq(got.RetryAt, retryAt) || !tsEq(got.PendingFire, rt0) || got.State != stRetrying ||
			next != RetryScheduled || !run.Manual {
			t.Errorf("manual %s: attempt %d retry_at %s pending %s state %s event %s manual %v; want the retry untouched",
				outcome.name, got.Attempt, fmtTS(got.RetryAt), fmtTS(got.PendingFire), got.State, next, run.Manual)
		}
	}
}

// TestRunNowOfAnEndedTask: a DEAD (or COMPLETED) task runs again by
// RunTaskNow. If the run fails the task is DEAD, even one whose triggers
// still hold fire times (before the fix a failed run-now brought a DEAD
// periodic task back to its schedule, and a once task read COMPLETED); if
// it succeeds the task is back: COMPLETED, or on its schedule again.
func TestRunNowOfAnEndedTask(t *testing.T) {
	// dead ends trig's task DEAD: its first fire time fails with its one attempt.
	dead := func(trig *taskdv1.Trigger) *storev1.TaskRecord {
		rec := newRecord(func(s *taskdv1.TaskSpec) { s.MaxAttempts = 1 }, trig)
		rec, _, _ = finish(mustStart(t, rec, rt0), retryable(rt0.Add(time.Second)))
		if rec.State != stDead {
			t.Fatalf("setup: state %s, want DEAD", rec.State)
		}
		return rec
	}
	completed := func() *storev1.TaskRecord {
		rec, _, _ := finish(mustStart(t, newRecord(nil, rOnce(rt0)), rt0), ended(taskdv1.Outcome_OUTCOME_SUCCESS, rt0.Add(time.Second)))
		if rec.State != stCompleted {
			t.Fatalf("setup: state %s, want COMPLETED", rec.State)
		}
		return rec
	}
	succeeded := func(end time.Time) Result { return ended(taskdv1.Outcome_OUTCOME_SUCCESS, end) }
	for _, tc := range []struct {
		name       string
		rec        func() *storev1.TaskRecord
		res        func(end time.Time) Result
		want       taskdv1.TaskState
		wantFinish bool
	}{
		{"DEAD once, fails again", func() *storev1.TaskRecord { return dead(rOnce(rt0)) }, retryable, stDead, true},
		{"DEAD once, succeeds", func() *storev1.TaskRecord { return dead(rOnce(rt0)) }, succeeded, stCompleted, true},
		{"DEAD periodic, fails again", func() *storev1.TaskRecord { return dead(rEvery(rt0, time.Minute, 0)) }, retryable, stDead, true},
		{"DEAD periodic, succeeds: back on its schedule", func() *storev1.TaskRecord { return dead(rEvery(rt0, time.Minute, 0)) },
			succeeded, stScheduled, false},
		{"COMPLETED once, fails", completed, retryable, stDead, true},
		{"COMPLETED once, succeeds", completed, succeeded, stCompleted, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tc.rec()
			rec.ManualRequested = true // RunTaskNow
			now := rt0.Add(time.Hour)
			if at, _, ok := Due(rec, time.Hour, Timing{Now: now}); !ok || !at.Equal(now) {
				t.Fatalf("requested run-now of a %s task due at %s (ok %v), want now", rec.State, at, ok)
			}
			m := mustStart(t, rec, now)
			if !m.Manual {
				t.Fatal("the run is not manual")
			}
			end := now.Add(time.Second)
			got, run, next := finish(m, tc.res(end))
			if got.State != tc.want || (got.FinishedAt != nil) != tc.wantFinish || !run.Manual {
				t.Fatalf("state %s finished_at %s manual %v, want %s (finished: %v)", got.State, fmtTS(got.FinishedAt), run.Manual, tc.want, tc.wantFinish)
			}
			if tc.wantFinish && (next != Finalized || !tsEq(got.FinishedAt, end)) {
				t.Errorf("event %s finished_at %s, want FINALIZED at the run's end %s", next, fmtTS(got.FinishedAt), end)
			}
		})
	}
}
