package record

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestPlanStartDueTriggers: a due fire time starts a run that serves it,
// with the trigger's progress advanced and a run marker naming the node.
func TestPlanStartDueTriggers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		trig      *taskdv1.Trigger
		fired     int64 // progress before
		now       time.Time
		wantFire  time.Time
		wantNext  time.Time // zero: no more fire times
		wantFired int64
	}{
		{name: "once at its time", trig: rOnce(rt0), now: rt0, wantFire: rt0, wantFired: 1},
		{name: "once late within the threshold", trig: rOnce(rt0), now: rt0.Add(rThreshold), wantFire: rt0, wantFired: 1},
		{name: "periodic first", trig: rEvery(rt0, time.Minute, 0), now: rt0.Add(time.Second),
			wantFire: rt0, wantNext: rt0.Add(time.Minute), wantFired: 1},
		{name: "periodic third", trig: rEvery(rt0, time.Minute, 0), fired: 2, now: rt0.Add(2 * time.Minute),
			wantFire: rt0.Add(2 * time.Minute), wantNext: rt0.Add(3 * time.Minute), wantFired: 3},
		{name: "periodic last of its count", trig: rEvery(rt0, time.Minute, 3), fired: 2, now: rt0.Add(2 * time.Minute),
			wantFire: rt0.Add(2 * time.Minute), wantFired: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecord(nil, tc.trig)
			rec.Triggers[0].Fired = tc.fired
			rec.Triggers[0].Next = nil
			if at, ok := fireNumber(tc.trig, tc.fired); ok {
				rec.Triggers[0].Next = timestamppb.New(at)
			}
			rec.RunCount = tc.fired
			before := Clone(rec)
			p := mustStart(t, rec, tc.now)
			if !rec.Triggers[0].Next.AsTime().Equal(before.Triggers[0].Next.AsTime()) || rec.Running != nil {
				t.Fatalf("PlanStart changed its input record")
			}
			m := p.Marker
			if !p.Fire.Equal(tc.wantFire) || !tsEq(m.FireTime, tc.wantFire) {
				t.Errorf("fire %s (marker %s), want %s", p.Fire, fmtTS(m.FireTime), tc.wantFire)
			}
			if p.RunNumber != tc.fired+1 || m.RunNumber != tc.fired+1 || p.Rec.RunCount != tc.fired+1 {
				t.Errorf("run number %d (marker %d, run_count %d), want %d", p.RunNumber, m.RunNumber, p.Rec.RunCount, tc.fired+1)
			}
			if p.Attempt != 1 || m.Attempt != 1 || p.Rec.Attempt != 1 || p.Manual || p.Recovery {
				t.Errorf("attempt %d/%d/%d manual %v recovery %v, want a first attempt", p.Attempt, m.Attempt, p.Rec.Attempt, p.Manual, p.Recovery)
			}
			if m.Node != rNode || m.Incarnation != rInc || m.Epoch != rEpoch || !tsEq(m.StartedAt, tc.now) || m.Trigger != 0 {
				t.Errorf("marker %v: want node, incarnation, epoch, start time and trigger 0", m)
			}
			if got := p.Rec.Triggers[0]; got.Fired != tc.wantFired || !tsEq(got.Next, tc.wantNext) {
				t.Errorf("trigger progress fired=%d next=%s, want %d, %s", got.Fired, fmtTS(got.Next), tc.wantFired, tc.wantNext)
			}
			if !tsEq(p.Rec.PendingFire, tc.wantFire) || p.Misfired != 0 || p.Rec.Misfires != 0 {
				t.Errorf("pending fire %s misfired %d: want the fire time pending, no misfire", fmtTS(p.Rec.PendingFire), p.Misfired)
			}
		})
	}
}

