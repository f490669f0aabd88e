package record

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The property tests: each walks the random lives of life_test.go and
// checks one guarantee of the state machine at every step it applies to,
// and fails if too few steps exercised it (a generator gone blind would
// otherwise pass).

// walk calls check at every step of every life; check returns whether the
// property applied to the step. It fails the test when fewer than least
// steps were checked.
func walk(t *testing.T, least int, check func(t *testing.T, s step) bool) {
	t.Helper()
	checked := 0
	for seed := range uint64(lives) {
		live(seed, func(s step) bool {
			if check(t, s) {
				checked++
			}
			return !t.Failed()
		})
		if t.Failed() {
			t.Fatalf("seed %d: see above (life_test.go replays it)", seed)
		}
	}
	if checked < least {
		t.Fatalf("the property applied to %d steps, want at least %d: the random lives no longer reach it", checked, least)
	}
	t.Logf("checked at %d steps", checked)
}

// TestPropertyPlanStartOnlyWhenDueWithAGrowingRunNumber: a start planned
// once the record is due starts at the clock's reading, serves a fire
// time that has come, and takes a run number above every earlier one,
// except a recovery, which runs its interrupted run's number again
// (contract §1, §2.3). PlanStart leaves its input as it was.
func TestPropertyPlanStartOnlyWhenDueWithAGrowingRunNumber(t *testing.T) {
	walk(t, 4000, func(t *testing.T, s step) bool {
		p, b := s.plan, s.before
		if !proto.Equal(s.input, b) {
			t.Errorf("step %d: PlanStart changed its input", s.index)
		}
		if !p.Runs {
			if p.Marker != nil || p.Rec.Running != nil || p.Rec.State == stRunning || p.Rec.RunCount != b.RunCount {
				t.Errorf("step %d: a plan without a run has marker %v, state %s, run_count %d (was %d)",
					s.index, p.Rec.Running, p.Rec.State, p.Rec.RunCount, b.RunCount)
			}
			return true
		}
		m := p.Marker
		if s.tm.Now.Before(s.due) || !m.StartedAt.AsTime().Equal(s.tm.Now) || p.Fire.After(s.tm.Now) || !m.FireTime.AsTime().Equal(p.Fire) {
			t.Errorf("step %d: run started at %s for fire time %s, due at %s, the clock at %s: want a start at the clock's reading, at or after both",
				s.index, m.StartedAt.AsTime(), p.Fire, s.due, s.tm.Now)
		}
		if p.Rec.Running != m || p.Rec.State != stRunning || m.RunNumber != p.RunNumber || m.Attempt != int32(p.Attempt) || p.Attempt < 1 {
			t.Errorf("step %d: record running %v state %s, plan run %d attempt %d: want the plan's marker, RUNNING",
				s.index, p.Rec.Running, p.Rec.State, p.RunNumber, p.Attempt)
		}
		if p.Recovery {
			if b.RecoveryPending == nil || p.RunNumber != b.RecoveryPending.RunNumber || p.RunNumber > s.lastRun || p.Rec.RunCount != b.RunCount {
				t.Errorf("step %d: recovery run %d (pending %v, last run %d, run_count %d→%d): want the interrupted run's number again",
					s.index, p.RunNumber, b.RecoveryPending, s.lastRun, b.RunCount, p.Rec.RunCount)
			}
		} else if p.RunNumber <= s.lastRun || p.Rec.RunCount != p.RunNumber {
			t.Errorf("step %d: run number %d after run %d (run_count %d): want one above every earlier run",
				s.index, p.RunNumber, s.lastRun, p.Rec.RunCount)
		}
		return true
	})
}