// TestPlanStartTrustsItsCallerOnTime records what PlanStart does when it
// is called before the record is due: it does not look at the clock
// against the fire time, so it starts the run early — the marker's start
// is before the fire time the run serves. A run must never start before
// its fire time, so callers must only call PlanStart once Due(rec) ≤
// now (the dispatcher pops entries at their due time; a stale queue entry
// or a reload must not bypass that). If PlanStart ever refuses an early
// start itself, this test should be turned into that guarantee.
func TestPlanStartTrustsItsCallerOnTime(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  func() *storev1.TaskRecord
	}{
		{name: "once in an hour", rec: func() *storev1.TaskRecord { return newRecord(nil, rOnce(rt0.Add(time.Hour))) }},
		{name: "periodic starting in an hour", rec: func() *storev1.TaskRecord {
			return newRecord(nil, rEvery(rt0.Add(time.Hour), time.Minute, 0))
		}},
		{name: "retry in an hour", rec: func() *storev1.TaskRecord {
			r := newRecord(nil, rOnce(rt0.Add(-time.Minute)))
			r.State, r.Attempt, r.RunCount = stRetrying, 1, 1
			r.Triggers[0].Fired, r.Triggers[0].Next = 1, nil
			r.PendingFire, r.RetryAt = timestamppb.New(rt0.Add(-time.Minute)), timestamppb.New(rt0.Add(time.Hour))
			return r
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tc.rec()
			due, _, ok := Due(rec, 0, Timing{Now: rt0})
			if !ok || !due.After(rt0) {
				t.Fatalf("Due %s (%v): the record should not be due at %s", due, ok, rt0)
			}
			p := PlanStart(rec, rNode, rInc, rEpoch, Timing{Now: rt0, Threshold: rThreshold, MaxCatchUp: rMaxCatchUp})
			if p.Runs && p.Marker.StartedAt.AsTime().Before(due) {
				t.Logf("PlanStart at %s started a run due at %s (fire %s): callers must check Due first", rt0, due, p.Fire)
			}
			// What PlanStart does today: it runs. This is the precondition
			// the caller enforces; see the doc comment above.
			if !p.Runs {
				t.Fatalf("PlanStart refused an early start: PlanStart now guards the fire time itself; " +
					"make this test assert that guarantee")
			}
		})
	}
}

// TestPlanStartMisfires: a fire time later than the threshold follows the
// task's misfire policy (pkg/schedule does the arithmetic).
func TestPlanStartMisfires(t *testing.T) {
	// Fire times at rt0 + k minutes; at rt0+5m30s six of them (k = 0..5)
	// are at or before now.
	now := rt0.Add(5*time.Minute + 30*time.Second)
	periodic := func() *taskdv1.Trigger { return rEvery(rt0, time.Minute, 0) }
	for _, tc := range []struct {
		name         string
		trig         *taskdv1.Trigger
		policy       taskdv1.MisfirePolicy
		maxCatchUp   int
		wantRun      bool
		wantFire     time.Time
		wantFired    int64
		wantMisfired int64
		wantNext     time.Time
		wantState    taskdv1.TaskState
	}{
		{name: "periodic SKIP", trig: periodic(), policy: taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP,
			wantFired: 6, wantMisfired: 6, wantNext: rt0.Add(6 * time.Minute), wantState: stScheduled},
		{name: "periodic default is SKIP", trig: periodic(),
			wantFired: 6, wantMisfired: 6, wantNext: rt0.Add(6 * time.Minute), wantState: stScheduled},
		{name: "periodic FIRE_ONCE_NOW", trig: periodic(), policy: taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW,
			wantRun: true, wantFire: rt0, wantFired: 6, wantMisfired: 5, wantNext: rt0.Add(6 * time.Minute), wantState: stRunning},
		{name: "periodic FIRE_ALL within the cap", trig: periodic(), policy: taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL, maxCatchUp: 10,
			wantRun: true, wantFire: rt0, wantFired: 1, wantNext: rt0.Add(time.Minute), wantState: stRunning},
		{name: "periodic FIRE_ALL over the cap", trig: periodic(), policy: taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL, maxCatchUp: 3,
			wantRun: true, wantFire: rt0.Add(3 * time.Minute), wantFired: 4, wantMisfired: 3, wantNext: rt0.Add(4 * time.Minute), wantState: stRunning},
		{name: "once default is FIRE_ONCE_NOW", trig: rOnce(rt0),
			wantRun: true, wantFire: rt0, wantFired: 1, wantState: stRunning},
		{name: "once SKIP completes without a run", trig: rOnce(rt0), policy: taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP,
			wantFired: 1, wantMisfired: 1, wantState: stCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecord(func(s *taskdv1.TaskSpec) { s.Misfire = tc.policy }, tc.trig)
			p := PlanStart(rec, rNode, rInc, rEpoch, Timing{Now: now, Threshold: rThreshold, MaxCatchUp: tc.maxCatchUp})
			if p.Runs != tc.wantRun {
				t.Fatalf("run %v, want %v", p.Runs, tc.wantRun)
			}
			if tc.wantRun && (!p.Fire.Equal(tc.wantFire) || !tsEq(p.Marker.FireTime, tc.wantFire)) {
				t.Errorf("fire %s, want %s", p.Fire, tc.wantFire)
			}
			if !tc.wantRun && (p.Marker != nil || p.Rec.Running != nil || p.Rec.RunCount != 0) {
				t.Errorf("a plan without a run has marker %v, run_count %d", p.Rec.Running, p.Rec.RunCount)
			}
			tr := p.Rec.Triggers[0]
			if tr.Fired != tc.wantFired || !tsEq(tr.Next, tc.wantNext) {
				t.Errorf("trigger fired=%d next=%s, want %d, %s", tr.Fired, fmtTS(tr.Next), tc.wantFired, tc.wantNext)
			}
			if p.Misfired != tc.wantMisfired || p.Rec.Misfires != tc.wantMisfired {
				t.Errorf("misfired %d (record %d), want %d", p.Misfired, p.Rec.Misfires, tc.wantMisfired)
			}
			if p.Rec.State != tc.wantState {
				t.Errorf("state %s, want %s", p.Rec.State, tc.wantState)
			}
			if tc.wantState == stCompleted && !tsEq(p.Rec.FinishedAt, now) {
				t.Errorf("finished_at %s, want %s", fmtTS(p.Rec.FinishedAt), now)
			}
		})
	}
}

// TestFireAllCatchesUpInOrder: under FIRE_ALL each missed fire time runs
// once, oldest first, each run its own run number, then the task is on time.
func TestFireAllCatchesUpInOrder(t *testing.T) {
	rec := newRecord(func(s *taskdv1.TaskSpec) { s.Misfire = taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL },
		rEvery(rt0, time.Minute, 0))
	now := rt0.Add(5*time.Minute + 30*time.Second)
	for k := range 6 {
		p := mustStart(t, rec, now)
		want := rt0.Add(time.Duration(k) * time.Minute)
		if !p.Fire.Equal(want) || p.RunNumber != int64(k+1) {
			t.Fatalf("catch-up run %d: fire %s run %d, want %s run %d", k, p.Fire, p.RunNumber, want, k+1)
		}
		var next Next
		rec, _, next = finish(p, ended(taskdv1.Outcome_OUTCOME_SUCCESS, now))
		if next != NextScheduled || rec.State != stScheduled {
			t.Fatalf("after catch-up run %d: event %s state %s", k, next, rec.State)
		}
		now = now.Add(time.Millisecond)
	}
	if at, _, _ := Due(rec, 0, Timing{Now: now}); !at.Equal(rt0.Add(6 * time.Minute)) {
		t.Fatalf("after catching up the task is due at %s, want the next period %s", at, rt0.Add(6*time.Minute))
	}
}