// TestPropertyApplyResultLeavesNoRunInFlight: after ApplyResult the record
// holds no run marker and is never RUNNING, a final record has its finish
// time and nothing left to recover, and what it waits for next agrees with
// its state.
func TestPropertyApplyResultLeavesNoRunInFlight(t *testing.T) {
	walk(t, 3000, func(t *testing.T, s step) bool {
		if !s.plan.Runs {
			return false
		}
		a := s.after
		if a.Running != nil || a.State == stRunning {
			t.Errorf("step %d: after %s the record is %s with marker %v", s.index, s.res.Outcome, a.State, a.Running)
		}
		if IsFinal(a.State) && (a.FinishedAt == nil || a.RecoveryPending != nil) {
			t.Errorf("step %d: final %s with finished_at %v, recovery_pending %v", s.index, a.State, a.FinishedAt, a.RecoveryPending)
		}
		want := NextScheduled
		switch {
		case a.State == stRetrying:
			want = RetryScheduled
		case IsFinal(a.State):
			want = Finalized
		case a.State != stScheduled:
			t.Errorf("step %d: state %s after a run", s.index, a.State)
		}
		if s.next != want {
			t.Errorf("step %d: %s next %s, want %s", s.index, a.State, s.next, want)
		}
		if s.run.RunNumber != s.plan.RunNumber || a.LastRun.GetRunNumber() != s.plan.RunNumber || a.LastRun.GetOutcome() != s.res.Outcome {
			t.Errorf("step %d: history run %d, last_run %v: want run %d %s", s.index, s.run.RunNumber, a.LastRun, s.plan.RunNumber, s.res.Outcome)
		}
		return true
	})
}

// TestPropertyOnceSuccessCompletes: the run of a task's only trigger, a
// once trigger, that succeeds ends the task COMPLETED at the run's end.
func TestPropertyOnceSuccessCompletes(t *testing.T) {
	walk(t, 120, func(t *testing.T, s step) bool {
		trig := s.before.GetSpec().GetTriggers()
		ok := s.res.Outcome == taskdv1.Outcome_OUTCOME_SUCCESS || s.res.Outcome == taskdv1.Outcome_OUTCOME_WARNING
		if !s.plan.Runs || s.plan.Manual || len(trig) != 1 || trig[0].GetOnce() == nil || !ok ||
			s.res.Again || !s.res.Snooze.IsZero() || s.res.Cancel || s.meanwhile != "" || s.started.ManualRequested {
			return false
		}
		if s.after.State != stCompleted || s.next != Finalized || !tsEq(s.after.FinishedAt, s.res.Ended) {
			t.Errorf("step %d: once task after %s: state %s next %s finished_at %s, want COMPLETED at %s",
				s.index, s.res.Outcome, s.after.State, s.next, fmtTS(s.after.FinishedAt), s.res.Ended)
		}
		return true
	})
}

// TestPropertyRetryWithAttemptsLeft: a retryable failure of a fire time
// with attempts left is retried strictly after the run's end, no later
// than the task's longest backoff after it, and never before the earliest
// retry its handler asked for (then at that time); the attempt it used
// counts.
func TestPropertyRetryWithAttemptsLeft(t *testing.T) {
	walk(t, 450, func(t *testing.T, s step) bool {
		m := s.plan.Marker
		if !s.plan.Runs || s.plan.Manual || !s.res.Retry || !s.res.Snooze.IsZero() || s.res.Cancel || s.meanwhile == "cancel" ||
			m.Attempt >= attemptsOf(s.before.Spec) {
			return false
		}
		a, end := s.after, s.res.Ended
		latest := end.Add(longestBackoffOf(s.before.Spec))
		if s.res.RetryAt.After(latest) {
			latest = s.res.RetryAt
		}
		at := a.GetRetryAt().AsTime()
		if a.State != stRetrying || s.next != RetryScheduled || a.RetryAt == nil || !at.After(end) || at.After(latest) ||
			at.Before(s.res.RetryAt) || a.Attempt != m.Attempt {
			t.Errorf("step %d: attempt %d of %d failed at %s (handler's earliest retry %s): state %s next %s retry_at %s attempt %d; want RETRYING in (%s, %s]",
				s.index, m.Attempt, attemptsOf(s.before.Spec), end, s.res.RetryAt, a.State, s.next, fmtTS(a.RetryAt), a.Attempt, end, latest)
		}
		return true
	})
}