// TestFirstReleaseRecordsLoad: a record written by the first release (its
// trigger progress is a next fire time and a count of fire times, with no
// fields of this release) decodes and goes on from its next fire time.
func TestFirstReleaseRecordsLoad(t *testing.T) {
	trig := rEvery(rt0, time.Minute, 0)
	old := &storev1.TaskRecord{
		Id: "01m8q4944jcfks3fcjp6q00f0y", State: taskdv1.TaskState_TASK_STATE_SCHEDULED, CreatedAt: timestamppb.New(rt0),
		Spec: &taskdv1.TaskSpec{Identity: "a", Kind: "k", Scope: taskdv1.Scope_SCOPE_IDENTITY, Triggers: []*taskdv1.Trigger{trig}},
		// Seven fire times behind it, the eighth due.
		Triggers: []*storev1.TriggerState{{Next: timestamppb.New(rt0.Add(7 * time.Minute)), Fired: 7}},
		RunCount: 7,
	}
	b, err := proto.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	rec := &storev1.TaskRecord{}
	if err := proto.Unmarshal(b, rec); err != nil {
		t.Fatal(err)
	}
	if at, _, ok := Due(rec, 0, Timing{Now: rt0}); !ok || !at.Equal(rt0.Add(7*time.Minute)) {
		t.Fatalf("due %v %v, want the stored next fire time", at, ok)
	}
	p := PlanStart(rec, rNode, rInc, rEpoch, Timing{Now: rt0.Add(7 * time.Minute), Threshold: rThreshold, MaxCatchUp: rMaxCatchUp})
	if !p.Runs || !p.Fire.Equal(rt0.Add(7*time.Minute)) || p.RunNumber != 8 {
		t.Fatalf("plan runs %v fire %v run %d, want fire time 7 as run 8", p.Runs, p.Fire, p.RunNumber)
	}
	if st := p.Rec.Triggers[0]; !st.Next.AsTime().Equal(rt0.Add(8*time.Minute)) || st.Fired != 8 {
		t.Fatalf("progress after the run: next %v fired %d, want minute 8 and 8", st.Next.AsTime(), st.Fired)
	}
}

// TestRecoveryKeepsTheRunNumber: an interrupted run with recovery runs its
// fire time again with the same run number and attempt, flagged Recovery,
// without handing out a new run number.
func TestRecoveryKeepsTheRunNumber(t *testing.T) {
	rec := newRecord(nil, rEvery(rt0, time.Minute, 0))
	p := mustStart(t, rec, rt0)
	rec, _, _ = finish(p, ended(taskdv1.Outcome_OUTCOME_INTERRUPTED, rt0.Add(time.Second)))
	if rec.RecoveryPending == nil || rec.RecoveryPending.RunNumber != 1 {
		t.Fatalf("recovery_pending %v, want run 1", rec.RecoveryPending)
	}
	if at, _, _ := Due(rec, 0, Timing{Now: rt0.Add(2 * time.Second)}); !at.Equal(rt0) {
		t.Fatalf("due at %s, want the interrupted fire time %s (at once)", at, rt0)
	}
	r := mustStart(t, rec, rt0.Add(2*time.Second))
	if !r.Recovery || r.RunNumber != 1 || r.Attempt != 1 || !r.Fire.Equal(rt0) || r.Rec.RunCount != 1 || r.Rec.RecoveryPending != nil {
		t.Fatalf("recovery plan: recovery %v run %d attempt %d fire %s run_count %d pending %v; want run 1 again",
			r.Recovery, r.RunNumber, r.Attempt, r.Fire, r.Rec.RunCount, r.Rec.RecoveryPending)
	}
	// The trigger is not advanced twice.
	if r.Rec.Triggers[0].Fired != 1 || !tsEq(r.Rec.Triggers[0].Next, rt0.Add(time.Minute)) {
		t.Fatalf("trigger %v after the recovery start, want fired 1, next +1m", r.Rec.Triggers[0])
	}
	res := ended(taskdv1.Outcome_OUTCOME_SUCCESS, rt0.Add(3*time.Second))
	res.Recovery = true
	rec, run, _ := finish(r, res)
	if !run.Recovery || run.RunNumber != 1 || rec.RunCount != 1 {
		t.Fatalf("history %v run_count %d, want run 1 flagged recovery", run, rec.RunCount)
	}
	if n := mustStart(t, rec, rt0.Add(time.Minute)); n.RunNumber != 2 || !n.Fire.Equal(rt0.Add(time.Minute)) {
		t.Fatalf("next run %d fire %s, want run 2 at +1m", n.RunNumber, n.Fire)
	}
}

// TestJitterDelaysWhenDueNotTheFireTime: a trigger's jitter delays when
// its fire time is due (Due, NextDue), by the same delay for the same
// record wherever it is computed (a copy stands for another node or a
// restart), while the stored progress and the run's fire time stay the
// undelayed fire times. Lateness counts from the delayed instant: a
// start a moment after it is on time under SKIP (whose late fire times do
// not run), one more than the threshold after it is late.
func TestJitterDelaysWhenDueNotTheFireTime(t *testing.T) {
	tr := rEvery(rt0, time.Hour, 0)
	tr.Jitter = durationpb.New(30 * time.Minute)
	rec := newRecord(func(s *taskdv1.TaskSpec) { s.Misfire = taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP }, tr)
	rec.Id = "01m8n00fnm1tq0b5anbv2qw959"

	at, _, ok := Due(rec, 0, Timing{Now: rt0.Add(-time.Hour)})
	delay := at.Sub(rt0)
	if !ok || delay <= 0 || delay >= 30*time.Minute {
		t.Fatalf("due %s (ok %v): want the fire time %s delayed by 0 to 30m (a zero delay is one chance in 1.8e12)", at, ok, rt0)
	}
	if next, _ := NextDue(rec.Id, rec.Spec.Triggers, rec.Triggers); !next.Equal(at) {
		t.Fatalf("NextDue %s, Due %s", next, at)
	}
	if again, _, _ := Due(Clone(rec), 0, Timing{Now: rt0}); !again.Equal(at) {
		t.Fatalf("a copy of the record is due at %s, the record at %s", again, at)
	}
	other := Clone(rec)
	other.Id = "01m8n00fnm1tq0b5anbv2qw95a"
	if o, _, _ := Due(other, 0, Timing{Now: rt0}); o.Equal(at) {
		t.Errorf("two tasks on one schedule due at the same instant %s", o)
	}

	// On time: a second after the delayed instant, far past the threshold
	// after the fire time itself.
	p := PlanStart(rec, rNode, rInc, rEpoch, Timing{Now: at.Add(time.Second), Threshold: rThreshold, MaxCatchUp: rMaxCatchUp})
	if !p.Runs || !p.Fire.Equal(rt0) || !p.Marker.FireTime.AsTime().Equal(rt0) {
		t.Fatalf("start a second after the delayed instant: runs %v fire %s, want the run of fire time %s", p.Runs, p.Fire, rt0)
	}
	if !tsEq(p.Rec.Triggers[0].Next, rt0.Add(time.Hour)) {
		t.Fatalf("progress %s, want the next undelayed fire time %s", fmtTS(p.Rec.Triggers[0].Next), rt0.Add(time.Hour))
	}

	// Late: more than the threshold after the delayed instant.
	late := PlanStart(rec, rNode, rInc, rEpoch, Timing{Now: at.Add(rThreshold + time.Second), Threshold: rThreshold, MaxCatchUp: rMaxCatchUp})
	if late.Runs || late.Misfired != 1 {
		t.Fatalf("start %s after the delayed instant: runs %v misfired %d, want it skipped", rThreshold+time.Second, late.Runs, late.Misfired)
	}
}