// TestPropertyFailureThatEndsATaskIsDead: a retryable failure with no
// attempts left ends the task DEAD at the run's end, whatever fire times
// it has left (a task of scope EVERY_NODE aside: each node goes on with
// its next one); and whatever ends a task, it reads COMPLETED only after a
// run that did not fail, DEAD only after one that did (contract §5.2).
func TestPropertyFailureThatEndsATaskIsDead(t *testing.T) {
	deadByAttempts := 0
	walk(t, 4000, func(t *testing.T, s step) bool {
		rec := s.settled()
		failed := rec.GetLastRun().GetOutcome() == taskdv1.Outcome_OUTCOME_ERROR ||
			rec.GetLastRun().GetOutcome() == taskdv1.Outcome_OUTCOME_INTERRUPTED
		if (rec.State == stCompleted && failed) || (rec.State == stDead && !failed) {
			t.Errorf("step %d: %s after a last run %v", s.index, rec.State, rec.GetLastRun())
		}
		if s.plan.Runs && !s.plan.Manual && s.res.Retry && s.res.Snooze.IsZero() && !s.res.Cancel && s.meanwhile != "cancel" &&
			s.plan.Marker.Attempt >= attemptsOf(s.before.Spec) && s.before.Spec.Scope != taskdv1.Scope_SCOPE_EVERY_NODE {
			deadByAttempts++
			if rec.State != stDead || s.next != Finalized || !tsEq(rec.FinishedAt, s.res.Ended) || rec.RetryAt != nil {
				t.Errorf("step %d: attempt %d of %d failed: state %s next %s finished_at %s retry_at %s, want DEAD at %s",
					s.index, s.plan.Marker.Attempt, attemptsOf(s.before.Spec), rec.State, s.next, fmtTS(rec.FinishedAt), fmtTS(rec.RetryAt), s.res.Ended)
			}
		}
		return true
	})
	if deadByAttempts < 100 {
		t.Fatalf("attempts ran out at only %d steps", deadByAttempts)
	}
	t.Logf("attempts ran out at %d steps", deadByAttempts)
}

// TestPropertySettledRecordsStayPut: a record with no run in flight is at
// rest: settling it again at any later reading of the clock changes
// nothing, and its due time never goes back as the clock moves on.
func TestPropertySettledRecordsStayPut(t *testing.T) {
	walk(t, 4000, func(t *testing.T, s step) bool {
		rec := s.settled()
		now := s.tm.Now
		if s.plan.Runs {
			now = s.res.Ended
		}
		prev, _, prevOK := Due(rec, retention, Timing{Now: now, DispatchStart: s.tm.DispatchStart})
		for _, later := range []time.Duration{0, time.Second, time.Hour, 48 * time.Hour} {
			at := now.Add(later)
			c := Clone(rec)
			Settle(c, at)
			if !proto.Equal(c, rec) {
				t.Errorf("step %d: settling the %s record again %s later changed it:\n%v\nto\n%v", s.index, rec.State, later, rec, c)
			}
			due, _, ok := Due(rec, retention, Timing{Now: at, DispatchStart: s.tm.DispatchStart})
			if ok != prevOK || (ok && due.Before(prev)) {
				t.Errorf("step %d: due %s (%v) at %s after %s (%v) earlier", s.index, due, ok, at, prev, prevOK)
			}
			prev, prevOK = due, ok
		}
		return true
	})
}

// TestPropertyUndoStartLeavesNoTrace: undoing a start whose handler was
// never called gives back the record before it exactly when nothing
// changed it meanwhile, and keeps a cancel made meanwhile.
func TestPropertyUndoStartLeavesNoTrace(t *testing.T) {
	walk(t, 3000, func(t *testing.T, s step) bool {
		if !s.plan.Runs {
			return false
		}
		if u := UndoStart(s.plan.Rec, s.before, s.plan.Rec); !proto.Equal(u, s.before) {
			t.Errorf("step %d: undo of a start gave\n%v\nwant the record before it\n%v", s.index, u, s.before)
		}
		if s.meanwhile == "cancel" {
			u := UndoStart(s.started, s.before, s.plan.Rec)
			if u.State != stCanceled || !proto.Equal(u.FinishedAt, s.started.FinishedAt) || u.Running != nil || u.RunCount != s.before.RunCount {
				t.Errorf("step %d: undo after a cancel: state %s finished_at %s running %v run_count %d, want CANCELED, no run used",
					s.index, u.State, fmtTS(u.FinishedAt), u.Running, u.RunCount)
			}
		}
		return true
	})
}
